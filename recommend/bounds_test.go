package recommend

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestBoundsWorstCaseWaits: a worst case takes each wait at its largest.
// resilience4j's exponential random backoff (waitDuration 25ms x 2 per
// retry, randomizedWaitFactor 0.5, exponentialMaxWaitDuration 250ms)
// waits at most 37.5, 75, 150 and then 250ms, so 4 attempts of 600ms take
// at most 2.6625s, within a deadline of 2.67s, where every wait at the
// cap would make it 3.15s. Without a growth every wait may reach the cap.
func TestBoundsWorstCaseWaits(t *testing.T) {
	ms := time.Millisecond
	b := Bounds{PerTry: 600 * ms, Attempts: 4, RetriesTimeouts: true, Backoff: Backoff{Base: 25 * ms, Cap: 250 * ms}, WaitGrowth: 2, WaitAbove: 0.5}
	var waits []time.Duration
	for i := range 4 {
		waits = append(waits, b.MaxWait(i))
	}
	assert.Equal(t, []time.Duration{37500 * time.Microsecond, 75 * ms, 150 * ms, 250 * ms}, waits)
	assert.Equal(t, 2662500*time.Microsecond, b.StaticWorstCase())
	b.WaitGrowth = 0
	assert.Equal(t, 3150*ms, b.StaticWorstCase(), "every wait at the cap")
	assert.Equal(t, WorstCaseOf(4, 600*ms, 250*ms), b.WorstCase(4))
}
