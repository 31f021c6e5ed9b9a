package ingest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
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
	recent   recentNames
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
			return nil, usage.Errorf("cannot group by %q: log formats group by %s", k, strings.Join(GroupKeys, ", "))
		}
		g.keys = append(g.keys, k)
	}
	for _, p := range routePatterns {
		if !strings.HasPrefix(p, "/") {
			return nil, usage.Errorf("route pattern %q must start with /", p)
		}
		segs := strings.Split(strings.Trim(p, "/"), "/")
		for i, s := range segs {
			if s == "*" && i != len(segs)-1 {
				return nil, usage.Errorf("route pattern %q: * may only be the last segment", p)
			}
		}
		g.patterns = append(g.patterns, segs)
		g.raw = append(g.raw, []byte(p))
	}
	return g, nil
}

// Key returns the group name of one sample.
func (g *Grouper) Key(s *Sample, f *Fields) string {
	if len(g.keys) == 1 && g.keys[0] == "route" {
		// The route alone (never empty: it starts with "/"), not copied
		// unless it must be quoted.
		r := g.routeOf(f.Path)
		if !names.NeedsQuote(r) {
			return g.name(r)
		}
		g.buf = names.FinishValue(append(g.buf[:0], r...), 0)
		return g.name(g.buf)
	}
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
		b = names.FinishValue(b, start)
	}
	g.buf = b
	return g.name(b)
}

// name returns the interned group name b spells, cut to names.MaxBytes.
func (g *Grouper) name(b []byte) string {
	b = names.CapBytes(b)
	if name, ok := g.recent.find(b); ok {
		return name
	}
	name, ok := g.intern[string(b)]
	if !ok {
		name = string(b)
		if len(g.intern) < maxInternedGroups {
			g.intern[name] = name
		}
	}
	g.recent.add(name)
	return name
}

// recentNames holds the last few group names a decoder interned, looked at
// before its table: an input has few groups, and comparing a few short
// strings costs less than hashing one.
type recentNames struct {
	names [8]string // "" unset
	next  uint8     // the slot to fill next
}

// find returns the name equal to b, if held.
func (r *recentNames) find(b []byte) (string, bool) {
	for _, name := range r.names {
		if len(name) == len(b) && name == string(b) && name != "" {
			return name, true
		}
	}
	return "", false
}

// add holds name, in place of the oldest.
func (r *recentNames) add(name string) {
	r.names[r.next%uint8(len(r.names))] = name
	r.next++
}

// routeOf returns the route of a request target: the first matching user
// pattern, else the normalized path.
func (g *Grouper) routeOf(target []byte) []byte {
	if len(g.patterns) == 0 {
		g.route = normalizeTarget(g.route[:0], target)
		return g.route
	}
	path := pathOf(target)
	for i, p := range g.patterns {
		if matchRoute(p, path) {
			return g.raw[i]
		}
	}
	g.route = NormalizeRoute(g.route[:0], path)
	return g.route
}

// normalizeTarget is NormalizeRoute(dst, pathOf(target)) in one pass over
// the path: its end, the query or the fragment, is found on the way.
func normalizeTarget(dst, target []byte) []byte {
	target = stripScheme(target)
	if len(target) == 0 || target[0] != '/' {
		dst = append(dst, '/') // also when the path is empty: "?x"
	}
	copied := 0 // target[:copied] is in dst
	for start := 0; start < len(target); {
		var kinds uint8
		i := start
		k := uint8(0)
		for ; i < len(target); i++ {
			if k = idKindTarget[target[i]]; k&(idSlash|idEnd) != 0 {
				break
			}
			kinds |= k
		}
		// A segment without a digit is a name, unless 36 long (a UUID).
		if (kinds&idDigit != 0 || i-start == 36) && identifierOf(target[start:i], kinds) {
			dst = append(dst, target[copied:start]...)
			dst = append(dst, "{id}"...)
			copied = i
		}
		if k == idEnd {
			return append(dst, target[copied:i]...)
		}
		start = i + 1
	}
	return append(dst, target[copied:]...)
}

