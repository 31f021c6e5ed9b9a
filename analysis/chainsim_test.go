package analysis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// A path of 12 hops, each hop retrying 3 times: 3^12 = 531,441 attempts
// at the bottom per request under fast failures, so a run replays
// 20,000,000 / 531,441 = 37 requests, not the 100,000 asked for; and the
// longest path is the one replayed.
func TestSimulateChainBoundsDeepPaths(t *testing.T) {
	h := histogram.New()
	h.Record(time.Millisecond)
	g := &report.CallGraph{}
	fitted := map[string]chainSimGroup{}
	var long []string
	for i := range 12 {
		name := fmt.Sprintf("s%02d s%02d", i, i+1)
		long = append(long, name)
		fitted[name] = chainSimGroup{latency: h, timeout: 10 * time.Millisecond,
			policy: recommend.Policy{Attempts: 1, PerTryTimeout: 10 * time.Millisecond, Deadline: time.Second}}
	}
	g.Paths = []report.Path{{Edges: long[:2]}, {Edges: long}, {Edges: long[1:]}}
	var o Options
	o.Policy.Attempts, o.Policy.Deadline, o.Simulate.Requests = 3, time.Second, 100_000
	sim, err := simulateChain(context.Background(), g, fitted, nil, o)
	require.NoError(t, err)
	require.NotNil(t, sim)
	assert.Equal(t, long, sim.Path)
	assert.Equal(t, "s12", sim.FaultAt)
	assert.Equal(t, 37, sim.Requests)
	for _, r := range sim.Runs {
		if r.Fault == "fast failures" && r.Policies == report.ChainEveryHopRetries {
			assert.Equal(t, 531441, r.AttemptsMax[11])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = simulateChain(ctx, g, fitted, nil, o)
	assert.ErrorIs(t, err, context.Canceled)
}
