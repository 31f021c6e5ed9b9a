package promsource

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
)

var inf = math.Inf(1)

func TestFromClassic(t *testing.T) {
	tests := []struct {
		name        string
		les         []LE
		q           float64
		wantLo      float64
		wantHi      float64
		wantEst     float64
		wantInInf   bool
		wantCount   float64
		wantRepairs int
	}{
		{
			name:   "inside a bucket",
			les:    []LE{{0.1, 900}, {0.5, 990}, {1, 999}, {inf, 1000}},
			q:      0.995, // rank 995: 5 of the 9 calls in (0.5, 1]
			wantLo: 0.5, wantHi: 1, wantEst: 0.5 + 0.5*5.0/9, wantCount: 1000,
		},
		{
			name:   "unsorted input, first bucket from 0",
			les:    []LE{{inf, 100}, {0.2, 100}, {0.1, 50}},
			q:      0.25, // rank 25 of 50 in (0, 0.1]
			wantLo: 0, wantHi: 0.1, wantEst: 0.05, wantCount: 100,
		},
		{
			name:   "+Inf: histogram_quantile answers the largest finite bound",
			les:    []LE{{0.5, 90}, {1, 95}, {inf, 100}},
			q:      0.999,
			wantLo: 1, wantHi: inf, wantEst: 1, wantInInf: true, wantCount: 100,
		},
		{
			// increase() extrapolates each series on its own: le=1 came out
			// below le=0.5. PromQL raises it to 91; the rank 0.95 x 100 = 95
			// then lies in (1, 2].
			name:   "non-monotonic, repaired as PromQL does",
			les:    []LE{{0.5, 91}, {1, 90.5}, {2, 99}, {inf, 100}},
			q:      0.95,
			wantLo: 1, wantHi: 2, wantEst: 1 + (95.0-91)/(99-91), wantCount: 100,
			wantRepairs: 1,
		},
		{
			name:   "duplicate bounds are added up",
			les:    []LE{{1, 40}, {1.0, 40}, {inf, 100}},
			q:      0.5, // cumulative at 1 is 80
			wantLo: 0, wantHi: 1, wantEst: 50.0 / 80, wantCount: 100,
			wantRepairs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := FromClassic(tt.les, time.Second)
			require.NoError(t, err)
			assert.Equal(t, tt.wantCount, h.Count)
			assert.Len(t, h.Repairs, tt.wantRepairs)
			p := h.Locate(tt.q)
			assert.Equal(t, tt.wantLo, p.Bucket.Lo)
			assert.Equal(t, tt.wantHi, p.Bucket.Hi)
			assert.InDelta(t, tt.wantEst, p.Estimate, 1e-12)
			assert.Equal(t, tt.wantInInf, p.InInf)
		})
	}
}

func TestFromClassicRepairMessage(t *testing.T) {
	h, err := FromClassic([]LE{{0.5, 91}, {1, 90.5}, {2, 89}, {inf, 100}}, time.Second)
	require.NoError(t, err)
	require.Len(t, h.Repairs, 1)
	assert.Contains(t, h.Repairs[0].Message, "2 cumulative bucket counts were below the count of a lower bucket (by up to 2 calls)")
	assert.Equal(t, []float64{0, 0}, []float64{h.Buckets[1].Count, h.Buckets[2].Count})
}

