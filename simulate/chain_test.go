package simulate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const s = time.Second

// The chain of check's topology test: Envoy tries 3 times with 800ms per
// try inside 2.5s; gRPC 3 attempts inside 2s without a per-try timeout;
// Istio's default 3 attempts inside 1s. Fast failures multiply to 27; a
// hang lets each Envoy try reach the bottom once, since each hop below
// waits out its one attempt: 3 in all, none after edge gave up (at 2.4s).
func TestChainTopologyExample(t *testing.T) {
	hops := []ChainHop{{Attempts: 3, PerTry: 800 * time.Millisecond, Overall: 2500 * time.Millisecond},
		{Attempts: 3, Overall: 2 * s}, {Attempts: 3, Overall: s}}
	assert.Equal(t, ChainResult{AttemptsAtBottom: 27}, ChainFastFailures(hops))
	for _, cancelled := range []bool{true, false} {
		assert.Equal(t, ChainResult{AttemptsAtBottom: 3, RootGaveUp: 2400 * time.Millisecond}, ChainHang(hops, cancelled))
	}
}

// A caller's short tries over a callee's long ones: cancelled, the callee
// gets one try per caller attempt; not cancelled it runs all its tries,
// 9 attempts at the bottom, started at 0, 2, 4; 1, 3, 5; 2, 4, 6 seconds,
// of which 5 start at or after 3s, when the root gave up.
func TestChainHangCancellation(t *testing.T) {
	hops := []ChainHop{{Attempts: 3, PerTry: s, Overall: 3 * s}, {Attempts: 3, PerTry: 2 * s}}
	assert.Equal(t, ChainResult{AttemptsAtBottom: 3, RootGaveUp: 3 * s}, ChainHang(hops, true))
	assert.Equal(t, ChainResult{AttemptsAtBottom: 9, AfterRootGaveUp: 5, RootGaveUp: 3 * s}, ChainHang(hops, false))
}

// Short tries below long ones all run: 3 x 3.
func TestChainHangNested(t *testing.T) {
	hops := []ChainHop{{Attempts: 3, PerTry: s, Overall: 3 * s}, {Attempts: 3, PerTry: 400 * time.Millisecond}}
	assert.Equal(t, 9, ChainHang(hops, true).AttemptsAtBottom)
}

// A hop without any timer waits for ever: its one attempt never ends, and
// the root never gives up.
func TestChainHangNoTimer(t *testing.T) {
	hops := []ChainHop{{Attempts: 5}, {Attempts: 3, PerTry: s}}
	assert.Equal(t, ChainResult{AttemptsAtBottom: 3}, ChainHang(hops, false))
	assert.Equal(t, ChainResult{AttemptsAtBottom: 3}, ChainHang(hops, true), "an endless attempt cancels nothing")
}

// The attempts counted are bounded: 12 hops of 5 tries, each fitting 5
// times into its caller's, are 5^12 (244 million) at the bottom.
func TestChainBounded(t *testing.T) {
	var hops []ChainHop
	per := time.Microsecond
	for range 12 {
		per *= 5
	}
	for range 12 {
		hops = append(hops, ChainHop{Attempts: 5, PerTry: per})
		per /= 5
	}
	assert.Equal(t, maxChainAttempts, ChainFastFailures(hops).AttemptsAtBottom)
	assert.Equal(t, maxChainAttempts, ChainHang(hops, true).AttemptsAtBottom)
}
