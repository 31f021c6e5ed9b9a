package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tunetimeout/tunetimeout/recommend"
)

// The plan fits the edges into a service before those out of it, so that
// their waits bound it; names not planned and edges on a cycle keep their
// order after the others.
func TestChainPlanOrder(t *testing.T) {
	o := Options{Plan: PlanOutermost}
	o.Policy.Deadline, o.Policy.Attempts = time.Second, 3
	names := []string{"c d", "other", "b c", "a b", "x y", "y x"}
	p := newChainPlan(names, nil, o)
	got := p.order(names)
	var order []string
	for _, i := range got {
		order = append(order, names[i])
	}
	assert.Equal(t, []string{"other", "a b", "b c", "c d", "x y", "y x"}, order)

	// Without budgets no edge is bounded by its caller's: nothing is known
	// of the time spent above it.
	p.fitted("a b", recommend.Policy{Attempts: 3, Deadline: time.Second, PerTryTimeout: 300 * time.Millisecond})
	assert.Equal(t, time.Second, p.edges["a b"].wait, "a retrying caller waits its deadline")
	p.fitted("b c", recommend.Policy{Attempts: 1, Deadline: time.Second, PerTryTimeout: 300 * time.Millisecond})
	assert.Equal(t, 300*time.Millisecond, p.edges["b c"].wait, "one attempt: its timeout")
	assert.Equal(t, time.Second, p.capped("c d").deadline)

	// With budgets: c's calls to d have 810ms left, b's to c 970ms, so c
	// spends 160ms before calling d; b waits 300ms for c: d gets 140ms.
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	bc, cd := p.edges["b c"], p.edges["c d"]
	bc.known, bc.left = true, ms(970)
	cd.known, cd.left, cd.deadline = true, ms(810), ms(810)
	p.edges["b c"], p.edges["c d"] = bc, cd
	e := p.capped("c d")
	assert.Equal(t, ms(140), e.deadline)
	assert.Equal(t, "b c", e.cappedBy)
	assert.Equal(t, ms(160), e.own)
	_, why := p.apply("c d", o)
	assert.Equal(t, "the chain's plan: this hop gets 140ms, what b's own call leaves it: b waits 300ms for c, less the 160ms c spends before this call at p99.9 of the time spent above it (the 1s deadline leaves 810ms), and makes one attempt: retries stay at the outermost layer", why)
}
