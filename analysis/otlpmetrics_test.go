package analysis

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// histogramLine is one OTLP/JSON request of a cumulative explicit
// histogram in ms with one point per status: counts over bounds 10, 100.
func histogramLine(name string, points map[int][3]int) string {
	var pts []string
	for status, c := range points {
		pts = append(pts, fmt.Sprintf(`{"attributes":[{"key":"server.address","value":{"stringValue":"cart"}},{"key":"http.response.status_code","value":{"intValue":"%d"}}],`+
			`"startTimeUnixNano":"1700000000000000000","timeUnixNano":"1700000100000000000","count":"%d","sum":%d,"bucketCounts":["%d","%d","%d"],"explicitBounds":[10,100]}`,
			status, c[0]+c[1]+c[2], 5*c[0]+50*c[1]+500*c[2], c[0], c[1], c[2]))
	}
	return `{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},"scopeMetrics":[{"metrics":[` +
		`{"name":"` + name + `","unit":"ms","histogram":{"aggregationTemporality":2,"dataPoints":[` + strings.Join(pts, ",") + `]}}]}]}]}` + "\n"
}

func runMetrics(t *testing.T, o Options, files ...string) (*report.Report, error) {
	t.Helper()
	o.Inputs = files
	o.Recommend = recommend.DefaultOptions()
	return Run(context.Background(), o, nil)
}

// TestOTLPMetricsReport: the status rule applies to a series by its
// status attribute, the rate is the calls over the window, and what
// cannot be read says why.
func TestOTLPMetricsReport(t *testing.T) {
	path := writeFile(t, "m.jsonl", histogramLine("http.client.request.duration", map[int][3]int{200: {900, 90, 10}, 503: {40, 0, 0}, 504: {0, 0, 7}}))
	res, err := runMetrics(t, Options{}, path)
	require.NoError(t, err)
	require.Len(t, res.Groups, 1)
	g := res.Groups[0]
	assert.Equal(t, "web cart", g.Name)
	assert.Equal(t, int64(1007), g.Samples, "200 and 504 kept; 503 excluded")
	assert.Equal(t, map[string]int64{ingest.Excluded5xx: 40}, g.Excluded)
	require.NotNil(t, g.LittlesLaw.RatePerSecond)
	assert.InDelta(t, 1007.0/100, *g.LittlesLaw.RatePerSecond, 1e-9, "calls over the 100 s window")
	assert.Contains(t, strings.Join(res.Input.Notes, "\n"), "7 calls ended by a timeout or a cancel")
	require.NotNil(t, res.Prometheus)
	assert.Equal(t, "http.client.request.duration", res.Prometheus.Metric)
	assert.Equal(t, 100.0, res.Prometheus.WindowSeconds)

	// --metric names one the file does not hold.
	_, err = runMetrics(t, Options{Ingest: ingest.Options{Metric: "rpc.client.duration"}}, path)
	assert.ErrorContains(t, err, `no histogram "rpc.client.duration"; the input holds http.client.request.duration`)

	// Metrics and calls do not mix.
	csv := writeFile(t, "a.csv", "latency_ms\n5\n")
	_, err = runMetrics(t, Options{}, path, csv)
	assert.ErrorContains(t, err, "OTLP metrics hold histograms, the other inputs calls: analyse them apart")

	// Only a gauge.
	gauge := writeFile(t, "g.jsonl", `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"up","gauge":{"dataPoints":[{"asInt":"1","timeUnixNano":"1"}]}}]}]}]}`+"\n")
	_, err = runMetrics(t, Options{}, gauge)
	assert.ErrorContains(t, err, "nothing to analyse: no histogram of latency; the input holds 1 metrics that are not histograms (1 gauge)")
}
