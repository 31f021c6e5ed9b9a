package littleslaw_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/littleslaw"
)

func TestHangWithRetries(t *testing.T) {
	tests := []struct {
		name     string
		rate     float64
		attempts int
		perTry   time.Duration
		backoff  time.Duration
		want     float64
	}{
		{"one attempt is rate x timeout", 400, 1, 800 * ms, 0, 320},
		{"0 attempts count as one", 400, 0, 800 * ms, 0, 320},
		{"one attempt has no backoff to wait", 400, 1, 800 * ms, 50 * ms, 320},
		// docs/method.md#6-littles-law: 400/s x (3 x 300ms + 37.5ms) = 375.
		{"three attempts and their backoff", 400, 3, 300 * ms, 37500 * time.Microsecond, 375},
		{"retries multiply the hang", 400, 3, 800 * ms, 0, 960},
		{"no rate", 0, 3, 800 * ms, 50 * ms, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, littleslaw.HangWithRetries(tt.rate, tt.attempts, tt.perTry, tt.backoff), 1e-9)
		})
	}
}

func TestAnalyzeWithRetries(t *testing.T) {
	r := littleslaw.Analyze(littleslaw.Input{Rate: 100, PeakRate: 400, Pool: 200, MeanLatency: 32 * ms,
		Timeout: 300 * ms, Attempts: 3, Backoff: 37500 * time.Microsecond})
	assert.InDelta(t, 375, r.InFlightDuringHang, 1e-9, "the peak rate x (3 x 300ms + 37.5ms)")
	assert.True(t, r.PoolExhausted)
	assert.InDelta(t, 0.5, r.SecondsToExhaustion, 1e-12, "the pool still fills at pool / rate")
	assert.Equal(t, 25, r.Bulkhead, "normal demand does not change")
	inFlight, _ := r.HangAt(300 * ms)
	assert.InDelta(t, 120, inFlight, 1e-9, "HangAt stays one attempt: it prices candidate timeouts")
	assert.Equal(t,
		"During a hang at the peak rate, 400 calls/s x (3 attempts x 300ms + 37.5ms of backoff) = 375 calls wait at once, 1.9 x the pool of 200: the pool is exhausted 0.50 s into the hang. "+
			"A bulkhead of 25 (normal demand is 13 in flight) keeps the rest of the pool serving other work.",
		r.Verdict())

	one := littleslaw.Analyze(littleslaw.Input{Rate: 400, Pool: 200, MeanLatency: 32 * ms, Timeout: 800 * ms, Attempts: 1, Backoff: time.Second})
	assert.InDelta(t, 320, one.InFlightDuringHang, 1e-9, "one attempt: the backoff is never waited")
	assert.NotContains(t, one.Verdict(), "attempts")
}

// What a hang costs with 3 attempts of 300ms each and full-jitter backoff
// (25ms base: 12.5ms + 25ms expected between them).
func ExampleHangWithRetries() {
	single := littleslaw.HangWithRetries(400, 1, 800*time.Millisecond, 0)
	retried := littleslaw.HangWithRetries(400, 3, 300*time.Millisecond, 37500*time.Microsecond)
	fmt.Printf("one attempt of 800ms: %.0f calls wait\n", single)
	fmt.Printf("3 attempts of 300ms: %.0f calls wait\n", retried)
	// Output:
	// one attempt of 800ms: 320 calls wait
	// 3 attempts of 300ms: 375 calls wait
}

