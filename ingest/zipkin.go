package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Zipkin v2 spans in JSON (zipkin2-api.yaml's Span), as a Zipkin server
// takes them on POST /api/v2/spans and as exporters (the OpenTelemetry Go
// SDK's go.opentelemetry.io/otel/exporters/zipkin, Brave) send them: an
// array of spans,
//
//	[{"traceId":"5b8efff798038103d269b633813fc60c","id":"eee19b7ec3c1b174","parentId":"eee19b7ec3c1b173",
//	  "name":"get","kind":"CLIENT","timestamp":1544712660000000,"duration":250000,
//	  "localEndpoint":{"serviceName":"frontend"},"remoteEndpoint":{"serviceName":"cart"},
//	  "tags":{"http.route":"/cart/{id}","http.response.status_code":"200"}}]
//
// also an array of such arrays (GET /api/v2/traces), arrays one after the
// other (request bodies appended to one file), and one span object per
// line (newline-delimited spans).
//
// A JSON array is not line-delimited, so the decoder is not a LineParser
// and cannot be cut into chunks: it reads its input as a stream, byte by
// byte through a 64 KiB buffer, tracks the brackets and commas between
// spans itself and cuts out each span object by its braces (minding
// strings and escapes), counting the lines as it goes; encoding/json
// decodes that one object. Memory is the buffer, one span (at most 1 MiB,
// as a line of any input; a longer one is skipped as a bad record) and the
// group names. encoding/json's Decoder, whose syntax errors are sticky,
// would end the input at its first bad byte; here a span that is not JSON
// is one bad record, and bytes that are neither a span nor an array are
// passed over to the end of their line.
//
// One span is one sample, mapped as otlp maps an OpenTelemetry span (the
// Zipkin exporter of the Go SDK turns attributes into tags as they are,
// stringified):
//
//   - latency: duration, in microseconds; a span without one (unfinished,
//     or of no duration, which Zipkin rounds up to 1), or with a negative
//     one, is a bad record (*ParseError); so is one without timestamp;
//   - time: timestamp, in microseconds since the epoch;
//   - kinds: CLIENT spans unless --span-kind says server or any (a span
//     without kind is an internal one);
//   - status: the tag http.response.status_code (or http.status_code),
//     read by the status rule; else rpc.grpc.status_code (or Brave's
//     grpc.status_code, a code's name): OK counts, DEADLINE_EXCEEDED and
//     CANCELLED are censored, any other is excluded as "grpc NAME"; else a
//     span with an error tag (any value, empty too: the exporter writes the
//     status description) or otel.status_code ERROR is excluded as "error".
//
// Group keys (--by) are otlp's (SpanGroupKeys): caller (localEndpoint's
// serviceName), callee (the tag peer.service, else server.address with
// :server.port, else remoteEndpoint's serviceName, else rpc.service, else
// db.system, else remoteEndpoint's ipv4 or ipv6 with :port), route
// (http.route, else rpc.method), method (http.request.method, else
// http.method), status_class, status. Without --by: caller and callee.

// maxZipkinSpan is the largest span object the decoder reads.
const maxZipkinSpan = maxLine

// zipkinSpan is the part of a Zipkin v2 span the decoder reads.
type zipkinSpan struct {
	TraceID        string            `json:"traceId"`
	ID             string            `json:"id"`
	ParentID       string            `json:"parentId"`
	Kind           string            `json:"kind"`
	Timestamp      *json.Number      `json:"timestamp"`
	Duration       *json.Number      `json:"duration"`
	LocalEndpoint  *zipkinEndpoint   `json:"localEndpoint"`
	RemoteEndpoint *zipkinEndpoint   `json:"remoteEndpoint"`
	Tags           map[string]string `json:"tags"`
}

type zipkinEndpoint struct {
	ServiceName string `json:"serviceName"`
	IPv4        string `json:"ipv4"`
	IPv6        string `json:"ipv6"`
	Port        int    `json:"port"`
}

// zipkinDecoder reads Zipkin spans from a stream (see the comment at the
// top).
type zipkinDecoder struct {
	br    *bufio.Reader
	name  string
	line  int // the line of the next byte
	depth int // arrays open
	spanNamer
	span  []byte // the span object being read
	sp    zipkinSpan
	start bool // the input's first byte is next (a BOM is skipped)
}

func newZipkinDecoder(r io.Reader, name string, o Options) (Decoder, error) {
	n, err := newSpanNamer(name, "Zipkin spans", o)
	if err != nil {
		return nil, err
	}
	return &zipkinDecoder{br: bufio.NewReaderSize(r, 64<<10), name: name, line: 1, start: true, spanNamer: n}, nil
}

func (d *zipkinDecoder) Next() (Sample, error) {
	for {
		line, err := d.nextSpan()
		if err != nil {
			return Sample{}, err
		}
		if !d.wants(d.sp.Kind == "CLIENT", d.sp.Kind == "SERVER") {
			continue
		}
		var s Sample
		if fe := d.sample(&s, &d.sp); fe != nil {
			return Sample{}, &ParseError{File: d.name, Line: line, Field: fe.Field, Value: displayValue(fe.Value), Reason: fe.Reason}
		}
		return s, nil
	}
}

// nextSpan reads the next span object into d.sp and returns the line it
// starts on. A span that is not JSON, and bytes that are neither a span
// nor an array, are a *ParseError; the end of the input is io.EOF.
func (d *zipkinDecoder) nextSpan() (int, error) {
	if d.start {
		d.start = false
		if b, err := d.br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
			_, _ = d.br.Discard(len(utf8BOM))
		}
	}
	for {
		c, err := d.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case '\n':
			d.line++
		case ' ', '\t', '\r', ',':
		case '[':
			d.depth++
		case ']':
			if d.depth == 0 {
				return 0, d.skipLine("]", "closes no array")
			}
			d.depth--
		case '{':
			line := d.line
			if err := d.readSpan(); err != nil {
				if pe := (*ParseError)(nil); errors.As(err, &pe) {
					pe.Line = line
				}
				return 0, err
			}
			return line, nil
		default:
			_ = d.br.UnreadByte()
			rest, _ := d.br.Peek(maxValueLen + 1)
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				rest = rest[:i]
			}
			return 0, d.skipLine(string(bytes.TrimSpace(rest)), "is not a Zipkin span or array of spans")
		}
	}
}

