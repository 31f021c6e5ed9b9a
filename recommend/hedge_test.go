package recommend

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tunetimeout/tunetimeout/histogram"
)

// TestFractionAbove: the lookup the hedging figures use answers as
// Latency.FractionAbove does, at bucket edges, inside buckets and beyond.
func TestFractionAbove(t *testing.T) {
	h := histogram.New()
	for i := range 5000 {
		h.Record(time.Duration(1+i*i%977) * 137 * time.Microsecond)
	}
	above := fractionAbove(h)
	for d := -time.Millisecond; d < 200*time.Millisecond; d += 373 * time.Microsecond {
		assert.Equal(t, h.FractionAbove(d), above(d), "at %v", d)
	}
	for _, b := range h.Bars() {
		for _, d := range []time.Duration{b.Lo, b.Hi, b.Lo - time.Microsecond, b.Hi + time.Microsecond} {
			assert.Equal(t, h.FractionAbove(d), above(d), "at %v", d)
		}
	}
}
