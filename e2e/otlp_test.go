package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// The "done when": an OTLP file of 100,000 client spans from the
// OpenTelemetry Go SDK gives per-edge percentiles equal, within the
// histogram's precision, to an exact computation over the same spans.
//
// The spans are made by the real SDK (two services, two TracerProviders)
// and exported by its OTLP/HTTP exporter to a loopback receiver that
// writes each ExportTraceServiceRequest as one line of OTLP/JSON, as the
// Collector's file exporter does. Nothing here needs a binary: the test
// runs in plain go test ./... too.

const (
	otlpSpans = 100_000
	// otlpStep is the time between span starts over all edges: 400 spans/s.
	otlpStep = 2500 * time.Microsecond
	// otlpBatch is the spans per export request, one line each: large for
	// speed, small enough that a line stays under the decoder's 1 MiB.
	otlpBatch = 1000
	// otlpGateway is when the callee's gateway gives up and answers 504.
	otlpGateway = time.Second
)

// otlpEdge is one caller -> callee edge and the latency model of its calls.
type otlpEdge struct {
	caller, callee string
	model          mixture.Model
	// slots are the span indexes i%4 the edge takes: its share of the
	// 400 spans/s.
	slots []int
}

var otlpEdges = []otlpEdge{
	{caller: "frontend", callee: "cart", model: mixture.Default(), slots: []int{0, 2}},
	{caller: "frontend", callee: "catalog", model: mixture.Model{Median: 35 * time.Millisecond, Sigma: 0.7,
		PauseShare: 0.01, PauseMin: 200 * time.Millisecond, PauseMax: 600 * time.Millisecond}, slots: []int{1}},
	{caller: "checkout", callee: "payments", model: mixture.Model{Median: 120 * time.Millisecond, Sigma: 0.3,
		PauseShare: 0.03, PauseMin: 100 * time.Millisecond, PauseMax: 400 * time.Millisecond}, slots: []int{3}},
}

// otlpEdgeWant is what the spans of one edge should come to: the
// latencies the status rule counts (the 504s' included, censored), the
// 504s and the 500s, and the seconds the edge's spans start in.
type otlpEdgeWant struct {
	counted    []time.Duration // sorted after otlpTraceFile
	censored   int64
	minCensor  time.Duration
	excluded   int64
	spans      int64
	first, end time.Time // the first span's start, the last one's
}

// otlpReceiver is an httptest server on 127.0.0.1 that takes the OTLP/HTTP
// exporter's protobuf ExportTraceServiceRequests and writes each as one
// line of OTLP/JSON (ingest/otlp_test.go's otlpCollector, which this
// package cannot import).
type otlpReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	file *os.File
}

func newOTLPReceiver(tb testing.TB, path string) *otlpReceiver {
	tb.Helper()
	f, err := os.Create(path)
	require.NoError(tb, err)
	c := &otlpReceiver{file: f}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		var line []byte
		if err == nil {
			line, err = otlpJSON(&req)
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
	tb.Cleanup(c.srv.Close)
	return c
}

// otlpJSON writes req as OTLP/JSON: protojson's mapping with enums as
// numbers, and the ids protojson writes in base64 rewritten in hex (the
// OTLP specification, "JSON Protobuf Encoding").
func otlpJSON(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
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

// otlpTraceFile makes otlpSpans CLIENT spans over otlpEdges with the SDK,
// one every otlpStep from a whole second on, exports them through the
// OTLP/HTTP exporter to an otlpReceiver and returns the file and, per
// edge ("caller callee"), what the spans should come to. Latencies come
// from each edge's mixture model (seeded); 0.2 % of calls hit the
// gateway's timeout and answer 504 a little after otlpGateway (censored),
// 1 % fail fast with a 500 (excluded).
func otlpTraceFile(tb testing.TB) (string, map[string]*otlpEdgeWant) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "traces.jsonl")
	rcv := newOTLPReceiver(tb, path)
	want := otlpTraceSpans(tb, rcv.srv.URL+"/v1/traces")
	require.NoError(tb, rcv.file.Close())
	return path, want
}

