package ingest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
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
		return n, usage.About(usage.SpanKind, fmt.Errorf("%s: %s %q: want client, server or any", name, usage.SpanKind, o.SpanKind))
	}
	by := o.By
	if len(by) == 0 {
		by = otlpDefaultBy
	}
	for _, k := range by {
		k = strings.TrimSpace(k)
		if attr, ok := strings.CutPrefix(k, AttrKeyPrefix); ok {
			if attr == "" {
				return n, usage.Errorf("%s: cannot group by %q: name the attribute, as in attr:k8s.namespace.name", name, k)
			}
			n.keys = append(n.keys, k)
			continue
		}
		k = strings.ToLower(k)
		if !slices.Contains(SpanGroupKeys, k) {
			return n, usage.Errorf("%s: cannot group by %q: %s group by %s, or attr:NAME for any attribute", name, k, what, strings.Join(SpanGroupKeys, ", "))
		}
		n.keys = append(n.keys, k)
	}
	if len(o.RoutePatterns) > 0 {
		return n, usage.About(usage.RoutePattern, fmt.Errorf("%s: %s does not apply to %s: their http.route is already a route", name, usage.RoutePattern, what))
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

// AttrKeyPrefix starts a group key that names an attribute (--by
// attr:k8s.namespace.name): the span's, else its resource's or process's.
const AttrKeyPrefix = "attr:"

// spanFields is how one span of a format answers the group keys.
type spanFields interface {
	appendCaller(b []byte) []byte
	appendCallee(b []byte) []byte
	// attr is an attribute or tag of the span as text, "" when absent.
	attr(key string) string
}

// group returns the span's group name: the values of n.keys joined by " ",
// "-" for a value the span lacks, a value "-" or one with a space or a
// quote quoted (names.Value), so that two different lists never meet.
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
		default: // attr:NAME
			b = append(b, f.attr(k[len(AttrKeyPrefix):])...)
		}
		b = names.FinishValue(b, start)
	}
	n.buf = b
	return internName(n.intern, b)
}

// spanMicros reads a span's start and duration given in microseconds
// (Zipkin, Jaeger): the start after the epoch and before 2262 (named
// startField in errors), the duration whole and not negative.
func spanMicros(startField string, start, duration *json.Number) (ts, us int64, fe *FieldError) {
	if start == nil {
		return 0, 0, &FieldError{Field: startField, Value: "", Reason: "is not set: the span has no start"}
	}
	var err error
	ts, err = strconv.ParseInt(start.String(), 10, 64)
	switch {
	case err != nil:
		return 0, 0, &FieldError{Field: startField, Value: start.String(), Reason: "is not a whole number of microseconds"}
	case ts <= 0:
		return 0, 0, &FieldError{Field: startField, Value: start.String(), Reason: "is not after the epoch: the span has no start"}
	case ts > math.MaxInt64/1000:
		return 0, 0, &FieldError{Field: startField, Value: start.String(), Reason: "is past the year 2262"}
	}
	if duration == nil {
		return 0, 0, &FieldError{Field: "duration", Value: "", Reason: "is not set: an unfinished span"}
	}
	us, err = strconv.ParseInt(duration.String(), 10, 64)
	switch {
	case err != nil:
		return 0, 0, &FieldError{Field: "duration", Value: duration.String(), Reason: "is not a whole number of microseconds"}
	case us < 0:
		return 0, 0, &FieldError{Field: "duration", Value: duration.String(), Reason: "is negative"}
	case us > math.MaxInt64/1000:
		return 0, 0, &FieldError{Field: "duration", Value: duration.String(), Reason: "is too long"}
	}
	return ts, us, nil
}

// spanStatus sets the status of a span's sample, as every span format
// reads it: the HTTP status when the span has one, for the status rule to
// read as for access logs; else the gRPC code: OK counts, CANCELLED (the
// caller gave up) and DEADLINE_EXCEEDED (the deadline ran out) are
// censored at the span's duration, any other code is excluded by its
// name; else a span marked failed is excluded as "error". Each source is
// asked only when the ones before it have nothing. It returns the gRPC
// code, -1 without one.
func spanStatus(s *Sample, httpCode, grpcCode func() (int64, bool), failed func() bool) (int64, *FieldError) {
	if code, ok := httpCode(); ok {
		if code < 100 || code > 999 {
			return -1, &FieldError{Field: "http.response.status_code", Value: strconv.FormatInt(code, 10), Reason: reasonStatus}
		}
		s.Status = int(code)
		return -1, nil
	}
	if code, ok := grpcCode(); ok {
		switch code {
		case 0: // OK
		case 1, 4: // CANCELLED, DEADLINE_EXCEEDED
			s.Censored = true
		default:
			s.Excluded = excludedGRPC + grpcCodeName(code)
		}
		return code, nil
	}
	if failed() {
		s.Excluded = ExcludedSpanError
	}
	return -1, nil
}
