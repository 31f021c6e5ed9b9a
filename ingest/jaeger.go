package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Jaeger's JSON traces, as its query service's GET /api/traces (and
// /api/traces/{id}) answers and as Jaeger UI's "Download JSON" saves
// them (Jaeger's UI model, model/json): an object whose data is an array
// of traces, each with its spans and the processes (services) that made
// them,
//
//	{"data":[{"traceID":"5b8efff798038103d269b633813fc60c","spans":[
//	  {"traceID":"5b8efff798038103d269b633813fc60c","spanID":"eee19b7ec3c1b174","operationName":"GET",
//	   "references":[{"refType":"CHILD_OF","traceID":"5b8efff798038103d269b633813fc60c","spanID":"eee19b7ec3c1b173"}],
//	   "startTime":1544712660000000,"duration":250000,
//	   "tags":[{"key":"span.kind","type":"string","value":"client"},{"key":"http.status_code","type":"int64","value":200}],
//	   "processID":"p1"}],
//	  "processes":{"p1":{"serviceName":"frontend","tags":[]}}}],
//	 "total":0,"limit":0,"offset":0,"errors":null}
//
// compact or indented, and such objects one after the other.
//
// As zipkin's, the decoder reads its input as a stream through a 64 KiB
// buffer, tracking the top-level object itself: it passes over the keys
// other than data, and cuts each trace of data out by its braces (minding
// strings and escapes), counting the lines; encoding/json decodes that
// one trace. Memory is the buffer, one trace (at most 16 MiB: a longer
// one is one bad record) and the group names. A trace that is not JSON is
// one bad record; bytes that are no part of a response are passed over to
// the end of their line.
//
// One span is one sample, mapped as otlp maps an OpenTelemetry span
// (Jaeger's tags are OpenTelemetry's attributes, typed: a tag's value may
// be a string or a number, both read):
//
//   - latency: duration, in microseconds; a span without one, or with a
//     negative one, or without startTime, or whose ids are not hex
//     (traceID 32 or 16 digits, spanID 16), is a bad record (*ParseError);
//   - time: startTime, in microseconds since the epoch;
//   - kinds: client spans (the tag span.kind) unless --span-kind says
//     server or any (a span without span.kind is an internal one);
//   - status: the tag http.response.status_code (or http.status_code),
//     read by the status rule; else rpc.grpc.status_code: OK counts,
//     DEADLINE_EXCEEDED and CANCELLED are censored, any other is excluded
//     as "grpc NAME"; else a span whose error tag is true, or whose
//     otel.status_code is ERROR, is excluded as "error".
//
// Group keys (--by) are otlp's (SpanGroupKeys): caller (the serviceName
// of the span's process), callee (the tag peer.service, else
// server.address with :server.port, else net.peer.name with
// :net.peer.port, else rpc.service, else db.system), route (http.route,
// else rpc.method), method (http.request.method, else http.method),
// status_class, status. Without --by: caller and callee.

// maxJaegerTrace is the largest trace object the decoder reads.
const maxJaegerTrace = 16 << 20

// jaegerTrace is the part of a trace of Jaeger's UI model the decoder
// reads.
type jaegerTrace struct {
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID      string            `json:"traceID"`
	SpanID       string            `json:"spanID"`
	ParentSpanID string            `json:"parentSpanID"` // deprecated: references
	References   []jaegerReference `json:"references"`
	StartTime    *json.Number      `json:"startTime"`
	Duration     *json.Number      `json:"duration"`
	Tags         []jaegerTag       `json:"tags"`
	ProcessID    string            `json:"processID"`
	Process      *jaegerProcess    `json:"process"`
}

type jaegerReference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerTag struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"` // the process's, as OTLP's resource attributes
}

// jaegerDecoder reads Jaeger traces from a stream (see the comment at the
// top).
type jaegerDecoder struct {
	br    *bufio.Reader
	name  string
	line  int // the line of the next byte
	state int // jaegerTop, jaegerObject or jaegerData
	spanNamer
	fields jaegerFields // the span group names are made of
	obj    []byte       // the trace being read
	tr     jaegerTrace
	lines  []int // the line each of tr.Spans starts on
	next   int   // the next of tr.Spans to map
	tags   map[string]string
	start  bool // the input's first byte is next (a BOM is skipped)
}

// Where the decoder is in a response.
const (
	jaegerTop    = iota // between responses
	jaegerObject        // in a response, before a key
	jaegerData          // in its data array, before a trace
)

func newJaegerDecoder(r io.Reader, name string, o Options) (Decoder, error) {
	n, err := newSpanNamer(name, "Jaeger spans", o)
	if err != nil {
		return nil, err
	}
	return &jaegerDecoder{br: bufio.NewReaderSize(r, 64<<10), name: name, line: 1, start: true,
		tags: map[string]string{}, spanNamer: n}, nil
}

