package histogram_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
)

// TestSamplerReplaysTheDistribution: draws from the mixture's histogram
// have the mixture's quantiles and the same share above a timeout.
func TestSamplerReplaysTheDistribution(t *testing.T) {
	l := histogram.New()
	record(t, l, mixture.Default().Generate(1, 200_000)...)
	s := l.Sampler()
	require.NotNil(t, s)

	r := rand.New(rand.NewPCG(7, 7))
	const n = 200_000
	draws := make([]time.Duration, n)
	above := 0
	for i := range draws {
		draws[i] = s.Sample(r)
		if draws[i] > 250*ms {
			above++
		}
	}
	slices.Sort(draws)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		got := draws[int(q*n)-1]
		// Sampling noise: at p99.9 about 200 draws lie above, a few % wide.
		within(t, l.Quantile(q), got, 0.03, "q=%v", q)
	}
	assert.InDelta(t, l.FractionAbove(250*ms), float64(above)/n, 0.001, "share above 250ms")
	assert.GreaterOrEqual(t, draws[0], l.Min())
	assert.LessOrEqual(t, draws[n-1], l.Max()+time.Microsecond)
}

func TestSamplerDeterministicAndWithinBucket(t *testing.T) {
	l := histogram.New()
	record(t, l, 10*ms, 10*ms, 10*ms)
	s := l.Sampler()
	draw := func(seed uint64) []time.Duration {
		r := rand.New(rand.NewPCG(seed, seed))
		out := make([]time.Duration, 100)
		for i := range out {
			out[i] = s.Sample(r)
		}
		return out
	}
	a := draw(1)
	assert.Equal(t, a, draw(1), "same seed, same draws")
	assert.NotEqual(t, a, draw(2))
	for _, d := range a {
		// 10ms lies in a bucket 8µs wide (10,000µs at 3 significant digits).
		assert.GreaterOrEqual(t, d, l.Min())
		assert.Less(t, d, l.Max()+time.Microsecond)
		assert.InDelta(t, float64(10*ms), float64(d), float64(10*time.Microsecond))
	}
}

func TestSamplerEmpty(t *testing.T) {
	assert.Nil(t, histogram.New().Sampler())
}
