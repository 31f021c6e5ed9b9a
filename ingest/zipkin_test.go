package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/zipkin"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// zipkinSDKFile makes n client spans (and some server and internal ones)
// with two services' TracerProviders, exported by the OpenTelemetry Go
// SDK's Zipkin exporter to an httptest server on 127.0.0.1 that appends
// each POSTed body (a JSON array of spans) and a newline to a file. It
// returns the file and the samples it should give, by start time
// (Zipkin's microseconds).
func zipkinSDKFile(t *testing.T, n int) (string, map[time.Time]otlpWant) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spans.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost || !json.Valid(body) {
			http.Error(w, "want a POST of JSON", http.StatusBadRequest)
			return
		}
		mu.Lock()
		_, err = f.Write(append(body, '\n'))
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)

	ctx := context.Background()
	services := []string{"frontend", "checkout"}
	var tracers []trace.Tracer
	var providers []*sdktrace.TracerProvider
	for _, svc := range services {
		exp, err := zipkin.New(srv.URL + "/api/v2/spans")
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(100), sdktrace.WithMaxQueueSize(4*n)),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))),
		)
		providers = append(providers, tp)
		tracers = append(tracers, tp.Tracer("tunetimeout/ingest/zipkin_test"))
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
		// Zipkin's unit is the microsecond: the exporter rounds both.
		want[start.Round(time.Microsecond)] = otlpWant{latency: d.Round(time.Microsecond), group: services[svc] + " " + c.callee,
			status: c.status, censored: c.censored, excluded: c.excluded,
			spanID: span.SpanContext().SpanID(), traceID: span.SpanContext().TraceID()}
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
	require.NoError(t, f.Close())
	return path, want
}

// TestZipkinFromSDK decodes spans the OpenTelemetry Go SDK made and
// exported through its Zipkin exporter: every client span is one sample,
// its latency the span's duration to the microsecond, grouped by caller
// and callee, censored and excluded as its tags say; and the same spans
// as /api/v2/traces returns them, arrays of arrays, and pretty-printed.
func TestZipkinFromSDK(t *testing.T) {
	const n = 1000
	path, want := zipkinSDKFile(t, n)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	bodies := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	require.Greater(t, len(bodies), 2, "spans come in batches, several bodies")
	require.Less(t, len(bodies), n/2, "batches of many spans")

	f, r, err := Detect("auto", bytes.NewReader(data), "spans.json", Options{})
	require.NoError(t, err)
	require.Equal(t, "zipkin", f.Name, "sniffed")
	d, err := f.New(r, "spans.json", Options{})
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

	decode := func(t *testing.T, input []byte, o Options) []Sample {
		t.Helper()
		d, err := NewDecoder("zipkin", bytes.NewReader(input), "spans.json", o)
		require.NoError(t, err)
		s, errs := decodeAll(t, d)
		require.Empty(t, errs)
		return s
	}
	t.Run("span-kind any", func(t *testing.T) {
		assert.Len(t, decode(t, data, Options{SpanKind: "any"}), n+2*n/100)
	})
	t.Run("span-kind server", func(t *testing.T) {
		s := decode(t, data, Options{SpanKind: "Server"})
		require.Len(t, s, n/100)
		assert.Equal(t, time.Millisecond, s[0].Latency)
	})
	t.Run("api/v2/traces: an array of arrays", func(t *testing.T) {
		traces := append(append([]byte("["), bytes.Join(bodies, []byte(","))...), ']')
		assert.Equal(t, samples, decode(t, traces, Options{}))
	})
	t.Run("bodies one after the other on one line", func(t *testing.T) {
		assert.Equal(t, samples, decode(t, bytes.Join(bodies, nil), Options{}))
	})
	t.Run("pretty-printed", func(t *testing.T) {
		var b bytes.Buffer
		for _, body := range bodies {
			require.NoError(t, json.Indent(&b, body, "", "  "))
			b.WriteByte('\n')
		}
		assert.Equal(t, samples, decode(t, b.Bytes(), Options{}))
	})
	t.Run("ids", func(t *testing.T) {
		// The exporter's ids are the SDK's, in hex.
		path, want := zipkinSDKFile(t, 20)
		small, err := os.ReadFile(path)
		require.NoError(t, err)
		matched := 0
		for _, body := range bytes.Split(bytes.TrimSpace(small), []byte("\n")) {
			var spans []zipkinSpan
			require.NoError(t, json.Unmarshal(body, &spans))
			for _, sp := range spans {
				ts, err := sp.Timestamp.Int64()
				require.NoError(t, err)
				w, ok := want[time.UnixMicro(ts).UTC()]
				if !ok || sp.Kind != "CLIENT" {
					continue
				}
				assert.Equal(t, w.traceID.String(), sp.TraceID)
				assert.Equal(t, w.spanID.String(), sp.ID)
				matched++
			}
		}
		assert.Equal(t, 20, matched)
	})
}

