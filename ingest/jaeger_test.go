package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No Go SDK writes Jaeger's JSON any more (the Jaeger exporter is gone
// from OpenTelemetry Go), and Jaeger's own test data cannot be copied
// here: these structs mirror Jaeger's documented UI model (model/json:
// the query API's /api/traces response and the UI's "Download JSON"), and
// the tests write their inputs with encoding/json from them.
type (
	jModelResponse struct {
		Data   []jModelTrace `json:"data"`
		Total  int           `json:"total"`
		Limit  int           `json:"limit"`
		Offset int           `json:"offset"`
		Errors []any         `json:"errors"`
	}
	jModelTrace struct {
		TraceID   string                   `json:"traceID"`
		Spans     []jModelSpan             `json:"spans"`
		Processes map[string]jModelProcess `json:"processes"`
		Warnings  []string                 `json:"warnings"`
	}
	jModelSpan struct {
		TraceID       string      `json:"traceID"`
		SpanID        string      `json:"spanID"`
		Flags         uint32      `json:"flags"`
		OperationName string      `json:"operationName"`
		References    []jModelRef `json:"references"`
		StartTime     int64       `json:"startTime"` // µs since the epoch (uint64 in Jaeger; signed here to write bad ones)
		Duration      int64       `json:"duration"`  // µs
		Tags          []jModelKV  `json:"tags"`
		Logs          []any       `json:"logs"`
		ProcessID     string      `json:"processID"`
		Warnings      []string    `json:"warnings"`
	}
	jModelRef struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	jModelKV struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	jModelProcess struct {
		ServiceName string     `json:"serviceName"`
		Tags        []jModelKV `json:"tags"`
	}
)

func jStr(k, v string) jModelKV       { return jModelKV{Key: k, Type: "string", Value: v} }
func jInt(k string, v int64) jModelKV { return jModelKV{Key: k, Type: "int64", Value: v} }
func jBool(k string, v bool) jModelKV { return jModelKV{Key: k, Type: "bool", Value: v} }

// jaegerCase is one span of the test's traces and what it maps to.
type jaegerCase struct {
	trace    int // 0: a 128-bit trace id, 1: a 64-bit one
	process  string
	kind     string // span.kind; "" internal
	parent   int    // index of the CHILD_OF span; -1 for none
	tags     []jModelKV
	group    string // "" when not a client span
	status   int
	censored bool
	excluded string
}

var jaegerCases = []jaegerCase{
	{process: "p1", kind: "client", parent: -1, tags: []jModelKV{jStr("peer.service", "checkout"), jStr("http.request.method", "GET"),
		jStr("http.route", "/checkout"), jInt("http.response.status_code", 200)}, group: "frontend checkout", status: 200},
	{process: "p2", kind: "server", parent: 0, tags: []jModelKV{jInt("http.response.status_code", 200)}},
	{process: "p2", kind: "client", parent: 1, tags: []jModelKV{jStr("server.address", "cart"), jInt("server.port", 8080),
		jStr("http.status_code", "504"), jBool("error", true)}, group: "checkout cart:8080", status: 504, censored: true},
	{process: "p2", kind: "client", parent: 1, tags: []jModelKV{jStr("rpc.service", "payments.Payments"), jStr("rpc.method", "Charge"),
		jInt("rpc.grpc.status_code", 4)}, group: "checkout payments.Payments", censored: true},
	{process: "p2", kind: "client", parent: 1, tags: []jModelKV{jStr("rpc.service", "payments.Payments"),
		jStr("rpc.grpc.status_code", "14")}, group: "checkout payments.Payments", excluded: "grpc UNAVAILABLE"},
	{process: "p1", kind: "client", parent: 0, tags: []jModelKV{jStr("db.system", "redis"), jBool("error", true)},
		group: "frontend redis", excluded: ExcludedSpanError},
	{process: "p1", parent: 0, tags: []jModelKV{jStr("peer.service", "nowhere")}}, // internal
	{trace: 1, process: "p1", kind: "client", parent: -1, tags: []jModelKV{jStr("net.peer.name", "legacy"), jInt("net.peer.port", 80),
		jStr("otel.status_code", "ERROR")}, group: "frontend legacy:80", excluded: ExcludedSpanError},
	{trace: 1, process: "p2", kind: "client", parent: -1, tags: []jModelKV{jInt("http.status_code", 404), jBool("error", true)},
		group: "checkout -", status: 404},
}

var (
	jaegerTraceIDs = []string{"5b8efff798038103d269b633813fc60c", "d269b633813fc60c"}
	jaegerBase     = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
)

func jaegerSpanID(i int) string { return fmt.Sprintf("eee19b7ec3c1b%03x", i) }

