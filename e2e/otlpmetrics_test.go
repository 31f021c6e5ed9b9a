package e2e

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// OTLP metrics made by the OpenTelemetry Go SDK itself: its histograms,
// exported by its OTLP/HTTP exporter to a receiver that writes each
// request as the Collector's file exporter does (one OTLP/JSON
// ExportMetricsServiceRequest per line). The "done when":
// exponential-histogram metrics give bounds that contain the exact
// quantile of the samples recorded into them.

// otlpMetricsReceiver writes every export it receives as one line.
func otlpMetricsReceiver(tb testing.TB, path string) *httptest.Server {
	tb.Helper()
	f, err := os.Create(path)
	require.NoError(tb, err)
	tb.Cleanup(func() { f.Close() })
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req colmetricspb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		var line []byte
		if err == nil {
			line, err = protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(&req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		_, err = f.Write(append(line, '\n'))
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// metricEdge is one edge's recorded latencies, in seconds.
type metricEdge struct {
	callee  string
	samples []float64
}

// otlpMetricsFile records samples into an SDK histogram (exponential with
// exponential set, else explicit with the SDK's default bounds in ms),
// exporting after every batch with temporality, and returns the file and
// what was recorded per group ("frontend callee").
func otlpMetricsFile(tb testing.TB, exponential bool, temporality metricdata.Temporality, batches int) (string, map[string]*metricEdge) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "metrics.jsonl")
	srv := otlpMetricsReceiver(tb, path)
	return path, otlpMetricsExport(tb, srv.URL+"/v1/metrics", exponential, temporality, batches)
}

// otlpMetricsExport records and exports otlpMetricsFile's samples to
// endpoint (an OTLP/HTTP metrics URL).
func otlpMetricsExport(tb testing.TB, endpoint string, exponential bool, temporality metricdata.Temporality, batches int) map[string]*metricEdge {
	tb.Helper()
	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpoint),
		otlpmetrichttp.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temporality }))
	require.NoError(tb, err)
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return temporality }))
	name, unit := "rpc.client.duration", "ms"
	var agg sdkmetric.Aggregation = sdkmetric.AggregationExplicitBucketHistogram{
		Boundaries: []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}, // the SDK's default
	}
	if exponential {
		name, unit = "http.client.request.duration", "s"
		agg = sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "frontend"))),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: name}, sdkmetric.Stream{Aggregation: agg})))
	tb.Cleanup(func() { _ = mp.Shutdown(ctx) })
	h, err := mp.Meter("tunetimeout/e2e").Float64Histogram(name, metric.WithUnit(unit))
	require.NoError(tb, err)

	rng := rand.New(rand.NewPCG(17, 4))
	edges := map[string]*metricEdge{}
	callees := []struct {
		addr   string
		port   int
		median float64 // seconds
	}{{"cart", 8080, 0.012}, {"payments", 443, 0.09}, {"search", 9200, 0.03}}
	for b := 0; b < batches; b++ {
		for _, c := range callees {
			e := edges["frontend "+c.addr+":"+strconv.Itoa(c.port)]
			if e == nil {
				e = &metricEdge{callee: c.addr}
				edges["frontend "+c.addr+":"+strconv.Itoa(c.port)] = e
			}
			attrs := metric.WithAttributes(attribute.String("server.address", c.addr), attribute.Int("server.port", c.port),
				attribute.String("http.request.method", "GET"))
			for i := 0; i < 4000; i++ {
				s := c.median * math.Exp(0.6*rng.NormFloat64())
				if rng.IntN(500) == 0 {
					s *= 8 // a tail
				}
				e.samples = append(e.samples, s)
				v := s
				if unit == "ms" {
					v = s * 1000
				}
				h.Record(ctx, v, attrs)
			}
		}
		// Export what the reader holds now, as a periodic reader would.
		var rm metricdata.ResourceMetrics
		require.NoError(tb, reader.Collect(ctx, &rm))
		require.NoError(tb, exp.Export(ctx, &rm))
	}
	require.NoError(tb, exp.Shutdown(ctx))
	return edges
}

// exactQuantile is the q-quantile of sorted as a histogram answers it:
// the smallest value with at least q x n values at or below it.
func exactQuantile(sorted []float64, q float64) float64 {
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	return sorted[max(rank, 1)-1]
}

func analyseMetrics(tb testing.TB, path string, by ...string) *report.Report {
	tb.Helper()
	rep, err := analysis.Run(context.Background(), analysis.Options{
		Inputs:    []string{path},
		Recommend: recommend.DefaultOptions(),
		Ingest:    ingest.Options{By: by},
	}, nil)
	require.NoError(tb, err)
	return rep
}

// TestOTLPExponentialBoundsContainExact: for every edge and every
// percentile the report gives, the exact quantile of the samples recorded
// lies in the bucket the report reads it from, and the report's figure
// (the bucket's upper bound) is above it by less than one bucket's
// relative width, base - 1 = 2^(2^-scale) - 1.
func TestOTLPExponentialBoundsContainExact(t *testing.T) {
	for _, temp := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(temp.String(), func(t *testing.T) {
			path, edges := otlpMetricsFile(t, true, temp, 3)
			assertExponentialBounds(t, analyseMetrics(t, path), edges)
		})
	}
}

