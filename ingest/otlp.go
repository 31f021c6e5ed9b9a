package ingest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// OpenTelemetry spans as the OpenTelemetry Collector's file exporter
// writes them: ExportTraceServiceRequests, in either of its formats.
//
// format: json is OTLP/JSON, one request per line,
//
//	{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}}]},
//	  "scopeSpans":[{"scope":{...},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
//	  "name":"GET","kind":3,"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000",
//	  "attributes":[...],"status":{"code":2}}]}]}]}
//
// decoded with protojson. OTLP/JSON differs from protobuf's JSON mapping
// in the ids (the OTLP specification, "JSON Protobuf Encoding"): traceId,
// spanId and parentSpanId are hex, not base64; see fixOTLPIDs.
//
// format: proto is protobuf, each request preceded by its length in 4
// bytes, big-endian (otlpframe.go has the framing, the exporter's
// compression: zstd of each message, and the limits), decoded with
// proto.Unmarshal; its ids are bytes as they stand (checkOTLPIDs). The
// "line" of its errors is the message's number, from 1. Such a file is
// auto-detected by its first bytes (sniffOTLPProto); a file compressed
// whole (zstd, gzip) is decompressed by Open first, as any input is.
//
// Both are read by the protocol's own definition
// (go.opentelemetry.io/proto/otlp) and give the same samples.
//
// One span is one sample:
//
//   - latency: endTimeUnixNano - startTimeUnixNano; a span that ends before
//     it starts, or has no start, is a bad record (*ParseError);
//   - time: the start;
//   - kinds: CLIENT spans (a call as its caller saw it) unless --span-kind
//     says server or any; spans of other kinds are passed over, no samples;
//   - status: http.response.status_code (http.status_code, the old
//     convention's name), which the status rule reads as for access logs
//     (504 and 499 censored, 5xx excluded, 4xx counted); else
//     rpc.grpc.status_code: OK counts, DEADLINE_EXCEEDED and CANCELLED are
//     censored at the span's duration, any other code is excluded as
//     "grpc NAME"; else a span whose status is ERROR is excluded as "error".
//
// Group keys (--by): caller (the resource's service.name), callee
// (peer.service, else server.address with :server.port, else
// rpc.service, else db.system), route (http.route, else rpc.method),
// method (http.request.method), status_class, status (the HTTP code, or
// the gRPC code's name). Without --by the samples are grouped by caller
// and callee: a trace's calls are between services.

// Values of --span-kind.
const (
	otlpKindClient = "client"
	otlpKindServer = "server"
	otlpKindAny    = "any"
)

// Reasons for Sample.Excluded set by the otlp decoder.
const (
	ExcludedSpanError = "error"
	excludedGRPC      = "grpc "
)

// SpanGroupKeys are the keys spans can be grouped by (--by);
// otlpDefaultBy is the grouping without --by.
var (
	SpanGroupKeys = []string{"caller", "callee", "route", "method", "status_class", "status"}
	otlpGroupKeys = SpanGroupKeys
	otlpDefaultBy = []string{"caller", "callee"}
)

// grpcCodes are the names of gRPC's status codes (grpc/grpc
// doc/statuscodes.md), by code.
var grpcCodes = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// grpcCodeName returns the name of a gRPC status code, or its number.
func grpcCodeName(code int64) string {
	if code >= 0 && code < int64(len(grpcCodes)) {
		return grpcCodes[code]
	}
	return strconv.FormatInt(code, 10)
}

// otlpItem is one of the results of a line: a sample or a bad span.
type otlpItem struct {
	s   Sample
	err error
}

// otlpDecoder reads OTLP records, lines of OTLP/JSON or protobuf
// messages (otlpFrames); each record's spans become a queue of samples
// handed out one by one before the next record is read.
type otlpDecoder struct {
	frames *otlpFrames
	name   string
	line   int  // the record's number: its line, or its message's for protobuf
	proto  bool // the record is protobuf
	spanNamer
	fields otlpFields // the span group names are made of
	// res is the resource attributes of the spans eachSpan hands out.
	res   []*commonpb.KeyValue
	unm   protojson.UnmarshalOptions
	punm  proto.UnmarshalOptions
	req   coltracepb.ExportTraceServiceRequest
	queue []otlpItem
	next  int
}