func TestFromClassicErrors(t *testing.T) {
	_, err := FromClassic([]LE{{0.5, 1}, {1, 2}}, time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no le="+Inf" bucket`)

	_, err = FromClassic([]LE{{0.5, 0}, {inf, 0}}, time.Second)
	assert.ErrorIs(t, err, ErrEmptyWindow)

	_, err = FromClassic(nil, time.Second)
	assert.ErrorIs(t, err, ErrEmptyWindow)
}

func TestFromClassicUnit(t *testing.T) {
	h, err := FromClassic([]LE{{250, 99}, {500, 100}, {inf, 100}}, time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, []float64{0.25, 0.5}, h.Bounds())
}

// TestLatencyConservative pins the conversion: every call at its bucket's
// upper bound, the +Inf calls censored at the largest finite bound.
func TestLatencyConservative(t *testing.T) {
	h, err := FromClassic([]LE{{0.1, 900}, {0.5, 990}, {1, 999}, {inf, 1000}}, time.Second)
	require.NoError(t, err)
	l := h.Latency()
	assert.Equal(t, int64(1000), l.Count())
	assert.Equal(t, int64(1), l.Censored())
	assert.Equal(t, 100*time.Millisecond, l.Quantile(0.5), "exactly the bound, not the top of its HDR bucket")
	assert.Equal(t, time.Second, l.Quantile(0.995))
	assert.False(t, l.QuantileIsLowerBound(0.995))
	assert.Equal(t, time.Second, l.Quantile(1), "the +Inf call took more than 1s: at least 1s")
	assert.True(t, l.QuantileIsLowerBound(1))
	assert.Equal(t, 0.001, l.FractionAbove(time.Second), "a timeout at the largest bound cuts off the +Inf calls")
}

func TestLatencyRoundsFractionalCounts(t *testing.T) {
	// increase() gives fractions; rounding the cumulative counts keeps the
	// total.
	h, err := FromClassic([]LE{{0.1, 10.4}, {0.2, 20.8}, {inf, 21.3}}, time.Second)
	require.NoError(t, err)
	l := h.Latency()
	assert.Equal(t, int64(21), l.Count())
	assert.Equal(t, int64(10), l.CountBetween(0, 100*time.Millisecond))
}

func TestFromNative(t *testing.T) {
	s := &model.SampleHistogram{
		Count: 1003,
		Sum:   21,
		Buckets: model.HistogramBuckets{
			{Boundaries: 3, Lower: -0.001, Upper: 0.001, Count: 1},    // zero bucket
			{Boundaries: 0, Lower: 0.0186, Upper: 0.0203, Count: 998}, // (lo, hi]
			{Boundaries: 0, Lower: 0.6484, Upper: 0.7071, Count: 2},
			{Boundaries: 1, Lower: -0.0203, Upper: -0.0186, Count: 1}, // negative
			{Boundaries: 0, Lower: 0.7071, Upper: 0.7711, Count: -1},  // reset artefact
		},
	}
	h, err := FromNative(s, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1001.0, h.Count)
	assert.Equal(t, 1.0, h.Negative)
	assert.Len(t, h.Repairs, 2)
	assert.Equal(t, 0.0, h.Buckets[0].Lo, "the zero bucket starts at 0")
	p := h.Locate(0.999) // rank 999.999: in the last bucket
	assert.Equal(t, 0.6484, p.Bucket.Lo)
	assert.Equal(t, 0.7071, p.Bucket.Hi)
	assert.InDelta(t, 0.6484+(0.7071-0.6484)*(999.999-999)/2, p.Estimate, 1e-12)
	assert.False(t, p.InInf)

	_, err = FromNative(&model.SampleHistogram{}, time.Second)
	assert.ErrorIs(t, err, ErrEmptyWindow)
}

func TestSimilar(t *testing.T) {
	names := model.LabelValues{
		"http_request_duration_seconds_bucket", "http_request_duration_seconds_count",
		"http_requests_total", "process_cpu_seconds_total", "up", "grpc_server_handling_seconds_bucket",
	}
	assert.Equal(t, []string{"http_request_duration_seconds", "http_requests_total"},
		Similar("http_request_duration_second", names, 5))
	assert.Empty(t, Similar("zzz", names, 5))
}

// TestPromQLEdgeCases holds the cases where Prometheus's histogram_quantile
// and a timeout part ways, taken from PromQL's own test suite
// (promql/promqltest/testdata/histograms.test in prometheus/prometheus) or
// built on its rules (promql/quantile.go, BucketQuantile): each gives
// Prometheus's answer, or says why not and refuses what cannot be known.
func TestPromQLEdgeCases(t *testing.T) {
	t.Run("only the +Inf bucket is refused", func(t *testing.T) {
		// histograms.test, "Single bucket": single_bucket_bucket{le="+Inf"}
		// 100; BucketQuantile returns NaN for fewer than 2 buckets.
		_, err := FromClassic([]LE{{inf, 100}}, time.Second)
		require.ErrorIs(t, err, ErrOnlyInf)
		var oi *OnlyInfError
		require.ErrorAs(t, err, &oi)
		assert.Equal(t, 100.0, oi.Calls)
		assert.Contains(t, err.Error(), "counts 100 calls but says nothing of how long any took")
		// Zero calls in it: the window is empty, not a histogram without bounds.
		_, err = FromClassic([]LE{{inf, 0}}, time.Second)
		assert.ErrorIs(t, err, ErrEmptyWindow)
		assert.NotErrorIs(t, err, ErrOnlyInf)
	})
	t.Run("a NaN count takes the count below it", func(t *testing.T) {
		// BucketQuantile's search skips a NaN count (NaN >= rank is false),
		// so p99.9 of {0.1: 5, 1: NaN, +Inf: 10} falls in +Inf and
		// Prometheus answers the largest finite bound, 1. Dropping the
		// bucket, as tunetimeout did, answered 0.1.
		h, err := FromClassic([]LE{{0.1, 5}, {1, math.NaN()}, {inf, 10}}, time.Second)
		require.NoError(t, err)
		p := h.Locate(0.999)
		assert.True(t, p.InInf)
		assert.Equal(t, 1.0, p.Estimate, "Prometheus's answer")
		assert.Equal(t, []float64{0.1, 1}, h.Bounds(), "the NaN bucket's bound is kept")
		require.Len(t, h.Repairs, 1)
		assert.Contains(t, h.Repairs[0].Message, "1 bucket counts were NaN")
		assert.Contains(t, h.Divergence, "NaN")
		d, lower := h.Upper(0.999)
		assert.Equal(t, time.Second, d)
		assert.True(t, lower)
		// A NaN total cannot be repaired.
		_, err = FromClassic([]LE{{0.1, 5}, {inf, math.NaN()}}, time.Second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `le="+Inf" bucket's count is NaN`)
	})
	t.Run("fractional counts choose the bucket unrounded", func(t *testing.T) {
		// Rates and increases are fractional ("More realistic with rates").
		// Rank 0.999 x 1000.4 = 999.3996 lies in (0.5, 1]: Prometheus
		// answers 0.99975. Rounded, 998.6 becomes 999 and reaches the
		// rank 999 of 1000 calls, which put the base at 0.5.
		h, err := FromClassic([]LE{{0.5, 998.6}, {1, 999.4}, {inf, 1000.4}}, time.Second)
		require.NoError(t, err)
		p := h.Locate(0.999)
		assert.Equal(t, 0.5, p.Bucket.Lo)
		assert.Equal(t, 1.0, p.Bucket.Hi)
		assert.InDelta(t, 0.99975, p.Estimate, 1e-12)
		assert.Empty(t, h.Divergence)
		d, lower := h.Upper(0.999)
		assert.Equal(t, time.Second, d, "the bucket's upper bound, not the one below")
		assert.False(t, lower)
		assert.Equal(t, 500*time.Millisecond, h.Latency().Quantile(0.999), "what the rounded calls alone say: why Upper exists")
	})
	t.Run("classic negative bounds are left out and said", func(t *testing.T) {
		// histograms.test, testhistogram{start="negative"} at 50m:
		// le=-.2: 10, -0.1: 20, 0.3: 20, +Inf: 30. Prometheus answers
		// p50 -0.15, a latency below zero.
		h, err := FromClassic([]LE{{-0.2, 10}, {-0.1, 20}, {0.3, 20}, {inf, 30}}, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 20.0, h.Negative)
		assert.Equal(t, 10.0, h.Count)
		assert.Equal(t, []float64{0.3}, h.Bounds())
		assert.Equal(t, 0.0, h.Buckets[0].Lo)
		require.Len(t, h.Repairs, 1)
		assert.Contains(t, h.Repairs[0].Message, `2 bucket bounds are negative (le="-0.2" le="-0.1"): a latency below zero is a bug of the exporter; the 20 calls at or below them are left out`)
		assert.Contains(t, h.Divergence, "negative")
		p := h.Locate(0.5)
		assert.True(t, p.InInf, "the 10 calls kept lie above 0.3")
		// Only negative buckets below +Inf: nothing bounds what is left.
		_, err = FromClassic([]LE{{-0.1, 5}, {inf, 8}}, time.Second)
		assert.ErrorIs(t, err, ErrOnlyInf)
	})
	t.Run("native negative buckets: the estimate is tunetimeout's", func(t *testing.T) {
		s := &model.SampleHistogram{Count: 4, Sum: 1, Buckets: model.HistogramBuckets{
			{Boundaries: 1, Lower: -0.05, Upper: -0.04, Count: 1},
			{Boundaries: 0, Lower: 0.04, Upper: 0.05, Count: 3},
		}}
		h, err := FromNative(s, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1.0, h.Negative)
		assert.Contains(t, h.Divergence, "negative buckets")
	})
	t.Run("negative counts are 0, and said", func(t *testing.T) {
		h, err := FromClassic([]LE{{0.1, -2}, {1, 5}, {inf, 10}}, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 0.0, h.Buckets[0].Count)
		assert.Contains(t, strings.Join(finding.Messages(h.Repairs), "\n"), "1 cumulative bucket counts were negative")
		assert.NotEmpty(t, h.Divergence)
		_, err = FromClassic([]LE{{0.1, -2}, {inf, -1}}, time.Second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is negative (-1)")
	})
}

