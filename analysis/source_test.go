package analysis

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/source"
)

// TestCheckOTLPMetrics: check reads OTLP metrics files, a source of
// buckets, as it reads a Prometheus histogram: the share a timeout cuts
// off is exact at a bucket bound and bracketed between two.
func TestCheckOTLPMetrics(t *testing.T) {
	// 1,000 calls kept (the 40 503s excluded): 900 within 10ms, 90 within
	// 100ms, 10 slower.
	path := writeFile(t, "m.jsonl", histogramLine("http.client.request.duration", map[int][3]int{200: {900, 90, 10}, 503: {40, 0, 0}}))
	o := checkOptions("envoy-250ms.yaml")
	o.Inputs = nil
	o.Source = &source.Files{Paths: []string{path}}
	o.Map = map[string]string{"local_route/backend/route 1": "web cart"}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{path}, c.Input.Files)
	assert.Equal(t, []string{"otlp-metrics"}, c.Input.Formats)
	assert.Equal(t, int64(2), c.Input.Records, "the points are the records")
	between := findingsOf(c, finding.CheckNoBucketAtTimeout)
	require.Len(t, between, 1, "%+v", c.Findings)
	assert.Equal(t, "web cart", between[0].Group)
	assert.Equal(t, 0.0, between[0].Measured["cut_off_low_fraction"])
	assert.InDelta(t, 0.01, between[0].Measured["cut_off_high_fraction"], 1e-12, "250ms lies in (100ms, +Inf]: 10 of 1,000")
	assert.Contains(t, between[0].Message, `add a bucket bound le="250" (in the metric's unit)`,
		"the metric is in milliseconds: the bound to add is 250, not 0.25")

	// At the bound of 100ms the share is exact: 1 %, above the 0.1 %.
	o.Configs = []string{writeConfig(t, "envoy.yaml", "0.25s", "0.1s")}
	c, err = Check(context.Background(), o, nil)
	require.NoError(t, err)
	cut := findingsOf(c, finding.CheckTimeoutCutsOff)
	require.Len(t, cut, 1, "%+v", c.Findings)
	assert.InDelta(t, 0.01, cut[0].Measured["cut_off_fraction"], 1e-12)
}

// TestRunRulesSources: the report the rules are written from names the
// histogram in Prometheus. From files of calls it is --metric, native
// without bounds, classic with them (in its unit, the bounds read in
// seconds); from OTLP metrics the histogram read keeps its kind and bounds.
func TestRunRulesSources(t *testing.T) {
	o := Options{Recommend: recommend.DefaultOptions()}
	calls := &source.Files{Paths: []string{mixtureData}}
	r, err := RunRules(context.Background(), o, calls, Metric{Name: "rpc_duration_milliseconds_bucket"})
	require.NoError(t, err)
	require.NotNil(t, r.Prometheus)
	assert.Equal(t, "rpc_duration_milliseconds", r.Prometheus.Metric)
	assert.Equal(t, "native", r.Prometheus.Kind)
	assert.Equal(t, 0.001, r.Prometheus.UnitSeconds, "from the name's suffix")
	assert.Nil(t, r.Groups[0].Buckets)

	r, err = RunRules(context.Background(), o, calls, Metric{Name: "rpc_duration", Bounds: []float64{0.25, 1}})
	require.NoError(t, err)
	assert.Equal(t, "classic", r.Prometheus.Kind)
	assert.Equal(t, 1.0, r.Prometheus.UnitSeconds, "seconds without a suffix")
	require.NotNil(t, r.Groups[0].Buckets)
	assert.Equal(t, []float64{0.25, 1}, r.Groups[0].Buckets.BoundsSeconds)

	path := writeFile(t, "m.jsonl", histogramLine("http.client.request.duration", map[int][3]int{200: {900, 90, 10}}))
	r, err = RunRules(context.Background(), o, &source.Files{Paths: []string{path}}, Metric{Name: "http_client_request_duration_milliseconds"})
	require.NoError(t, err)
	assert.Equal(t, "http_client_request_duration_milliseconds", r.Prometheus.Metric)
	assert.Equal(t, "classic", r.Prometheus.Kind)
	assert.Equal(t, []float64{0.01, 0.1}, r.Groups[0].Buckets.BoundsSeconds, "the OTLP bounds, 10ms and 100ms")
}