func newOTLPDecoder(r io.Reader, name string, o Options) (Decoder, error) {
	n, err := newSpanNamer(name, "OTLP spans", o)
	if err != nil {
		return nil, err
	}
	return &otlpDecoder{
		frames:    newOTLPFrames(bufio.NewReaderSize(r, 64<<10), name),
		name:      name,
		unm:       protojson.UnmarshalOptions{DiscardUnknown: true},
		punm:      proto.UnmarshalOptions{DiscardUnknown: true},
		spanNamer: n,
	}, nil
}

func (d *otlpDecoder) Next() (Sample, error) {
	for d.next >= len(d.queue) {
		d.queue, d.next = d.queue[:0], 0
		rec, err := d.record()
		if err != nil {
			return Sample{}, err
		}
		if err := d.decodeRecord(rec); err != nil {
			return Sample{}, err
		}
	}
	it := d.queue[d.next]
	d.queue[d.next] = otlpItem{}
	d.next++
	return it.s, it.err
}

// record returns the next record, a non-blank line trimmed or a protobuf
// message, and sets d.line and d.proto to its number and encoding; a bad
// one is a *ParseError (see otlpFrames.next), the end of the input io.EOF.
func (d *otlpDecoder) record() ([]byte, error) {
	rec, line, proto, err := d.frames.next()
	d.line, d.proto = line, proto
	return rec, err
}

// decodeRecord fills the queue with the samples and bad spans of one
// record; one that is not an ExportTraceServiceRequest is one *ParseError.
func (d *otlpDecoder) decodeRecord(rec []byte) error {
	return d.eachSpan(rec, func(caller string, sp *tracepb.Span) {
		if k := sp.GetKind(); !d.wants(k == tracepb.Span_SPAN_KIND_CLIENT, k == tracepb.Span_SPAN_KIND_SERVER) {
			return
		}
		it := otlpItem{}
		if fe := d.sample(&it.s, caller, sp); fe != nil {
			it.err = &ParseError{File: d.name, Line: d.line, Field: fe.Field, Value: displayValue(fe.Value), Reason: fe.Reason}
		}
		d.queue = append(d.queue, it)
	}, func(bad *ParseError) {
		d.queue = append(d.queue, otlpItem{err: bad})
	})
}

// eachSpan unmarshals one record (d.proto says how) and calls fn with
// every span in it and the service.name of its resource, the caller; a
// record that is not an ExportTraceServiceRequest is one *ParseError. A
// request refused as a whole but whose structure holds (OTLP/JSON:
// resourceSpans, scopeSpans, spans are lists of objects; protobuf: the
// messages that hold the spans are well formed) is read again one span at
// a time (eachSpanApart, eachSpanApartProto): its good spans go to fn, each
// bad one to bad, so that one malformed span does not take the request's
// other spans with it. The spans' ids are as the unmarshalling left them
// (d.ids has not run).
func (d *otlpDecoder) eachSpan(rec []byte, fn func(caller string, sp *tracepb.Span), bad func(*ParseError)) error {
	d.req.Reset()
	if d.proto {
		if err := d.punm.Unmarshal(rec, &d.req); err != nil {
			whole := &ParseError{File: d.name, Line: d.line, Reason: "protobuf message is not an ExportTraceServiceRequest: " + protojsonReason(err)}
			return d.eachSpanApartProto(rec, whole, fn, bad)
		}
	} else if err := d.unm.Unmarshal(bytes.TrimPrefix(rec, utf8BOM), &d.req); err != nil {
		whole := &ParseError{File: d.name, Line: d.line, Reason: "is not an OTLP/JSON ExportTraceServiceRequest: " + protojsonReason(err)}
		return d.eachSpanApart(bytes.TrimPrefix(rec, utf8BOM), whole, fn, bad)
	}
	for _, rs := range d.req.GetResourceSpans() {
		d.res = rs.GetResource().GetAttributes()
		caller := attrString(d.res, "service.name")
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				fn(caller, sp)
			}
		}
	}
	return nil
}

