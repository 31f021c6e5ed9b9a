package littleslaw_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/littleslaw"
)

const ms = time.Millisecond

func TestInFlight(t *testing.T) {
	assert.InDelta(t, 320, littleslaw.InFlight(400, 800*ms), 1e-12)
	assert.InDelta(t, 12.8, littleslaw.InFlight(400, 32*ms), 1e-12)
	assert.InDelta(t, 6, littleslaw.InFlight(30, 200*ms), 1e-12, "Hystrix wiki: 30 rps x 0.2 s")
	assert.Zero(t, littleslaw.InFlight(0, time.Second))
	assert.Zero(t, littleslaw.InFlight(400, 0))
}

// The expected values come from the regularized incomplete gamma function
// (P(X <= k) = Q(k+1, mean)) evaluated with 50 digits (mpmath).
func TestPoissonQuantile(t *testing.T) {
	tests := []struct {
		mean, p float64
		want    int
	}{
		{1, 0.5, 1},     // CDF(0) = 0.368, CDF(1) = 0.736
		{1, 0.3, 0},     // CDF(0) = 0.368 already
		{1, 0.99, 4},    // CDF(3) = 0.9810, CDF(4) = 0.99634
		{1, 0.999, 5},   // CDF(4) = 0.99634, CDF(5) = 0.999406
		{0.5, 0.999, 4}, // CDF(3) = 0.998248
		{0.001, 0.999, 0},
		{0.01, 0.999, 1},
		{3.2, 0.999, 10},
		{12.8, 0.5, 13},
		{12.8, 0.99, 22},
		{12.8, 0.999, 25}, // CDF(24) = 0.998369, CDF(25) = 0.999222
		{50, 0.999, 73},
		{100, 0.999, 132},
		{1e4, 0.999, 10310},      // CDF(10309) = 0.9989681, CDF(10310) = 0.9990019
		{1e5, 0.001, 99024},      // the lower tail
		{1e6, 0.5, 1000000},      // CDF(999999) = 0.499867
		{1e6, 0.001, 996911},     //
		{1e6, 0.999, 1003092},    // CDF(1003091) = 0.99899947, CDF(1003092) = 0.99900283
		{1e6, 0.999999, 1004757}, // far in the tail
	}
	for _, tc := range []struct {
		mean, p float64
		want    int
	}{
		// Above 1e7 the normal approximation stands in for the sum.
		{1e8, 0.999, 100030904},
		{1e8, 0.5, 100000000},
		{1e8, 0.001, 99969099},
	} {
		assert.InDelta(t, tc.want, littleslaw.PoissonQuantile(tc.mean, tc.p), 1, "mean %v, p %v", tc.mean, tc.p)
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, littleslaw.PoissonQuantile(tc.mean, tc.p), "mean %v, p %v", tc.mean, tc.p)
	}
	assert.Zero(t, littleslaw.PoissonQuantile(0, 0.999), "no demand")
	assert.Zero(t, littleslaw.PoissonQuantile(-1, 0.999))
	assert.Zero(t, littleslaw.PoissonQuantile(5, 0))
	assert.Equal(t, math.MaxInt, littleslaw.PoissonQuantile(5, 1))
	assert.Zero(t, littleslaw.PoissonQuantile(math.NaN(), 0.5))
}

func TestPoissonCDF(t *testing.T) {
	// Poisson(1): CDF(k) = e^-1 x sum_{j<=k} 1/j!.
	for k, want := range []float64{0.36787944117144233, 0.73575888234288464, 0.91969860292860584, 0.98101184312384619, 0.99634015317265629, 0.99940581518241831} {
		assert.InDelta(t, want, littleslaw.PoissonCDF(k, 1), 1e-15, "k %d", k)
	}
	assert.InDelta(t, 0.48525211225770519, littleslaw.PoissonCDF(12, 12.8), 1e-14)
	assert.InDelta(t, 0.99922157530575448, littleslaw.PoissonCDF(25, 12.8), 1e-14)
	assert.InDelta(t, 0.99900283274434401, littleslaw.PoissonCDF(1003092, 1e6), 1e-10)
	assert.InDelta(t, 0.15877629981172561, littleslaw.PoissonCDF(999000, 1e6), 1e-10)
	assert.Zero(t, littleslaw.PoissonCDF(-1, 3))
	assert.Equal(t, 1.0, littleslaw.PoissonCDF(0, 0))
	assert.InDelta(t, 1, littleslaw.PoissonCDF(1000, 12.8), 1e-15)
}

