package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// lesson is docs/method.md's herd experiment: 1,000 clients fail at once
// against 5 calls a millisecond, a rejection costing a twentieth of one.
func lesson(base, cap time.Duration) HerdOptions {
	return HerdOptions{Clients: 1000, CapacityPerSecond: 5000, RejectCost: 0.05, Attempts: 8, Seed: 1,
		Backoff: recommend.Backoff{Jitter: recommend.JitterFull, Base: base, Cap: cap}}
}

// The lesson's shape (not its exact counts: the generator differs): no
// strategy without randomness serves anyone, and all 1,000 come back in
// one millisecond; every jitter serves at least 990, with the busiest
// retry millisecond under 300.
func TestHerdReproducesTheLesson(t *testing.T) {
	res, err := RunHerd(context.Background(), lesson(10*time.Millisecond, 2*time.Second))
	require.NoError(t, err)
	runs := map[string]HerdRun{}
	for _, r := range res.Runs {
		runs[r.Strategy] = r
		assert.Equal(t, 1000, r.Served+r.GaveUp, r.Strategy)
		var sum int64
		for _, v := range r.Series {
			sum += v
		}
		assert.Equal(t, r.Calls, sum, "%s: the series holds every call", r.Strategy)
		assert.LessOrEqual(t, r.Calls, int64(8000), r.Strategy)
	}
	require.Len(t, runs, 7)
	for _, s := range []string{HerdNone, HerdFixed, HerdExponential} {
		assert.Equal(t, 0, runs[s].Served, s)
		assert.Equal(t, int64(8000), runs[s].Calls, s)
		assert.Equal(t, 1000, runs[s].BusiestRetryCalls, s)
		assert.EqualValues(t, -1, runs[s].LastServedMs, s)
	}
	assert.EqualValues(t, 1, runs[HerdNone].BusiestRetryMs, "no wait: the next millisecond")
	assert.EqualValues(t, 10, runs[HerdFixed].BusiestRetryMs, "the base")
	for _, s := range []string{HerdEqual, HerdFull, HerdDecorrelated, HerdPolicy} {
		assert.GreaterOrEqual(t, runs[s].Served, 990, s)
		assert.Less(t, runs[s].BusiestRetryCalls, 300, s)
		assert.Positive(t, runs[s].LastServedMs, s)
		assert.Less(t, runs[s].LastServedMs, int64(2000), "%s: all within about a second", s)
	}
	assert.Equal(t, runs[HerdFull].Served, runs[HerdPolicy].Served, "the policy is full jitter with the same seed")

	// The window the crowd needs: 1,000 / 5,000 per second.
	assert.Equal(t, 200*time.Millisecond, res.Window)
	assert.Equal(t, 200*time.Millisecond, res.Advice.Base)
	assert.Equal(t, 2*time.Second, res.Advice.Cap)
	require.Len(t, res.Advice.Findings, 1, "the cap is wide enough; the base is not")
	assert.Equal(t, finding.HerdBackoffBaseNarrow, res.Advice.Findings[0].Code)
	assert.Contains(t, res.Advice.Findings[0].Message, "the backoff base 10ms is narrower than the 200ms")
	assert.Equal(t, 0.01, res.Advice.Findings[0].Fields["base_seconds"])
	assert.Equal(t, 0.2, res.Advice.Findings[0].Fields["needed_base_seconds"])

	narrow := AdviseBackoff(recommend.Backoff{Jitter: recommend.JitterFull, Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}, 1000, 5000)
	require.Len(t, narrow.Findings, 2)
	assert.Equal(t, []finding.Code{finding.HerdBackoffCapNarrow, finding.HerdBackoffBaseNarrow}, []finding.Code{narrow.Findings[0].Code, narrow.Findings[1].Code})
	assert.Contains(t, narrow.Findings[0].Message, "the backoff cap 50ms is narrower than the 200ms the crowd of 1,000 needs at 5,000 calls/s")
	assert.Equal(t, 0.05, narrow.Findings[0].Fields["cap_seconds"])
	assert.Equal(t, 2.0, narrow.Findings[0].Fields["recommended_cap_seconds"])
	for j, base := range map[recommend.Jitter]time.Duration{recommend.JitterEqual: 400 * time.Millisecond, recommend.JitterDecorrelated: 100 * time.Millisecond} {
		a := AdviseBackoff(recommend.Backoff{Jitter: j, Base: time.Second, Cap: 10 * time.Second}, 1000, 5000)
		assert.Equal(t, base, a.Base, "%s jitter: twice the window, or half of it", j)
		assert.Empty(t, a.Findings, j)
	}
}

