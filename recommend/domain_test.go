package recommend_test

import (
	"math"
	"time"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestDomainExample is the worked example of docs/method.md#12-the-worked-example end to
// end: 200,000 calls, most about 20ms, 2 % with an extra 150-800ms pause;
// 400 calls/s; a pool of 200.
func TestDomainExample(t *testing.T) {
	h := hist(t, mixture(1, 200000))
	o := recommend.DefaultOptions()
	require.Equal(t, 0.001, o.FalseTimeouts)
	r, err := recommend.Recommend(h, o)
	require.NoError(t, err)

	p999 := h.Quantile(0.999)
	t.Logf("p50 %v, p99 %v, p99.9 %v, max %v, mean %v", h.Quantile(0.5), h.Quantile(0.99), p999, h.Max(), h.Mean())
	assert.InDelta(t, float64(788*ms), float64(p999), float64(10*ms), "the worked example (docs/method.md#12-the-worked-example): p99.9 about 788ms")
	assert.Equal(t, p999, r.Base)
	assert.GreaterOrEqual(t, r.Timeout, p999)
	assert.LessOrEqual(t, r.Timeout, p999+r.RoundingStep)
	assert.Equal(t, 50*ms, r.RoundingStep)
	assert.Equal(t, 800*ms, r.Timeout)
	assert.Equal(t, []string{"quantile", "round"}, rules(r), "a wide tail needs no tight-tail floor")
	assert.False(t, r.LowerBound)
	assert.Empty(t, r.Warnings, "199 calls lie above p99.9 and nothing piles up at the maximum")
	assert.Greater(t, r.Interval.Above, int64(150))
	assert.Less(t, r.Interval.Lo, p999)
	assert.Greater(t, r.Interval.Hi, p999)
	assert.True(t, r.Interval.HiKnown)

	// The trade-off table of docs/method.md#12-the-worked-example: what each candidate cuts off.
	assert.InDelta(t, 0.0525, h.FractionAbove(50*ms), 0.003)
	assert.InDelta(t, 0.0174, h.FractionAbove(250*ms), 0.001)
	assert.InDelta(t, 0.0099, h.FractionAbove(500*ms), 0.001)
	assert.InDelta(t, 0.0007, h.FractionAbove(800*ms), 0.0003)
	assert.Zero(t, h.FractionAbove(s))

	// The candidate ladder: 2 x p50 (40ms) -> 50ms up to 2 x 800ms -> 2.5s,
	// plus the timeout and p99 rounded up.
	p99, _ := recommend.RoundUp(h.Quantile(0.99))
	assert.Equal(t, 500*ms, p99, "p99 490ms")
	want := []time.Duration{50 * ms, 100 * ms, 250 * ms, 500 * ms, 800 * ms, s, 2500 * ms}
	assert.Equal(t, want, recommend.Candidates(h, r))

	a := littleslaw.Analyze(littleslaw.Input{
		Rate:        400,
		Pool:        200,
		MeanLatency: h.Mean(),
		P99:         h.Quantile(0.99),
		Timeout:     r.Timeout,
	})
	t.Logf("in flight normally %.1f, during a hang %.0f; bulkhead %d, Hystrix %d", a.InFlightNormal, a.InFlightDuringHang, a.Bulkhead, a.Hystrix)
	assert.True(t, a.PoolExhausted)
	assert.InDelta(t, 400*r.Timeout.Seconds(), a.InFlightDuringHang, 1e-9)
	assert.InDelta(t, 320, a.InFlightDuringHang, 1e-9)
	assert.InDelta(t, 0.5, a.SecondsToExhaustion, 1e-12)
	// Normal demand: 400/s x ~32ms mean = ~13 in flight, Poisson p99.9 ~25.
	assert.InDelta(t, 12.9, a.InFlightNormal, 0.5)
	assert.Less(t, a.Bulkhead, 50)
	assert.Equal(t, littleslaw.PoissonQuantile(400*h.Mean().Seconds(), 0.999), a.Bulkhead)
	// Hystrix: ceil(400/s x p99 ~0.5s) = ~200, + half = ~300: far larger.
	hy := int(math.Ceil(400 * h.Quantile(0.99).Seconds()))
	assert.Equal(t, hy+(hy+1)/2, a.Hystrix)
	assert.Equal(t, 296, a.Hystrix, "ceil(400 x 0.4905s) = 197, + 99")
	assert.Equal(t, 25, a.Bulkhead, "Poisson(12.8) p99.9")
	assert.Greater(t, a.Hystrix, a.Bulkhead)
}