func TestAnalyze(t *testing.T) {
	// docs/method.md#12-the-worked-example: 400 calls/s, a pool of 200, mean 32ms, p99 500ms, timeout 800ms.
	domain := littleslaw.Input{Rate: 400, Pool: 200, MeanLatency: 32 * ms, P99: 500 * ms, Timeout: 800 * ms}
	withPeak := domain
	withPeak.Rate, withPeak.PeakRate = 100, 400
	safe := domain
	safe.Rate = 100
	looser := domain
	looser.Rejection = 0.01
	tinyPool := domain
	tinyPool.Pool = 20

	tests := []struct {
		name string
		in   littleslaw.Input
		want littleslaw.Result
	}{
		{"pool exhausted", domain, littleslaw.Result{
			Rate: 400, Pool: 200, RateKnown: true, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightNormal: 12.8, InFlightPeak: 12.8, InFlightDuringHang: 320, PoolExhausted: true, SecondsToExhaustion: 0.5,
			Bulkhead: 25,  // Poisson(12.8) p99.9
			Hystrix:  300, // ceil(400 x 0.5) = 200, + 100
		}},
		{"the peak rate runs into the hang", withPeak, littleslaw.Result{
			Rate: 100, PeakRate: 400, Pool: 200, RateKnown: true, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightNormal: 3.2, InFlightPeak: 12.8, InFlightDuringHang: 320, PoolExhausted: true, SecondsToExhaustion: 0.5,
			Bulkhead: 25, // sized from peak demand, 12.8, not the mean 3.2 (whose p99.9 is 10)
			Hystrix:  300,
		}},
		{"within the pool", safe, littleslaw.Result{
			Rate: 100, Pool: 200, RateKnown: true, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightNormal: 3.2, InFlightPeak: 3.2, InFlightDuringHang: 80, Bulkhead: 10,
			Hystrix: 75, // ceil(100 x 0.5) = 50, + half of it
		}},
		{"rejection 1 %", looser, littleslaw.Result{
			Rate: 400, Pool: 200, RateKnown: true, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightNormal: 12.8, InFlightPeak: 12.8, InFlightDuringHang: 320, PoolExhausted: true, SecondsToExhaustion: 0.5,
			Bulkhead: 22, Hystrix: 300,
		}},
		{"a pool too small for normal demand", tinyPool, littleslaw.Result{
			Rate: 400, Pool: 20, RateKnown: true, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightNormal: 12.8, InFlightPeak: 12.8, InFlightDuringHang: 320, PoolExhausted: true, SecondsToExhaustion: 0.05,
			Bulkhead: 25, Hystrix: 300,
		}},
		{"pool unknown", littleslaw.Input{Rate: 400, MeanLatency: 32 * ms, Timeout: 800 * ms}, littleslaw.Result{
			Rate: 400, RateKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightNormal: 12.8, InFlightPeak: 12.8, InFlightDuringHang: 320, Bulkhead: 25,
		}},
		{"rate unknown", littleslaw.Input{Pool: 200, MeanLatency: 32 * ms, P99: 500 * ms, Timeout: 800 * ms}, littleslaw.Result{
			Pool: 200, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
		}},
		{"only the peak rate", littleslaw.Input{PeakRate: 400, Pool: 200, MeanLatency: 32 * ms, Timeout: 800 * ms}, littleslaw.Result{
			PeakRate: 400, Pool: 200, PoolKnown: true, MeanLatency: 32 * ms, Timeout: 800 * ms,
			InFlightPeak: 12.8, InFlightDuringHang: 320, PoolExhausted: true, SecondsToExhaustion: 0.5, Bulkhead: 25,
		}},
		{"a trickle still gets a bulkhead of 1", littleslaw.Input{Rate: 0.01, MeanLatency: 10 * ms}, littleslaw.Result{
			Rate: 0.01, RateKnown: true, MeanLatency: 10 * ms, InFlightNormal: 0.0001, InFlightPeak: 0.0001, Bulkhead: 1,
		}},
		{"nothing known", littleslaw.Input{}, littleslaw.Result{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := littleslaw.Analyze(tc.in)
			assert.InDelta(t, tc.want.InFlightNormal, got.InFlightNormal, 1e-9)
			assert.InDelta(t, tc.want.InFlightPeak, got.InFlightPeak, 1e-9)
			assert.InDelta(t, tc.want.InFlightDuringHang, got.InFlightDuringHang, 1e-9)
			assert.InDelta(t, tc.want.SecondsToExhaustion, got.SecondsToExhaustion, 1e-12)
			assert.Equal(t, tc.in.Timeout, got.HangWait, "one attempt: a hang waits the timeout")
			got.InFlightNormal, got.InFlightDuringHang, got.SecondsToExhaustion = tc.want.InFlightNormal, tc.want.InFlightDuringHang, tc.want.SecondsToExhaustion
			got.HangWait = 0
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestHystrixWikiExample pins the rule of thumb to the Hystrix wiki's own
// example: 30 rps x 0.2 s = 6 threads, + breathing room = 10.
func TestHystrixWikiExample(t *testing.T) {
	r := littleslaw.Analyze(littleslaw.Input{PeakRate: 30, P99: 200 * ms})
	assert.Equal(t, 10, r.Hystrix)
	// Large pools keep half of the base as breathing room.
	r = littleslaw.Analyze(littleslaw.Input{PeakRate: 1000, P99: 201 * ms})
	assert.Equal(t, 201+101, r.Hystrix)
	// Unknown p99 or rate: no rule of thumb.
	assert.Zero(t, littleslaw.Analyze(littleslaw.Input{PeakRate: 30}).Hystrix)
	assert.Zero(t, littleslaw.Analyze(littleslaw.Input{P99: 200 * ms}).Hystrix)
}

func TestHangAt(t *testing.T) {
	r := littleslaw.Analyze(littleslaw.Input{Rate: 100, PeakRate: 400, Pool: 200})
	// The candidate table of docs/method.md#12-the-worked-example: 400 calls/s, a pool of 200.
	for _, tc := range []struct {
		timeout        time.Duration
		inFlight, pool float64
	}{
		{50 * ms, 20, 0.1},
		{250 * ms, 100, 0.5},
		{500 * ms, 200, 1},
		{800 * ms, 320, 1.6},
		{time.Second, 400, 2},
	} {
		inFlight, pool := r.HangAt(tc.timeout)
		assert.InDelta(t, tc.inFlight, inFlight, 1e-9, "%v", tc.timeout)
		assert.InDelta(t, tc.pool, pool, 1e-12, "%v", tc.timeout)
	}
	inFlight, pool := littleslaw.Analyze(littleslaw.Input{Rate: 400}).HangAt(800 * ms)
	assert.InDelta(t, 320, inFlight, 1e-9)
	assert.Zero(t, pool, "pool unknown")
	inFlight, pool = littleslaw.Analyze(littleslaw.Input{Pool: 200}).HangAt(800 * ms)
	assert.Zero(t, inFlight, "rate unknown")
	assert.Zero(t, pool)
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name string
		in   littleslaw.Input
		want string
	}{
		{"exhausted", littleslaw.Input{Rate: 400, Pool: 200, MeanLatency: 32 * ms, Timeout: 800 * ms},
			"During a hang, 400 calls/s x 800ms = 320 calls wait at once, 1.6 x the pool of 200: the pool is exhausted 0.50 s into the hang. " +
				"A bulkhead of 25 (normal demand is 13 in flight) keeps the rest of the pool serving other work."},
		{"exhausted at peak", littleslaw.Input{Rate: 100, PeakRate: 400, Pool: 200, MeanLatency: 32 * ms, Timeout: 800 * ms},
			"During a hang at the peak rate, 400 calls/s x 800ms = 320 calls wait at once, 1.6 x the pool of 200: the pool is exhausted 0.50 s into the hang. " +
				"A bulkhead of 25 (normal demand is 13 in flight) keeps the rest of the pool serving other work."},
		{"within the pool", littleslaw.Input{Rate: 100, Pool: 200, MeanLatency: 32 * ms, Timeout: 800 * ms},
			"During a hang, 100 calls/s x 800ms = 80 calls wait at once, within the pool of 200."},
		{"pool too small", littleslaw.Input{Rate: 400, Pool: 20, MeanLatency: 32 * ms, Timeout: 800 * ms},
			"During a hang, 400 calls/s x 800ms = 320 calls wait at once, 16.0 x the pool of 20: the pool is exhausted 0.05 s into the hang. " +
				"Even normal demand needs a bulkhead of 25, more than the pool of 20: the pool itself is too small."},
		{"pool unknown", littleslaw.Input{Rate: 2.5, MeanLatency: 32 * ms, Timeout: 800 * ms},
			"During a hang, 2.5 calls/s x 800ms = 2 calls wait at once; give --pool to compare that with the pool the calls share."},
		{"one waits", littleslaw.Input{Rate: 1.25, MeanLatency: 32 * ms, Timeout: 800 * ms},
			"During a hang, 1.2 calls/s x 800ms = 1 call waits at once; give --pool to compare that with the pool the calls share."},
		{"rate unknown", littleslaw.Input{Pool: 1200, Timeout: 800 * ms},
			"Give --rate (or timestamps) to see what a hang costs the pool of 1,200."},
		{"nothing known", littleslaw.Input{Timeout: 800 * ms},
			"Give --rate (or timestamps) and --pool to see what a hang costs."},
		{"no timeout", littleslaw.Input{Rate: 400, Pool: 200},
			"Give a timeout to see what a hang costs."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NotPanics(t, func() { _ = littleslaw.Analyze(tc.in).Verdict() })
			assert.Equal(t, tc.want, littleslaw.Analyze(tc.in).Verdict())
		})
	}
}