// eachSpanApart reads an OTLP/JSON request one resource and one span at a
// time: a span protojson refuses, or one of a resource it refuses, is a
// bad span ("span 5 of the request", counting from 1 in the order of the
// request); the others go to fn. When the request's structure itself is
// wrong (not an object, resourceSpans not a list of objects...), nothing
// is read of it and whole is the error, as before; when every span reads,
// whole is one bad record beside them.
func (d *otlpDecoder) eachSpanApart(rec []byte, whole *ParseError, fn func(caller string, sp *tracepb.Span), bad func(*ParseError)) error {
	type resourceSpans struct {
		resource json.RawMessage
		spans    []json.RawMessage
	}
	var all []resourceSpans
	var req map[string]json.RawMessage
	if json.Unmarshal(rec, &req) != nil {
		return whole
	}
	rss, ok := jsonObjects(otlpField(req, "resourceSpans", "resource_spans"))
	if !ok {
		return whole
	}
	for _, rs := range rss {
		r := resourceSpans{resource: otlpField(rs, "resource", "resource")}
		sss, ok := jsonObjects(otlpField(rs, "scopeSpans", "scope_spans"))
		if !ok {
			return whole
		}
		for _, ss := range sss {
			var spans []json.RawMessage
			if raw := otlpField(ss, "spans", "spans"); !isJSONNull(raw) && json.Unmarshal(raw, &spans) != nil {
				return whole
			}
			r.spans = append(r.spans, spans...)
		}
		all = append(all, r)
	}
	n, nbad := 0, 0
	for _, r := range all {
		var res resourcepb.Resource
		var resErr error
		if !isJSONNull(r.resource) {
			resErr = d.unm.Unmarshal(r.resource, &res)
		}
		d.res = res.GetAttributes()
		caller := attrString(d.res, "service.name")
		for _, raw := range r.spans {
			n++
			why := ""
			sp := &tracepb.Span{}
			if resErr != nil {
				why = "its resource is not an OTLP/JSON resource: " + protojsonReason(resErr)
			} else if err := d.unm.Unmarshal(raw, sp); err != nil {
				why = protojsonReason(err)
			}
			if why != "" {
				nbad++
				bad(&ParseError{File: d.name, Line: d.line, Reason: fmt.Sprintf("span %d of the request is not an OTLP/JSON span: %s", n, why)})
				continue
			}
			fn(caller, sp)
		}
	}
	if nbad == 0 {
		// Refused for something outside its spans (a scope, a key given
		// twice): the spans are read, and the request still counts bad
		// once.
		bad(whole)
	}
	return nil
}

// The field numbers of the messages that hold spans, from
// opentelemetry-proto: opentelemetry/proto/collector/trace/v1/
// trace_service.proto (ExportTraceServiceRequest.resource_spans = 1) and
// opentelemetry/proto/trace/v1/trace.proto (ResourceSpans.resource = 1,
// ResourceSpans.scope_spans = 2, ScopeSpans.spans = 2).
const (
	pbRequestResourceSpans protowire.Number = 1
	pbResourceSpansRes     protowire.Number = 1
	pbResourceSpansScopes  protowire.Number = 2
	pbScopeSpansSpans      protowire.Number = 2
)

// eachSpanApartProto is eachSpanApart for a protobuf message that proto
// refuses as a whole: it is walked with protowire down to its spans, each
// span unmarshalled alone, so that a malformed one ("span 5 of the
// request", counting from 1 in the order of the message) is one bad span
// and the others go to fn. A message whose walk fails (a length past its
// end, a bad tag) is whole, nothing of it read; when every span reads,
// whole is one bad record beside them. A resource given more than once is
// merged, as proto does.
func (d *otlpDecoder) eachSpanApartProto(rec []byte, whole *ParseError, fn func(caller string, sp *tracepb.Span), bad func(*ParseError)) error {
	type resourceSpans struct {
		resources [][]byte
		spans     [][]byte
	}
	var all []resourceSpans
	ok := protoMessageFields(rec, func(num protowire.Number, rs []byte) bool {
		if num != pbRequestResourceSpans {
			return true
		}
		var r resourceSpans
		ok := protoMessageFields(rs, func(num protowire.Number, v []byte) bool {
			switch num {
			case pbResourceSpansRes:
				r.resources = append(r.resources, v)
			case pbResourceSpansScopes:
				return protoMessageFields(v, func(num protowire.Number, sp []byte) bool {
					if num == pbScopeSpansSpans {
						r.spans = append(r.spans, sp)
					}
					return true
				})
			}
			return true
		})
		all = append(all, r)
		return ok
	})
	if !ok {
		return whole
	}
	merge := proto.UnmarshalOptions{DiscardUnknown: true, Merge: true}
	n, nbad := 0, 0
	for _, r := range all {
		var res resourcepb.Resource
		var resErr error
		for _, b := range r.resources {
			if resErr == nil {
				resErr = merge.Unmarshal(b, &res)
			}
		}
		d.res = res.GetAttributes()
		caller := attrString(d.res, "service.name")
		for _, raw := range r.spans {
			n++
			why := ""
			sp := &tracepb.Span{}
			if resErr != nil {
				why = "its resource is not an OTLP resource: " + protojsonReason(resErr)
			} else if err := d.punm.Unmarshal(raw, sp); err != nil {
				why = protojsonReason(err)
			}
			if why != "" {
				nbad++
				bad(&ParseError{File: d.name, Line: d.line, Reason: fmt.Sprintf("span %d of the request is not an OTLP protobuf span: %s", n, why)})
				continue
			}
			fn(caller, sp)
		}
	}
	if nbad == 0 {
		bad(whole)
	}
	return nil
}