// zipkinSpanJSON is a client span of frontend at ts (µs) for dur (µs,
// "" for none) with extra fields (JSON members, comma-separated).
func zipkinSpanJSON(ts, dur string, extra ...string) string {
	s := `{"traceId":"5b8efff798038103d269b633813fc60c","id":"eee19b7ec3c1b174","kind":"CLIENT",` +
		`"localEndpoint":{"serviceName":"frontend"}`
	if ts != "" {
		s += `,"timestamp":` + ts
	}
	if dur != "" {
		s += `,"duration":` + dur
	}
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

func TestZipkinSpans(t *testing.T) {
	good := zipkinSpanJSON("1700000000000000", "250000", `"remoteEndpoint":{"serviceName":"cart"}`)
	const ms250 = 250 * time.Millisecond
	for _, tc := range []struct {
		name    string
		input   string
		o       Options
		errs    []string
		latency []time.Duration
		groups  []string
	}{
		{name: "one span", input: "[" + good + "]", latency: []time.Duration{ms250}, groups: []string{"frontend cart"}},
		{name: "newline-delimited spans", input: good + "\n" + good + "\n", latency: []time.Duration{ms250, ms250}},
		{name: "not JSON", input: "hello\n[" + good + "]",
			errs: []string{`t.json:1: "hello" is not a Zipkin span or array of spans`}, latency: []time.Duration{ms250}},
		{name: "a bad span, the others read", input: "[" + good + ",\n" + `{"traceId":"x",` + "\n" + `"duration":}` + ",\n" + good + "]",
			errs: []string{`t.json:2: is not a Zipkin span: invalid character '}' looking for beginning of value`}, latency: []time.Duration{ms250, ms250}},
		{name: "negative duration", input: "[\n" + good + ",\n" + zipkinSpanJSON("1700000000000000", "-5") + "\n]",
			errs: []string{`t.json:3: field "duration": "-5" is negative`}, latency: []time.Duration{ms250}},
		{name: "missing timestamp", input: "[" + good + "]\n[" + zipkinSpanJSON("", "5") + "]",
			errs: []string{`t.json:2: field "timestamp": "" is not set: the span has no start`}, latency: []time.Duration{ms250}},
		{name: "missing duration", input: "[" + zipkinSpanJSON("1700000000000000", "") + "]",
			errs: []string{`t.json:1: field "duration": "" is not set: an unfinished span`}},
		{name: "fractional duration", input: "[" + zipkinSpanJSON("1700000000000000", "1.5") + "]",
			errs: []string{`t.json:1: field "duration": "1.5" is not a whole number of microseconds`}},
		{name: "a tag that is not a string", input: "[" + zipkinSpanJSON("1700000000000000", "1", `"tags":{"http.status_code":200}`) + "]",
			errs: []string{`t.json:1: field "tags": "number" is not a string`}},
		{name: "bad id", input: "[" + strings.Replace(good, "eee19b7ec3c1b174", "zzz", 1) + "]",
			errs: []string{`t.json:1: field "id": "zzz" is not an id of at most 16 hex digits`}},
		{name: "cut off", input: "[" + good + "," + good[:40],
			errs: []string{`t.json:1: the span is cut off: the input ends before its closing }`}, latency: []time.Duration{ms250}},
		{name: "a stray bracket", input: "]\n" + good, errs: []string{`t.json:1: "]" closes no array`}, latency: []time.Duration{ms250}},
		{name: "a span over the cap", input: "[" + zipkinSpanJSON("1", "2", `"name":"`+strings.Repeat("y", maxZipkinSpan)+`"`) + ",\n" + good + "]",
			errs: []string{`t.json:1: span is longer than 1 MiB`}, latency: []time.Duration{ms250}},
		{name: "braces in strings", input: `[` + zipkinSpanJSON("1", "2", `"name":"a}\"{]"`) + `]`, latency: []time.Duration{2 * time.Microsecond}},
		{name: "http status out of range", input: "[" + zipkinSpanJSON("1", "2", `"tags":{"http.status_code":"42"}`) + "]",
			errs: []string{`t.json:1: field "http.response.status_code": "42" is not a status code`}},
		{name: "error tag without a status, callee by ip", o: Options{By: []string{"callee", "status"}},
			input: "[" + zipkinSpanJSON("1", "3", `"tags":{"error":""}`, `"remoteEndpoint":{"ipv4":"10.0.0.7","port":6379}`) + "," +
				zipkinSpanJSON("1", "4", `"tags":{"grpc.status_code":"DEADLINE_EXCEEDED","rpc.service":"pay.Pay"}`) + "," +
				zipkinSpanJSON("1", "5", `"remoteEndpoint":{"ipv6":"::1"}`) + "]",
			latency: []time.Duration{3 * time.Microsecond, 4 * time.Microsecond, 5 * time.Microsecond},
			groups:  []string{"10.0.0.7:6379 -", "pay.Pay DEADLINE_EXCEEDED", "[::1] -"}},
		{name: "kinds: server and internal spans are passed over", input: `[` +
			strings.Replace(good, "CLIENT", "SERVER", 1) + "," + strings.Replace(good, `"kind":"CLIENT",`, "", 1) + "," + good + `]`,
			latency: []time.Duration{ms250}},
		{name: "group by route, method, status", o: Options{By: []string{"route", "method", "status", "status_class"}},
			input: "\xef\xbb\xbf[" +
				zipkinSpanJSON("1", "1", `"tags":{"http.route":"/u/{id}","http.request.method":"PUT","http.response.status_code":"201"}`) + "," +
				zipkinSpanJSON("1", "2", `"tags":{"rpc.method":"Charge","rpc.grpc.status_code":"4","otel.status_code":"ERROR","error":"x"}`) + "," +
				zipkinSpanJSON("1", "3", `"tags":{"http.method":"GET","http.status_code":"503"}`) + "]",
			latency: []time.Duration{time.Microsecond, 2 * time.Microsecond, 3 * time.Microsecond},
			groups:  []string{"/u/{id} PUT 201 2xx", "Charge - DEADLINE_EXCEEDED -", "- GET 503 5xx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder("zipkin", strings.NewReader(tc.input), "t.json", tc.o)
			require.NoError(t, err)
			samples, errs := decodeAll(t, d)
			require.Len(t, errs, len(tc.errs), "%v", errs)
			for i, e := range errs {
				assert.Equal(t, tc.errs[i], e.Error())
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

// TestZipkinStatus: the tags map to status, censoring and exclusions as
// otlp's attributes do, through the status rule.
func TestZipkinStatus(t *testing.T) {
	for _, tc := range []struct {
		tags     string
		status   int
		censored bool
		excluded string
	}{
		{`{"http.response.status_code":"200"}`, 200, false, ""},
		{`{"http.response.status_code":"504","error":"x"}`, 504, true, ""},
		{`{"http.status_code":"500","error":""}`, 500, false, Excluded5xx},
		{`{"http.status_code":"404","otel.status_code":"ERROR"}`, 404, false, ""},
		{`{"rpc.grpc.status_code":"1"}`, 0, true, ""},
		{`{"rpc.grpc.status_code":"14"}`, 0, false, "grpc UNAVAILABLE"},
		{`{"rpc.grpc.status_code":"0"}`, 0, false, ""},
		{`{"grpc.status_code":"UNAVAILABLE"}`, 0, false, "grpc UNAVAILABLE"},
		{`{"error":""}`, 0, false, ExcludedSpanError},
		{`{"otel.status_code":"ERROR"}`, 0, false, ExcludedSpanError},
		{`{"otel.status_code":"OK"}`, 0, false, ""},
	} {
		d, err := NewDecoder("zipkin", strings.NewReader(zipkinSpanJSON("1", "7", `"tags":`+tc.tags)), "t", Options{})
		require.NoError(t, err)
		s, err := d.Next()
		require.NoError(t, err, tc.tags)
		var rule StatusRule
		excluded := rule.Classify(&s)
		assert.Equal(t, tc.status, s.Status, tc.tags)
		assert.Equal(t, tc.censored, s.Censored, tc.tags)
		assert.Equal(t, tc.excluded, excluded, tc.tags)
		assert.Equal(t, 7*time.Microsecond, s.Latency)
	}
}

func TestZipkinOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"span kind", Options{SpanKind: "internal"}, `t.json: --span-kind "internal": want client, server or any`},
		{"group key", Options{By: []string{"caller", "host"}}, `t.json: cannot group by "host": Zipkin spans group by caller, callee, route, method, status_class, status, or attr:NAME for any attribute`},
		{"route pattern", Options{RoutePatterns: []string{"/u/{id}"}}, `t.json: --route-pattern does not apply to Zipkin spans: their http.route is already a route`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDecoder("zipkin", strings.NewReader(""), "t.json", tc.o)
			assert.EqualError(t, err, tc.want)
		})
	}
	assert.EqualError(t, CheckLatency("zipkin", "upstream"), `zipkin inputs have one latency, no measure to choose: "upstream" is for access logs`)
}

func TestSniffZipkin(t *testing.T) {
	span := zipkinSpanJSON("1", "2")
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"[" + span + "]", true},
		{"[[" + span + "]]", true},
		{" [ " + span[:strings.Index(span, `"timestamp":`)+13], true}, // cut by the sniffing window
		{" [ " + span[:60], false},                                    // cut before kind and timestamp
		{span, true},
		{`[{"traceId":"a","duration":3,"kind":"SERVER"}]`, true},
		{`{"traceId":"a","duration":3,"kind":"SERVER"}`, false}, // an object needs an id too
		{`[{"traceId":"a","kind":"CLIENT"}]`, false},
		{`[{"traceId":"a","timestamp":1}]`, false},
		{`[{"resourceSpans":[]}]`, false},
		{`[]`, false},
		{`[`, false},
		{`{"level":"info","ts":1,"duration":3}`, false},
		{`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326 0.001`, false},
	} {
		assert.Equal(t, tc.want, sniffZipkin([]byte(tc.line)), tc.line)
	}
	f, _, err := Detect("auto", strings.NewReader("\n["+span+"]\n"), "t", Options{})
	require.NoError(t, err)
	assert.Equal(t, "zipkin", f.Name)
	// An array longer than what sniffing reads.
	long := "[" + strings.Repeat(span+",", 2000) + span + "]"
	require.Greater(t, len(long), sniffBytes)
	f, r, err := Detect("auto", strings.NewReader(long), "t", Options{})
	require.NoError(t, err)
	require.Equal(t, "zipkin", f.Name)
	d, err := f.New(r, "t", Options{})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	assert.Empty(t, errs)
	assert.Len(t, samples, 2001)
}

