package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestBucketReasonsDropsByCode: the findings of recommend that explain an
// existing timeout or censoring by 504s are dropped from bucketed data by
// their codes, whatever their wording, and the others are kept in order.
func TestBucketReasonsDropsByCode(t *testing.T) {
	h := histogram.New()
	h.RecordN(20*time.Millisecond, 9000)
	h.RecordN(500*time.Millisecond, 990) // a pile-up at the maximum
	h.RecordCensoredN(500*time.Millisecond, 10)
	rec, err := recommend.Recommend(h, recommend.Options{FalseTimeouts: 0.001, TightTailRatio: 2, Max: 300 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, []finding.Code{finding.MaxBelowQuantile, finding.LowerBoundPileUp, finding.CensoredPileUp, finding.Censored}, codes(rec.Findings),
		"the recommendation this test starts from")

	b, err := promsource.FromClassic([]promsource.LE{{Upper: 0.1, Cumulative: 9000}, {Upper: 0.5, Cumulative: 9990}, {Upper: 1, Cumulative: 10000}, {Upper: math.Inf(1), Cumulative: 10000}}, time.Second)
	require.NoError(t, err)
	bucketReasons(&rec, h, b.Locate(0.999), b)
	assert.Equal(t, []finding.Code{finding.MaxBelowQuantile, finding.BucketCensored}, codes(rec.Findings))
	assert.Equal(t, finding.Messages(rec.Findings), rec.Warnings, "the warnings are the findings' messages")
	for _, c := range notForBuckets {
		assert.False(t, finding.Has(rec.Findings, c), "%s kept", c)
	}
}

func codes(fs []finding.Finding) []finding.Code {
	out := []finding.Code{}
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func TestBucketReasons(t *testing.T) {
	inf := math.Inf(1)
	h, err := promsource.FromClassic([]promsource.LE{{Upper: 0.1, Cumulative: 900}, {Upper: 0.5, Cumulative: 990}, {Upper: 1, Cumulative: 999}, {Upper: inf, Cumulative: 1000}}, time.Second)
	require.NoError(t, err)

	t.Run("in a bucket", func(t *testing.T) {
		lat := h.Latency()
		pos := h.Locate(0.99)
		rec, err := recommend.Recommend(lat, recommend.Options{FalseTimeouts: 0.01, TightTailRatio: 2})
		require.NoError(t, err)
		bucketReasons(&rec, lat, pos, h)
		assert.Equal(t, 500*time.Millisecond, rec.Base)
		assert.Contains(t, rec.Steps[0].Reason, "p99 of 1,000 calls lies in the bucket (100ms, 500ms]")
		assert.False(t, rec.LowerBound)
		last := rec.Findings[len(rec.Findings)-1]
		assert.Equal(t, finding.BucketCensored, last.Code)
		assert.Equal(t, finding.Fields{"calls": int64(1), "fraction": 0.001, "bound_seconds": 1.0, "beyond_24h_buckets": false}, last.Fields)
		assert.Contains(t, last.Message, "1 call (0.1 %) took longer than the largest finite bound 1s (the +Inf bucket); it counts as taking at least 1s")
	})
	t.Run("+Inf", func(t *testing.T) {
		lat := h.Latency()
		pos := h.Locate(0.9999)
		require.True(t, pos.InInf)
		rec, err := recommend.Recommend(lat, recommend.Options{FalseTimeouts: 0.0001, TightTailRatio: 2})
		require.NoError(t, err)
		bucketReasons(&rec, lat, pos, h)
		assert.True(t, rec.LowerBound)
		assert.Equal(t, time.Second, rec.Base)
		assert.Contains(t, rec.Steps[0].Reason, "lies in the +Inf bucket, beyond the largest finite bound 1s")
		assert.Equal(t, finding.BucketInf, rec.Findings[0].Code)
		assert.Equal(t, finding.Fields{"quantile": 0.9999, "at_least_seconds": 1.0}, rec.Findings[0].Fields)
		assert.Equal(t, "the true p99.99 is at least 1s, not measured: it lies in the +Inf bucket, beyond the largest finite bound; add bucket bounds above 1s to see the tail", rec.Warnings[0])
	})
}

func TestSuggestLE(t *testing.T) {
	inf := math.Inf(1)
	h, err := promsource.FromClassic([]promsource.LE{{Upper: 0.5, Cumulative: 90}, {Upper: 1, Cumulative: 99}, {Upper: 2.5, Cumulative: 99.5}, {Upper: inf, Cumulative: 100}}, time.Second)
	require.NoError(t, err)
	tests := []struct {
		pos  histogram.Position
		unit time.Duration
		want string
	}{
		{histogram.Position{Bucket: histogram.Bucket{Lo: 0.5, Hi: 1}, Estimate: 0.7083}, time.Second, "0.75"},
		{histogram.Position{Bucket: histogram.Bucket{Lo: 0.5, Hi: 1}, Estimate: 0.98}, time.Second, "0.95"}, // rounding up would hit the bound
		{histogram.Position{Bucket: histogram.Bucket{Lo: 0.5, Hi: 1}, Estimate: 0.7083}, time.Millisecond, "750"},
		{histogram.Position{Bucket: histogram.Bucket{Lo: 2.5, Hi: inf}, Estimate: 2.5, InInf: true}, time.Second, "5"},
		{histogram.Position{Bucket: histogram.Bucket{Lo: 0.5, Hi: 0.51}, Estimate: 0.5}, time.Second, ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, suggestLE(tt.pos, h, tt.unit), "%+v", tt.pos)
	}
}

// TestEstimateBy: the estimate is histogram_quantile's only where the
// server computes the same: classic buckets on any PromQL engine, native
// ones on Prometheus 2 (3 interpolates them exponentially), never
// repaired buckets nor vmrange ones read from Prometheus.
func TestEstimateBy(t *testing.T) {
	est := ptr(0.5)
	for _, tt := range []struct {
		name, kind, server, version, divergence string
		want                                    string
	}{
		{"classic on Prometheus 3", promsource.Classic, promsource.ServerPrometheus, "3.1.0", "", "histogram_quantile"},
		{"classic on Thanos", promsource.Classic, promsource.ServerThanos, "0.35.0", "", "histogram_quantile"},
		{"native on Prometheus 2", promsource.Native, promsource.ServerPrometheus, "2.42.0", "", "histogram_quantile"},
		{"native on Prometheus 3", promsource.Native, promsource.ServerPrometheus, "3.1.0", "", "tunetimeout"},
		{"native on Mimir", promsource.Native, promsource.ServerMimir, "2.14.0", "", "tunetimeout"},
		{"repaired", promsource.Classic, promsource.ServerPrometheus, "2.42.0", "histogram_quantile keeps NaN bucket counts", "tunetimeout"},
		{"vmrange on Prometheus", promsource.VMRange, promsource.ServerPrometheus, "2.42.0", "", "tunetimeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := &promsource.Result{Kind: tt.kind, Server: tt.server, ServerVersion: tt.version}
			h := &histogram.Bucketed{Kind: tt.kind, Divergence: tt.divergence}
			by, note := estimateBy(res, h, est, serverAnswer(res, h, histogram.Position{Estimate: 0.5}, math.NaN()))
			assert.Equal(t, tt.want, by)
			if by == "tunetimeout" {
				assert.NotEmpty(t, note)
			}
			assert.Equal(t, by == "histogram_quantile", serverAnswer(res, h, histogram.Position{Estimate: 0.5}, math.NaN()) != nil,
				"histogram_quantile_seconds only where it is the server's answer")
		})
	}
}
