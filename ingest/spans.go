package ingest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// What the span formats (otlp, zipkin, jaeger) share: which spans are
// calls (--span-kind), the keys their groups are named by (--by, caller
// and callee by default), and the group names, made without allocating
// for a name already seen. Each format only says how one of its spans
// answers a key (spanFields).

// spanNamer is embedded in each span decoder.
type spanNamer struct {
	kind string // otlpKind*
	keys []string
	// intern holds the group names, bounded as a Grouper's.
	intern map[string]string
	buf    []byte
}

// newSpanNamer reads the span formats' options; what names the format in
// errors ("OTLP spans").
func newSpanNamer(name, what string, o Options) (spanNamer, error) {
	n := spanNamer{intern: map[string]string{}}
	switch k := strings.ToLower(strings.TrimSpace(o.SpanKind)); k {
	case "", otlpKindClient:
		n.kind = otlpKindClient
	case otlpKindServer, otlpKindAny:
		n.kind = k
	default:
		return n, fmt.Errorf("%s: --span-kind %q: want client, server or any", name, o.SpanKind)
	}
	by := o.By
	if len(by) == 0 {
		by = otlpDefaultBy
	}
	for _, k := range by {
		k = strings.ToLower(strings.TrimSpace(k))
		if !slices.Contains(SpanGroupKeys, k) {
			return n, fmt.Errorf("%s: cannot group by %q: %s group by %s", name, k, what, strings.Join(SpanGroupKeys, ", "))
		}
		n.keys = append(n.keys, k)
	}
	if len(o.RoutePatterns) > 0 {
		return n, fmt.Errorf("%s: --route-pattern does not apply to %s: their http.route is already a route", name, what)
	}
	return n, nil
}

// wants reports whether a span of a kind is a call, as --span-kind says.
func (n *spanNamer) wants(client, server bool) bool {
	switch n.kind {
	case otlpKindClient:
		return client
	case otlpKindServer:
		return server
	}
	return true
}

// spanFields is how one span of a format answers the group keys.
type spanFields interface {
	appendCaller(b []byte) []byte
	appendCallee(b []byte) []byte
	// attr is a string attribute or tag of the span, "" when absent.
	attr(key string) string
}

// group returns the span's group name: the values of n.keys joined by " ",
// "-" for a value the span lacks.
func (n *spanNamer) group(f spanFields, s *Sample, grpcCode int64) string {
	b := n.buf[:0]
	for i, k := range n.keys {
		if i > 0 {
			b = append(b, ' ')
		}
		start := len(b)
		switch k {
		case "caller":
			b = f.appendCaller(b)
		case "callee":
			b = f.appendCallee(b)
		case "route":
			if v := f.attr("http.route"); v != "" {
				b = append(b, v...)
			} else {
				b = append(b, f.attr("rpc.method")...)
			}
		case "method":
			if v := f.attr("http.request.method"); v != "" {
				b = append(b, v...)
			} else {
				b = append(b, f.attr("http.method")...)
			}
		case "status_class":
			if s.Status >= 100 && s.Status <= 999 {
				b = append(b, byte('0'+s.Status/100), 'x', 'x')
			}
		case "status":
			switch {
			case s.Status > 0:
				b = strconv.AppendInt(b, int64(s.Status), 10)
			case grpcCode >= 0:
				b = append(b, grpcCodeName(grpcCode)...)
			}
		}
		if len(b) == start {
			b = append(b, '-')
		}
	}
	n.buf = b
	return internName(n.intern, b)
}