// FuzzZipkin runs the zipkin decoder over arbitrary input: no panic, no
// loop, only *ParseError with positive, non-decreasing lines, samples in
// bounds.
func FuzzZipkin(f *testing.F) {
	seeds := []string{
		"[" + zipkinSpanJSON("1700000000000000", "250000", `"remoteEndpoint":{"serviceName":"cart"}`) + "]",
		"[[" + zipkinSpanJSON("1", "-3") + "],[" + zipkinSpanJSON("", "2", `"tags":{"rpc.grpc.status_code":"14"}`) + "]]",
		zipkinSpanJSON("9223372036854775807", "9223372036854775807", `"tags":{"http.status_code":"504"}`) + "\n" + zipkinSpanJSON("1", "1"),
		`[{"traceId":"x","kind":"SERVER","timestamp":"1","duration":1e3,"tags":{"a":1}}]`,
		`[{"a":"\"}{"`, `[`, `]`, `{}`, `[]`, "\n\n", "hello\n[{}]", "\xef\xbb\xbf[{\"kind\":\"CLIENT\"}]",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(6))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		checkSpanDecoder(t, "zipkin", "fuzz.json", data, kind)
		_ = sniffZipkin(data)
	})
}

// BenchmarkZipkinDecode decodes 10,000 client spans in arrays of 100, as
// the exporter posts them, grouped by caller and callee.
func BenchmarkZipkinDecode(b *testing.B) {
	var buf strings.Builder
	start := int64(1_700_000_000_000_000)
	for l := range 100 {
		spans := make([]string, 100)
		for i := range spans {
			ts := start + int64(l*100+i)*1e4
			spans[i] = zipkinSpanJSON(fmt.Sprint(ts), fmt.Sprint(1000+i*10), `"remoteEndpoint":{"serviceName":"cart"}`,
				`"tags":{"peer.service":"cart","http.route":"/cart/{id}","http.request.method":"GET","http.response.status_code":"200"}`)
		}
		buf.WriteString("[" + strings.Join(spans, ",") + "]\n")
	}
	data := []byte(buf.String())
	benchDecode(b, len(data), 10_000, func() (Decoder, error) {
		return NewDecoder("zipkin", bytes.NewReader(data), "bench.json", Options{})
	})
}
