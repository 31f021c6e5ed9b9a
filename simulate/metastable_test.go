package simulate_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// at90 is the worked example's dependency sized by the default rule at
// 400 requests/s: Little's law's busy workers (rate x mean service time)
// at 90 % of the workers, rounded up (15 workers, 85.5 % busy).
func at90() int {
	h, _ := domain()
	return int(math.Ceil(400 * h.Mean().Seconds() / simulate.DefaultUtilization))
}

func trigger(t *testing.T, s string) simulate.Trigger {
	t.Helper()
	tr, err := simulate.ParseTrigger(s)
	require.NoError(t, err)
	return tr
}

func loop(t *testing.T, po recommend.PolicyOptions, o simulate.LoopOptions) simulate.LoopResult {
	t.Helper()
	h, p := policy(t, po)
	res, err := simulate.RunLoop(context.Background(), h, p, o)
	require.NoError(t, err)
	return res
}

var (
	threeNoBudget = recommend.PolicyOptions{Deadline: time.Second, Attempts: 3, Idempotent: true}
	oneAttempt    = recommend.PolicyOptions{Deadline: time.Second, Attempts: 1, Idempotent: true}
)

// TestLoopDoneWhen is issue 34's first line: the worked example served at
// 90 % of its capacity, a 3x slowdown for 60 s. With 3 attempts and no
// budget the retries keep the queue growing after the trigger is gone
// (about 2 attempts per request, twice the capacity); with one attempt and
// a server that drops work whose caller gave up, it is back at once.
func TestLoopDoneWhen(t *testing.T) {
	for _, workers := range []int{at90(), at90() - 1} { // 85.5 % and 91.6 % busy
		o := simulate.LoopOptions{Workers: workers, Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Seed: 1}
		stuck := loop(t, threeNoBudget, o)
		assert.False(t, stuck.Recovered, "%d workers: %+v", workers, stuck.Reason)
		assert.Greater(t, stuck.PeakLoadRatio, 1.6, "the retries double the load")
		assert.Zero(t, stuck.FinalGoodputRatio, "nobody is served in the end")
		assert.Greater(t, stuck.Utilization, 0.85)
		assert.Less(t, stuck.Utilization, 0.92)
		assert.Contains(t, stuck.Reason, "cannot be back")

		o.DropExpired = true
		back := loop(t, oneAttempt, o)
		assert.True(t, back.Recovered, "%d workers: %s", workers, back.Reason)
		assert.LessOrEqual(t, back.Recovery, 10*time.Second)
		assert.Greater(t, back.FinalGoodputRatio, 0.99)
		assert.Less(t, back.PeakLoadRatio, 1.0, "one attempt never asks more than the demand")
		assert.Positive(t, back.Dropped)
	}
}

// TestLoopDrainNeedsMoreThanBudget pins the domain's rule: a retry budget
// bounds the extra load but does not drain a queue of dead work; dropping
// expired work does.
func TestLoopDrainNeedsMoreThanBudget(t *testing.T) {
	budget := threeNoBudget
	budget.RetryBudget = 0.1
	o := simulate.LoopOptions{Workers: at90(), Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Seed: 1}
	res := loop(t, budget, o)
	assert.False(t, res.Recovered)
	assert.InDelta(t, 1.0, res.PeakLoadRatio, 0.05, "the budget keeps the load near the capacity")
	o.DropExpired = true
	res = loop(t, budget, o)
	assert.True(t, res.Recovered, res.Reason)
	// One attempt without dropping: the backlog of 60 s drains at the
	// 15 % spare capacity, in minutes, not seconds.
	o.DropExpired = false
	res = loop(t, oneAttempt, o)
	assert.True(t, res.Recovered, res.Reason)
	assert.Greater(t, res.Recovery, 2*time.Minute)
	assert.Less(t, res.Recovery, 4*time.Minute)
	assert.Positive(t, res.Wasted, "work served for callers who left")
}

// TestLoopNoTrigger: a trigger too small to matter is recovered from at
// once, and the normal state is the policy's own.
func TestLoopNoTrigger(t *testing.T) {
	res := loop(t, threeNoBudget, simulate.LoopOptions{Workers: at90(), Rate: 400, Trigger: trigger(t, "slow:1x:10s"), Seed: 3})
	assert.True(t, res.Recovered, res.Reason)
	assert.Zero(t, res.Recovery)
	assert.InDelta(t, 1.0, res.BaselineSuccess, 0.001)
	assert.InDelta(t, 1.0, res.BaselineAttempts, 0.005)
	assert.InDelta(t, 0.855, res.Utilization, 0.01)
	assert.InDelta(t, 0.88, res.PeakLoadRatio, 0.04, "the busiest 5 s of Poisson arrivals")
	// 400/s for 10 minutes, Poisson.
	assert.InDelta(t, 240_000, res.Requests, 2_000)
	assert.Len(t, res.Series.Demand, 120)
	assert.Equal(t, 5*time.Second, res.Series.Step)
}

// TestLoopOutageAndSpike: an outage refuses every attempt fast, so 3
// attempts per request arrive and none is served, and afterwards no queue
// is left; a spike adds arrivals and the queue they leave drains.
func TestLoopOutageAndSpike(t *testing.T) {
	o := simulate.LoopOptions{Workers: at90(), Rate: 400, Trigger: trigger(t, "outage:30s"), Seed: 1}
	res := loop(t, threeNoBudget, o)
	assert.True(t, res.Recovered, res.Reason)
	assert.InDelta(t, 3*400/res.CapacityPerSecond, res.PeakLoadRatio, 0.15, "three attempts each during the outage")
	assert.InDelta(t, 3*400*30, res.Rejected, 800)
	assert.Zero(t, res.Series.Goodput[14], "nothing served in the outage (65 s to 70 s)")

	o.Trigger = trigger(t, "spike:2x:30s")
	res = loop(t, oneAttempt, o)
	assert.InDelta(t, 800, res.Series.Demand[14], 50, "twice the arrivals")
	assert.InDelta(t, 400, res.Series.Demand[30], 50)
	o.Trigger = trigger(t, "spike:2x:30s")
	res = loop(t, threeNoBudget, o)
	assert.False(t, res.Recovered, "a spike of 2x for 30 s tips the 3-attempt policy over too")
}

