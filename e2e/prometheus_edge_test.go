package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// edgeHistogram is one classic histogram of TestPrometheusBucketEdgeCases:
// each bucket's calls over the hour (NaN writes NaN), and those of _count
// and _sum (NaN: NaN; 0: the +Inf bucket's, and 0.2 s a call).
type edgeHistogram struct {
	name       string
	buckets    [][2]float64 // le, calls in the hour
	count, sum float64
}

// edgeCases are the cases of issue 14 where Prometheus's histogram_quantile
// and a timeout part ways, after PromQL's own tests
// (promql/promqltest/testdata/histograms.test: "Single bucket", the
// testhistogram{start="negative"} series, "More realistic with rates") and
// its rules (promql/quantile.go, BucketQuantile).
var edgeCases = []edgeHistogram{
	{name: "tt_only_inf_seconds", buckets: [][2]float64{{math.Inf(1), 600}}},
	{name: "tt_nan_bucket_seconds", buckets: [][2]float64{{0.1, 300}, {1, math.NaN()}, {math.Inf(1), 600}}},
	{name: "tt_fractional_seconds", buckets: [][2]float64{{0.5, 998.6}, {1, 999.4}, {math.Inf(1), 1000.4}}},
	{name: "tt_negative_le_seconds", buckets: [][2]float64{{-0.2, 60}, {-0.1, 120}, {0.3, 120}, {math.Inf(1), 180}}},
	{name: "tt_nan_count_seconds", buckets: [][2]float64{{0.1, 300}, {1, 500}, {math.Inf(1), 600}}, count: math.NaN(), sum: math.NaN()},
	{name: "tt_nan_total_seconds", buckets: [][2]float64{{0.1, 300}, {1, 500}, {math.Inf(1), math.NaN()}}},
	// Nanoseconds observed into a _seconds histogram: a bound of 1e10 s.
	{name: "tt_huge_bound_seconds", buckets: [][2]float64{{1, 990}, {1e10, 1000}, {math.Inf(1), 1000}}},
}