// assertExponentialBounds checks a report of otlpMetricsExport's
// exponential histograms against the samples recorded into them.
func assertExponentialBounds(t *testing.T, rep *report.Report, edges map[string]*metricEdge) {
	t.Helper()
	require.NotNil(t, rep.Prometheus)
	assert.Equal(t, "exponential", rep.Prometheus.Kind)
	assert.Equal(t, report.OTLPServer, rep.Prometheus.Server)
	assert.Equal(t, 1.0, rep.Prometheus.UnitSeconds)
	require.Len(t, rep.Groups, len(edges))
	// 12,000 samples in 160 buckets over about two decades: the SDK
	// chose a scale; its base is the precision every bound has.
	for _, g := range rep.Groups {
		e := edges[g.Name]
		require.NotNil(t, e, "group %q", g.Name)
		sorted := slices.Sorted(slices.Values(e.samples))
		require.NotNil(t, g.Buckets)
		assert.InDelta(t, float64(len(sorted)), g.Buckets.Calls, 0.5, "%s: calls (the latest cumulative point, or the deltas added)", g.Name)
		// The bucket the recommendation's quantile lies in holds the exact one.
		exact := exactQuantile(sorted, g.Buckets.Quantile)
		assert.Less(t, g.Buckets.Bucket.LowSeconds, exact, "%s: p%v bucket low", g.Name, g.Buckets.Quantile)
		require.NotNil(t, g.Buckets.Bucket.HighSeconds)
		assert.GreaterOrEqual(t, *g.Buckets.Bucket.HighSeconds*(1+1e-12), exact, "%s: bucket high", g.Name)
		width := *g.Buckets.Bucket.HighSeconds / g.Buckets.Bucket.LowSeconds
		assert.Greater(t, width, 1.0)
		assert.Less(t, width, 1.05, "%s: at MaxSize 160 the SDK keeps a scale of at least 4 here (base < 1.044)", g.Name)
		for _, p := range g.Percentiles {
			x := exactQuantile(sorted, p.Quantile)
			assert.GreaterOrEqual(t, p.Seconds*(1+1e-9), x, "%s: p%v %v must bound the exact %v", g.Name, p.Quantile, p.Seconds, x)
			assert.Less(t, p.Seconds, x*width*(1+1e-9), "%s: p%v %v more than one bucket above the exact %v", g.Name, p.Quantile, p.Seconds, x)
		}
		// The mean from the points' sums.
		var total float64
		for _, s := range sorted {
			total += s
		}
		assert.InEpsilon(t, total/float64(len(sorted)), g.MeanSeconds, 1e-9, "%s: mean", g.Name)
	}
}

// TestOTLPExplicitBuckets: the SDK's explicit buckets, in milliseconds,
// read as classic ones: the quantile's bucket holds the exact quantile,
// the bounds are the SDK's, and the largest call bounds the last bucket
// (the points' max) instead of +Inf.
func TestOTLPExplicitBuckets(t *testing.T) {
	path, edges := otlpMetricsFile(t, false, metricdata.CumulativeTemporality, 2)
	rep := analyseMetrics(t, path)
	require.NotNil(t, rep.Prometheus)
	assert.Equal(t, "explicit", rep.Prometheus.Kind)
	assert.Equal(t, 1e-3, rep.Prometheus.UnitSeconds)
	require.Len(t, rep.Groups, len(edges))
	for _, g := range rep.Groups {
		e := edges[g.Name]
		require.NotNil(t, e, "group %q", g.Name)
		sorted := slices.Sorted(slices.Values(e.samples))
		exact := exactQuantile(sorted, g.Buckets.Quantile)
		lo, hi := g.Buckets.Bucket.LowSeconds, g.Buckets.Bucket.HighSeconds
		require.NotNil(t, hi, "%s: the point's max bounds the last bucket", g.Name)
		assert.True(t, lo < exact && exact <= *hi*(1+1e-12), "%s: exact %v outside (%v, %v]", g.Name, exact, lo, *hi)
		sdk := []float64{0, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
		bounds := g.Buckets.BoundsSeconds
		require.NotEmpty(t, bounds)
		for _, b := range bounds[:len(bounds)-1] {
			assert.Contains(t, sdk, b, "%s: the SDK's bounds, in seconds", g.Name)
		}
		// The last bucket that holds calls ends at the largest call (the
		// points' max), not at the next bound or +Inf.
		assert.InDelta(t, sorted[len(sorted)-1], bounds[len(bounds)-1], 1e-12, "%s: the max bounds the highest bucket", g.Name)
		if !slices.Contains(sdk, *hi) {
			assert.InDelta(t, sorted[len(sorted)-1], *hi, 1e-12, "%s: a bucket bound that is not the SDK's is the max", g.Name)
		}
	}
}
