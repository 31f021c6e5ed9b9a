package simulate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/simulate"
)

// TestFindCure is issue 34's done-when for the cure: the worked example at
// 90 % of its capacity, 3 attempts without a budget, a 3x slowdown of
// 60 s, does not recover; the change FindCure returns does, run again on
// its own with the change applied. With the default rule's 15 workers
// (85.5 % busy) a retry budget of 2 % is enough (and 5 % is not: the
// largest that recovers); with 14 (91.6 %) no change of the policy is,
// and the cure is the server's: --drop-expired, found after the 12
// changes of the policy (6 budgets, 2 and 1 attempts, 4 backoffs) fail.
func TestFindCure(t *testing.T) {
	h, p := policy(t, threeNoBudget)
	for _, c := range []struct {
		workers int
		kind    string
		budget  float64
		tried   int
	}{
		{at90(), simulate.CureRetryBudget, 0.02, 5},
		{at90() - 1, simulate.CureDropExpired, 0, 13},
	} {
		o := simulate.LoopOptions{Workers: c.workers, Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Seed: 1}
		require.False(t, loop(t, threeNoBudget, o).Recovered)
		cure, err := simulate.FindCure(context.Background(), h, p, o)
		require.NoError(t, err)
		require.NotNil(t, cure, "%d workers", c.workers)
		assert.Equal(t, c.kind, cure.Kind, "%d workers", c.workers)
		assert.Equal(t, c.budget, cure.RetryBudget)
		assert.Equal(t, c.budget, cure.Policy.RetryBudget)
		assert.Equal(t, c.tried, cure.Tried)
		assert.True(t, cure.Result.Recovered)
		assert.LessOrEqual(t, cure.Result.Recovery, 5*time.Minute)
		again, err := simulate.RunLoop(context.Background(), h, cure.Policy, cure.Options)
		require.NoError(t, err)
		assert.True(t, again.Recovered, again.Reason)
		assert.Equal(t, cure.Result.Recovery, again.Recovery, "the same seed, the same run")
		if c.kind == simulate.CureRetryBudget {
			// The largest: the budget tried before it does not recover.
			more := cure.Policy
			more.RetryBudget = 0.05
			res, err := simulate.RunLoop(context.Background(), h, more, o)
			require.NoError(t, err)
			assert.False(t, res.Recovered)
		}
	}
}

// TestFindCureRecoveredOrHopeless: a policy that makes one attempt has no
// retries to cut, so the first change tried is the server's; a rate far
// above the capacity that nothing tried brings back gives no cure.
func TestFindCureRecoveredOrHopeless(t *testing.T) {
	h, p := policy(t, oneAttempt)
	o := simulate.LoopOptions{Workers: at90() - 1, Rate: 400, Trigger: trigger(t, "slow:3x:60s"), Seed: 1}
	cure, err := simulate.FindCure(context.Background(), h, p, o)
	require.NoError(t, err)
	require.NotNil(t, cure)
	assert.Equal(t, simulate.CureDropExpired, cure.Kind)
	assert.Equal(t, 1, cure.Tried)

	o.Workers = 5 // 400/s against ~156/s
	o.DropExpired = true
	o.Trigger = trigger(t, "slow:1x:10s")
	cure, err = simulate.FindCure(context.Background(), h, p, o)
	require.NoError(t, err)
	assert.Nil(t, cure)
}