// writeEdgeOpenMetrics writes the counters of edgeCases, rising evenly
// each minute from 0 at t0 to their calls at t0 + 1 h.
func writeEdgeOpenMetrics(t *testing.T, path string, t0 time.Time) {
	var b strings.Builder
	num := func(v float64, i int) string {
		if math.IsNaN(v) {
			return "NaN"
		}
		return strconv.FormatFloat(v*float64(i)/60, 'g', -1, 64)
	}
	for _, h := range edgeCases {
		fmt.Fprintf(&b, "# TYPE %s histogram\n", h.name)
		total := h.buckets[len(h.buckets)-1][1]
		count, sum := h.count, h.sum
		if count == 0 {
			count, sum = total, 0.2*total
		}
		for i := 0; i <= 60; i++ {
			ts := t0.Add(time.Duration(i) * time.Minute).Unix()
			for _, bk := range h.buckets {
				fmt.Fprintf(&b, "%s_bucket{le=\"%s\"} %s %d\n", h.name, formatLE(bk[0]), num(bk[1], i), ts)
			}
			fmt.Fprintf(&b, "%s_count %s %d\n", h.name, num(count, i), ts)
			fmt.Fprintf(&b, "%s_sum %s %d\n", h.name, num(sum, i), ts)
		}
	}
	b.WriteString("# EOF\n")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// edgeReport is the part of the JSON report these cases read (and
// victoria_test.go's).
type edgeReport struct {
	Input struct {
		Records int64
		Notes   []string
	}
	Groups []struct {
		Samples     int64
		Findings    []map[string]any
		Excluded    map[string]int64
		Percentiles []struct {
			Quantile float64
			Seconds  float64
		}
		Recommendation struct {
			BaseSeconds float64 `json:"base_seconds"`
			LowerBound  bool    `json:"lower_bound"`
			Warnings    []string
		}
		Buckets struct {
			Bucket struct {
				Low  float64  `json:"low_seconds"`
				High *float64 `json:"high_seconds"`
			}
			Estimate          *float64 `json:"estimate_seconds"`
			EstimateBy        string   `json:"estimate_by"`
			EstimateNote      string   `json:"estimate_note"`
			HistogramQuantile *float64 `json:"histogram_quantile_seconds"`
			Server            string   `json:"histogram_quantile_server"`
			Beyond            bool     `json:"beyond_largest_bound"`
			Repairs           []string
		}
	}
}

// TestPrometheusBucketEdgeCases backfills the edge cases into a real
// Prometheus and checks that each gives Prometheus's own answer or says
// why not, and that no NaN breaks the JSON report.
func TestPrometheusBucketEdgeCases(t *testing.T) {
	bin := requireBinary(t, "prometheus", "prometheus")
	promtool := requireBinary(t, "promtool", "prometheus")
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	at := t0.Add(time.Hour)
	dir := t.TempDir()
	om := filepath.Join(dir, "edge.om")
	writeEdgeOpenMetrics(t, om, t0)
	storage := filepath.Join(dir, "tsdb")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, storage).CombinedOutput()
	require.NoError(t, err, string(out))
	srv := startPrometheus(t, bin, storage, "global:\n  scrape_interval: 15s\n")

	args := func(metric string) []string {
		return []string{"prometheus", "--url", srv.url, "--metric", metric, "--window", "1h", "--at", at.Format(time.RFC3339)}
	}
	run := func(t *testing.T, metric string) edgeReport {
		t.Helper()
		out, errOut, code := runTool(t, append(args(metric), "-o", "json")...)
		require.Equal(t, 0, code, "stderr: %s", errOut)
		var r edgeReport
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		require.Len(t, r.Groups, 1)
		return r
	}
	// promQuantile is Prometheus's own histogram_quantile for the window.
	promQuantile := func(t *testing.T, metric string, q float64) float64 {
		t.Helper()
		return only(t, srv.query(t, fmt.Sprintf("histogram_quantile(%v, sum by (le) (increase(%s_bucket[1h])))", q, metric), at))
	}

	t.Run("only +Inf: refused, with the bounds to add", func(t *testing.T) {
		m := edgeCases[0].name
		assert.True(t, math.IsNaN(promQuantile(t, m, 0.999)), "Prometheus answers NaN")
		for _, format := range []string{"text", "json"} {
			out, errOut, code := runTool(t, append(args(m), "-o", format)...)
			assert.Equal(t, 1, code, "%s: %s", format, out)
			assert.Contains(t, errOut, `only the le="+Inf" bucket: it counts 600 calls but says nothing of how long any took`)
			assert.Contains(t, errOut, `the mean latency from _sum / _count is 200ms: give the histogram bucket bounds around it, such as le="0.05", "0.1", "0.25"`)
			assert.Empty(t, out, "no report, no timeout")
		}
	})
	t.Run("a NaN bucket count: Prometheus's answer, a lower bound", func(t *testing.T) {
		m := edgeCases[1].name
		prom := promQuantile(t, m, 0.999)
		assert.Equal(t, 1.0, prom, "PromQL's search skips the NaN bucket and answers the largest finite bound")
		r := run(t, m)
		g := r.Groups[0]
		assert.Equal(t, prom, g.Recommendation.BaseSeconds)
		assert.True(t, g.Recommendation.LowerBound)
		assert.True(t, g.Buckets.Beyond)
		assert.Equal(t, 1.0, g.Buckets.Bucket.Low, "the NaN bucket's bound is kept")
		assert.Contains(t, strings.Join(g.Buckets.Repairs, "\n"), "1 bucket counts were NaN")
		repaired := false
		for _, f := range g.Findings {
			repaired = repaired || f["code"] == "TT-BUCKET-REPAIR" && f["repair"] == "nan-count"
		}
		assert.True(t, repaired, "the repair as a finding too: %v", g.Findings)
		assert.Equal(t, "tunetimeout", g.Buckets.EstimateBy)
		assert.Nil(t, g.Buckets.HistogramQuantile, "not claimed as Prometheus's")
	})
	t.Run("fractional counts: the bucket from unrounded counts", func(t *testing.T) {
		m := edgeCases[2].name
		prom := promQuantile(t, m, 0.999)
		r := run(t, m)
		g := r.Groups[0]
		require.NotNil(t, g.Buckets.Bucket.High)
		assert.Equal(t, 0.5, g.Buckets.Bucket.Low)
		assert.Equal(t, 1.0, *g.Buckets.Bucket.High)
		require.NotNil(t, g.Buckets.Estimate)
		assert.InDelta(t, prom, *g.Buckets.Estimate, 1e-9, "Prometheus's histogram_quantile")
		assert.Greater(t, prom, 0.5)
		assert.Equal(t, "histogram_quantile", g.Buckets.EstimateBy)
		assert.Equal(t, 1.0, g.Recommendation.BaseSeconds, "the upper bound of the bucket holding the quantile, never below it")
		for _, p := range g.Percentiles {
			if p.Quantile == 0.999 {
				assert.Equal(t, 1.0, p.Seconds)
			}
		}
	})
	t.Run("negative le: said, left out, not Prometheus's", func(t *testing.T) {
		m := edgeCases[3].name
		assert.Less(t, promQuantile(t, m, 0.5), 0.0, "Prometheus answers a latency below zero")
		r := run(t, m)
		g := r.Groups[0]
		assert.EqualValues(t, 120, g.Excluded["negative"])
		assert.EqualValues(t, 60, g.Samples)
		require.NotEmpty(t, g.Recommendation.Warnings)
		assert.Contains(t, g.Recommendation.Warnings[0], "120 of 180 calls (66.7 %) were counted below zero latency")
		assert.Contains(t, strings.Join(g.Buckets.Repairs, "\n"), `2 bucket bounds are negative (le="-0.2" le="-0.1")`)
		assert.Equal(t, "tunetimeout", g.Buckets.EstimateBy)
		for _, p := range g.Percentiles {
			assert.GreaterOrEqual(t, p.Seconds, 0.0, "p%v", p.Quantile*100)
		}
	})
	t.Run("a NaN _count: the +Inf bucket stands in", func(t *testing.T) {
		r := run(t, edgeCases[4].name)
		assert.EqualValues(t, 600, r.Input.Records)
		assert.Contains(t, strings.Join(r.Input.Notes, "\n"), "_count is not a count of calls (NaN, negative or infinite) for 1 group:")
	})
	t.Run("a bound beyond 24h: a lower bound, no call lost", func(t *testing.T) {
		r := run(t, edgeCases[6].name)
		g := r.Groups[0]
		assert.EqualValues(t, 1000, g.Samples)
		assert.Empty(t, g.Excluded, "nothing out of range")
		assert.Equal(t, 1.0, g.Recommendation.BaseSeconds, "the largest bound within 24h")
		assert.True(t, g.Recommendation.LowerBound)
		assert.Contains(t, strings.Join(g.Buckets.Repairs, "\n"), "1 bucket bounds lie beyond 24h")
		assert.Contains(t, strings.Join(g.Recommendation.Warnings, "\n"), "the true p99.9 is at least 1s, not measured: it lies in a bucket bounded beyond 24h")
	})
	t.Run("a NaN total: refused", func(t *testing.T) {
		_, errOut, code := runTool(t, append(args(edgeCases[5].name), "-o", "json")...)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, `the le="+Inf" bucket's count is NaN, so the total is unknown`)
	})
}