func jaegerStart(i int) time.Time { return jaegerBase.Add(time.Duration(i) * 1500 * time.Microsecond) }

func jaegerLatency(i int) time.Duration { return time.Duration((i+1)*1000+7) * time.Microsecond }

// jaegerResponse is jaegerCases as Jaeger's /api/traces answers them.
func jaegerResponse() jModelResponse {
	processes := map[string]jModelProcess{
		"p1": {ServiceName: "frontend", Tags: []jModelKV{jStr("hostname", "fe-1")}},
		"p2": {ServiceName: "checkout", Tags: []jModelKV{jStr("hostname", "co-1"), jInt("pid", 7)}},
	}
	traces := []jModelTrace{{TraceID: jaegerTraceIDs[0], Processes: processes}, {TraceID: jaegerTraceIDs[1], Processes: processes}}
	for i, c := range jaegerCases {
		sp := jModelSpan{TraceID: jaegerTraceIDs[c.trace], SpanID: jaegerSpanID(i), Flags: 1, OperationName: "op",
			References: []jModelRef{}, StartTime: jaegerStart(i).UnixMicro(), Duration: int64(jaegerLatency(i) / time.Microsecond),
			Tags: c.tags, Logs: []any{}, ProcessID: c.process}
		if c.kind != "" {
			sp.Tags = append([]jModelKV{jStr("span.kind", c.kind)}, c.tags...)
		}
		if c.parent >= 0 {
			sp.References = append(sp.References, jModelRef{RefType: "CHILD_OF", TraceID: sp.TraceID, SpanID: jaegerSpanID(c.parent)})
		}
		traces[c.trace].Spans = append(traces[c.trace].Spans, sp)
	}
	return jModelResponse{Data: traces}
}

func jaegerJSON(t testing.TB, v any, indent bool) []byte {
	t.Helper()
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	require.NoError(t, err)
	return append(b, '\n')
}

func decodeJaeger(t *testing.T, input []byte, o Options) ([]Sample, []*ParseError) {
	t.Helper()
	d, err := NewDecoder("jaeger", bytes.NewReader(input), "traces.json", o)
	require.NoError(t, err)
	return decodeAll(t, d)
}

// TestJaeger decodes the table's spans written as Jaeger's JSON, compact
// and indented: every client span is one sample, with its duration, start,
// group, censoring and exclusion.
func TestJaeger(t *testing.T) {
	resp := jaegerResponse()
	for _, indent := range []bool{false, true} {
		t.Run(fmt.Sprintf("indent=%v", indent), func(t *testing.T) {
			data := jaegerJSON(t, resp, indent)
			samples, errs := decodeJaeger(t, data, Options{})
			require.Empty(t, errs)
			var want []int
			for i, c := range jaegerCases {
				if c.group != "" {
					want = append(want, i)
				}
			}
			require.Len(t, samples, len(want), "client spans only")
			var rule StatusRule
			for j, i := range want {
				s, c := samples[j], jaegerCases[i]
				assert.Equal(t, jaegerLatency(i), s.Latency, "span %d", i)
				assert.Equal(t, jaegerStart(i), s.Time, "span %d", i)
				assert.Equal(t, c.group, s.Group, "span %d", i)
				assert.Equal(t, c.status, s.Status, "span %d", i)
				assert.Equal(t, c.excluded, rule.Classify(&s), "span %d", i)
				assert.Equal(t, c.censored, s.Censored, "span %d", i)
			}
		})
	}
	t.Run("sniffed", func(t *testing.T) {
		f, _, err := Detect("auto", bytes.NewReader(jaegerJSON(t, resp, false)), "traces.json", Options{})
		require.NoError(t, err)
		assert.Equal(t, "jaeger", f.Name)
	})
	t.Run("span-kind server", func(t *testing.T) {
		samples, errs := decodeJaeger(t, jaegerJSON(t, resp, false), Options{SpanKind: "server"})
		require.Empty(t, errs)
		require.Len(t, samples, 1)
		assert.Equal(t, jaegerLatency(1), samples[0].Latency)
		assert.Equal(t, "checkout -", samples[0].Group)
	})
	t.Run("span-kind any", func(t *testing.T) {
		samples, _ := decodeJaeger(t, jaegerJSON(t, resp, false), Options{SpanKind: "any"})
		assert.Len(t, samples, len(jaegerCases))
	})
	t.Run("by route method status", func(t *testing.T) {
		samples, _ := decodeJaeger(t, jaegerJSON(t, resp, false), Options{By: []string{"route", "method", "status"}})
		require.NotEmpty(t, samples)
		assert.Equal(t, "/checkout GET 200", samples[0].Group)
		assert.Equal(t, "Charge - DEADLINE_EXCEEDED", samples[2].Group)
	})
	t.Run("by attributes of the span and of its process", func(t *testing.T) {
		samples, _ := decodeJaeger(t, jaegerJSON(t, resp, false), Options{By: []string{"attr:hostname", "attr:pid", "attr:server.port"}})
		require.Len(t, samples, 7)
		assert.Equal(t, "fe-1 - -", samples[0].Group, "a process tag; none of the others")
		assert.Equal(t, "co-1 7 8080", samples[1].Group, "process tags, an int among them, and a span tag")
	})
	t.Run("responses one after the other, and other keys first", func(t *testing.T) {
		one := jaegerJSON(t, resp, false)
		other := []byte(`{"total":0,"errors":[{"code":1,"msg":"}"}],"limit":3,"data":null}` + "\n")
		samples, errs := decodeJaeger(t, append(append(append([]byte{}, one...), other...), one...), Options{})
		require.Empty(t, errs)
		assert.Len(t, samples, 14)
	})
	t.Run("by unknown key", func(t *testing.T) {
		_, err := NewDecoder("jaeger", strings.NewReader(""), "traces.json", Options{By: []string{"host"}})
		assert.ErrorContains(t, err, `traces.json: cannot group by "host": Jaeger spans group by caller, callee, route`)
	})
}