// otlpTraceSpans makes the spans of otlpTraceFile and exports them to
// endpoint (an OTLP/HTTP traces URL), returning what they should come to.
func otlpTraceSpans(tb testing.TB, endpoint string) map[string]*otlpEdgeWant {
	tb.Helper()
	ctx := context.Background()

	tracers := map[string]trace.Tracer{}
	var providers []*sdktrace.TracerProvider
	for _, svc := range []string{"frontend", "checkout"} {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(tb, err)
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(otlpBatch), sdktrace.WithMaxQueueSize(4*otlpBatch),
				sdktrace.WithBlocking(), sdktrace.WithBatchTimeout(time.Minute)),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))),
		)
		providers = append(providers, tp)
		tracers[svc] = tp.Tracer("tunetimeout/e2e/otlp_test")
	}

	// Each edge's latencies, drawn ahead from its own seed.
	slotEdge := map[int]int{}
	draws := make([][]time.Duration, len(otlpEdges))
	for e, edge := range otlpEdges {
		for _, s := range edge.slots {
			slotEdge[s] = e
		}
		draws[e] = edge.model.Generate(uint64(7+e), otlpSpans*len(edge.slots)/4)
	}
	used := make([]int, len(otlpEdges))
	want := map[string]*otlpEdgeWant{}
	status := rand.New(rand.NewPCG(2026, 12))
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range otlpSpans {
		e := slotEdge[i%4]
		edge := otlpEdges[e]
		name := edge.caller + " " + edge.callee
		w := want[name]
		if w == nil {
			w = &otlpEdgeWant{}
			want[name] = w
		}
		// The model's microseconds and some nanoseconds, which the span
		// keeps and the histogram drops.
		d := draws[e][used[e]] + time.Duration(i%1000)*time.Nanosecond
		used[e]++
		code := 200
		switch u := status.Float64(); {
		case u < 0.002:
			code, d = 504, otlpGateway+time.Duration(status.IntN(20_000))*time.Microsecond+time.Duration(i%1000)
		case u < 0.012:
			code, d = 500, time.Millisecond+time.Duration(status.IntN(3_000_000))
		}
		start := base.Add(time.Duration(i) * otlpStep)
		_, span := tracers[edge.caller].Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
			trace.WithAttributes(attribute.String("peer.service", edge.callee), attribute.String("http.request.method", "GET"),
				attribute.Int("http.response.status_code", code)))
		if code >= 500 {
			span.SetStatus(codes.Error, "")
		}
		span.End(trace.WithTimestamp(start.Add(d)))

		w.spans++
		if w.first.IsZero() {
			w.first = start
		}
		w.end = start
		switch code {
		case 500:
			w.excluded++
			continue
		case 504:
			if w.censored == 0 || d < w.minCensor {
				w.minCensor = d
			}
			w.censored++
		}
		w.counted = append(w.counted, d)
	}
	for _, tp := range providers {
		require.NoError(tb, tp.Shutdown(ctx))
	}
	for _, w := range want {
		w.counted = sortedDurations(w.counted)
	}
	return want
}

func analyseOTLP(tb testing.TB, path string) *report.Report {
	tb.Helper()
	rep, err := analysis.Run(context.Background(), analysis.Options{
		Inputs:    []string{path},
		Format:    "", // detected: the lines are longer than what sniffing reads
		Recommend: recommend.DefaultOptions(),
	}, nil)
	require.NoError(tb, err)
	return rep
}

// TestOTLPExactPercentiles is the check: per edge (caller and
// callee, the grouping without --by), the tool's samples, censored and
// excluded counts, each percentile and the measured rate are those of an
// exact computation over the spans the SDK made.
func TestOTLPExactPercentiles(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 spans through the SDK's exporter: not in -short")
	}
	began := time.Now()
	path, want := otlpTraceFile(t)
	made := time.Since(began)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	longest := 0
	for _, l := range lines {
		longest = max(longest, len(l))
	}
	require.Less(t, longest, 1<<20, "a line of %d spans must fit the decoder's 1 MiB", otlpBatch)
	require.GreaterOrEqual(t, len(lines), otlpSpans/otlpBatch, "the exporter's batches, one line each")

	began = time.Now()
	rep := analyseOTLP(t, path)
	analysed := time.Since(began)
	t.Logf("%d spans: made and exported in %v (%d lines, %.1f MB, longest line %d bytes), analysed in %v",
		otlpSpans, made.Round(time.Millisecond), len(lines), float64(len(data))/1e6, longest, analysed.Round(time.Millisecond))

	assertOTLPExact(t, rep, want)
}