// TestLoopDeterministicAndBounded: the same seed gives the same run; the
// memory does not grow with the duration: the series has at most 600
// points, and with dropped expired work the queue holds at most the
// attempts of one per-try timeout.
func TestLoopDeterministicAndBounded(t *testing.T) {
	o := simulate.LoopOptions{Workers: at90(), Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Seed: 9, DropExpired: true}
	a := loop(t, threeNoBudget, o)
	b := loop(t, threeNoBudget, o)
	assert.Equal(t, a, b)
	o.Seed = 10
	c := loop(t, threeNoBudget, o)
	assert.NotEqual(t, a.Attempts, c.Attempts)
	// 3 attempts of 800ms at up to twice 400/s: at most ~640 live attempts.
	assert.Less(t, a.PeakQueue, 900)

	o.Duration = 2 * time.Hour
	long := loop(t, threeNoBudget, o)
	assert.LessOrEqual(t, len(long.Series.Demand), 600)
	assert.Equal(t, 12*time.Second, long.Series.Step)
	assert.Less(t, long.PeakQueue, 900)
	assert.True(t, long.Recovered)
}

func TestParseTrigger(t *testing.T) {
	for _, c := range []struct {
		in   string
		want simulate.Trigger
		err  string
	}{
		{"slow:3x:60s", simulate.Trigger{Kind: "slow", Factor: 3, Duration: time.Minute}, ""},
		{"spike:1.5:30s", simulate.Trigger{Kind: "spike", Factor: 1.5, Duration: 30 * time.Second}, ""},
		{"outage:30s", simulate.Trigger{Kind: "outage", Duration: 30 * time.Second}, ""},
		{"slow:0.5x:60s", simulate.Trigger{}, "between 1x and 1000x"},
		{"slow:60s", simulate.Trigger{}, "a factor and a duration"},
		{"outage:3x:30s", simulate.Trigger{}, "a duration"},
		{"slow:3x:-1s", simulate.Trigger{}, "must be positive"},
		{"storm:1m", simulate.Trigger{}, "unknown kind"},
	} {
		got, err := simulate.ParseTrigger(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got)
		again, err := simulate.ParseTrigger(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, again, "String reads back")
	}
}

func TestLoopValidate(t *testing.T) {
	h, p := policy(t, threeNoBudget)
	_, err := simulate.RunLoop(context.Background(), h, p, simulate.LoopOptions{Workers: 15, Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Duration: 5 * time.Minute})
	assert.ErrorContains(t, err, "the duration 5m0s is too short")
	_, err = simulate.RunLoop(context.Background(), h, p, simulate.LoopOptions{Workers: 0, Rate: 400, Trigger: trigger(t, "slow:3x:60s")})
	assert.ErrorContains(t, err, "workers 0")
	_, err = simulate.RunLoop(context.Background(), h, p, simulate.LoopOptions{Workers: 15, Rate: 400, Trigger: trigger(t, "slow:3x:60s"), TriggerAt: 5 * time.Second})
	assert.ErrorContains(t, err, "two windows")
}

// BenchmarkLoop is the speed the issue asks for: attempts simulated per
// second of CPU (calls/s), a 10-minute run at 400 requests/s through 3
// attempts that keeps the dependency saturated after the trigger.
func BenchmarkLoop(b *testing.B) {
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, threeNoBudget)
	require.NoError(b, err)
	tr, _ := simulate.ParseTrigger("slow:3x:60s")
	o := simulate.LoopOptions{Workers: at90(), Rate: 400, Trigger: tr, DropExpired: true, Seed: 1}
	b.ReportAllocs()
	var calls int64
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		o.Seed = uint64(i)
		res, err := simulate.RunLoop(context.Background(), h, p, o)
		if err != nil {
			b.Fatal(err)
		}
		calls += res.Attempts
	}
	b.ReportMetric(float64(calls)/time.Since(start).Seconds(), "calls/s")
}

// TestSweepBoundary: the stability boundary of 3 attempts without a
// budget, for a 3x slowdown: a short one is recovered from, a long one
// is not; the boundary lies between, and a run on either side says so.
func TestSweepBoundary(t *testing.T) {
	h, p := policy(t, threeNoBudget)
	o := simulate.LoopOptions{Workers: at90(), Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Seed: 1}
	durations := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 60 * time.Second}
	cells, err := simulate.SweepTrigger(context.Background(), h, p, o, []float64{1.5, 3}, durations)
	require.NoError(t, err)
	require.Len(t, cells, 12)
	for _, c := range cells {
		t.Logf("%vx %v: recovered %v in %v", c.Factor, c.Duration, c.Recovered, c.Recovery)
	}
	b := simulate.Boundary(cells, 3)
	require.Positive(t, b, "a 3x slowdown of 1 s is survived")
	require.Less(t, b, time.Minute, "one of 60 s is not")
	// Either side of the boundary, on their own.
	below, above := o, o
	below.Trigger.Duration = b
	above.Trigger.Duration = durations[slices.Index(durations, b)+1]
	assert.True(t, loop(t, threeNoBudget, below).Recovered)
	assert.False(t, loop(t, threeNoBudget, above).Recovered)
}