// TestJaegerLinks reads the table's client and server spans' links: the
// parent is the CHILD_OF reference's span, a 64-bit trace id the low half.
func TestJaegerLinks(t *testing.T) {
	for _, indent := range []bool{false, true} {
		got := scanLinks(t, "jaeger", string(jaegerJSON(t, jaegerResponse(), indent)))
		var want []SpanLink
		for i, c := range jaegerCases {
			if c.kind == "" {
				continue
			}
			l := SpanLink{Client: c.kind == "client", Server: c.kind == "server", Start: jaegerStart(i), End: jaegerStart(i).Add(jaegerLatency(i))}
			zipkinID(l.TraceID[:], jaegerTraceIDs[c.trace])
			l.SpanID = id8(jaegerSpanID(i))
			if c.parent >= 0 {
				l.ParentID = id8(jaegerSpanID(c.parent))
			}
			l.Caller = map[string]string{"p1": "frontend", "p2": "checkout"}[c.process]
			l.Callee = "-"
			if c.group != "" {
				l.Callee = strings.SplitN(c.group, " ", 2)[1]
			}
			want = append(want, l)
		}
		assert.Equal(t, want, got, "indent=%v", indent)
		assert.Equal(t, [16]byte{8: 0xd2, 9: 0x69, 10: 0xb6, 11: 0x33, 12: 0x81, 13: 0x3f, 14: 0xc6, 15: 0x0c}, got[len(got)-1].TraceID)
		assert.Equal(t, got[0].SpanID, got[1].ParentID, "the server span is the first client span's child")
	}
}

// TestJaegerBadInput: each bad record is counted at its file:line, and
// the records around it are read.
func TestJaegerBadInput(t *testing.T) {
	good := func() jModelResponse {
		r := jaegerResponse()
		r.Data = r.Data[1:] // trace 1: two client spans
		return r
	}
	withSpan := func(f func(sp *jModelSpan)) jModelResponse {
		r := good()
		f(&r.Data[0].Spans[0])
		return r
	}
	for _, tc := range []struct {
		name    string
		input   []byte
		samples int
		want    []string
	}{
		{"not JSON", append([]byte("not json at all\n"), jaegerJSON(t, good(), false)...), 2,
			[]string{`traces.json:1: "not json at all" is not part of a Jaeger response`}},
		{"a trace that is not JSON", []byte(`{"data":[{"spans":[{"a":}]},` + "\n" + string(bytes.TrimSuffix(jaegerJSON(t, good().Data[0], false), []byte("\n"))) + "]}"), 2,
			[]string{`traces.json:1: is not a Jaeger trace: invalid character '}' looking for beginning of value`}},
		{"negative duration", append(jaegerJSON(t, good(), false), jaegerJSON(t, withSpan(func(sp *jModelSpan) { sp.Duration = -5 }), false)...), 3,
			[]string{`traces.json:2: field "duration": "-5" is negative`}},
		{"negative duration, indented", jaegerJSON(t, withSpan(func(sp *jModelSpan) { sp.Duration = -5 }), true), 1,
			[]string{`traces.json:6: field "duration": "-5" is negative`}}, // the line of the span's {
		{"bad span id", jaegerJSON(t, withSpan(func(sp *jModelSpan) { sp.SpanID = "eee19b7ec3c1b17z" }), false), 1,
			[]string{`traces.json:1: field "spanID": "eee19b7ec3c1b17z" is not an id of 16 hex digits`}},
		{"bad trace id", jaegerJSON(t, withSpan(func(sp *jModelSpan) { sp.TraceID = "d269b633813fc6" }), false), 1,
			[]string{`traces.json:1: field "traceID": "d269b633813fc6" is not an id of 32 or 16 hex digits`}},
		{"bad parent id", jaegerJSON(t, withSpan(func(sp *jModelSpan) {
			sp.References = []jModelRef{{RefType: "CHILD_OF", TraceID: sp.TraceID, SpanID: "x"}}
		}), false), 1,
			[]string{`traces.json:1: field "references.spanID": "x" is not an id of 16 hex digits`}},
		{"cut off", jaegerJSON(t, good(), false)[:200], 0,
			[]string{`traces.json:1: the response is cut off: the input ends inside a value`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples, errs := decodeJaeger(t, tc.input, Options{})
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
			assert.Len(t, samples, tc.samples)
		})
	}
}

