package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

const ms = time.Millisecond

// threeHops is root -> A -> B -> C: the root's per-try timeout 300ms, A's
// 250ms, B's 200ms, each inside a 1s deadline of its own (a hop that
// resets the deadline); A and B work 10ms before calling on; C answers in
// 50ms. every: each hop 3 attempts; plan: only the root's.
func threeHops(t *testing.T, every bool) []ChainSimHop {
	t.Helper()
	h := histogram.New()
	h.Record(50 * ms)
	pol := func(perTry time.Duration, attempts int) recommend.Policy {
		return recommend.Policy{Attempts: attempts, PerTryTimeout: perTry, Deadline: time.Second, RetryOn: recommend.DefaultRetryOn}
	}
	n := 1
	if every {
		n = 3
	}
	return []ChainSimHop{{Own: 10 * ms, Policy: pol(300*ms, 3)}, {Own: 10 * ms, Policy: pol(250*ms, n)},
		{Latency: h.Sampler(), Policy: pol(200*ms, n)}}
}

func TestChainSimulateFastFailures(t *testing.T) {
	f := ChainFault{Name: "fast failures", Hop: 2, Fail: true}
	every, err := ChainSimulate(context.Background(), threeHops(t, true), f, 100, 1)
	require.NoError(t, err)
	assert.Equal(t, []float64{3, 9, 27}, every.AttemptsMean)
	assert.Equal(t, []int{3, 9, 27}, every.AttemptsMax)
	assert.Zero(t, every.SuccessFraction)
	plan, err := ChainSimulate(context.Background(), threeHops(t, false), f, 100, 1)
	require.NoError(t, err)
	assert.Equal(t, []float64{3, 3, 3}, plan.AttemptsMean)
	assert.Zero(t, plan.SuccessFraction)
}

// A hang at C. The plan: each root attempt reaches C once, which B's
// 200ms timer ends at 20ms + 200ms into it; A and B pass the failure up at
// once, so the root's attempts run 0-220, 220-440, 440-660ms: 3 attempts
// at C, nothing after the root gave up at 660ms. Every hop retrying: B's
// call is 3 x 200ms, A's attempt (10ms + 600ms) times out at 250ms and A
// tries 3 times (750ms), the root's attempt times out at 300ms, three of
// them: 27 at C, and the root gives up at 900ms while its third attempt's
// A starts its last try at 1110ms. The work after 900ms, counted by hand
// over C's attempts and B's 10ms (root attempt, A's try: after 900ms):
// 1st: 0, 0, 220; 2nd: 20, 270, 520; 3rd: 320, 570, 610 = 2530ms.
func TestChainSimulateHang(t *testing.T) {
	f := ChainFault{Name: "hang", Hop: 2, Hang: true}
	plan, err := ChainSimulate(context.Background(), threeHops(t, false), f, 10, 1)
	require.NoError(t, err)
	assert.Zero(t, plan.SuccessFraction)
	assert.Equal(t, []int{3, 3, 3}, plan.AttemptsMax)
	assert.Zero(t, plan.WorkAfterRoot)
	every, err := ChainSimulate(context.Background(), threeHops(t, true), f, 10, 1)
	require.NoError(t, err)
	assert.Zero(t, every.SuccessFraction)
	assert.Equal(t, []int{3, 9, 27}, every.AttemptsMax)
	assert.Equal(t, 2530*ms, every.WorkAfterRoot)
}

// No fault: C's 50ms reaches the root as 70ms, within every timer.
func TestChainSimulateNoFault(t *testing.T) {
	for _, every := range []bool{true, false} {
		o, err := ChainSimulate(context.Background(), threeHops(t, every), ChainFault{Name: "none", Hop: 2}, 100, 1)
		require.NoError(t, err)
		assert.Equal(t, 1.0, o.SuccessFraction)
		assert.Equal(t, []float64{1, 1, 1}, o.AttemptsMean)
		assert.Zero(t, o.WorkAfterRoot)
	}
	// Slowed down x5, C's 250ms is past B's 200ms timer: nothing answers.
	o, err := ChainSimulate(context.Background(), threeHops(t, false), ChainFault{Name: "slowdown", Hop: 2, Slowdown: 5}, 10, 1)
	require.NoError(t, err)
	assert.Zero(t, o.SuccessFraction)
}

func TestChainSimulateRefuses(t *testing.T) {
	_, err := ChainSimulate(context.Background(), threeHops(t, false), ChainFault{Hop: 3}, 10, 1)
	assert.ErrorContains(t, err, "not on the path")
	_, err = ChainSimulate(context.Background(), nil, ChainFault{}, 10, 1)
	assert.Error(t, err)
}
