package target

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/names"
)

// PathMatch is what a group name says about the requests it holds. Group names
// are the values of the --by keys joined by spaces ("GET /users/{id}"); a
// route is normalized with {name} for a variable segment and a trailing *.
type PathMatch struct {
	CatchAll bool   // "all", "other", or a group without a path or method
	NotPath  bool   // the group name is neither a path nor a method
	Method   string // GET, POST, ... when the group has one
	Exact    string // the path, when it has no variable segment
	Prefix   string // the literal part before the first variable segment
	Regex    string // anchored RE2 for the whole path, when it has variable segments
}

// ParseMatch reads what a group's name says of its requests: its path and
// method as names.Key reads them (a path not valid UTF-8 is none: no
// config can match it).
func ParseMatch(group string) PathMatch {
	if group == "all" || group == "other" {
		return PathMatch{CatchAll: true}
	}
	k := names.ParseKey(group, nil)
	m := PathMatch{Method: k.Method()}
	path := k.Path()
	if !utf8.ValidString(path) {
		path = ""
	}
	if path == "" {
		m.Prefix = "/"
		m.CatchAll = m.Method == ""
		m.NotPath = m.Method == ""
		return m
	}
	segs := strings.Split(path, "/")
	variable := false
	var re strings.Builder
	re.WriteString("^")
	literal := ""
	for i, s := range segs {
		if i > 0 {
			re.WriteString("/")
			if !variable {
				literal += "/"
			}
		}
		switch {
		case len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}':
			re.WriteString("[^/]+")
			variable = true
		case s == "*" && i == len(segs)-1:
			re.WriteString(".*")
			variable = true
		default:
			re.WriteString(regexp.QuoteMeta(s))
			if !variable {
				literal += s
			}
		}
	}
	re.WriteString("$")
	if variable {
		m.Regex = re.String()
		m.Prefix = literal
	} else {
		m.Exact = path
		m.Prefix = path
	}
	return m
}

// before orders matches for targets that take the first that matches:
// exact paths, then patterns (longer literal prefixes first, a trailing
// wildcard after the others), then a method alone, then catch-alls.
func (m PathMatch) before(o PathMatch) bool {
	if a, b := m.rank(), o.rank(); a != b {
		return a < b
	}
	if m.Regex != "" {
		wm, wo := strings.HasSuffix(m.Regex, ".*$"), strings.HasSuffix(o.Regex, ".*$")
		if wm != wo {
			return !wm
		}
		return len(m.Prefix) > len(o.Prefix)
	}
	return false
}

func (m PathMatch) rank() int {
	switch {
	case m.Exact != "":
		return 0
	case m.Regex != "":
		return 1
	case !m.CatchAll:
		return 2
	}
	return 3
}

// describe says in a header line which requests a route matches.
func (m PathMatch) describe() string {
	switch {
	case m.NotPath:
		return "all requests (the group is not a request path: replace this catch-all match with one that selects its calls)"
	case m.CatchAll:
		return "all requests"
	}
	s := ""
	if m.Method != "" {
		s = m.Method + " "
	}
	switch {
	case m.Exact != "":
		return s + "path " + strconv.Quote(m.Exact)
	case m.Regex != "":
		return s + "path regex " + strconv.Quote(m.Regex)
	}
	return s + "any path"
}

// Durations, one function per syntax. All take whole milliseconds.

// ProtoDur is a proto3 JSON Duration (Envoy, gRPC): "0.800s".
func ProtoDur(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d.%03ds", ms/1000, ms%1000)
}

// UnitDur is one number and one unit, "800ms" or "2s": Istio, Spring Boot
// (resilience4j), nginx and HAProxy all read it.
func UnitDur(d time.Duration) string {
	ms := d.Milliseconds()
	if ms%1000 == 0 {
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

// GatewayDur is a Gateway API Duration, ^([0-9]{1,5}(h|m|s|ms)){1,4}$:
// whole units only, no decimals: 61.001s -> "1m1s1ms".
func GatewayDur(d time.Duration) string {
	ms := d.Milliseconds()
	if ms == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		ms   int64
		name string
	}{{3600_000, "h"}, {60_000, "m"}, {1000, "s"}, {1, "ms"}} {
		if n := ms / u.ms; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			ms -= n * u.ms
		}
	}
	return b.String()
}

