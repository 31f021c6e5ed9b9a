package promsource

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Contains(t, h.Repairs[0], "2 cumulative bucket counts were below the count of a lower bucket (by up to 2 calls)")
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