// protoMessageFields calls fn with the number and the bytes of each
// length-delimited field of the protobuf message b, in order, and skips
// the others; it returns false when b is not well formed or fn returns
// false.
func protoMessageFields(b []byte, fn func(num protowire.Number, v []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 || !fn(num, v) {
			return false
		}
		b = b[m:]
	}
	return true
}

// otlpField is the value of key in m, under its JSON name or its proto
// name (protojson takes either); nil when absent.
func otlpField(m map[string]json.RawMessage, key, alt string) json.RawMessage {
	if v, ok := m[key]; ok {
		return v
	}
	return m[alt]
}

// jsonObjects reads raw as a list of JSON objects; absent or null is an
// empty list.
func jsonObjects(raw json.RawMessage) ([]map[string]json.RawMessage, bool) {
	if isJSONNull(raw) {
		return nil, true
	}
	var out []map[string]json.RawMessage
	if json.Unmarshal(raw, &out) != nil {
		return nil, false
	}
	return out, true
}

func isJSONNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// protojsonReason is protojson's (or proto's) message without its package prefix, cut
// so that a ParseError stays one short line.
func protojsonReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), "proto: ")
	msg = strings.TrimPrefix(msg, "proto:\u00a0") // protojson's unstable-text prefix
	return displayValue(msg)
}

// sample maps one span into s (see the comment at the top); a bad span
// is a *FieldError.
func (d *otlpDecoder) sample(s *Sample, caller string, sp *tracepb.Span) *FieldError {
	if fe := d.ids(sp); fe != nil {
		return fe
	}
	start, end, fe := otlpTimes(sp)
	if fe != nil {
		return fe
	}
	s.Latency = time.Duration(end - start)
	s.Time = time.Unix(0, int64(start)).UTC()

	attrs := sp.GetAttributes()
	grpcCode, fe := spanStatus(s,
		func() (int64, bool) { return attrInt(attrs, "http.response.status_code", "http.status_code") },
		func() (int64, bool) { return attrInt(attrs, "rpc.grpc.status_code") },
		func() bool { return sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR })
	if fe != nil {
		return fe
	}
	if d.keys != nil {
		d.fields = otlpFields{caller: caller, attrs: attrs, res: d.res}
		s.Group = d.group(&d.fields, s, grpcCode)
	}
	return nil
}

// otlpTimes returns a span's start and end, in nanoseconds since the
// epoch; a span without a start, or ending before it starts, is a bad one.
func otlpTimes(sp *tracepb.Span) (start, end uint64, fe *FieldError) {
	start, end = sp.GetStartTimeUnixNano(), sp.GetEndTimeUnixNano()
	switch {
	case start == 0:
		return 0, 0, &FieldError{Field: "startTimeUnixNano", Value: "0", Reason: "is not set: the span has no start"}
	case start > math.MaxInt64:
		return 0, 0, &FieldError{Field: "startTimeUnixNano", Value: strconv.FormatUint(start, 10), Reason: "is past the year 2262"}
	case end < start:
		return 0, 0, &FieldError{Field: "endTimeUnixNano", Value: strconv.FormatUint(end, 10),
			Reason: "is before startTimeUnixNano " + strconv.FormatUint(start, 10) + ": a negative duration"}
	case end-start > math.MaxInt64:
		return 0, 0, &FieldError{Field: "endTimeUnixNano", Value: strconv.FormatUint(end, 10), Reason: "is too far after startTimeUnixNano"}
	}
	return start, end, nil
}

// otlpFields is an OTLP span as its group name reads it.
type otlpFields struct {
	caller     string
	attrs, res []*commonpb.KeyValue // the span's, its resource's
}

func (f *otlpFields) appendCaller(b []byte) []byte { return append(b, f.caller...) }
func (f *otlpFields) appendCallee(b []byte) []byte { return appendCallee(b, f.attrs) }

// attr is an attribute of the span, else of its resource (--by
// attr:k8s.namespace.name), as text.
func (f *otlpFields) attr(key string) string {
	if v := attrValue(f.attrs, key); v != nil {
		return anyString(v)
	}
	return anyString(attrValue(f.res, key))
}

