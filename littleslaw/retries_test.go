package littleslaw_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
		// DOMAIN.md section 2: 400/s x (3 x 300ms + 37.5ms) = 375.
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
