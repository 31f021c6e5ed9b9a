package advice

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// TestMetastableCureSummary: each kind of cure says its change with the
// flag that makes it and its numbers.
func TestMetastableCureSummary(t *testing.T) {
	res := simulate.LoopResult{Recovered: true, Recovery: 5 * time.Second, PeakLoadRatio: 0.925, FinalGoodputRatio: 1}
	for _, c := range []struct {
		cure simulate.Cure
		want string
	}{
		{simulate.Cure{Kind: simulate.CureRetryBudget, RetryBudget: 0.02}, "a retry budget of 2 % of requests (--retry-budget 2%, the largest tried that recovers) recovers 5s after the trigger ends, at a peak load of 92.5 %"},
		{simulate.Cure{Kind: simulate.CureAttempts, Attempts: 2}, "2 attempts (--attempts 2, the most that recover)"},
		{simulate.Cure{Kind: simulate.CureBackoff, Factor: 4, Backoff: recommend.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}}, "a backoff 4x as long (--backoff-base 100ms --backoff-cap 1s)"},
		{simulate.Cure{Kind: simulate.CureDropExpired, Tried: 1}, "a server that drops the calls whose caller gave up (--drop-expired) recovers"},
		{simulate.Cure{Kind: simulate.CureDropExpired, Tried: 13}, "(--drop-expired; no change of the call policy tried does: budgets down to 1 %"},
		{simulate.Cure{Kind: simulate.CureRate, Factor: 0.9, Rate: 360}, "a rate of 360 requests/s (10 % of it shed or sent elsewhere"},
	} {
		c.cure.Result = res
		got := NewMetastableCure(c.cure)
		assert.Equal(t, c.cure.Kind, got.Change)
		assert.Contains(t, got.Summary, c.want)
		assert.Equal(t, 5.0, got.RecoverySeconds)
	}
}

// TestAddBoundary: a group that ran slow:3x:10s and its sweep (1.5x
// recovered from 1 s and 2 s, back 5 s and 12 s after, not 5 s, and again
// from 10 s; 3x only from 1 s) keeps every cell's outcome beside the
// boundary, which counts only the recovered ones from the shortest; the
// trigger is read apart for the HTML's plot.
func TestAddBoundary(t *testing.T) {
	m := NewMetastability(simulate.LoopResult{Options: simulate.LoopOptions{Trigger: simulate.Trigger{Kind: simulate.TriggerSlow, Factor: 3, Duration: 10 * time.Second},
		RecoverWithin: 5 * time.Minute}, Recovery: -1}, "--workers", "--rate")
	assert.Equal(t, "slow:3x:10s", m.Trigger)
	assert.Equal(t, "slow", m.TriggerKind)
	assert.Equal(t, 3.0, m.TriggerFactor)
	assert.Equal(t, 10.0, m.TriggerSeconds)
	assert.Nil(t, m.RecoverySeconds)
	durations := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second}
	var cells []simulate.SweepCell
	for _, c := range []struct {
		f         float64
		recovered []int // seconds back, -1 not recovered
	}{{1.5, []int{5, 12, -1, 40}}, {3, []int{30, -1, -1, -1}}} {
		for i, back := range c.recovered {
			cells = append(cells, simulate.SweepCell{Factor: c.f, Duration: durations[i], Recovered: back >= 0, Recovery: time.Duration(back) * time.Second})
		}
	}
	AddBoundary(m, cells, []float64{1.5, 3}, durations)
	require.Len(t, m.Boundary, 2)
	b := m.Boundary[0]
	assert.Equal(t, []float64{1, 2, 5, 10}, b.SweptSeconds)
	assert.Equal(t, 2.0, b.LongestRecoveredSeconds)
	assert.Equal(t, []bool{true, true, false, true}, b.Recovered)
	require.Len(t, b.RecoverySeconds, 4)
	assert.Equal(t, 5.0, *b.RecoverySeconds[0])
	assert.Equal(t, 12.0, *b.RecoverySeconds[1])
	assert.Nil(t, b.RecoverySeconds[2])
	assert.Equal(t, 40.0, *b.RecoverySeconds[3])
	assert.Equal(t, 1.0, m.Boundary[1].LongestRecoveredSeconds)
	assert.Equal(t, []bool{true, false, false, false}, m.Boundary[1].Recovered)
	assert.Equal(t, 30.0, *m.Boundary[1].RecoverySeconds[0])
}