// appendCallee appends the service a client span called: peer.service,
// else server.address (with :server.port), else rpc.service, else
// db.system; nothing when the span names none.
func appendCallee(b []byte, attrs []*commonpb.KeyValue) []byte {
	if v := attrString(attrs, "peer.service"); v != "" {
		return append(b, v...)
	}
	if v := attrString(attrs, "server.address"); v != "" {
		b = append(b, v...)
		if port, ok := attrInt(attrs, "server.port"); ok {
			b = append(b, ':')
			b = strconv.AppendInt(b, port, 10)
		}
		return b
	}
	if v := attrString(attrs, "rpc.service"); v != "" {
		return append(b, v...)
	}
	return append(b, attrString(attrs, "db.system")...)
}

// attrValue is the value of the attribute key, nil when absent.
func attrValue(attrs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range attrs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// anyString is an attribute value as text: strings as they are, numbers
// and booleans as Go writes them, arrays and maps as protojson does.
func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case nil:
		return ""
	}
	b, _ := protojson.Marshal(v)
	return string(b)
}

// attrString returns the string value of the attribute key, "" when
// absent or not a string.
func attrString(attrs []*commonpb.KeyValue, key string) string {
	return attrValue(attrs, key).GetStringValue()
}

// attrInt returns the integer value of the first of keys present: an
// intValue, or a stringValue of digits (some exporters write codes as
// strings).
func attrInt(attrs []*commonpb.KeyValue, keys ...string) (int64, bool) {
	for _, key := range keys {
		for _, kv := range attrs {
			if kv.GetKey() != key {
				continue
			}
			switch v := kv.GetValue().GetValue().(type) {
			case *commonpb.AnyValue_IntValue:
				return v.IntValue, true
			case *commonpb.AnyValue_StringValue:
				if n, err := strconv.ParseInt(v.StringValue, 10, 64); err == nil {
					return n, true
				}
			}
		}
	}
	return 0, false
}

// fixOTLPIDs turns the ids of a span decoded by protojson, which reads
// bytes as base64, into the bytes OTLP/JSON's hex stands for. A hex id is
// valid base64 (its digits are base64 digits, and its length, 32 or 16, a
// multiple of 4), so protojson decoded it into 24 or 12 bytes: encoding
// those as base64 again gives the hex back, exactly. An id of 16 or 8
// bytes came as base64 (protobuf's own mapping, which some exporters
// write) and stays; an empty one stays empty; any other is a bad span.
func fixOTLPIDs(sp *tracepb.Span) *FieldError {
	var err *FieldError
	if sp.TraceId, err = otlpID("traceId", sp.TraceId, 16); err != nil {
		return err
	}
	if sp.SpanId, err = otlpID("spanId", sp.SpanId, 8); err != nil {
		return err
	}
	if sp.ParentSpanId, err = otlpID("parentSpanId", sp.ParentSpanId, 8); err != nil {
		return err
	}
	for _, l := range sp.Links {
		if l.TraceId, err = otlpID("links.traceId", l.TraceId, 16); err != nil {
			return err
		}
		if l.SpanId, err = otlpID("links.spanId", l.SpanId, 8); err != nil {
			return err
		}
	}
	return nil
}

// ids makes the ids of a span of the record being decoded bytes, as
// fixOTLPIDs does for OTLP/JSON, or checks them, as checkOTLPIDs does for
// protobuf, whose ids are bytes already.
func (d *otlpDecoder) ids(sp *tracepb.Span) *FieldError {
	if d.proto {
		return checkOTLPIDs(sp)
	}
	return fixOTLPIDs(sp)
}

// checkOTLPIDs checks the ids of a span decoded from protobuf: each of 16
// (trace) or 8 (span) bytes, or none; any other is a bad span, as in
// OTLP/JSON.
func checkOTLPIDs(sp *tracepb.Span) *FieldError {
	if fe := checkOTLPID("traceId", sp.TraceId, 16); fe != nil {
		return fe
	}
	if fe := checkOTLPID("spanId", sp.SpanId, 8); fe != nil {
		return fe
	}
	if fe := checkOTLPID("parentSpanId", sp.ParentSpanId, 8); fe != nil {
		return fe
	}
	for _, l := range sp.Links {
		if fe := checkOTLPID("links.traceId", l.TraceId, 16); fe != nil {
			return fe
		}
		if fe := checkOTLPID("links.spanId", l.SpanId, 8); fe != nil {
			return fe
		}
	}
	return nil
}