func (d *jaegerDecoder) Next() (Sample, error) {
	for {
		for d.next < len(d.tr.Spans) {
			i := d.next
			d.next++
			sp := &d.tr.Spans[i]
			d.tagMap(sp)
			if k := d.tags["span.kind"]; !d.wants(k == "client", k == "server") {
				continue
			}
			var s Sample
			if fe := d.sample(&s, sp); fe != nil {
				return Sample{}, &ParseError{File: d.name, Line: d.lines[i], Field: fe.Field, Value: displayValue(fe.Value), Reason: fe.Reason}
			}
			return s, nil
		}
		if err := d.nextTrace(); err != nil {
			return Sample{}, err
		}
	}
}

// nextTrace reads the next trace into d.tr. A trace that is not JSON, and
// bytes that are no part of a response, are a *ParseError; the end of the
// input is io.EOF.
func (d *jaegerDecoder) nextTrace() error {
	d.tr.Spans, d.lines, d.next = d.tr.Spans[:0], d.lines[:0], 0
	if d.start {
		d.start = false
		if b, err := d.br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
			_, _ = d.br.Discard(len(utf8BOM))
		}
	}
	for {
		c, err := d.br.ReadByte()
		if err == io.EOF && d.state != jaegerTop {
			d.state = jaegerTop
			return &ParseError{File: d.name, Line: d.line, Reason: "the response is cut off: the input ends before its closing }"}
		}
		if err != nil {
			return err
		}
		switch {
		case c == '\n':
			d.line++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			continue
		}
		switch d.state {
		case jaegerTop:
			if c == '{' {
				d.state = jaegerObject
				continue
			}
		case jaegerObject:
			switch c {
			case ',':
				continue
			case '}':
				d.state = jaegerTop
				continue
			case '"':
				key, err := d.readKey()
				if err != nil {
					return err
				}
				if key == "data" && d.peekNonSpace() == '[' {
					_, _ = d.br.ReadByte()
					d.state = jaegerData
					continue
				}
				if err := d.readObject(false); err != nil {
					return err
				}
				continue
			}
		case jaegerData:
			switch c {
			case ',':
				continue
			case ']':
				d.state = jaegerObject
				continue
			case '{':
				line := d.line
				if err := d.readTrace(line); err != nil {
					return err
				}
				return nil
			}
		}
		_ = d.br.UnreadByte()
		rest, _ := d.br.Peek(maxValueLen + 1)
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i]
		}
		return d.skipLine(string(bytes.TrimSpace(rest)), "is not part of a Jaeger response")
	}
}

// readKey reads a key whose opening quote was just read, and the colon
// after it.
func (d *jaegerDecoder) readKey() (string, error) {
	var b []byte
	escaped := false
	for {
		c, err := d.br.ReadByte()
		if err != nil {
			return "", d.cutOff(err)
		}
		if c == '\n' {
			d.line++
		}
		if c == '"' && !escaped {
			break
		}
		escaped = c == '\\' && !escaped
		if len(b) < maxValueLen {
			b = append(b, c)
		}
	}
	if c := d.peekNonSpace(); c != ':' {
		return "", d.skipLine(string(b), "is a key without a value")
	}
	_, _ = d.br.ReadByte()
	return string(b), nil
}

// peekNonSpace passes over white space and returns the next byte, unread
// (0 at the end of the input).
func (d *jaegerDecoder) peekNonSpace() byte {
	for {
		b, err := d.br.Peek(1)
		if err != nil {
			return 0
		}
		switch b[0] {
		case '\n':
			d.line++
		case ' ', '\t', '\r':
		default:
			return b[0]
		}
		_, _ = d.br.Discard(1)
	}
}

// cutOff is a read error, or the end of the input inside a value as a
// *ParseError.
func (d *jaegerDecoder) cutOff(err error) error {
	if err == io.EOF {
		d.state = jaegerTop
		return &ParseError{File: d.name, Line: d.line, Reason: "the response is cut off: the input ends inside a value"}
	}
	return err
}

