package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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

// TestMetastabilitySectionCure: the text names the cure, or says that
// nothing tried recovers.
func TestMetastabilitySectionCure(t *testing.T) {
	m := &Metastability{Trigger: "slow:3x:1m", RecoverWithinSeconds: 300, Reason: "stuck", CapacityPerSecond: 444,
		Cure: &MetastableCure{Change: "drop-expired", Summary: "a server that drops the calls", Runs: 13}}
	text := sectionText(t, metastabilitySection(Group{Policy: &Policy{Metastability: m}}))
	assert.Contains(t, text, "The cheapest cure: a server that drops the calls (13 closed loops run")
	m.Cure, m.CureReason = nil, "no change tried recovers"
	assert.Contains(t, sectionText(t, metastabilitySection(Group{Policy: &Policy{Metastability: m}})), "No cure found: no change tried recovers.")
}