func checkOTLPID(field string, b []byte, size int) *FieldError {
	if len(b) == 0 || len(b) == size {
		return nil
	}
	return &FieldError{Field: field, Value: hex.EncodeToString(b), Reason: fmt.Sprintf("is not a %d-byte id", size)}
}

// otlpID returns the id of size bytes that b, as protojson decoded it,
// stands for (see fixOTLPIDs).
func otlpID(field string, b []byte, size int) ([]byte, *FieldError) {
	switch len(b) {
	case 0, size:
		return b, nil
	case size * 3 / 2: // 2*size hex digits read as base64
		text := base64.StdEncoding.EncodeToString(b)
		id := make([]byte, size)
		if _, err := hex.Decode(id, []byte(text)); err == nil {
			return id, nil
		}
		return nil, &FieldError{Field: field, Value: text, Reason: "is not hex"}
	}
	return nil, &FieldError{Field: field, Value: base64.StdEncoding.EncodeToString(b),
		Reason: fmt.Sprintf("is not a %d-byte id in hex", size)}
}

// Reset makes d read data, whole lines of OTLP/JSON of the same input from
// line number line on (ChunkDecoder). Only inputs of lines are cut into
// chunks (cuttable), so a chunk is always read as lines.
func (d *otlpDecoder) Reset(data []byte, line int) {
	d.frames.resetMem(data, line)
	d.line = line - 1
	d.queue, d.next = d.queue[:0], 0
}

// resetReader makes d read r, the rest of an input of OTLP/JSON lines from
// line number line on: the Splitter calls it only for inputs it has cut.
func (d *otlpDecoder) resetReader(r io.Reader, line int) {
	d.frames.resetReader(r, line)
	d.line = line - 1
	d.queue, d.next = d.queue[:0], 0
}

// cuttable: every line of OTLP/JSON is a request. Protobuf is not: a
// message holds any bytes, line breaks (0x0a, the tag of resource_spans)
// included, and where one starts is known only from the length of the one
// before, so a protobuf input is read whole, in turn, by one decoder. The
// Splitter asks first of the input's first block, which tells (otlpFramed);
// a later block of an input of lines starts a line.
func (d *otlpDecoder) cuttable(block []byte) bool { return !otlpFramed(block) }

// sniffOTLP accepts a JSON object with an array resourceSpans (or
// resource_spans, protobuf's own field name). A line longer than what
// sniffing reads (a batch of many spans) is cut: one that starts with
// {"resourceSpans":[ is accepted as it stands.
func sniffOTLP(line []byte) bool { return sniffOTLPKey(line, "resourceSpans", "resource_spans") }

// sniffOTLPKey accepts a JSON object with an array under key (or alt). A
// line longer than what sniffing reads (a batch of many points) is cut:
// one that starts with {"key":[ is accepted as it stands.
func sniffOTLPKey(line []byte, key, alt string) bool {
	line = bytes.TrimPrefix(line, utf8BOM)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	sc := newJSONLScanner(key, alt)
	if sc.scan(line) == nil {
		return sc.vals[0].kind == jsonlArray || sc.vals[1].kind == jsonlArray
	}
	rest := bytes.TrimLeft(line[1:], " \t\r\n")
	for _, k := range []string{`"` + key + `"`, `"` + alt + `"`} {
		if after, ok := bytes.CutPrefix(rest, []byte(k)); ok {
			after = bytes.TrimLeft(after, " \t\r\n")
			if after, ok = bytes.CutPrefix(after, []byte(":")); ok {
				after = bytes.TrimLeft(after, " \t\r\n")
				return len(after) > 0 && after[0] == '['
			}
		}
	}
	return false
}

var spanKindFlag = Flag{Name: "span-kind", Usage: "spans (otlp, zipkin, jaeger): the kind of span that is a call: client (the default), server or any",
	Field: func(o *Options) *string { return &o.SpanKind }}

func init() {
	Register(Format{
		Name:     "otlp",
		Edges:    true,
		Priority: 55, // see Format.Priority
		Summary:  "OpenTelemetry spans, OTLP/JSON or protobuf as the Collector's file exporter writes them: a CLIENT span's end - start; {span-kind}",
		Sniff:    sniffOTLP,
		// Protobuf, which has no lines to sniff: see otlpframe.go.
		SniffBinary: sniffOTLPProto,
		Flags:       []Flag{spanKindFlag},
		New:         newOTLPDecoder,
	})
}
