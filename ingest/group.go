package ingest

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GroupKeys are the keys log formats can group by (--by).
var GroupKeys = []string{"route", "method", "status_class", "status", "upstream", "host"}

// Grouper turns a sample's request fields into its group name: the values
// of its keys joined by " ". Routes are normalized (see NormalizeRoute) or
// matched against the user's patterns. Group names are interned, so a
// repeated group costs no allocation; the table is bounded so that a
// hostile URL space cannot grow it without limit (folding the excess into
// "other" is the histogram set's job, with --max-groups).
type Grouper struct {
	keys     []string
	patterns [][]string // each pattern split into segments
	raw      [][]byte   // the patterns as given
	intern   map[string]string
	buf      []byte
	route    []byte
}

// NewGrouper validates the keys and route patterns. It returns nil (no
// grouping) when by is empty.
func NewGrouper(by, routePatterns []string) (*Grouper, error) {
	if len(by) == 0 {
		return nil, nil
	}
	g := &Grouper{intern: map[string]string{}}
	for _, k := range by {
		k = strings.ToLower(strings.TrimSpace(k))
		if !slices.Contains(GroupKeys, k) {
			return nil, fmt.Errorf("cannot group by %q: log formats group by %s", k, strings.Join(GroupKeys, ", "))
		}
		g.keys = append(g.keys, k)
	}
	for _, p := range routePatterns {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("route pattern %q must start with /", p)
		}
		segs := strings.Split(strings.Trim(p, "/"), "/")
		for i, s := range segs {
			if s == "*" && i != len(segs)-1 {
				return nil, fmt.Errorf("route pattern %q: * may only be the last segment", p)
			}
		}
		g.patterns = append(g.patterns, segs)
		g.raw = append(g.raw, []byte(p))
	}
	return g, nil
}

// Key returns the group name of one sample.
func (g *Grouper) Key(s *Sample, f *Fields) string {
	b := g.buf[:0]
	for i, k := range g.keys {
		if i > 0 {
			b = append(b, ' ')
		}
		start := len(b)
		switch k {
		case "route":
			b = append(b, g.routeOf(f.Path)...)
		case "method":
			b = append(b, f.Method...)
		case "status_class":
			if s.Status >= 100 && s.Status <= 999 {
				b = append(b, byte('0'+s.Status/100), 'x', 'x')
			}
		case "status":
			if s.Status > 0 {
				b = strconv.AppendInt(b, int64(s.Status), 10)
			}
		case "upstream":
			b = append(b, f.Upstream...)
		case "host":
			b = append(b, f.Host...)
		}
		if len(b) == start {
			b = append(b, '-')
		}
	}
	g.buf = b
	if name, ok := g.intern[string(b)]; ok {
		return name
	}
	name := string(b)
	if len(g.intern) < maxInternedGroups {
		g.intern[name] = name
	}
	return name
}

// routeOf returns the route of a request target: the first matching user
// pattern, else the normalized path.
func (g *Grouper) routeOf(target []byte) []byte {
	path := pathOf(target)
	for i, p := range g.patterns {
		if matchRoute(p, path) {
			return g.raw[i]
		}
	}
	g.route = NormalizeRoute(g.route[:0], path)
	return g.route
}

// pathOf strips a scheme and authority ("http://host:80/x" -> "/x"), the
// query string and the fragment from a request target.
func pathOf(target []byte) []byte {
	if i := bytes.Index(target, []byte("://")); i >= 0 && i < 10 {
		rest := target[i+3:]
		if j := bytes.IndexByte(rest, '/'); j >= 0 {
			target = rest[j:]
		} else {
			target = []byte("/")
		}
	}
	if i := bytes.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	return target
}

// matchRoute reports whether path matches the pattern's segments: literal
// segments match themselves, {name} any one segment, a final * the rest.
func matchRoute(pattern []string, path []byte) bool {
	path = bytes.Trim(path, "/")
	for i, seg := range pattern {
		if seg == "*" {
			return len(path) > 0
		}
		var cur []byte
		cur, path, _ = bytes.Cut(path, []byte("/"))
		if len(cur) == 0 && seg != "" {
			return false
		}
		if !(len(seg) > 1 && seg[0] == '{' && seg[len(seg)-1] == '}') && string(cur) != seg {
			return false
		}
		if i == len(pattern)-1 && len(path) > 0 {
			return false
		}
	}
	return true
}

// NormalizeRoute appends to dst the route of a path (query string already
// removed): each segment that looks like an identifier (a number, a UUID, a
// long hex string, a long token mixing letters and digits) becomes "{id}",
// so /users/42/orders/9f86d081884c7d65 becomes /users/{id}/orders/{id}.
// An empty path is "/".
func NormalizeRoute(dst, path []byte) []byte {
	if len(path) == 0 || path[0] != '/' {
		dst = append(dst, '/')
	}
	for len(path) > 0 {
		i := bytes.IndexByte(path, '/')
		if i < 0 {
			i = len(path)
		}
		seg := path[:i]
		if isIdentifier(seg) {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, seg...)
		}
		if i < len(path) {
			dst = append(dst, '/')
			i++
		}
		path = path[i:]
	}
	return dst
}

// isIdentifier reports whether a path segment looks like an identifier
// rather than a name: all digits; a UUID; hex of 8 or more characters with
// at least one digit; or 16 or more characters of letters, digits, '-' and
// '_' with at least one digit and one letter (tokens, base64 ids).
func isIdentifier(seg []byte) bool {
	if len(seg) == 0 {
		return false
	}
	digits, hex, letters, other := 0, 0, 0, 0
	for _, c := range seg {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			hex++
		case c >= 'g' && c <= 'z', c >= 'G' && c <= 'Z':
			letters++
		case c == '-' || c == '_':
			other++
		default:
			return false
		}
	}
	switch {
	case digits == len(seg):
		return true
	case len(seg) == 36 && other == 4 && letters == 0 && seg[8] == '-' && seg[13] == '-' && seg[18] == '-' && seg[23] == '-':
		return true // UUID
	case len(seg) >= 8 && digits > 0 && digits+hex == len(seg):
		return true
	case len(seg) >= 16 && digits > 0 && hex+letters > 0:
		return true
	}
	return false
}