// assertOTLPExact checks a report of otlpTraceSpans's spans against what
// they should come to: per edge the samples, censored and excluded
// counts, every percentile within HDR precision of the exact one, and the
// rate.
func assertOTLPExact(t *testing.T, rep *report.Report, want map[string]*otlpEdgeWant) {
	t.Helper()
	assert.EqualValues(t, otlpSpans, rep.Input.Records, "every client span is a record")
	assert.Zero(t, rep.Input.BadRecords, "%v", rep.Input.BadExamples)
	names := make([]string, len(rep.Groups))
	for i, g := range rep.Groups {
		names[i] = g.Name
	}
	require.Equal(t, []string{"checkout payments", "frontend cart", "frontend catalog"}, names, "one group per edge, by name")

	var total int64
	for _, g := range rep.Groups {
		w := want[g.Name]
		total += w.spans
		// Counted: every span but the 500s, the 504s at their duration.
		require.EqualValues(t, len(w.counted), g.Samples, "group %s: samples", g.Name)
		assert.Equal(t, w.censored, g.Censored, "group %s: the 504s are censored", g.Name)
		assert.Equal(t, map[string]int64{ingest.Excluded5xx: w.excluded}, g.Excluded, "group %s: the 500s are excluded", g.Name)
		assert.Positive(t, w.censored, "group %s: the mixture of statuses gave 504s", g.Name)
		assert.Positive(t, w.excluded, "group %s: and 500s", g.Name)

		quantiles := make([]float64, len(g.Percentiles))
		for i, p := range g.Percentiles {
			quantiles[i] = p.Quantile
			exact, tool := orderStat(w.counted, p.Quantile), reportDuration(p.Seconds)
			t.Logf("group %s p%v: exact %v (rank %d of %d), tool %v", g.Name, p.Quantile*100, exact,
				quantileRank(p.Quantile, len(w.counted)), len(w.counted), tool)
			assertHDR(t, exact, tool, "group %s p%v", g.Name, p.Quantile*100)
			// A percentile at or above the first 504 is only a lower
			// bound: the call took at least that long.
			assert.Equal(t, exact >= w.minCensor, p.LowerBound, "group %s p%v (%v; first 504 at %v): lower bound",
				g.Name, p.Quantile*100, exact, w.minCensor)
		}
		assert.Equal(t, report.StandardQuantiles, quantiles, "group %s", g.Name)

		// The rate over the whole seconds the edge's spans start in: 400
		// spans/s shared by the edges' slots, all of them counted (the
		// 500s too: they are calls).
		seconds := w.end.Truncate(time.Second).Sub(w.first.Truncate(time.Second)).Seconds() + 1
		exactRate := float64(w.spans) / seconds
		generated := float64(time.Second/otlpStep) * float64(slotsOf(g.Name)) / 4
		require.NotNil(t, g.LittlesLaw.RatePerSecond, "group %s: a measured rate", g.Name)
		assert.Equal(t, "measured", g.LittlesLaw.RateSource, "group %s", g.Name)
		assert.InEpsilon(t, exactRate, *g.LittlesLaw.RatePerSecond, 1e-9, "group %s: rate", g.Name)
		assert.InEpsilon(t, generated, *g.LittlesLaw.RatePerSecond, 1e-9, "group %s: the rate generated", g.Name)
		t.Logf("group %s: %d spans, %d counted, %d censored (504), %d excluded (500); rate %.3f/s (generated %.0f/s)",
			g.Name, w.spans, g.Samples, g.Censored, w.excluded, *g.LittlesLaw.RatePerSecond, generated)
	}
	assert.EqualValues(t, otlpSpans, total)
	// Three edges, no service both called and calling: a graph with no
	// inversion.
	require.NotNil(t, rep.CallGraph)
	assert.Len(t, rep.CallGraph.Edges, 3)
	assert.Empty(t, rep.CallGraph.Findings)
}

// slotsOf is how many of the four slots the edge named name takes.
func slotsOf(name string) int {
	for _, e := range otlpEdges {
		if e.caller+" "+e.callee == name {
			return len(e.slots)
		}
	}
	return 0
}