// skipLine passes over the rest of the current line and returns it as a
// bad record.
func (d *zipkinDecoder) skipLine(value, reason string) error {
	pe := &ParseError{File: d.name, Line: d.line, Reason: fmt.Sprintf("%q %s", displayValue(value), reason)}
	for {
		c, err := d.br.ReadByte()
		if err != nil {
			return pe // the read error, or EOF, comes with the next call
		}
		if c == '\n' {
			d.line++
			return pe
		}
	}
}

// readSpan reads the span object whose '{' was just read, to its '}', and
// unmarshals it into d.sp. A span that is not JSON is a *ParseError (its
// line set by the caller); a read error is returned as it is, and the end
// of the input inside the span as a *ParseError.
func (d *zipkinDecoder) readSpan() error {
	d.span = append(d.span[:0], '{')
	depth, inString, escaped, long := 1, false, false, false
	for depth > 0 {
		c, err := d.br.ReadByte()
		if err == io.EOF {
			return &ParseError{File: d.name, Reason: "the span is cut off: the input ends before its closing }"}
		}
		if err != nil {
			return err
		}
		if c == '\n' {
			d.line++
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
		if len(d.span) < maxZipkinSpan {
			d.span = append(d.span, c)
		} else {
			long = true
		}
	}
	if long {
		return &ParseError{File: d.name, Reason: "span is longer than 1 MiB"}
	}
	d.sp = zipkinSpan{}
	if err := json.Unmarshal(d.span, &d.sp); err != nil {
		return d.jsonError(err)
	}
	return nil
}

// jsonError is encoding/json's complaint about a span as a *ParseError.
func (d *zipkinDecoder) jsonError(err error) *ParseError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "span"
		}
		return &ParseError{File: d.name, Field: field, Value: te.Value, Reason: "is not a " + zipkinTypeName(te.Type.String())}
	}
	return &ParseError{File: d.name, Reason: "is not a Zipkin span: " + displayValue(strings.TrimPrefix(err.Error(), "json: "))}
}

func zipkinTypeName(t string) string {
	switch {
	case strings.Contains(t, "map"), strings.Contains(t, "Endpoint"), t == "ingest.zipkinSpan":
		return "JSON object"
	case strings.Contains(t, "Number"), t == "int":
		return "number"
	}
	return "string"
}

// sample maps one span into s (see the comment at the top); a bad span
// is a *FieldError.
func (d *zipkinDecoder) sample(s *Sample, sp *zipkinSpan) *FieldError {
	ts, us, fe := zipkinTimes(sp)
	if fe != nil {
		return fe
	}
	s.Latency = time.Duration(us) * time.Microsecond
	s.Time = time.UnixMicro(ts).UTC()

	tags := sp.Tags
	grpcCode, fe := spanStatus(s,
		func() (int64, bool) { return tagInt(tags, "http.response.status_code", "http.status_code") },
		func() (int64, bool) { return zipkinGRPCCode(tags) },
		func() bool { _, failed := tags["error"]; return failed || tags["otel.status_code"] == "ERROR" })
	if fe != nil {
		return fe
	}
	if d.keys != nil {
		s.Group = d.group(zipkinFields{sp}, s, grpcCode)
	}
	return nil
}