func TestBoundsAdvice(t *testing.T) {
	assert.Equal(t, `the mean latency from _sum / _count is 200ms: give the histogram bucket bounds around it, such as le="0.05", "0.1", "0.25", "0.5", "1", "2.5", "5"`,
		BoundsAdvice(0.2, time.Second))
	assert.Equal(t, `the mean latency from _sum / _count is 200ms: give the histogram bucket bounds around it, such as le="50", "100", "250", "500", "1000", "2500", "5000"`,
		BoundsAdvice(0.2, time.Millisecond))
	assert.Contains(t, BoundsAdvice(math.NaN(), time.Second), `client_golang's default le="0.005", "0.01"`)
}

// TestBoundsBeyondMaxBound: a bound beyond 24h (nanoseconds observed into a
// _seconds histogram) bounds no timeout. Its calls count as taking longer
// than the largest bound within 24h, as those of +Inf do, and no figure
// wraps around a time.Duration (1e10 s is more than one holds).
func TestBoundsBeyondMaxBound(t *testing.T) {
	for _, tt := range []struct {
		name  string
		les   []LE
		bound time.Duration
	}{
		{"beyond a Duration", []LE{{1, 990}, {1e10, 1000}, {inf, 1000}}, time.Second},
		{"beyond 24h", []LE{{60, 900}, {172800, 1000}, {inf, 1000}}, time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := FromClassic(tt.les, time.Second)
			require.NoError(t, err)
			require.Len(t, h.Repairs, 1)
			assert.Contains(t, h.Repairs[0].Message, "1 bucket bounds lie beyond 24h")
			assert.Contains(t, h.Repairs[0].Message, "unit mix-up")
			d, lower := h.Upper(0.999)
			assert.Equal(t, tt.bound, d)
			assert.True(t, lower, "a lower bound, not a measurement")
			l := h.Latency()
			assert.EqualValues(t, 1000, l.Count(), "no call dropped")
			below, above := l.OutOfRange()
			assert.Zero(t, below+above)
			assert.Equal(t, l.Count()-int64(tt.les[0].Cumulative), l.CountAbove(tt.bound), "a timeout at the bound cuts them off")
			assert.Equal(t, l.CountAbove(tt.bound), l.Censored())
		})
	}
}