// BenchmarkOTLPAnalyze is the whole analysis of the 100,000 spans the SDK
// made (TestOTLPExactPercentiles's file, about 40 MB of OTLP/JSON):
// decoding, grouping, recommending, Little's law and the report.
func BenchmarkOTLPAnalyze(b *testing.B) {
	path, _ := otlpTraceFile(b)
	fi, err := os.Stat(path)
	require.NoError(b, err)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		rep := analyseOTLP(b, path)
		if len(rep.Groups) != len(otlpEdges) {
			b.Fatalf("%d groups, want %d", len(rep.Groups), len(otlpEdges))
		}
	}
	b.ReportMetric(float64(otlpSpans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
}

// TestOTLPCallGraph: spans of a chain, frontend -> cart -> db, made by the
// SDK: cart's calls to db take ten times longer than frontend's to cart,
// so the timeout recommended for cart -> db exceeds frontend's for cart:
// an inversion, reported on the graph with both timeouts; the text report
// leads with the graph.
func TestOTLPCallGraph(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chain.jsonl")
	rcv := newOTLPReceiver(t, path)
	ctx := context.Background()
	tracers := map[string]trace.Tracer{}
	var providers []*sdktrace.TracerProvider
	for _, svc := range []string{"frontend", "cart"} {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.srv.URL+"/v1/traces"),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		providers = append(providers, tp)
		tracers[svc] = tp.Tracer("tunetimeout/e2e/otlp_test")
	}
	r := rand.New(rand.NewPCG(17, 3))
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range 2000 {
		start := base.Add(time.Duration(i) * 10 * time.Millisecond)
		for _, call := range []struct {
			caller, callee string
			lo, hi         time.Duration
		}{{"frontend", "cart", 10 * time.Millisecond, 20 * time.Millisecond}, {"cart", "db", 100 * time.Millisecond, 200 * time.Millisecond}} {
			d := call.lo + time.Duration(r.Int64N(int64(call.hi-call.lo)))
			_, span := tracers[call.caller].Start(ctx, "call", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
				trace.WithAttributes(attribute.String("peer.service", call.callee)))
			span.End(trace.WithTimestamp(start.Add(d)))
		}
	}
	for _, tp := range providers {
		require.NoError(t, tp.Shutdown(ctx))
	}
	require.NoError(t, rcv.file.Close())

	rep := analyseOTLP(t, path)
	require.NotNil(t, rep.CallGraph, "spans grouped by caller and callee are a call graph")
	require.Len(t, rep.CallGraph.Edges, 2)
	timeouts := map[string]float64{}
	for _, e := range rep.CallGraph.Edges {
		timeouts[e.Caller+" "+e.Callee] = e.TimeoutSeconds
		assert.EqualValues(t, 2000, e.Calls, e.Group)
	}
	require.Greater(t, timeouts["cart db"], timeouts["frontend cart"], "the chain inverts")
	require.Len(t, rep.CallGraph.Findings, 1)
	f := rep.CallGraph.Findings[0]
	assert.Equal(t, "TT-TIMEOUT-INVERSION", string(f.Code))
	assert.Equal(t, "frontend cart", f.Fields["upstream"])
	assert.Equal(t, "cart db", f.Fields["downstream"])
	assert.Equal(t, timeouts["frontend cart"], f.Fields["upstream_timeout_seconds"])
	assert.Equal(t, timeouts["cart db"], f.Fields["downstream_timeout_seconds"])

	var text bytes.Buffer
	require.NoError(t, report.WriteText(&text, rep))
	assert.Contains(t, text.String(), "\n== Call graph (2 edges) ==\n")
	assert.Contains(t, text.String(), "Warning [TT-TIMEOUT-INVERSION]: frontend waits ")
}

// TestOTLPDeadlineNotPropagated: frontend calls cart (a CLIENT span C of
// 100ms) and cart serves it (a SERVER span S, C's child, made by cart's
// own TracerProvider from C's context). In 100 of 1,000 traces frontend
// gives up and cart works on for 200ms after C ended; in the rest S ends
// before C. frontend's calls to catalog make the graph a graph (two
// edges). The finding is on frontend -> cart, with the counts and the
// work after, and the text report shows it.
func TestOTLPDeadlineNotPropagated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deadline.jsonl")
	rcv := newOTLPReceiver(t, path)
	ctx := context.Background()
	tracers := map[string]trace.Tracer{}
	var providers []*sdktrace.TracerProvider
	for _, svc := range []string{"frontend", "cart"} {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.srv.URL+"/v1/traces"),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		providers = append(providers, tp)
		tracers[svc] = tp.Tracer("tunetimeout/e2e/otlp_test")
	}
	const traces, late = 1000, 100
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range traces {
		start := base.Add(time.Duration(i) * 10 * time.Millisecond)
		cctx, c := tracers["frontend"].Start(ctx, "GET /cart", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
			trace.WithAttributes(attribute.String("peer.service", "cart")))
		cEnd := start.Add(100 * time.Millisecond)
		_, s := tracers["cart"].Start(cctx, "GET /cart", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start.Add(time.Millisecond)))
		sEnd := cEnd.Add(-10 * time.Millisecond)
		if i%(traces/late) == 0 {
			sEnd = cEnd.Add(200 * time.Millisecond) // frontend timed out; cart worked on
		}
		s.End(trace.WithTimestamp(sEnd))
		c.End(trace.WithTimestamp(cEnd))

		_, cat := tracers["frontend"].Start(ctx, "GET /catalog", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
			trace.WithAttributes(attribute.String("peer.service", "catalog")))
		cat.End(trace.WithTimestamp(start.Add(time.Duration(30+i%20) * time.Millisecond)))
	}
	for _, tp := range providers {
		require.NoError(t, tp.Shutdown(ctx))
	}
	require.NoError(t, rcv.file.Close())

	rep := analyseOTLP(t, path)
	require.NotNil(t, rep.CallGraph)
	require.Len(t, rep.CallGraph.Edges, 2, "frontend cart and frontend catalog: server spans are no samples")
	var got []report.Finding
	for _, f := range rep.CallGraph.Findings {
		if f.Code == "TT-DEADLINE-NOT-PROPAGATED" {
			got = append(got, f)
		}
	}
	require.Len(t, got, 1, "%v", rep.CallGraph.Findings)
	f := got[0]
	assert.Equal(t, "frontend cart", f.Fields["edge"])
	assert.EqualValues(t, traces, f.Fields["calls"])
	assert.EqualValues(t, late, f.Fields["after_parent"])
	assert.InDelta(t, 0.1, f.Fields["after_parent_fraction"], 1e-12)
	assert.InDelta(t, 0.2, f.Fields["work_after_seconds_max"], 1e-6)
	assert.InDelta(t, late*0.2, f.Fields["work_after_seconds_total"], 1e-6)
	assert.EqualValues(t, 0, f.Fields["unmatched_dropped"])

	var text bytes.Buffer
	require.NoError(t, report.WriteText(&text, rep))
	assert.Contains(t, text.String(), "Warning [TT-DEADLINE-NOT-PROPAGATED]: 100 of frontend's calls to cart (10 %) ended while cart worked")
}