// The slot rule, exactly: served s with s + cost x (A - s) <= slots.
func TestHerdSlots(t *testing.T) {
	run := func(clients int, capacity, cost float64, attempts int) HerdRun {
		o := HerdOptions{Clients: clients, CapacityPerSecond: capacity, RejectCost: cost, Attempts: attempts, Seed: 3,
			Backoff: recommend.Backoff{Base: time.Millisecond, Cap: time.Millisecond}}
		r, err := replayHerd(context.Background(), o, HerdNone)
		require.NoError(t, err)
		return r
	}
	// One slot a millisecond, rejections free: one served a millisecond.
	r := run(10, 1000, 0, 3)
	assert.Equal(t, []int{3, 7}, []int{r.Served, r.GaveUp})
	assert.Equal(t, int64(10+9+8), r.Calls)
	assert.Equal(t, []int64{10, 9, 8}, r.Series)
	assert.EqualValues(t, 2, r.LastServedMs)
	// 25 arrivals at a twentieth of a slot each cost 1.25 slots: nobody.
	r = run(25, 1000, 0.05, 5)
	assert.Equal(t, 0, r.Served)
	// 10 of them cost half a slot, leaving none whole: (1 - 0.5) / 0.95.
	r = run(10, 1000, 0.05, 1)
	assert.Equal(t, 0, r.Served)
	// 2.5 slots a millisecond: 2, then 3 (the half carried), then 2...
	r = run(100, 2500, 0, 100)
	assert.Equal(t, 100, r.Served)
	assert.EqualValues(t, 39, r.LastServedMs, "2.5 a millisecond: 100 in 40 milliseconds")
}

func TestHerdSeeded(t *testing.T) {
	o := lesson(10*time.Millisecond, 2*time.Second)
	a, err := RunHerd(context.Background(), o)
	require.NoError(t, err)
	b, err := RunHerd(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	o.Seed = 2
	c, err := RunHerd(context.Background(), o)
	require.NoError(t, err)
	assert.NotEqual(t, a.Runs[4].Calls, c.Runs[4].Calls, "another seed, other draws")

	_, err = RunHerd(context.Background(), HerdOptions{Clients: 0, CapacityPerSecond: -1, RejectCost: 1, Attempts: 0})
	for _, want := range []string{"herd of 0 clients", "capacity -1", "reject cost 1", "attempts 0", "backoff base"} {
		assert.ErrorContains(t, err, want)
	}
}

// A long run keeps its series bounded: points are added up two by two.
func TestHerdSeriesBounded(t *testing.T) {
	o := lesson(time.Second, 60*time.Second)
	o.Attempts = 6
	res, err := RunHerd(context.Background(), o)
	require.NoError(t, err)
	for _, r := range res.Runs {
		assert.LessOrEqual(t, len(r.Series), herdSeriesPoints, r.Strategy)
		assert.Positive(t, r.SeriesStep, r.Strategy)
	}
	assert.Greater(t, res.Runs[2].SeriesStep, int64(1), "exponential: 1+2+4+8+16 s of waits")
}

// go test ./simulate -run '^$' -bench Herd: 100,000 clients, every
// strategy (the bound: under 5 s on 2 cores).
func BenchmarkHerd100k(b *testing.B) {
	o := lesson(10*time.Millisecond, 2*time.Second)
	o.Clients, o.CapacityPerSecond = 100_000, 500_000
	for b.Loop() {
		if _, err := RunHerd(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}