// PySeconds is seconds as a Python float: 0.8, 61.001, 2.0.
func PySeconds(d time.Duration) string {
	ms := d.Milliseconds()
	s := fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return s
}

// GoDurLit is a Go expression for a duration: 800 * time.Millisecond.
func GoDurLit(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case ms%1000 != 0:
		return fmt.Sprintf("%d * time.Millisecond", ms)
	case ms == 1000:
		return "time.Second"
	}
	return fmt.Sprintf("%d * time.Second", ms/1000)
}

// Names, one function per rule.

// DNSLabel is a Kubernetes DNS-1123 label: lowercase letters, digits and
// '-', starting and ending with a letter or digit, at most maxLen
// characters; "" when s has no letter or digit.
func DNSLabel(s string, maxLen int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	out := b.String()
	if len(out) > maxLen {
		out = strings.TrimRight(out[:maxLen], "-")
	}
	return out
}

// Identifier is a Go, Python or protobuf identifier: ASCII letters, digits
// and '_', not starting with a digit; words are joined in CamelCase when
// camel is set ("/users/{id}" -> "UsersID" or "users_id").
func Identifier(s string, camel bool) string {
	var words []string
	var w strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			w.WriteRune(r)
			continue
		}
		if w.Len() > 0 {
			words = append(words, w.String())
			w.Reset()
		}
	}
	if w.Len() > 0 {
		words = append(words, w.String())
	}
	var out string
	if camel {
		for _, x := range words {
			switch strings.ToLower(x) {
			case "id", "url", "api", "http", "uuid":
				out += strings.ToUpper(x)
			default:
				out += strings.ToUpper(x[:1]) + x[1:]
			}
		}
	} else {
		out = strings.Join(words, "_")
	}
	if out == "" || (out[0] >= '0' && out[0] <= '9') {
		out = "G" + out
	}
	if len(out) > 60 {
		out = out[:60]
	}
	return out
}

// printable keeps a name readable in any config: control characters and
// invalid UTF-8 become '_', and very long names are cut.
func printable(s string, maxLen int) string {
	s = strings.ToValidUTF8(s, "_")
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) && r != ' ' {
			return '_'
		}
		return r
	}, s)
	if len(s) > maxLen {
		cut := maxLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// RouteName is a group's name as a route name: printable, and never empty.
func RouteName(group string) string {
	if n := printable(group, 200); strings.TrimSpace(n) != "" {
		return n
	}
	return "group"
}

// unique makes names distinct by adding -2, -3, ... (or _2 with sep "_"),
// in steps linear in the names (UniqueNames).
type unique struct {
	names UniqueNames
	sep   string
}

func NewUnique(sep string) *unique { return &unique{sep: sep} }

func (u *unique) Name(n string) string {
	return u.names.Name(n, func(i int) string { return fmt.Sprintf("%s%s%d", n, u.sep, i) })
}

// YAML.

var (
	plainYAML = regexp.MustCompile(`^[A-Za-z/][A-Za-z0-9._/-]*$|^([0-9]+(h|m|s|ms))+$|^[0-9]+\.[0-9]+s$`)
	yamlWords = map[string]bool{
		"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
		"true": true, "false": true, "null": true, "~": true,
	}
)

// YQ writes a string as a YAML scalar: plain where that cannot be read as
// anything else, else double-quoted with every control and bidirectional
// character escaped (escape.Quote): YAML refuses C1 characters raw.
func YQ(s string) string {
	if plainYAML.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return s
	}
	return JSONString(s)
}

// JSONString is s as a double-quoted string that JSON, YAML and Python all
// read back as s, with no control or bidirectional character raw, and <, >
// and & as themselves.
func JSONString(s string) string { return escape.Quote(s) }