// TestOTLPCallOutlivesCaller: orders serves requests (SERVER spans made by
// the OpenTelemetry SDK) and under each calls payments-db, which nobody
// traces (a CLIENT span with peer.service, no span of the callee), and
// cache. In 500 of 2,000 requests orders answers after 100ms while its
// call to payments-db runs on for 200ms more (the SDK exports the request
// first, the call after it); in the rest the call ends first. The finding
// is on orders -> payments-db with the exact counts, and none on
// orders -> cache; TT-DEADLINE-NOT-PROPAGATED, which needs the callee's
// spans, finds nothing.
func TestOTLPCallOutlivesCaller(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outlive.jsonl")
	rcv := newOTLPReceiver(t, path)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.srv.URL+"/v1/traces"),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "orders"))))
	tr := tp.Tracer("tunetimeout/e2e/otlp_test")
	const requests, late = 2000, 500
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range requests {
		start := base.Add(time.Duration(i) * 10 * time.Millisecond)
		sctx, s := tr.Start(ctx, "POST /orders", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
		sEnd := start.Add(100 * time.Millisecond)
		_, c := tr.Start(sctx, "INSERT payments", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start.Add(time.Millisecond)),
			trace.WithAttributes(attribute.String("peer.service", "payments-db")))
		_, cache := tr.Start(sctx, "GET", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start.Add(time.Millisecond)),
			trace.WithAttributes(attribute.String("peer.service", "cache")))
		cache.End(trace.WithTimestamp(start.Add(time.Duration(2+i%5) * time.Millisecond)))
		if i%(requests/late) == 0 {
			s.End(trace.WithTimestamp(sEnd))
			c.End(trace.WithTimestamp(sEnd.Add(200 * time.Millisecond)))
		} else {
			c.End(trace.WithTimestamp(sEnd.Add(-time.Duration(10+i%50) * time.Millisecond)))
			s.End(trace.WithTimestamp(sEnd))
		}
	}
	require.NoError(t, tp.Shutdown(ctx))
	require.NoError(t, rcv.file.Close())

	rep := analyseOTLP(t, path)
	require.NotNil(t, rep.CallGraph)
	var got []report.Finding
	for _, f := range rep.CallGraph.Findings {
		switch f.Code {
		case "TT-CALL-OUTLIVES-CALLER":
			got = append(got, f)
		case "TT-DEADLINE-NOT-PROPAGATED":
			t.Errorf("no callee is traced, yet %s", f.Message)
		}
	}
	require.Len(t, got, 1, "%v", rep.CallGraph.Findings)
	f := got[0]
	assert.Equal(t, "orders payments-db", f.Fields["edge"])
	assert.EqualValues(t, requests, f.Fields["calls"])
	assert.EqualValues(t, late, f.Fields["after_parent"])
	assert.InDelta(t, 0.25, f.Fields["after_parent_fraction"], 1e-12)
	assert.InDelta(t, 0.2, f.Fields["work_after_seconds_max"], 1e-6)
	assert.InDelta(t, late*0.2, f.Fields["work_after_seconds_total"], 1e-6)
	assert.EqualValues(t, 0, f.Fields["unmatched_dropped"])
	assert.EqualValues(t, 0, f.Fields["unmatched_expired"])

	var text bytes.Buffer
	require.NoError(t, report.WriteText(&text, rep))
	assert.Contains(t, text.String(), "Warning [TT-CALL-OUTLIVES-CALLER]: 500 of orders's calls to payments-db (25 %) ran on after the\n  request of orders they were made for had ended")
}

