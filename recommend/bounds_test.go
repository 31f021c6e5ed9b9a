package recommend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestBoundsBeforeAndRetryWindow pins the static worst case of a client
// without a bound over its attempts: each try runs the timers before its
// request (nginx's connect, HAProxy's queue and connect) and then its own,
// and nginx's proxy_next_upstream_timeout starts no try after the window.
func TestBoundsBeforeAndRetryWindow(t *testing.T) {
	// 4 tries of 100ms, each after a connect of up to 30ms: 4 x 130ms.
	b := recommend.Bounds{PerTry: 100 * ms, Attempts: 4, RetriesTimeouts: true, Before: []time.Duration{30 * ms}}
	assert.Equal(t, 30*ms, b.BeforeSum())
	assert.Equal(t, 520*ms, b.StaticWorstCase())
	assert.Equal(t, 4, b.StaticAttempts())
	assert.Equal(t, 3, b.AttemptsWithin(400*ms), "3 x 130ms = 390ms fit, 520ms does not")
	assert.Equal(t, 1, b.AttemptsWithin(200*ms))

	// The snippet's window: the deadline less one try. Tries start at 0,
	// 130ms and 260ms; the fourth would start at 390ms, past 270ms.
	b.RetryWindow = 400*ms - 130*ms
	assert.Equal(t, 3, b.StaticAttempts())
	assert.Equal(t, 390*ms, b.StaticWorstCase(), "within the deadline of 400ms")
	// A try starts only while less than the window has passed
	// (ngx_http_upstream_next: elapsed >= timeout ends the request).
	b.RetryWindow = 260 * ms
	assert.Equal(t, 2, b.StaticAttempts())

	// In a hang the connection is made and the answer never comes: the
	// timers before the request do not run, the window still ends the
	// tries.
	tries, _, unsent, bounded := b.HangWalk()
	assert.True(t, bounded)
	assert.Equal(t, []recommend.Try{{Start: 0, Length: 100 * ms}, {Start: 100 * ms, Length: 100 * ms}, {Start: 200 * ms, Length: 100 * ms}}, tries)
	assert.Equal(t, 4, unsent, "the fourth starts at 300ms, past the window of 260ms")

	// An overall bound ends the call whatever runs before a request: the
	// timers before it add nothing.
	o := recommend.Bounds{Overall: 300 * ms, PerTry: 100 * ms, Attempts: 3, RetriesTimeouts: true, Before: []time.Duration{50 * ms}}
	assert.Equal(t, 300*ms, o.StaticWorstCase())

	// Timeouts not retried: one try, whatever the attempts.
	n := recommend.Bounds{PerTry: 100 * ms, Attempts: 3, Before: []time.Duration{20 * ms, 30 * ms}}
	assert.Equal(t, 1, n.StaticAttempts())
	assert.Equal(t, 150*ms, n.StaticWorstCase())

	// Waits between tries at the backoff's cap count against the window.
	w := recommend.Bounds{PerTry: 100 * ms, Attempts: 3, RetriesTimeouts: true, Backoff: recommend.Backoff{Base: 10 * ms, Cap: 50 * ms}}
	assert.Equal(t, 3*100*ms+2*50*ms, w.StaticWorstCase())
	w.RetryWindow = 300 * ms // the third would start at 300ms
	assert.Equal(t, 250*ms, w.StaticWorstCase())
}

// TestBoundsWorstCaseWaits: a worst case takes each wait at its largest.
// resilience4j's exponential random backoff (waitDuration 25ms x 2 per
// retry, randomizedWaitFactor 0.5, exponentialMaxWaitDuration 250ms)
// waits at most 37.5, 75, 150 and then 250ms, so 4 attempts of 600ms take
// at most 2.6625s, within a deadline of 2.67s, where every wait at the
// cap would make it 3.15s. Without a growth every wait may reach the cap.
func TestBoundsWorstCaseWaits(t *testing.T) {
	b := recommend.Bounds{PerTry: 600 * ms, Attempts: 4, RetriesTimeouts: true, Backoff: recommend.Backoff{Base: 25 * ms, Cap: 250 * ms}, WaitGrowth: 2, WaitAbove: 0.5}
	var waits []time.Duration
	for i := range 4 {
		waits = append(waits, b.MaxWait(i))
	}
	assert.Equal(t, []time.Duration{37500 * time.Microsecond, 75 * ms, 150 * ms, 250 * ms}, waits)
	assert.Equal(t, 2662500*time.Microsecond, b.StaticWorstCase())
	b.WaitGrowth = 0
	assert.Equal(t, 3150*ms, b.StaticWorstCase(), "every wait at the cap")
	assert.Equal(t, recommend.WorstCaseOf(4, 600*ms, 250*ms), b.StaticWorstCase())
}