// pathOf strips a scheme and authority ("http://host:80/x" -> "/x"), the
// query string and the fragment from a request target.
func pathOf(target []byte) []byte {
	target = stripScheme(target)
	// '?' or '#', eight bytes at a time: targets are short, and a word
	// costs less than IndexAny's set.
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(target); i += 8 {
		x := binary.LittleEndian.Uint64(target[i:])
		q, h := x^(ones*'?'), x^(ones*'#')
		if m := ((q-ones)&^q | (h-ones)&^h) & highs; m != 0 {
			return target[:i+bits.TrailingZeros64(m)>>3]
		}
	}
	for ; i < len(target); i++ {
		if c := target[i]; c == '?' || c == '#' {
			return target[:i]
		}
	}
	return target
}

// stripScheme strips a scheme and authority ("http://host:80/x" -> "/x").
func stripScheme(target []byte) []byte {
	if i := schemeEnd(target); i >= 0 {
		rest := target[i+3:]
		if j := bytes.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
		return []byte("/")
	}
	return target
}

// schemeEnd returns where the first "://" of target starts when that is
// within its first 10 bytes (a scheme: "https://host/x"), else -1: what
// bytes.Index(target, "://") < 10 says, without searching the whole target.
func schemeEnd(target []byte) int {
	if len(target) >= 10 {
		// No ':' in the first 10 bytes (two words: 0-7 and 2-9), no scheme.
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		a := binary.LittleEndian.Uint64(target) ^ (ones * ':')
		b := binary.LittleEndian.Uint64(target[2:]) ^ (ones * ':')
		if ((a-ones)&^a|(b-ones)&^b)&highs == 0 {
			return -1
		}
	}
	for i := 0; i < 10 && i+3 <= len(target); i++ {
		if target[i] == ':' && target[i+1] == '/' && target[i+2] == '/' {
			return i
		}
	}
	return -1
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
	// One pass over the path finds each segment's end and the kinds of
	// bytes it holds, which decide (identifierOf) as isIdentifier does.
	// What is not an identifier is copied in one piece, up to the next
	// identifier.
	copied := 0 // path[:copied] is in dst
	for start := 0; start < len(path); {
		var kinds uint8
		i := start
		for ; i < len(path); i++ {
			k := idKind[path[i]]
			if k == idSlash {
				break
			}
			kinds |= k
		}
		if identifierOf(path[start:i], kinds) {
			dst = append(dst, path[copied:start]...)
			dst = append(dst, "{id}"...)
			copied = i
		}
		start = i + 1
	}
	return append(dst, path[copied:]...)
}

// The kinds of bytes of a path segment isIdentifier tells apart, as bits.
const (
	idDigit  = 1 << iota // 0-9
	idHex                // a-f, A-F
	idLetter             // g-z, G-Z
	idDash               // '-', '_'
	idOther              // any other byte: the segment is a name
	idSlash              // '/', which ends the segment
	idEnd                // '?' or '#' in a request target (idKindTarget): the path ends
)

// idKind is the kind of each byte.
var idKind = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= '0' && c <= '9':
			t[c] = idDigit
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			t[c] = idHex
		case c >= 'g' && c <= 'z', c >= 'G' && c <= 'Z':
			t[c] = idLetter
		case c == '-' || c == '_':
			t[c] = idDash
		case c == '/':
			t[c] = idSlash
		default:
			t[c] = idOther
		}
	}
	return t
}()

// idKindTarget is idKind for a request target, whose path ends at a '?' or
// '#'.
var idKindTarget = func() (t [256]uint8) {
	t = idKind
	t['?'], t['#'] = idEnd, idEnd
	return t
}()

// identifierOf is isIdentifier given the kinds of bytes seg holds (the
// union of their idKind).
func identifierOf(seg []byte, kinds uint8) bool {
	switch {
	case len(seg) == 0 || kinds&(idOther|idSlash) != 0:
		return false
	case len(seg) == 36:
		return isIdentifier(seg) // a UUID, perhaps: rare enough to count
	case kinds&idDigit == 0:
		return false // but for UUIDs, every identifier has a digit
	case kinds == idDigit:
		return true
	case len(seg) >= 8 && kinds&^(idDigit|idHex) == 0:
		return true
	case len(seg) >= 16 && kinds&(idHex|idLetter) != 0:
		return true
	}
	return false
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
