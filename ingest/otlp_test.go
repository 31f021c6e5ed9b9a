package ingest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// otlpCollector is an httptest server on 127.0.0.1 that takes the OTLP/HTTP
// exporter's protobuf ExportTraceServiceRequests and writes each as one
// line of OTLP/JSON, as the Collector's file exporter does: lowerCamelCase
// names, enums as numbers, trace and span ids in hex.
type otlpCollector struct {
	srv  *httptest.Server
	mu   sync.Mutex
	file *os.File
}

func newOTLPCollector(t *testing.T, path string) *otlpCollector {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	c := &otlpCollector{file: f}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		var line []byte
		if err == nil {
			line, err = otlpJSONLine(&req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		_, err = c.file.Write(append(line, '\n'))
		c.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// otlpJSONLine writes req as OTLP/JSON: protojson's mapping, with the ids
// protojson writes in base64 rewritten in hex (the OTLP specification,
// "JSON Protobuf Encoding"). It walks the JSON itself, independently of
// the decoder's fixOTLPIDs.
func otlpJSONLine(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch k {
				case "traceId", "spanId", "parentSpanId":
					raw, err := base64.StdEncoding.DecodeString(x.(string))
					if err != nil {
						return err
					}
					v[k] = hex.EncodeToString(raw)
				default:
					if err := walk(x); err != nil {
						return err
					}
				}
			}
		case []any:
			for _, x := range v {
				if err := walk(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// otlpWant is what the decoder and the status rule should make of a span.
type otlpWant struct {
	latency  time.Duration
	group    string
	status   int
	censored bool
	excluded string
	spanID   trace.SpanID
	traceID  trace.TraceID
}

// otlpSpanCase is one shape of client span and what it maps to.
type otlpSpanCase struct {
	attrs    []attribute.KeyValue
	errored  bool
	callee   string
	status   int
	censored bool
	excluded string
}

var otlpSpanCases = []otlpSpanCase{
	{attrs: []attribute.KeyValue{attribute.String("peer.service", "cart"), attribute.String("http.route", "/cart/{id}"),
		attribute.String("http.request.method", "GET"), attribute.Int("http.response.status_code", 200)},
		callee: "cart", status: 200},
	{attrs: []attribute.KeyValue{attribute.String("peer.service", "cart"), attribute.Int("http.response.status_code", 504)},
		errored: true, callee: "cart", status: 504, censored: true},
	{attrs: []attribute.KeyValue{attribute.String("peer.service", "cart"), attribute.Int("http.response.status_code", 500)},
		errored: true, callee: "cart", status: 500, excluded: Excluded5xx},
	{attrs: []attribute.KeyValue{attribute.String("rpc.service", "payments.Payments"), attribute.String("rpc.method", "Charge"),
		attribute.Int("rpc.grpc.status_code", 4)},
		errored: true, callee: "payments.Payments", censored: true},
	{attrs: []attribute.KeyValue{attribute.String("rpc.service", "payments.Payments"), attribute.Int("rpc.grpc.status_code", 14)},
		errored: true, callee: "payments.Payments", excluded: "grpc UNAVAILABLE"},
	{attrs: []attribute.KeyValue{attribute.String("rpc.service", "payments.Payments"), attribute.Int("rpc.grpc.status_code", 0)},
		callee: "payments.Payments"},
	{attrs: []attribute.KeyValue{attribute.String("server.address", "db.internal"), attribute.Int("server.port", 5432),
		attribute.String("db.system", "postgresql")},
		callee: "db.internal:5432"},
	{attrs: []attribute.KeyValue{attribute.String("db.system", "redis")}, errored: true, callee: "redis", excluded: ExcludedSpanError},
	// A client span with a 4xx is an Error span (semantic conventions), and
	// counts: the status wins over the span status.
	{attrs: []attribute.KeyValue{attribute.String("peer.service", "cart"), attribute.Int("http.response.status_code", 404)},
		errored: true, callee: "cart", status: 404},
	{attrs: []attribute.KeyValue{attribute.Int("http.response.status_code", 499)}, callee: "-", status: 499, censored: true},
}

// otlpSDKFile makes n client spans (and some server and internal ones)
// with two services' TracerProviders, exported by the OTLP/HTTP exporter to
// an otlpCollector, and returns the file and the samples it should give,
// by start time.
func otlpSDKFile(t *testing.T, n int) (string, map[time.Time]otlpWant) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	col := newOTLPCollector(t, path)
	ctx := context.Background()
	services := []string{"frontend", "checkout"}
	var tracers []trace.Tracer
	var providers []*sdktrace.TracerProvider
	for _, svc := range services {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(col.srv.URL+"/v1/traces"),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(100), sdktrace.WithMaxQueueSize(4*n)),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))),
		)
		providers = append(providers, tp)
		tracers = append(tracers, tp.Tracer("tunetimeout/ingest/otlp_test"))
	}
	base := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	want := map[time.Time]otlpWant{}
	for i := range n {
		svc := i % len(services)
		c := otlpSpanCases[i%len(otlpSpanCases)]
		start := base.Add(time.Duration(i) * time.Second)
		d := time.Duration(i+1)*time.Millisecond + time.Duration(i*7+1)*time.Nanosecond
		ctx, span := tracers[svc].Start(ctx, "call", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(start), trace.WithAttributes(c.attrs...))
		if c.errored {
			span.SetStatus(codes.Error, "failed")
		}
		span.End(trace.WithTimestamp(start.Add(d)))
		want[start] = otlpWant{latency: d, group: services[svc] + " " + c.callee, status: c.status,
			censored: c.censored, excluded: c.excluded, spanID: span.SpanContext().SpanID(), traceID: span.SpanContext().TraceID()}
		if i%100 == 0 { // spans that are not client calls
			for _, k := range []trace.SpanKind{trace.SpanKindServer, trace.SpanKindInternal} {
				_, s := tracers[svc].Start(ctx, "other", trace.WithSpanKind(k), trace.WithTimestamp(start.Add(time.Millisecond)))
				s.End(trace.WithTimestamp(start.Add(2 * time.Millisecond)))
			}
		}
	}
	for _, tp := range providers {
		require.NoError(t, tp.Shutdown(ctx))
	}
	require.NoError(t, col.file.Close())
	return path, want
}