// TestOTLPDeadlineDownTheChain is the lesson's example (docs/method.md,
// "the chain"), from spans the SDK made: gateway owns a 1s deadline and
// calls frontend at once; frontend calls orders after 30ms of its own
// work, orders calls payments after 160ms more. Normally frontend has
// 1,000ms left, orders 970ms and payments 810ms; one request of 1,000
// waits 900ms in gateway's queue first, and then has 100ms, 70ms and
// -90ms: payments is called after the deadline has passed and must drop
// the work. The command's JSON and text carry the budgets and the finding.
func TestOTLPDeadlineDownTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chain.jsonl")
	rcv := newOTLPReceiver(t, path)
	ctx := context.Background()
	tracers := map[string]trace.Tracer{}
	var providers []*sdktrace.TracerProvider
	for _, svc := range []string{"gateway", "frontend", "orders"} {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.srv.URL+"/v1/traces"),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		providers = append(providers, tp)
		tracers[svc] = tp.Tracer("tunetimeout/e2e/otlp_test")
	}
	const requests, queued = 1000, 500
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	// call makes a CLIENT span of from to peer under parent, and the
	// callee's SERVER span under it when the callee is traced.
	call := func(parent context.Context, from, peer string, start, end time.Time) context.Context {
		cctx, c := tracers[from].Start(parent, "call "+peer, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
			trace.WithAttributes(attribute.String("peer.service", peer)))
		defer c.End(trace.WithTimestamp(end))
		if tr, ok := tracers[peer]; ok {
			sctx, s := tr.Start(cctx, "serve", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
			defer s.End(trace.WithTimestamp(end))
			return sctx
		}
		return cctx
	}
	for i := range requests {
		s := base.Add(time.Duration(i) * 2 * time.Second)
		q := time.Duration(0)
		if i == queued {
			q = ms(900)
		}
		rctx, root := tracers["gateway"].Start(ctx, "GET /checkout", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(s))
		fctx := call(rctx, "gateway", "frontend", s.Add(q), s.Add(q+ms(300+i%7)))
		octx := call(fctx, "frontend", "orders", s.Add(q+ms(30)), s.Add(q+ms(290)))
		call(octx, "orders", "payments", s.Add(q+ms(190)), s.Add(q+ms(240+i%5)))
		root.End(trace.WithTimestamp(s.Add(q + ms(310))))
	}
	for _, tp := range providers {
		require.NoError(t, tp.Shutdown(ctx))
	}
	require.NoError(t, rcv.file.Close())

	out, errOut, code := runTool(t, "analyze", path, "--deadline", "1s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.CallGraph)
	budgets := map[string]*report.EdgeBudget{}
	for _, e := range rep.CallGraph.Edges {
		budgets[e.Group] = e.Budget
	}
	// The time left, in ms, at the median and at the worst call; p99.9 of
	// 1,000 calls is the 999th, a normal one.
	for edge, want := range map[string][2]float64{"gateway frontend": {1000, 100}, "frontend orders": {970, 70}, "orders payments": {810, -90}} {
		b := budgets[edge]
		require.NotNil(t, b, edge)
		assert.EqualValues(t, requests, b.Calls, edge)
		// The median is read as its highest equivalent value (at most
		// 0.1 % above): the time left is at most that much below.
		assert.InDelta(t, want[0], b.LeftSeconds.P50*1000, 1, edge)
		assert.LessOrEqual(t, b.LeftSeconds.P50*1000, want[0], edge)
		assert.InDelta(t, want[0], b.LeftSeconds.AtQuantile*1000, 1, edge)
		assert.InDelta(t, want[1], b.LeftSeconds.Worst*1000, 1e-6, edge)
	}
	assert.EqualValues(t, 1, budgets["orders payments"].CallsPastDeadline)
	assert.EqualValues(t, 0, budgets["frontend orders"].CallsPastDeadline)
	var noBudget []report.Finding
	for _, f := range rep.CallGraph.Findings {
		if f.Code == "TT-NO-BUDGET-LEFT" {
			noBudget = append(noBudget, f)
		}
	}
	// Each hop's queued call had less than a useful try left (the call
	// policy's min-useful-try, 2 x the median): frontend's (about 600ms)
	// with 100ms, orders' (520ms) with 70ms, payments' (104ms) with none.
	require.Len(t, noBudget, 3, "%v", rep.CallGraph.Findings)
	for _, f := range noBudget {
		assert.EqualValues(t, 1, f.Fields["calls_below_min_useful"], f.Fields["edge"])
	}
	assert.InDelta(t, 0.52, budgets["frontend orders"].MinUsefulSeconds, 1e-3, "the call policy's min-useful-try")
	assert.Equal(t, "orders payments", noBudget[2].Fields["edge"])
	assert.EqualValues(t, 1, noBudget[2].Fields["calls_past_deadline"])

	text, errOut, code := runTool(t, "analyze", path, "--deadline", "1s")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "Warning [TT-NO-BUDGET-LEFT]: 1 of orders's calls to payments (0.1 %) were made with less")
	assert.Regexp(t, `(?m)^orders\s+payments\s+190ms\s+810ms\s+810ms\s+-90ms\s+104ms\s+110ms\s+1$`, text)

	// The plan: each hop's deadline is what its calls have left at p99.9
	// (the 999th call, a normal one: 1,000, 970 and 810ms), retries only
	// at one layer.
	plan := func(retryAt string) (map[string]*report.Policy, *report.ChainPlan) {
		t.Helper()
		out, errOut, code := runTool(t, "analyze", path, "--deadline", "1s", "--attempts", "3", "--plan", "--retry-at", retryAt, "-o", "json")
		require.Equal(t, 0, code, errOut)
		var rep report.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.NotNil(t, rep.CallGraph)
		pol := map[string]*report.Policy{}
		for _, g := range rep.Groups {
			pol[g.Name] = g.Policy
		}
		return pol, rep.CallGraph.Plan
	}
	// A hop's deadline is also bounded by what its caller's own call
	// leaves it: frontend waits 550ms for orders (one attempt at its
	// recommended timeout), and orders spends 160ms before calling
	// payments, so payments gets 390ms, not the 810ms the root's deadline
	// leaves; with the retries innermost, gateway waits 650ms for
	// frontend, which spends 30ms: 620ms for orders.
	for _, tc := range []struct {
		retryAt string
		retries string
		planned map[string]float64
	}{
		{"outermost", "gateway frontend", map[string]float64{"gateway frontend": 1000, "frontend orders": 970, "orders payments": 390}},
		{"innermost", "orders payments", map[string]float64{"gateway frontend": 1000, "frontend orders": 620, "orders payments": 390}},
	} {
		pol, p := plan(tc.retryAt)
		require.NotNil(t, p, tc.retryAt)
		assert.Equal(t, []string{tc.retries}, p.RetryEdges, tc.retryAt)
		assert.Equal(t, tc.retryAt, p.RetryAt)
		for edge, left := range tc.planned {
			g := pol[edge]
			require.NotNil(t, g, edge)
			require.NotNil(t, g.DeadlineSeconds, edge)
			// The quantile's time spent is an upper bound (at most 0.1 %
			// high): the deadline left is at most 1ms below.
			assert.InDelta(t, left-0.5, *g.DeadlineSeconds*1000, 1, "%s %s", tc.retryAt, edge)
			want := 1
			if edge == tc.retries {
				want = 3
			}
			assert.Equal(t, want, g.RequestedAttempts, "%s %s", tc.retryAt, edge)
			assert.LessOrEqual(t, g.Attempts, want, "%s %s", tc.retryAt, edge)
			assert.LessOrEqual(t, g.WorstCaseSeconds, *g.DeadlineSeconds+1e-9, "%s %s: the policy fits its hop's deadline", tc.retryAt, edge)
			var step *report.Step
			for i := range g.Steps {
				if g.Steps[i].Rule == "plan" {
					step = &g.Steps[i]
				}
			}
			require.NotNil(t, step, "%s %s: the policy's plan step", tc.retryAt, edge)
			assert.InDelta(t, *g.DeadlineSeconds, step.Seconds, 1e-9)
		}
	}
	text, errOut, code = runTool(t, "analyze", path, "--deadline", "1s", "--attempts", "3", "--plan")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "The plan (--plan): retries at the outermost layer only (gateway -> frontend)")
	// The plan's snippets per hop, and check of them as the chain: each
	// hop's config holds its edge's calls, and one layer retries.
	for _, retryAt := range []string{"outermost", "innermost"} {
		dir := filepath.Join(t.TempDir(), retryAt)
		_, errOut, code = runTool(t, "analyze", path, "-q", "--deadline", "1s", "--attempts", "3", "--plan", "--retry-at", retryAt, "--emit-dir", dir)
		require.Equal(t, 0, code, errOut)
		out, errOut, code := runTool(t, "check", "--topology", filepath.Join(dir, "topology.yaml"), "--data", path, "-q", "--fail-on", "never", "-o", "json")
		require.Equal(t, 0, code, errOut)
		var c report.Check
		require.NoError(t, json.Unmarshal([]byte(out), &c))
		assert.Empty(t, c.UnmatchedGroups, retryAt)
		for _, f := range c.Findings {
			assert.NotContains(t, []string{"TT-CHECK-RETRY-LAYERS", "TT-CHECK-TIMEOUT-INVERSION"}, f.Code, "%s: %s", retryAt, f.Message)
		}
	}
	_, errOut, code = runTool(t, "analyze", path, "--plan")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "give --deadline too")
}