// TestFromNativeNaN: calls the count holds beyond the buckets, when a
// bucket's count is NaN or observations were NaN (the sum is NaN), count
// as taking longer than the largest bound; dropped, they made p99.9 1s
// where up to 10 of 1,000 calls may have taken longer.
func TestFromNativeNaN(t *testing.T) {
	for name, s := range map[string]*model.SampleHistogram{
		"NaN bucket": {Count: 1000, Sum: 10, Buckets: model.HistogramBuckets{
			{Boundaries: 0, Lower: 0.5, Upper: 1, Count: 990},
			{Boundaries: 0, Lower: 1, Upper: 2, Count: model.FloatString(math.NaN())},
		}},
		"NaN observations": {Count: 1000, Sum: model.FloatString(math.NaN()), Buckets: model.HistogramBuckets{
			{Boundaries: 0, Lower: 0.5, Upper: 1, Count: 990},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			h, err := FromNative(s, time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1000.0, h.Count)
			d, lower := h.Upper(0.999)
			assert.Equal(t, time.Second, d)
			assert.True(t, lower, "at least 1s")
			assert.Contains(t, strings.Join(finding.Messages(h.Repairs), "\n"), "the histogram counts 10 calls more than its buckets hold")
			assert.NotEmpty(t, h.Divergence)
			assert.EqualValues(t, 10, h.Latency().Censored())
		})
	}
}