// skipLine passes over the rest of the current line and returns it as a
// bad record.
func (d *jaegerDecoder) skipLine(value, reason string) error {
	pe := &ParseError{File: d.name, Line: d.line, Reason: fmt.Sprintf("%q %s", displayValue(value), reason)}
	d.state = jaegerTop
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

// readObject reads one JSON value: with keep, an object whose '{' was
// just read, into d.obj (up to maxJaegerTrace, beyond which it reports
// long); without, any value, passed over. It tracks brackets, strings and
// escapes and counts the lines; the value's syntax is encoding/json's to
// check.
func (d *jaegerDecoder) readObject(keep bool) error {
	_, err := d.scanValue(keep)
	return err
}

func (d *jaegerDecoder) scanValue(keep bool) (long bool, err error) {
	depth := 0
	if keep {
		d.obj = append(d.obj[:0], '{')
		depth = 1
	}
	inString, escaped := false, false
	for {
		c, err := d.br.ReadByte()
		if err != nil {
			return false, d.cutOff(err)
		}
		if !keep && depth == 0 && !inString && (c == ',' || c == '}' || c == ']') {
			_ = d.br.UnreadByte() // the end of a scalar
			return false, nil
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
		if keep {
			if len(d.obj) < maxJaegerTrace {
				d.obj = append(d.obj, c)
			} else {
				long = true
			}
		}
		if depth == 0 && !inString && (c == '}' || c == ']' || c == '"') {
			return long, nil
		}
	}
}

// readTrace reads the trace whose '{' was just read, on line, and decodes
// it into d.tr, noting the line each span starts on.
func (d *jaegerDecoder) readTrace(line int) error {
	long, err := d.scanValue(true)
	if err != nil {
		return err
	}
	if long {
		return &ParseError{File: d.name, Line: line, Reason: "trace is longer than 16 MiB"}
	}
	d.tr.Processes = nil
	if err := d.decodeTrace(); err != nil {
		d.tr.Spans, d.lines = d.tr.Spans[:0], d.lines[:0]
		return d.jsonError(line, err)
	}
	prev := 0 // the offsets rise: count each line once
	for i, off := range d.lines {
		line += bytes.Count(d.obj[prev:off], []byte{'\n'})
		d.lines[i], prev = line, off
	}
	return nil
}

// decodeTrace decodes d.obj into d.tr, its spans one by one, and sets
// d.lines to the offset of each span.
func (d *jaegerDecoder) decodeTrace() error {
	dec := json.NewDecoder(bytes.NewReader(d.obj))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case "spans":
			if t, err := dec.Token(); err != nil {
				return err
			} else if t == nil {
				continue
			} else if t != json.Delim('[') {
				return errors.New("spans is not an array")
			}
			for dec.More() {
				off := int(dec.InputOffset())
				for off < len(d.obj) && bytes.IndexByte([]byte(" \t\r\n,"), d.obj[off]) >= 0 {
					off++
				}
				d.tr.Spans = append(d.tr.Spans, jaegerSpan{})
				if err := dec.Decode(&d.tr.Spans[len(d.tr.Spans)-1]); err != nil {
					return err
				}
				d.lines = append(d.lines, off)
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
		case "processes":
			if err := dec.Decode(&d.tr.Processes); err != nil {
				return err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	_, err := dec.Token()
	return err
}

// jsonError is encoding/json's complaint about a trace as a *ParseError.
func (d *jaegerDecoder) jsonError(line int, err error) *ParseError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "trace"
		}
		return &ParseError{File: d.name, Line: line, Field: field, Value: te.Value, Reason: "is not of the type Jaeger's model says"}
	}
	return &ParseError{File: d.name, Line: line, Reason: "is not a Jaeger trace: " + displayValue(strings.TrimPrefix(err.Error(), "json: "))}
}

// tagMap fills d.tags with a span's tags, their values as strings (a
// string's own, a number's or a bool's JSON text).
func (d *jaegerDecoder) tagMap(sp *jaegerSpan) {
	clear(d.tags)
	for _, t := range sp.Tags {
		d.tags[t.Key] = jaegerTagValue(t.Value)
	}
}

func jaegerTagValue(v json.RawMessage) string {
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	return string(v)
}

// sample maps one span, whose tags are in d.tags, into s (see the comment
// at the top); a bad span is a *FieldError.
func (d *jaegerDecoder) sample(s *Sample, sp *jaegerSpan) *FieldError {
	ts, us, fe := jaegerTimes(sp)
	if fe != nil {
		return fe
	}
	s.Latency = time.Duration(us) * time.Microsecond
	s.Time = time.UnixMicro(ts).UTC()

	tags := d.tags
	grpcCode, fe := spanStatus(s,
		func() (int64, bool) { return tagInt(tags, "http.response.status_code", "http.status_code") },
		func() (int64, bool) { return tagInt(tags, "rpc.grpc.status_code") },
		func() bool { return tags["error"] == "true" || tags["otel.status_code"] == "ERROR" })
	if fe != nil {
		return fe
	}
	if d.keys != nil {
		d.fields = jaegerFields{d: d, sp: sp}
		s.Group = d.group(&d.fields, s, grpcCode)
	}
	return nil
}

// jaegerParent returns a span's parent: the spanID of its CHILD_OF
// reference, else its deprecated parentSpanID; "" for a root.
func jaegerParent(sp *jaegerSpan) string {
	for _, r := range sp.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return sp.ParentSpanID
}

// jaegerTimes checks a span's ids and returns its startTime and duration,
// in microseconds; a span without them, or with ids that are not hex, is
// a bad one.
func jaegerTimes(sp *jaegerSpan) (ts, us int64, fe *FieldError) {
	if n := len(sp.TraceID); n != 16 && n != 32 || !isHex(sp.TraceID) {
		return 0, 0, &FieldError{Field: "traceID", Value: sp.TraceID, Reason: "is not an id of 32 or 16 hex digits"}
	}
	if len(sp.SpanID) != 16 || !isHex(sp.SpanID) {
		return 0, 0, &FieldError{Field: "spanID", Value: sp.SpanID, Reason: "is not an id of 16 hex digits"}
	}
	if p := jaegerParent(sp); p != "" && (len(p) != 16 || !isHex(p)) {
		return 0, 0, &FieldError{Field: "references.spanID", Value: p, Reason: "is not an id of 16 hex digits"}
	}
	return spanMicros("startTime", sp.StartTime, sp.Duration)
}

// appendCaller appends the serviceName of a span's process.
func (d *jaegerDecoder) appendCaller(b []byte, sp *jaegerSpan) []byte {
	if p, ok := d.tr.Processes[sp.ProcessID]; ok {
		return append(b, p.ServiceName...)
	}
	if sp.Process != nil {
		return append(b, sp.Process.ServiceName...)
	}
	return b
}

// jaegerFields is a Jaeger span, whose tags are in d.tags, as its group
// name reads it.
type jaegerFields struct {
	d  *jaegerDecoder
	sp *jaegerSpan
}

func (f *jaegerFields) appendCaller(b []byte) []byte { return f.d.appendCaller(b, f.sp) }
func (f *jaegerFields) appendCallee(b []byte) []byte { return appendJaegerCallee(b, f.d.tags) }

// attr is a tag of the span, else of its process (--by attr:NAME reads a
// resource attribute such as k8s.namespace.name there).
func (f *jaegerFields) attr(key string) string {
	if v, ok := f.d.tags[key]; ok {
		return v
	}
	p, ok := f.d.tr.Processes[f.sp.ProcessID]
	if !ok && f.sp.Process != nil {
		p = *f.sp.Process
	}
	for _, t := range p.Tags {
		if t.Key == key {
			return jaegerTagValue(t.Value)
		}
	}
	return ""
}

// appendJaegerCallee appends the service a span called (see the comment
// at the top); nothing when the span names none.
func appendJaegerCallee(b []byte, tags map[string]string) []byte {
	if v := tags["peer.service"]; v != "" {
		return append(b, v...)
	}
	for _, hp := range [][2]string{{"server.address", "server.port"}, {"net.peer.name", "net.peer.port"}} {
		if v := tags[hp[0]]; v != "" {
			b = append(b, v...)
			if port, ok := tagInt(tags, hp[1]); ok {
				b = append(b, ':')
				b = strconv.AppendInt(b, port, 10)
			}
			return b
		}
	}
	if v := tags["rpc.service"]; v != "" {
		return append(b, v...)
	}
	return append(b, tags["db.system"]...)
}

// sniffJaeger accepts a line that starts with {"data":[ (white space
// allowed between) whose first trace has spans and processes. The trace
// may be cut by the sniffing window: then spans, before the cut, is
// enough.
func sniffJaeger(line []byte) bool {
	line = bytes.TrimLeft(bytes.TrimPrefix(line, utf8BOM), " \t\r\n")
	for _, tok := range []string{"{", `"data"`, ":", "[", "{"} {
		rest, ok := bytes.CutPrefix(line, []byte(tok))
		if !ok {
			return false
		}
		line = bytes.TrimLeft(rest, " \t\r\n")
	}
	dec := json.NewDecoder(io.MultiReader(bytes.NewReader([]byte{'{'}), bytes.NewReader(line)))
	if _, err := dec.Token(); err != nil {
		return false
	}
	has := map[string]bool{}
	cut := false
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			cut = err != nil
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			has[key], cut = true, true // a value cut by the window: its key counts
			break
		}
		has[key] = true
	}
	return has["spans"] && (has["processes"] || cut)
}

func init() {
	Register(Format{
		Name:     "jaeger",
		Edges:    true,
		Priority: 55, // see Format.Priority
		Summary:  "Jaeger JSON traces (/api/traces responses, the UI's Download JSON): a client span's duration; {span-kind}",
		Sniff:    sniffJaeger,
		Flags:    []Flag{spanKindFlag},
		New:      newJaegerDecoder,
	})
}