// TestOTLPRetryAmplification: spans of a retrying chain made by the SDK.
// frontend serves a request (a SERVER span) and tries cart twice under it
// (two CLIENT spans, the first failing); cart serves the second attempt
// and tries db three times under its SERVER span. The second read of the
// spans counts 2 attempts per call of frontend -> cart and 3 of cart -> db,
// and the path frontend -> cart -> db multiplies them to 6 attempts at db
// per call of frontend: TT-RETRY-AMPLIFICATION. With a --deadline of
// half the path's summed timeouts, TT-DEADLINE-BUDGET too.
func TestOTLPRetryAmplification(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retries.jsonl")
	rcv := newOTLPReceiver(t, path)
	ctx := context.Background()
	tracers := map[string]trace.Tracer{}
	var providers []*sdktrace.TracerProvider
	for _, svc := range []string{"frontend", "cart"} {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.srv.URL+"/v1/traces"),
			otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		require.NoError(t, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc))))
		providers = append(providers, tp)
		tracers[svc] = tp.Tracer("tunetimeout/e2e/otlp_test")
	}
	const traces = 300
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range traces {
		start := base.Add(time.Duration(i) * 100 * time.Millisecond)
		rctx, root := tracers["frontend"].Start(ctx, "GET /", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
		at := start.Add(time.Millisecond)
		for attempt := range 2 {
			actx, c := tracers["frontend"].Start(rctx, "GET /cart", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(at),
				trace.WithAttributes(attribute.String("peer.service", "cart")))
			d := 10*time.Millisecond + time.Duration(i%10)*time.Millisecond
			if attempt == 1 {
				_, s := tracers["cart"].Start(actx, "GET /cart", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at.Add(100*time.Microsecond)))
				sctx := trace.ContextWithSpan(actx, s)
				dbAt := at.Add(200 * time.Microsecond)
				for j := range 3 {
					_, db := tracers["cart"].Start(sctx, "SELECT", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(dbAt),
						trace.WithAttributes(attribute.String("peer.service", "db")))
					dd := 2*time.Millisecond + time.Duration((i+j)%5)*time.Millisecond
					db.End(trace.WithTimestamp(dbAt.Add(dd)))
					dbAt = dbAt.Add(dd + 10*time.Microsecond)
				}
				d = dbAt.Sub(at) + time.Millisecond
				s.End(trace.WithTimestamp(at.Add(d - 100*time.Microsecond)))
			}
			c.End(trace.WithTimestamp(at.Add(d)))
			at = at.Add(d + 100*time.Microsecond)
		}
		root.End(trace.WithTimestamp(at))
	}
	for _, tp := range providers {
		require.NoError(t, tp.Shutdown(ctx))
	}
	require.NoError(t, rcv.file.Close())

	rep := analyseOTLP(t, path)
	cg := rep.CallGraph
	require.NotNil(t, cg)
	require.Len(t, cg.Edges, 2, "frontend cart and cart db")
	for _, e := range cg.Edges {
		require.NotNil(t, e.AttemptsPerCallMax, e.Group)
		want := map[string]int64{"frontend cart": 2, "cart db": 3}[e.Group]
		assert.Equal(t, want, *e.AttemptsPerCallMax, e.Group)
		assert.InDelta(t, float64(want), *e.AttemptsPerCallMean, 1e-12, e.Group)
	}
	require.Len(t, cg.Paths, 1)
	assert.Equal(t, []string{"frontend cart", "cart db"}, cg.Paths[0].Edges)
	assert.InDelta(t, 6, *cg.Paths[0].AttemptsMax, 1e-12)
	var amp []report.Finding
	for _, f := range cg.Findings {
		if f.Code == "TT-RETRY-AMPLIFICATION" {
			amp = append(amp, f)
		}
	}
	require.Len(t, amp, 1, "%v", cg.Findings)
	assert.InDelta(t, 6, amp[0].Fields["attempts_max"], 1e-12)

	sum := cg.Paths[0].TimeoutSecondsTotal
	deadline := time.Duration(sum / 2 * float64(time.Second)).Round(time.Millisecond)
	rep, err := analysis.Run(ctx, analysis.Options{Inputs: []string{path}, Recommend: recommend.DefaultOptions(),
		Policy: recommend.PolicyOptions{Deadline: deadline}}, nil)
	require.NoError(t, err)
	require.NotNil(t, rep.CallGraph)
	require.Len(t, rep.CallGraph.Paths, 1)
	require.NotNil(t, rep.CallGraph.Paths[0].FitsDeadline)
	assert.False(t, *rep.CallGraph.Paths[0].FitsDeadline)
	var budget int
	for _, f := range rep.CallGraph.Findings {
		if f.Code == "TT-DEADLINE-BUDGET" {
			budget++
		}
	}
	assert.Equal(t, 1, budget)
}