// zipkinTimes checks a span's ids and returns its timestamp and duration,
// in microseconds; a span without them, or with ids that are not hex, is
// a bad one.
func zipkinTimes(sp *zipkinSpan) (ts, us int64, fe *FieldError) {
	for _, id := range []struct {
		field, v string
		max      int
	}{{"traceId", sp.TraceID, 32}, {"id", sp.ID, 16}, {"parentId", sp.ParentID, 16}} {
		if len(id.v) > id.max || !isHex(id.v) {
			return 0, 0, &FieldError{Field: id.field, Value: id.v, Reason: fmt.Sprintf("is not an id of at most %d hex digits", id.max)}
		}
	}
	return spanMicros("timestamp", sp.Timestamp, sp.Duration)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// tagInt returns the integer value of the first of keys present whose
// value is an integer.
func tagInt(tags map[string]string, keys ...string) (int64, bool) {
	for _, k := range keys {
		if v, ok := tags[k]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// zipkinGRPCCode returns the gRPC status code of a span: rpc.grpc.status_code
// (OpenTelemetry's, a number), else grpc.status_code (Brave's, a code's name,
// set only when not OK).
func zipkinGRPCCode(tags map[string]string) (int64, bool) {
	if code, ok := tagInt(tags, "rpc.grpc.status_code", "grpc.status_code"); ok {
		return code, true
	}
	if v, ok := tags["grpc.status_code"]; ok {
		if i := slices.Index(grpcCodes[:], strings.ToUpper(strings.TrimSpace(v))); i >= 0 {
			return int64(i), true
		}
	}
	return 0, false
}

// zipkinFields is a Zipkin span as its group name reads it.
type zipkinFields struct{ sp *zipkinSpan }

func (f zipkinFields) appendCaller(b []byte) []byte {
	if f.sp.LocalEndpoint != nil {
		b = append(b, f.sp.LocalEndpoint.ServiceName...)
	}
	return b
}
func (f zipkinFields) appendCallee(b []byte) []byte { return appendZipkinCallee(b, f.sp) }
func (f zipkinFields) attr(key string) string       { return f.sp.Tags[key] }

// appendZipkinCallee appends the service a span called (see the comment
// at the top); nothing when the span names none.
func appendZipkinCallee(b []byte, sp *zipkinSpan) []byte {
	tags := sp.Tags
	if v := tags["peer.service"]; v != "" {
		return append(b, v...)
	}
	if v := tags["server.address"]; v != "" {
		b = append(b, v...)
		if port, ok := tagInt(tags, "server.port"); ok {
			b = append(b, ':')
			b = strconv.AppendInt(b, port, 10)
		}
		return b
	}
	re := sp.RemoteEndpoint
	if re != nil && re.ServiceName != "" {
		return append(b, re.ServiceName...)
	}
	if v := tags["rpc.service"]; v != "" {
		return append(b, v...)
	}
	if v := tags["db.system"]; v != "" {
		return append(b, v...)
	}
	if re != nil && (re.IPv4 != "" || re.IPv6 != "") {
		if re.IPv4 != "" {
			b = append(b, re.IPv4...)
		} else {
			b = append(b, '[')
			b = append(b, re.IPv6...)
			b = append(b, ']')
		}
		if re.Port > 0 {
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(re.Port), 10)
		}
	}
	return b
}

// sniffZipkin accepts a line that starts with [ (or [[) and whose first
// object has traceId, timestamp or duration, and localEndpoint or kind;
// or a line that is such an object with an id too (newline-delimited
// spans). The object may be cut by the sniffing window: its keys up to
// the cut are read.
func sniffZipkin(line []byte) bool {
	line = bytes.TrimLeft(bytes.TrimPrefix(line, utf8BOM), " \t\r\n")
	if len(line) == 0 || line[0] != '[' && line[0] != '{' {
		return false
	}
	array := line[0] == '['
	line = bytes.TrimLeft(line, "[ \t\r\n")
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil {
		return false
	}
	has := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			// A value cut by the window: its key counts.
			has[key] = true
			break
		}
		has[key] = true
	}
	return has["traceId"] && (has["timestamp"] || has["duration"]) && (has["localEndpoint"] || has["kind"]) &&
		(array || has["id"])
}

func init() {
	Register(Format{
		Name:     "zipkin",
		Edges:    true,
		Priority: 55, // see Format.Priority
		Summary:  "Zipkin v2 JSON spans (POST /api/v2/spans bodies, /api/v2/traces): a CLIENT span's duration; {span-kind}",
		Sniff:    sniffZipkin,
		Flags:    []Flag{spanKindFlag},
		New:      newZipkinDecoder,
	})
}