// TestOTLPFromSDK decodes spans the OpenTelemetry Go SDK made and exported:
// every client span is one sample, its latency the span's duration to the
// nanosecond, grouped by caller and callee, censored and excluded as its
// status says.
func TestOTLPFromSDK(t *testing.T) {
	const n = 1000
	path, want := otlpSDKFile(t, n)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.Count(data, []byte("\n"))
	require.Greater(t, lines, 2, "spans come in batches, several lines")
	require.Less(t, lines, n/2, "batches of many spans")

	f, r, err := Detect("auto", bytes.NewReader(data), "traces.jsonl", Options{})
	require.NoError(t, err)
	require.Equal(t, "otlp", f.Name, "sniffed")
	d, err := f.New(r, "traces.jsonl", Options{})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errs)
	require.Len(t, samples, n, "client spans only")

	var rule StatusRule
	counts := map[string]int{}
	for _, s := range samples {
		w, ok := want[s.Time]
		require.True(t, ok, "a sample at %v, the start of no span", s.Time)
		assert.Equal(t, w.latency, s.Latency, "span at %v", s.Time)
		assert.Equal(t, w.group, s.Group)
		assert.Equal(t, w.status, s.Status)
		excluded := rule.Classify(&s)
		assert.Equal(t, w.excluded, excluded, "span at %v (%s)", s.Time, s.Group)
		assert.Equal(t, w.censored, s.Censored, "span at %v (%s)", s.Time, s.Group)
		delete(want, s.Time)
		counts[s.Group]++
	}
	assert.Empty(t, want, "every span once")
	assert.Equal(t, map[string]int{
		"frontend cart": 300, "frontend payments.Payments": 100, "frontend db.internal:5432": 100,
		"checkout cart": 100, "checkout payments.Payments": 200, "checkout redis": 100, "checkout -": 100,
	}, counts)

	t.Run("span-kind any", func(t *testing.T) {
		d, err := NewDecoder("otlp", bytes.NewReader(data), "traces.jsonl", Options{SpanKind: "any"})
		require.NoError(t, err)
		samples, errs := decodeAll(t, d)
		require.Empty(t, errs)
		assert.Len(t, samples, n+2*n/100)
	})
	t.Run("span-kind server", func(t *testing.T) {
		d, err := NewDecoder("otlp", bytes.NewReader(data), "traces.jsonl", Options{SpanKind: "Server"})
		require.NoError(t, err)
		samples, errs := decodeAll(t, d)
		require.Empty(t, errs)
		require.Len(t, samples, n/100)
		assert.Equal(t, time.Millisecond, samples[0].Latency)
	})
	t.Run("ids in hex", func(t *testing.T) {
		// The ids the decoder reads are the SDK's: OTLP/JSON's hex, not
		// protojson's base64, which would read 32 hex digits as 24 bytes.
		dec := &otlpDecoder{spanNamer: spanNamer{kind: otlpKindClient}}
		got := 0
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			require.NoError(t, dec.unm.Unmarshal(line, &dec.req))
			for _, rs := range dec.req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, sp := range ss.Spans {
						require.Nil(t, fixOTLPIDs(sp))
						require.Len(t, sp.TraceId, 16)
						require.Len(t, sp.SpanId, 8)
						got++
					}
				}
			}
		}
		assert.Equal(t, n+2*n/100, got)
		// And on a file of its own, matched against the SDK's span contexts.
		path, want := otlpSDKFile(t, 20)
		small, err := os.ReadFile(path)
		require.NoError(t, err)
		matched := 0
		for _, line := range bytes.Split(bytes.TrimSpace(small), []byte("\n")) {
			require.NoError(t, dec.unm.Unmarshal(line, &dec.req))
			for _, rs := range dec.req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, sp := range ss.Spans {
						require.Nil(t, fixOTLPIDs(sp))
						w, ok := want[time.Unix(0, int64(sp.StartTimeUnixNano)).UTC()]
						if !ok || sp.Kind != 3 {
							continue
						}
						assert.Equal(t, w.spanID[:], sp.SpanId)
						assert.Equal(t, w.traceID[:], sp.TraceId)
						matched++
					}
				}
			}
		}
		assert.Equal(t, 20, matched)
	})
}