// TestJaegerTraceCap: a trace longer than 16 MiB is one bad record; the
// trace after it, on the next line, is read.
func TestJaegerTraceCap(t *testing.T) {
	r := jaegerResponse()
	big := r.Data[1]
	big.Spans = append([]jModelSpan{}, big.Spans...)
	big.Spans[0].Tags = append([]jModelKV{jStr("payload", strings.Repeat("x", maxJaegerTrace))}, big.Spans[0].Tags...)
	input := []byte(`{"data":[`)
	input = append(input, bytes.TrimSpace(jaegerJSON(t, big, false))...)
	input = append(input, ",\n"...)
	input = append(input, bytes.TrimSpace(jaegerJSON(t, r.Data[1], false))...)
	input = append(input, "]}\n"...)
	samples, errs := decodeJaeger(t, input, Options{})
	require.Len(t, errs, 1)
	assert.Equal(t, "traces.json:1: trace is longer than 16 MiB", errs[0].Error())
	require.Len(t, samples, 2)
	assert.Equal(t, "frontend legacy:80", samples[0].Group)
}

func TestSniffJaeger(t *testing.T) {
	compact := jaegerJSON(t, jaegerResponse(), false)
	for _, tc := range []struct {
		line string
		want bool
	}{
		{string(compact), true},
		{string(compact[:300]), true}, // cut by the window inside spans
		{`{"data": [ {"traceID":"a","spans":[],"processes":{}}]}`, true},
		{"\xef\xbb\xbf" + `{"data":[{"spans":[],"processes":{}}]}`, true},
		{`{"data":[{"traceID":"a","processes":{}}]}`, false},
		{`{"data":[{"spans":[]}]}`, false},
		{`{"data":[1]}`, false},
		{`{"msg":"hello","data":[{"spans":[],"processes":{}}]}`, false},
		{"{", false},
		{`[{"traceId":"a"}]`, false},
	} {
		assert.Equal(t, tc.want, sniffJaeger([]byte(tc.line)), "%.80s", tc.line)
	}
}

func FuzzJaeger(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input, in time that
	// grows with the square of its length.
	one := jModelResponse{Data: []jModelTrace{{TraceID: "d269b633813fc60c", Spans: []jModelSpan{{TraceID: "d269b633813fc60c",
		SpanID: "eee19b7ec3c1b174", StartTime: 1, Duration: 2, ProcessID: "p1",
		References: []jModelRef{{RefType: "CHILD_OF", SpanID: "eee19b7ec3c1b173"}},
		Tags:       []jModelKV{jStr("span.kind", "client"), jInt("http.status_code", 504)}}},
		Processes: map[string]jModelProcess{"p1": {ServiceName: "a"}}}}}
	f.Add(jaegerJSON(f, one, false), uint8(0))
	f.Add(jaegerJSON(f, one, true), uint8(6))
	for _, s := range []string{
		`{"data":[{"spans":[{"spanID":"x","duration":-1,"startTime":"1"}],"processes":{"p1":1}}]}`,
		`{"data":[{"spans":null}],"x":[}`, `{"data":[`, `{"data"`, `{"data":{}}`, `{"a":"\"}"}`, `}`, `]`, "\n\n{",
		`{"data":[{"spans":[{"traceID":"d269b633813fc60c","spanID":"d269b633813fc60c","startTime":1,"duration":1e3,"tags":[{"key":"span.kind","value":"client"}]}]}]}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(6))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		checkSpanDecoder(t, "jaeger", "fuzz.json", data, kind)
		_ = sniffJaeger(data)
		_ = ScanSpanLinks(bytes.NewReader(data), "fuzz.json", "jaeger", Options{}, func(SpanLink) error { return nil })
	})
}