// TestRepairsAreFindings: every repair is a TT-BUCKET-REPAIR finding whose
// repair field says which, with its numbers.
func TestRepairsAreFindings(t *testing.T) {
	h, err := FromClassic([]LE{{-0.1, 1}, {0.5, 91}, {1, 90.5}, {1.0, 0}, {2, math.NaN()}, {inf, 100}}, time.Second)
	require.NoError(t, err)
	var kinds []string
	for _, f := range h.Repairs {
		assert.Equal(t, finding.BucketRepair, f.Code)
		kinds = append(kinds, f.Fields["repair"].(string))
	}
	assert.Equal(t, []string{"duplicate-le", "nan-count", "non-monotonic", "negative-le"}, kinds)
	assert.EqualValues(t, 1, h.Repairs[3].Fields["calls"], "the call at or below le=-0.1")
}

// TestAbove: the share above a bound is exact; between bounds, the
// buckets only bracket it.
func TestAbove(t *testing.T) {
	h := &histogram.Bucketed{Count: 100, Buckets: []histogram.Bucket{{Lo: 0, Hi: 0.1, Count: 60}, {Lo: 0.1, Hi: 0.5, Count: 30}, {Lo: 0.5, Hi: 1, Count: 9}, {Lo: 1, Hi: math.Inf(1), Count: 1}}}
	lo, hi, exact := h.Above(0.5)
	assert.True(t, exact)
	assert.InDelta(t, 0.10, lo, 1e-12)
	assert.InDelta(t, 0.10, hi, 1e-12)
	lo, hi, exact = h.Above(0.3)
	assert.False(t, exact, "0.3 is no bound")
	assert.InDelta(t, 0.10, lo, 1e-12, "the buckets above 0.5 surely")
	assert.InDelta(t, 0.40, hi, 1e-12, "and (0.1, 0.5] maybe")
	lo, hi, exact = h.Above(2)
	assert.False(t, exact)
	assert.Equal(t, 0.0, lo)
	assert.InDelta(t, 0.01, hi, 1e-12, "only +Inf reaches above 2 s")
	lo, hi, _ = (&histogram.Bucketed{}).Above(1)
	assert.Equal(t, [2]float64{0, 1}, [2]float64{lo, hi})
}