// otlpLine is one OTLP/JSON line of one resource (service.name svc) with
// the spans given as JSON objects.
func otlpLine(svc string, spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + svc +
		`"}}]},"scopeSpans":[{"scope":{"name":"t"},"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

// otlpSpan is a client span from start to end (ns) with attrs (JSON
// KeyValues) and a status code.
func otlpSpan(start, end string, status int, attrs ...string) string {
	return `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"GET","kind":3,` +
		`"startTimeUnixNano":"` + start + `","endTimeUnixNano":"` + end + `","attributes":[` + strings.Join(attrs, ",") +
		`],"status":{"code":` + fmt.Sprint(status) + `}}`
}

func TestOTLPLines(t *testing.T) {
	good := otlpSpan("1700000000000000000", "1700000000250000000", 0, `{"key":"peer.service","value":{"stringValue":"cart"}}`)
	for _, tc := range []struct {
		name    string
		input   string
		o       Options
		errs    []string
		latency []time.Duration
		groups  []string
	}{
		{name: "one span", input: otlpLine("web", good), latency: []time.Duration{250 * time.Millisecond}, groups: []string{"web cart"}},
		{name: "not JSON", input: "hello\n" + otlpLine("web", good),
			errs: []string{`t.otlp:1: is not an OTLP/JSON ExportTraceServiceRequest: `}, latency: []time.Duration{250 * time.Millisecond}},
		{name: "not a request", input: `{"resourceSpans":3}` + "\n" + otlpLine("web", good),
			errs: []string{`t.otlp:1: is not an OTLP/JSON ExportTraceServiceRequest: `}, latency: []time.Duration{250 * time.Millisecond}},
		{name: "end before start, the line's other spans read",
			input:   "\n" + otlpLine("web", otlpSpan("1700000000000000000", "1699999999000000000", 0), good, good),
			errs:    []string{`t.otlp:2: field "endTimeUnixNano": "1699999999000000000" is before startTimeUnixNano 1700000000000000000: a negative duration`},
			latency: []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
		{name: "no start", input: otlpLine("web", otlpSpan("0", "5", 0)),
			errs: []string{`t.otlp:1: field "startTimeUnixNano": "0" is not set: the span has no start`}},
		{name: "unfinished span", input: otlpLine("web", otlpSpan("10", "0", 0)),
			errs: []string{`t.otlp:1: field "endTimeUnixNano": "0" is before startTimeUnixNano 10: a negative duration`}},
		// One line is one exported batch: a batch of thousands of spans is
		// megabytes, and is read; only a line over 64 MiB is refused.
		{name: "a batch line of 2 MiB", input: otlpLine("web", good) + "\n" + `{"x":"` + strings.Repeat("y", 2*maxLine) + `",` + otlpLine("api", good)[1:],
			latency: []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}, groups: []string{"web cart", "api cart"}},
		{name: "a line over the cap", input: otlpLine("web", good) + "\n" + `{"resourceSpans":[],"x":"` + strings.Repeat("y", maxOTLPMessage) + `"}` + "\n" + otlpLine("api", good),
			errs: []string{`t.otlp:2: line is longer than 64 MiB`}, latency: []time.Duration{250 * time.Millisecond, 250 * time.Millisecond},
			groups: []string{"web cart", "api cart"}},
		{name: "bad hex id", input: otlpLine("web", strings.Replace(good, "5b8efff798038103d269b633813fc60c", "zb8efff798038103d269b633813fc60c", 1)),
			errs: []string{`t.otlp:1: field "traceId": "zb8efff798038103d269b633813fc60c" is not hex`}},
		{name: "base64 ids, protobuf's own mapping", input: otlpLine("web", strings.NewReplacer(
			"5b8efff798038103d269b633813fc60c", base64.StdEncoding.EncodeToString(make([]byte, 16)),
			"eee19b7ec3c1b174", base64.StdEncoding.EncodeToString(make([]byte, 8))).Replace(good)),
			latency: []time.Duration{250 * time.Millisecond}},
		{name: "names protobuf's way, numbers as numbers", input: `{"resource_spans":[{"scope_spans":[{"spans":[{"kind":"SPAN_KIND_CLIENT",` +
			`"start_time_unix_nano":1000,"end_time_unix_nano":1500}]}]}]}`,
			latency: []time.Duration{500}, groups: []string{"- -"}},
		// Issue 30, item 12: one malformed span dropped the request's
		// 9 good ones with it.
		{name: "a malformed span, the request's other spans read",
			input: otlpLine("web", good, good, good, good, strings.Replace(good, `"startTimeUnixNano":"1700000000000000000"`, `"startTimeUnixNano":"soon"`, 1),
				good, good, good, good, good) + "\n" + otlpLine("api", good),
			errs:    []string{`t.otlp:1: span 5 of the request is not an OTLP/JSON span: `},
			latency: slices.Repeat([]time.Duration{250 * time.Millisecond}, 10), groups: append(slices.Repeat([]string{"web cart"}, 9), "api cart")},
		{name: "a malformed resource, its spans bad, the next resource's read",
			input: `{"resourceSpans":[{"resource":{"attributes":7},"scopeSpans":[{"spans":[` + good + `,` + good + `]}]},` +
				otlpLine("api", good)[len(`{"resourceSpans":[`):],
			errs: []string{`t.otlp:1: span 1 of the request is not an OTLP/JSON span: its resource is not an OTLP/JSON resource: `,
				`t.otlp:1: span 2 of the request is not an OTLP/JSON span: its resource is not an OTLP/JSON resource: `},
			latency: []time.Duration{250 * time.Millisecond}, groups: []string{"api cart"}},
		{name: "a malformed scope: the spans read, the request bad once",
			input:   `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},"scopeSpans":[{"scope":{"name":5},"spans":[` + good + `]}]}]}`,
			errs:    []string{`t.otlp:1: is not an OTLP/JSON ExportTraceServiceRequest: `},
			latency: []time.Duration{250 * time.Millisecond}, groups: []string{"web cart"}},
		{name: "spans that are not a list: the whole request bad", input: `{"resourceSpans":[{"scopeSpans":[{"spans":{"a":1}}]}]}` + "\n" + otlpLine("web", good),
			errs: []string{`t.otlp:1: is not an OTLP/JSON ExportTraceServiceRequest: `}, latency: []time.Duration{250 * time.Millisecond}},
		{name: "http status out of range", input: otlpLine("web", otlpSpan("1", "2", 0, `{"key":"http.response.status_code","value":{"intValue":"42"}}`)),
			errs: []string{`t.otlp:1: field "http.response.status_code": "42" is not a status code`}},
		{name: "group by route, method, status", o: Options{By: []string{"route", "method", "status", "status_class"}},
			input: otlpLine("web",
				otlpSpan("1", "2", 0, `{"key":"http.route","value":{"stringValue":"/u/{id}"}}`, `{"key":"http.request.method","value":{"stringValue":"PUT"}}`,
					`{"key":"http.response.status_code","value":{"intValue":"201"}}`),
				otlpSpan("1", "3", 2, `{"key":"rpc.method","value":{"stringValue":"Charge"}}`, `{"key":"rpc.grpc.status_code","value":{"intValue":"4"}}`),
				otlpSpan("1", "4", 0, `{"key":"http.method","value":{"stringValue":"GET"}}`, `{"key":"http.status_code","value":{"stringValue":"503"}}`)),
			latency: []time.Duration{1, 2, 3}, groups: []string{"/u/{id} PUT 201 2xx", "Charge - DEADLINE_EXCEEDED -", "- GET 503 5xx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder("otlp", strings.NewReader(tc.input), "t.otlp", tc.o)
			require.NoError(t, err)
			samples, errs := decodeAll(t, d)
			require.Len(t, errs, len(tc.errs), "%v", errs)
			for i, e := range errs {
				assert.True(t, strings.HasPrefix(e.Error(), tc.errs[i]), "%s\nwant %s", e.Error(), tc.errs[i])
			}
			var lat []time.Duration
			var groups []string
			for _, s := range samples {
				lat = append(lat, s.Latency)
				groups = append(groups, s.Group)
			}
			assert.Equal(t, tc.latency, lat)
			if tc.groups != nil {
				assert.Equal(t, tc.groups, groups)
			}
		})
	}
}

func TestOTLPOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"span kind", Options{SpanKind: "internal"}, `t.otlp: --span-kind "internal": want client, server or any`},
		{"group key", Options{By: []string{"caller", "host"}}, `t.otlp: cannot group by "host": OTLP spans group by caller, callee, route, method, status_class, status, or attr:NAME for any attribute`},
		{"route pattern", Options{RoutePatterns: []string{"/u/{id}"}}, `t.otlp: --route-pattern does not apply to OTLP spans: their http.route is already a route`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDecoder("otlp", strings.NewReader(""), "t.otlp", tc.o)
			assert.EqualError(t, err, tc.want)
		})
	}
	assert.EqualError(t, CheckLatency("otlp", "upstream"), `otlp inputs have one latency, no measure to choose: "upstream" is for access logs`)
}

func TestSniffOTLP(t *testing.T) {
	line := otlpLine("web", otlpSpan("1", "2", 0))
	for _, tc := range []struct {
		line string
		want bool
	}{
		{line, true},
		{line[:40], true}, // cut by the sniffing window
		{`{ "resourceSpans" : [`, true},
		{`{"resource_spans":[]}`, true},
		{`{"resourceSpans":{}}`, false},
		{`{"resourceMetrics":[]}`, false},
		{`{"level":"info","resourceSpans":"x"}`, false},
		{`{"duration":1,"resourceSpans":[`, false},
		{`[{"resourceSpans":[]}]`, false},
		{`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326 0.001`, false},
	} {
		assert.Equal(t, tc.want, sniffOTLP([]byte(tc.line)), tc.line)
	}
	f, _, err := Detect("auto", strings.NewReader("\n"+line+"\n"), "t", Options{})
	require.NoError(t, err)
	assert.Equal(t, "otlp", f.Name)
	// A batch longer than what sniffing reads.
	long := otlpLine("web", strings.Repeat(otlpSpan("1", "2", 0)+",", 2000)+otlpSpan("1", "2", 0))
	require.Greater(t, len(long), sniffBytes)
	f, r, err := Detect("auto", strings.NewReader(long), "t", Options{})
	require.NoError(t, err)
	require.Equal(t, "otlp", f.Name)
	d, err := f.New(r, "t", Options{})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	assert.Empty(t, errs)
	assert.Len(t, samples, 2001)
}

// TestOTLPChunks decodes an input cut into chunks, as the parallel read
// does, and gets what one decoder over the whole gets.
func TestOTLPChunks(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		start := 1_700_000_000_000_000_000 + int64(i)*1e9
		span := otlpSpan(fmt.Sprint(start), fmt.Sprint(start+int64(i)+1), 0)
		if i%50 == 7 {
			span = otlpSpan(fmt.Sprint(start), "1", 0)
		}
		b.WriteString(otlpLine(fmt.Sprint("svc", i%3), span, span) + "\n")
	}
	input := b.String()
	whole, err := NewDecoder("otlp", strings.NewReader(input), "t", Options{})
	require.NoError(t, err)
	wantS, wantE := decodeAll(t, whole)
	require.Len(t, wantE, 12)

	sp, err := NewSplitter("otlp", strings.NewReader(input), "t", Options{}, 4096)
	require.NoError(t, err)
	var gotS []Sample
	var gotE []*ParseError
	var fork ChunkDecoder
	chunks := 0
	for {
		c, err := sp.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		chunks++
		d := c.Decoder
		if d == nil {
			if fork == nil {
				fork, err = sp.Fork()
				require.NoError(t, err)
			}
			fork.Reset(c.Data, c.Line)
			d = fork
		}
		s, e := decodeAll(t, d)
		gotS, gotE = append(gotS, s...), append(gotE, e...)
	}
	require.Greater(t, chunks, 10)
	assert.Equal(t, wantS, gotS)
	assert.Equal(t, wantE, gotE)
}

// FuzzOTLP runs the otlp decoder over arbitrary input: no panic, no loop,
// only *ParseError with positive, non-decreasing lines, samples in bounds.
func FuzzOTLP(f *testing.F) {
	seeds := []string{
		otlpLine("web", otlpSpan("1700000000000000000", "1700000000250000000", 0, `{"key":"peer.service","value":{"stringValue":"cart"}}`)),
		otlpLine("web", otlpSpan("2", "1", 2), otlpSpan("1", "3", 0, `{"key":"rpc.grpc.status_code","value":{"intValue":"14"}}`)),
		otlpLine("", otlpSpan("1", "18446744073709551615", 0, `{"key":"http.response.status_code","value":{"intValue":"504"}}`)),
		`{"resource_spans":[{"scope_spans":[{"spans":[{"kind":2,"start_time_unix_nano":1,"end_time_unix_nano":2,"links":[{"traceId":"AA=="}]}]}]}]}`,
		`{"resourceSpans":[`, `{}`, `[]`, "\n\n", "{\"resourceSpans\":[]}\r\n{\"resourceSpans\":null}",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		checkSpanDecoder(t, "otlp", "fuzz.log", data, kind)
		_ = sniffOTLP(data)
	})
}

// BenchmarkOTLPDecode decodes 10,000 client spans in batches of 100, as
// the Collector's file exporter writes them, grouped by caller and callee.
func BenchmarkOTLPDecode(b *testing.B) {
	var buf strings.Builder
	start := int64(1_700_000_000_000_000_000)
	for l := range 100 {
		spans := make([]string, 100)
		for i := range spans {
			t := start + int64(l*100+i)*1e7
			spans[i] = otlpSpan(fmt.Sprint(t), fmt.Sprint(t+int64(1e6+i*1e4)), 0,
				`{"key":"peer.service","value":{"stringValue":"cart"}}`, `{"key":"http.route","value":{"stringValue":"/cart/{id}"}}`,
				`{"key":"http.request.method","value":{"stringValue":"GET"}}`, `{"key":"http.response.status_code","value":{"intValue":"200"}}`)
		}
		buf.WriteString(otlpLine("web", spans...) + "\n")
	}
	data := []byte(buf.String())
	benchDecode(b, len(data), 10_000, func() (Decoder, error) {
		return NewDecoder("otlp", bytes.NewReader(data), "bench.otlp", Options{})
	})
}

// otlpKeyValue is an attribute of the SDK's as OTLP has it.
func otlpKeyValue(kv attribute.KeyValue) *commonpb.KeyValue {
	v := &commonpb.AnyValue{}
	switch kv.Value.Type() {
	case attribute.INT64:
		v.Value = &commonpb.AnyValue_IntValue{IntValue: kv.Value.AsInt64()}
	default:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: kv.Value.Emit()}
	}
	return &commonpb.KeyValue{Key: string(kv.Key), Value: v}
}

// otlpTestRequests makes n requests of two services' spans of every shape
// of otlpSpanCases, client spans and others, with parents and links, and
// in every request one span that ends before it starts and one without a
// start (bad spans). It returns them and what the client spans should
// give, by start time.
func otlpTestRequests(n int) ([]*coltracepb.ExportTraceServiceRequest, map[time.Time]otlpWant) {
	base := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	want := map[time.Time]otlpWant{}
	var reqs []*coltracepb.ExportTraceServiceRequest
	seq := 0
	for i := range n {
		req := &coltracepb.ExportTraceServiceRequest{}
		for _, svc := range []string{"frontend", "checkout"} {
			ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "otlp_test"}}
			for j := range 12 {
				seq++
				c := otlpSpanCases[seq%len(otlpSpanCases)]
				start := base.Add(time.Duration(seq) * time.Second)
				d := time.Duration(seq)*time.Millisecond + time.Duration(seq*7+1)*time.Nanosecond
				var traceID trace.TraceID
				var spanID, parent trace.SpanID
				binary.BigEndian.PutUint64(traceID[8:], uint64(i+1))
				binary.BigEndian.PutUint64(spanID[:], uint64(seq))
				binary.BigEndian.PutUint64(parent[:], uint64(seq-1))
				sp := &tracepb.Span{TraceId: traceID[:], SpanId: spanID[:], ParentSpanId: parent[:], Name: "call",
					Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(d).UnixNano()),
					Links: []*tracepb.Span_Link{{TraceId: traceID[:], SpanId: parent[:]}}}
				for _, kv := range c.attrs {
					sp.Attributes = append(sp.Attributes, otlpKeyValue(kv))
				}
				if c.errored {
					sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "failed"}
				}
				switch j {
				case 3:
					sp.Kind = tracepb.Span_SPAN_KIND_SERVER
				case 4:
					sp.Kind = tracepb.Span_SPAN_KIND_INTERNAL
				case 5:
					sp.EndTimeUnixNano = sp.StartTimeUnixNano - 1
				case 6:
					sp.StartTimeUnixNano = 0
				default:
					want[start] = otlpWant{latency: d, group: svc + " " + c.callee, status: c.status,
						censored: c.censored, excluded: c.excluded, spanID: spanID, traceID: traceID}
				}
				ss.Spans = append(ss.Spans, sp)
			}
			req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{
				Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpKeyValue(attribute.String("service.name", svc))}},
				ScopeSpans: []*tracepb.ScopeSpans{ss},
			})
		}
		reqs = append(reqs, req)
	}
	return reqs, want
}

// otlpEncodings returns reqs as the file exporter writes them: OTLP/JSON
// lines (format: json) and length-prefixed protobuf (format: proto).
func otlpEncodings(t *testing.T, reqs []*coltracepb.ExportTraceServiceRequest) (jsonl, pb []byte) {
	t.Helper()
	var msgs [][]byte
	for _, req := range reqs {
		line, err := otlpJSONLine(req)
		require.NoError(t, err)
		jsonl = append(append(jsonl, line...), '\n')
		msg, err := proto.Marshal(req)
		require.NoError(t, err)
		msgs = append(msgs, msg)
	}
	return jsonl, frameOTLP(msgs...)
}

// decodeOTLP detects the format of input (which must be otlp) and decodes it.
func decodeOTLP(t *testing.T, input []byte, o Options) ([]Sample, []*ParseError) {
	t.Helper()
	f, r, err := Detect("auto", bytes.NewReader(input), "traces", o)
	require.NoError(t, err)
	require.Equal(t, "otlp", f.Name, "sniffed")
	d, err := f.New(r, "traces", o)
	require.NoError(t, err)
	return decodeAll(t, d)
}

// TestOTLPProtoMatchesJSON decodes the same requests written as protobuf
// and as OTLP/JSON: the same samples, sample by sample, and the same bad
// spans (a request per line, so a line's number is its message's); and
// the samples are the spans' own.
func TestOTLPProtoMatchesJSON(t *testing.T) {
	reqs, want := otlpTestRequests(20)
	jsonl, pb := otlpEncodings(t, reqs)
	require.True(t, otlpFramed(pb))

	samples, errs := decodeOTLP(t, pb, Options{})
	require.Len(t, samples, len(want), "client spans only")
	require.Len(t, errs, 2*2*20, "two bad spans a service a request")
	assert.Equal(t, `traces:1: field "endTimeUnixNano": "1772600773123456788" is before startTimeUnixNano 1772600773123456789: a negative duration`,
		errs[0].Error())
	assert.Equal(t, 20, errs[len(errs)-1].Line, "the message's number")
	var rule StatusRule
	for _, s := range samples {
		w, ok := want[s.Time]
		require.True(t, ok, "a sample at %v, the start of no span", s.Time)
		assert.Equal(t, w.latency, s.Latency, "span at %v", s.Time)
		assert.Equal(t, w.group, s.Group)
		assert.Equal(t, w.status, s.Status)
		assert.Equal(t, w.excluded, rule.Classify(&s), "span at %v (%s)", s.Time, s.Group)
		assert.Equal(t, w.censored, s.Censored, "span at %v (%s)", s.Time, s.Group)
	}

	for _, o := range []Options{{}, {SpanKind: "any", By: SpanGroupKeys}, {SpanKind: "server", By: []string{"route", "status"}}} {
		t.Run(fmt.Sprint(o.SpanKind, o.By), func(t *testing.T) {
			gotS, gotE := decodeOTLP(t, pb, o)
			wantS, wantE := decodeOTLP(t, jsonl, o)
			require.NotEmpty(t, wantS)
			require.Len(t, gotS, len(wantS))
			for i := range wantS {
				assert.Equal(t, wantS[i], gotS[i], "sample %d", i)
			}
			assert.Equal(t, wantE, gotE)
		})
	}
}

// TestOTLPProtoBadMessages: a corrupt message is a bad record with its
// number and the messages after it are read; a cut-off last one is a bad
// record too; a length prefix over the limit ends the reading.
func TestOTLPProtoBadMessages(t *testing.T) {
	reqs, _ := otlpTestRequests(3)
	var msgs [][]byte
	for _, req := range reqs {
		msg, err := proto.Marshal(req)
		require.NoError(t, err)
		msgs = append(msgs, msg)
	}
	_, wholeErrs := decodeOTLP(t, frameOTLP(msgs...), Options{})
	whole, _ := decodeOTLP(t, frameOTLP(msgs...), Options{})
	perMsg := len(whole) / 3

	t.Run("corrupt", func(t *testing.T) {
		corrupt := frameOTLP(msgs[0], []byte{0x0a, 0x7f, 0x0a}, msgs[2])
		samples, errs := decodeOTLP(t, corrupt, Options{})
		assert.Equal(t, append(slices.Clone(whole[:perMsg]), whole[2*perMsg:]...), samples)
		var bad []*ParseError
		for _, e := range errs {
			if e.Field == "" {
				bad = append(bad, e)
			}
		}
		require.Len(t, bad, 1)
		assert.Equal(t, 2, bad[0].Line)
		assert.True(t, strings.HasPrefix(bad[0].Error(), "traces:2: protobuf message is not an ExportTraceServiceRequest: "), bad[0].Error())
	})
	t.Run("cut off", func(t *testing.T) {
		framed := frameOTLP(msgs...)
		samples, errs := decodeOTLP(t, framed[:len(framed)-3], Options{})
		assert.Equal(t, whole[:2*perMsg], samples)
		last := errs[len(errs)-1]
		assert.Equal(t, fmt.Sprintf("traces:3: protobuf message is cut off: the input ends after %d of its %d bytes", len(msgs[2])-3, len(msgs[2])),
			last.Error())
		assert.Equal(t, wholeErrs[:len(wholeErrs)*2/3], errs[:len(errs)-1])
	})
	t.Run("length over the limit", func(t *testing.T) {
		framed := append(frameOTLP(msgs[0]), 0x7f, 0xff, 0xff, 0xff)
		d, err := NewDecoder("otlp", bytes.NewReader(framed), "traces", Options{})
		require.NoError(t, err)
		n := 0
		for {
			_, err = d.Next()
			if err != nil && !isBadRecord(err) {
				break
			}
			n++
		}
		assert.Equal(t, perMsg+len(wholeErrs)/3, n, "the first message's samples and bad spans")
		assert.EqualError(t, err, "traces: protobuf message 2: its length prefix says 2147483647 bytes, more than the 64 MiB a message may have: "+
			"the file is corrupt, or not framed as the Collector's file exporter frames OTLP")
	})
	t.Run("ids", func(t *testing.T) {
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{TraceId: make([]byte, 24), Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 1, EndTimeUnixNano: 2},
		}}}}}}
		msg, err := proto.Marshal(req)
		require.NoError(t, err)
		_, errs := decodeOTLP(t, frameOTLP(msg), Options{})
		require.Len(t, errs, 1)
		assert.Equal(t, `traces:1: field "traceId": "`+strings.Repeat("00", 24)+`" is not a 16-byte id`, errs[0].Error(),
			"protobuf's ids are bytes: no hex to fix")
	})
}

// TestOTLPProtoCompressed reads protobuf compressed as the file exporter
// compresses it: the whole file (its native compression, through Open),
// or each message on its own (compression: zstd), of format: proto or
// format: json alike.
func TestOTLPProtoCompressed(t *testing.T) {
	reqs, _ := otlpTestRequests(5)
	jsonl, pb := otlpEncodings(t, reqs)
	wantS, wantE := decodeOTLP(t, jsonl, Options{})
	require.NotEmpty(t, wantS)

	zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	var perMsgProto, perMsgJSON [][]byte
	for _, req := range reqs {
		msg, err := proto.Marshal(req)
		require.NoError(t, err)
		perMsgProto = append(perMsgProto, zw.EncodeAll(msg, nil))
		line, err := otlpJSONLine(req)
		require.NoError(t, err)
		perMsgJSON = append(perMsgJSON, zw.EncodeAll(line, nil))
	}
	for name, input := range map[string][]byte{
		"zstd file":                         zw.EncodeAll(pb, nil),
		"zstd messages, format: proto":      frameOTLP(perMsgProto...),
		"zstd messages, format: json":       frameOTLP(perMsgJSON...),
		"zstd file of zstd messages, proto": zw.EncodeAll(frameOTLP(perMsgProto...), nil),
	} {
		t.Run(name, func(t *testing.T) {
			rc, err := Open("-", bytes.NewReader(input))
			require.NoError(t, err)
			defer rc.Close()
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.Nil(t, Truncated(rc))
			gotS, gotE := decodeOTLP(t, data, Options{})
			assert.Equal(t, wantS, gotS)
			assert.Equal(t, wantE, gotE)
		})
	}
}

// TestOTLPProtoSplitter: the parallel read does not cut protobuf (a
// message holds line breaks); it reads it whole, in one chunk, as one
// decoder would.
func TestOTLPProtoSplitter(t *testing.T) {
	reqs, _ := otlpTestRequests(30)
	_, pb := otlpEncodings(t, reqs)
	require.Greater(t, len(pb), 4*4096)
	wantS, wantE := decodeOTLP(t, pb, Options{})

	sp, err := NewSplitter("auto", bytes.NewReader(pb), "traces", Options{}, 4096)
	require.NoError(t, err)
	c, err := sp.Next()
	require.NoError(t, err)
	assert.True(t, c.Rest, "read whole")
	require.NotNil(t, c.Decoder)
	gotS, gotE := decodeAll(t, c.Decoder)
	assert.Equal(t, wantS, gotS)
	assert.Equal(t, wantE, gotE)
	_, err = sp.Next()
	assert.Equal(t, io.EOF, err)
}

// TestScanSpanLinksProto: the links of protobuf spans are those of the
// same spans in OTLP/JSON.
func TestScanSpanLinksProto(t *testing.T) {
	reqs, want := otlpTestRequests(4)
	jsonl, pb := otlpEncodings(t, reqs)
	fromJSON := scanLinks(t, "otlp", string(jsonl))
	fromProto := scanLinks(t, "otlp", string(pb))
	// The client spans and a server one a service a request.
	require.Len(t, fromJSON, len(want)+2*4)
	assert.Equal(t, fromJSON, fromProto)
	first := fromProto[0]
	assert.Equal(t, id8("0000000000000001"), first.SpanID)
	assert.Equal(t, id8("0000000000000000"), first.ParentID)
	assert.Equal(t, "frontend", first.Caller)
}

// BenchmarkOTLPDecodeProto decodes BenchmarkOTLPDecode's spans written as
// protobuf (format: proto).
func BenchmarkOTLPDecodeProto(b *testing.B) {
	start := int64(1_700_000_000_000_000_000)
	var msgs [][]byte
	for l := range 100 {
		ss := &tracepb.ScopeSpans{}
		for i := range 100 {
			t := uint64(start + int64(l*100+i)*1e7)
			ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: make([]byte, 16), SpanId: make([]byte, 8), Name: "GET",
				Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: t, EndTimeUnixNano: t + uint64(1e6+i*1e4),
				Attributes: []*commonpb.KeyValue{otlpKeyValue(attribute.String("peer.service", "cart")),
					otlpKeyValue(attribute.String("http.route", "/cart/{id}")), otlpKeyValue(attribute.String("http.request.method", "GET")),
					otlpKeyValue(attribute.Int("http.response.status_code", 200))}})
		}
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpKeyValue(attribute.String("service.name", "web"))}},
			ScopeSpans: []*tracepb.ScopeSpans{ss}}}}
		msg, err := proto.Marshal(req)
		require.NoError(b, err)
		msgs = append(msgs, msg)
	}
	data := frameOTLP(msgs...)
	benchDecode(b, len(data), 10_000, func() (Decoder, error) {
		return NewDecoder("otlp", bytes.NewReader(data), "bench.binpb", Options{})
	})
}

// --by attr:NAME reads an attribute of the span, of any type, else one
// of its resource (k8s.namespace.name is a resource attribute).
func TestOTLPGroupByAttr(t *testing.T) {
	line := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}},` +
		`{"key":"k8s.namespace.name","value":{"stringValue":"shop"}}]},"scopeSpans":[{"spans":[` +
		otlpSpan("1", "2", 0, `{"key":"server.port","value":{"intValue":"8443"}}`, `{"key":"retry","value":{"boolValue":true}}`) + `]}]}]}`
	d, err := NewDecoder("otlp", strings.NewReader(line), "t.otlp", Options{By: []string{"attr:k8s.namespace.name", "attr:server.port", "attr:retry", "attr:absent"}})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errs)
	require.Len(t, samples, 1)
	assert.Equal(t, "shop 8443 true -", samples[0].Group)
	_, err = NewDecoder("otlp", strings.NewReader(""), "t.otlp", Options{By: []string{"attr:"}})
	assert.ErrorContains(t, err, `cannot group by "attr:": name the attribute`)
}