// TestDeadlineCutsTheHang: with a deadline a request waits at most the
// deadline, however many attempts it makes (docs/method.md#attempts-inside-a-deadline): the
// README's 3 attempts of 800ms in 1s hold 400 calls/s x 1s.
func TestDeadlineCutsTheHang(t *testing.T) {
	r := littleslaw.Analyze(littleslaw.Input{Rate: 400, Pool: 200, MeanLatency: 32 * ms,
		Timeout: 800 * ms, Attempts: 2, Backoff: 12500 * time.Microsecond, Deadline: time.Second})
	assert.Equal(t, time.Second, r.HangWait)
	assert.InDelta(t, 400, r.InFlightDuringHang, 1e-9)
	assert.Contains(t, r.Verdict(), "400 calls/s x 1s (the deadline, over 2 attempts of up to 800ms) = 400 calls wait at once, 2.0 x the pool of 200")

	// Within the deadline: the attempts and their backoff.
	r = littleslaw.Analyze(littleslaw.Input{Rate: 400, Timeout: 800 * ms, Attempts: 3, Backoff: 37500 * time.Microsecond, Deadline: 3 * time.Second})
	assert.Equal(t, 2437500*time.Microsecond, r.HangWait)
	assert.InDelta(t, 975, r.InFlightDuringHang, 1e-9)
	assert.Contains(t, r.Verdict(), "(3 attempts x 800ms + 37.5ms of backoff)")

	// One attempt within the deadline is the timeout alone.
	r = littleslaw.Analyze(littleslaw.Input{Rate: 400, Timeout: 800 * ms, Deadline: 3 * time.Second})
	assert.Equal(t, 800*ms, r.HangWait)
	assert.Contains(t, r.Verdict(), "400 calls/s x 800ms = 320 calls")
}

// TestAnalyzeShared is the issue's case: three routes of one dependency at
// 240, 80 and 80 calls/s... each fits a pool of 200 alone, together they
// hold 320 calls, 1.6 x the pool, exhausted at 0.5s.
func TestAnalyzeShared(t *testing.T) {
	group := func(rate float64, wait time.Duration, bulkhead int) littleslaw.Result {
		r := littleslaw.Analyze(littleslaw.Input{Rate: rate, Pool: 200, MeanLatency: 32 * ms, Timeout: wait})
		require.Equal(t, wait, r.HangWait)
		if bulkhead == 0 {
			r.Bulkhead = 0
		}
		return r
	}
	groups := []littleslaw.Result{group(240, 800*ms, 1), group(120, 800*ms, 1), group(40, 800*ms, 1)}
	for _, g := range groups {
		require.False(t, g.PoolExhausted, "precondition: each group alone fits")
	}
	s := littleslaw.AnalyzeShared(200, groups)
	assert.Equal(t, 3, s.Groups)
	assert.InDelta(t, 320, s.InFlightDuringHang, 1e-9)
	assert.True(t, s.PoolExhausted)
	assert.InDelta(t, 0.5, s.SecondsToExhaustion, 1e-12, "200 / 400 calls/s")
	assert.Equal(t, 3, s.FitAlone)
	assert.Equal(t, groups[0].Bulkhead+groups[1].Bulkhead+groups[2].Bulkhead, s.Bulkheads)
	assert.Contains(t, s.Verdict(), "the 3 groups hang together: 320 calls wait at once")
	assert.Contains(t, s.Verdict(), "1.6 x the pool of 200: the pool is exhausted 0.50 s into the hang, though each group alone fits.")

	// Unequal waits: the short group stops growing at its timeout. 300/s
	// for 0.1s, then 100/s: 30 + 100 x (t - 0.1) = 50 at t = 0.3s.
	s = littleslaw.AnalyzeShared(50, []littleslaw.Result{group(200, 100*ms, 1), group(100, 2*time.Second, 1)})
	assert.InDelta(t, 220, s.InFlightDuringHang, 1e-9)
	assert.InDelta(t, 0.3, s.SecondsToExhaustion, 1e-12)
	assert.Equal(t, 1, s.FitAlone, "the 2s group alone holds 200 > 50, the other 20")
	assert.NotContains(t, s.Verdict(), "alone")

	// Within the pool, and unknown rates.
	s = littleslaw.AnalyzeShared(1000, groups)
	assert.False(t, s.PoolExhausted)
	assert.Contains(t, s.Verdict(), "within the pool of 1,000")
	s = littleslaw.AnalyzeShared(200, []littleslaw.Result{group(0, 800*ms, 0), group(100, 800*ms, 1)})
	assert.False(t, s.RateKnown)
	assert.False(t, s.BulkheadsKnown)
	assert.Zero(t, s.InFlightDuringHang)
	assert.Contains(t, s.Verdict(), "give --rate")
}
