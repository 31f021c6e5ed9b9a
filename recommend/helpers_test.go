package recommend_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	mix "github.com/tunetimeout/tunetimeout/internal/mixture"
)

// mixture generates the worked example of docs/method.md#12-the-worked-example (median
// 20ms, sigma 0.5, 2 % with an extra 150-800ms pause); seed 1 with 200,000
// samples is testdata/mixture.csv.
func mixture(seed uint64, n int) []time.Duration {
	return mix.Default().Generate(seed, n)
}

// clamp returns a copy of ds with every value above limit set to limit:
// what a client with an existing timeout of limit records.
func clamp(ds []time.Duration, limit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = min(d, limit)
	}
	return out
}

// logSpread returns n values spread evenly on a log scale from lo to hi.
func logSpread(n int, lo, hi time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		x := float64(i) / float64(n-1)
		out[i] = time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), x))
	}
	return out
}

// linSpread returns n values spread evenly from lo to hi.
func linSpread(n int, lo, hi time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = lo + time.Duration(float64(hi-lo)*float64(i)/float64(max(n-1, 1)))
	}
	return out
}

// repeat returns n copies of d.
func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// hist records every sample of every group.
func hist(t testing.TB, groups ...[]time.Duration) *histogram.Latency {
	t.Helper()
	h := histogram.New()
	for _, g := range groups {
		for _, d := range g {
			require.True(t, h.Record(d), "record %v", d)
		}
	}
	return h
}