// Ratio shows a fraction with up to three decimals: 0.1, 0.125, 0.001.
func Ratio(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// EnvoyNeverSent is what Envoy retries for a call that is not idempotent:
// failures after which the request never reached the upstream
// (router/retry_state_impl.cc: connect-failure is a pool or TCP failure,
// refused-stream an HTTP/2 REFUSED_STREAM, reset-before-request a reset
// before the request's headers were sent upstream; Envoy 1.31 or later).
const EnvoyNeverSent = "connect-failure,refused-stream,reset-before-request"

// IsStatus reports whether s is an HTTP status code.
func IsStatus(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 100 && n <= 599 && len(s) == 3
}

// MaxAttempts is the most attempts of any route.
func MaxAttempts(p *Plan) int {
	m := 1
	for _, rt := range p.Routes {
		m = max(m, rt.Attempts)
	}
	return m
}

// DNSSubdomain is a DNS-1123 subdomain (a Kubernetes metadata.name, a
// host name): dot-separated labels, at most 253 characters; "backend" when
// s has no letter or digit.
func DNSSubdomain(s string) string {
	var labels []string
	for _, l := range strings.Split(s, ".") {
		if l = DNSLabel(l, 63); l != "" {
			labels = append(labels, l)
		}
	}
	out := strings.Join(labels, ".")
	if len(out) > 253 {
		out = strings.TrimRight(out[:253], "-.")
	}
	if out == "" {
		return DefaultService
	}
	return out
}

type GRPCName struct {
	Service string `json:"service"`
	Method  string `json:"method,omitempty"`
}

// GRPCMethodPath reads a group that is a gRPC method path,
// "/package.Service/Method".
func GRPCMethodPath(group string) *GRPCName {
	parts := strings.Split(group, "/")
	if len(parts) != 3 || parts[0] != "" || parts[1] == "" || parts[2] == "" {
		return nil
	}
	if GrpcFullName(parts[1]) != parts[1] || Identifier(parts[2], false) != parts[2] {
		return nil
	}
	return &GRPCName{Service: parts[1], Method: parts[2]}
}

// GrpcFullName is a protobuf full name: identifiers joined by dots.
func GrpcFullName(s string) string {
	var parts []string
	for _, p := range strings.Split(s, ".") {
		if p != "" {
			parts = append(parts, Identifier(p, false))
		}
	}
	if len(parts) == 0 {
		return DefaultService
	}
	return strings.Join(parts, ".")
}

// GatewayPath is the path match of a route in the types of the core
// conformance level (Exact and PathPrefix): a route with variable segments
// matches the prefix before the first one, which is broader than the group.
// Characters the CRD refuses are percent-encoded.
func GatewayPath(m PathMatch) (typ, value, why string) {
	switch {
	case m.Exact != "":
		typ, value = "Exact", m.Exact
	case m.Regex != "":
		typ, value = "PathPrefix", strings.TrimSuffix(m.Prefix, "/")
		why = "PathPrefix " + value + " is broader than the group's path: RegularExpression matching is implementation-specific"
	default:
		return "PathPrefix", "/", ""
	}
	value = gatewayEncode(value)
	if value == "" {
		value = "/"
	}
	if len(value) > gatewayMaxPath {
		cut := gatewayMaxPath
		for cut > 0 && value[cut-1] != '/' {
			cut--
		}
		typ, value = "PathPrefix", strings.TrimSuffix(value[:cut], "/")
		if value == "" {
			value = "/"
		}
		why = "the path is longer than the 1024 characters the CRD accepts: PathPrefix of its first segments"
	}
	return typ, value, why
}

// gatewayMaxPath is the longest path value the CRD accepts.
const gatewayMaxPath = 1024

// gatewayEncode makes a path acceptable to the HTTPRoute CRD: only
// [-A-Za-z0-9/._~!$&'()*+,;=:@] and %XX; no "//", no "." or ".." segment.
func gatewayEncode(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			strings.IndexByte("-/._~!$&'()*+,;=:@", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	segs := strings.Split(b.String(), "/")
	out := segs[:0]
	for i, s := range segs {
		switch {
		case s == "" && i > 0 && i < len(segs)-1:
			continue // "//"
		case s == ".":
			s = "%2E"
		case s == "..":
			s = "%2E%2E"
		}
		out = append(out, s)
	}
	return strings.Join(out, "/")
}
