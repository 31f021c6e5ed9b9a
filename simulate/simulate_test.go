package simulate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

const ms = time.Millisecond

// domain is the worked example (docs/method.md#12-the-worked-example; p50 20ms, p99.9 792ms) and its
// recommendation (800ms), built once.
var domain = sync.OnceValues(func() (*histogram.Latency, recommend.Recommendation) {
	h := histogram.New()
	for _, d := range mixture.Default().Generate(1, 200_000) {
		h.Record(d)
	}
	rec, err := recommend.Recommend(h, recommend.DefaultOptions())
	if err != nil {
		panic(err)
	}
	return h, rec
})

func policy(t *testing.T, o recommend.PolicyOptions) (*histogram.Latency, recommend.Policy) {
	t.Helper()
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, o)
	require.NoError(t, err)
	return h, p
}

func find(t *testing.T, res simulate.Result, name string, budget bool) simulate.Scenario {
	t.Helper()
	for _, s := range res.Scenarios {
		if s.Name == name && s.WithBudget == budget {
			return s
		}
	}
	require.Failf(t, "no scenario", "%q (budget %v) not in %+v", name, budget, res.Scenarios)
	return simulate.Scenario{}
}

// TestDomainBudgetFigures reproduces docs/method.md#retry-budgets: during an
// outage 3 attempts per request cost 3 x the load, with the budget about
// 1.1 x; at 20 % fast failures the budget costs success (about 88 % against 99 %).
func TestDomainBudgetFigures(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{Attempts: 3, Idempotent: true, RetryBudget: 0.1})
	s := h.Sampler()
	o := simulate.Options{Seed: 1}
	outage := simulate.Condition{Name: "outage", FailRate: 1}
	twenty := simulate.Condition{Name: "fail 20%", FailRate: 0.2}

	without := simulate.Replay(s, p, outage, false, o)
	with := simulate.Replay(s, p, outage, true, o)
	assert.InDelta(t, 3.0, without.AttemptsPerRequest, 0.001, "an outage: every request makes all 3 attempts")
	assert.InDelta(t, 1.1, with.AttemptsPerRequest, 0.02, "the budget keeps retries near 10 %")
	assert.Zero(t, without.Succeeded)

	without = simulate.Replay(s, p, twenty, false, o)
	with = simulate.Replay(s, p, twenty, true, o)
	// 1 - 0.2^3 = 99.2 %, less the 0.07 % the 800ms timeout cuts off.
	assert.InDelta(t, 0.99, without.SuccessFraction, 0.01)
	// The budget pays for about 0.1 retry per request: 0.8 + 0.1 x 0.8.
	assert.InDelta(t, 0.88, with.SuccessFraction, 0.01)
	assert.InDelta(t, 1.1, with.AttemptsPerRequest, 0.02)
	assert.InDelta(t, 1.25, without.AttemptsPerRequest, 0.01, "1 + 0.2 + 0.04")

	// A hang costs the same as an outage when timeouts are retried.
	hang := simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, false, o)
	assert.InDelta(t, 3.0, hang.AttemptsPerRequest, 0.001)
	hang = simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, true, o)
	assert.InDelta(t, 1.1, hang.AttemptsPerRequest, 0.02)
}

func TestRunScenarios(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{Deadline: 3 * time.Second, Attempts: 3, Idempotent: true, RetryBudget: 0.1})
	start := time.Now()
	res, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1})
	require.NoError(t, err)
	t.Logf("6 scenarios of 100,000 requests in %v", time.Since(start))
	require.Len(t, res.Scenarios, 6)
	assert.Equal(t, 100_000, res.Requests)

	normal := find(t, res, "normal", false)
	// 0.0655 % of attempts time out at 800ms and are retried: nearly all succeed.
	assert.Greater(t, normal.SuccessFraction, 0.9999)
	assert.InDelta(t, 1.0, normal.AttemptsPerRequest, 0.002)
	h50, h99 := h.Quantile(0.5), h.Quantile(0.99)
	assert.InEpsilon(t, float64(h50), float64(normal.P50), 0.02, "end to end p50 %v vs measured %v", normal.P50, h50)
	// p99 lies in the thin pause tail (2 % of calls spread over 650ms):
	// from 100,000 draws its standard error is about 10ms.
	assert.InDelta(t, float64(h99), float64(normal.P99), float64(30*ms), "end to end p99 %v vs measured %v", normal.P99, h99)

	fail := find(t, res, "fail 20%", false)
	assert.InDelta(t, 0.2, fail.FailRate, 0)
	assert.InDelta(t, 0.99, fail.SuccessFraction, 0.01)
	// A successful retry pays for the fast failure and a backoff wait:
	// the median barely moves.
	assert.Greater(t, fail.P50, normal.P50)

	hang := find(t, res, "hang", false)
	assert.Zero(t, hang.SuccessFraction)
	assert.Zero(t, hang.P50, "no success, no latency")
	assert.InDelta(t, 3.0, hang.AttemptsPerRequest, 0.001, "3 x 800ms + 2 x 250ms = 2.9s fits the 3s deadline")
	assert.InDelta(t, 1.1, find(t, res, "hang", true).AttemptsPerRequest, 0.02)

	again, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, res, again, "deterministic for a seed")
	other, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 2})
	require.NoError(t, err)
	assert.NotEqual(t, res.Scenarios[2], other.Scenarios[2])
}

// TestDeadlineBoundsTheCall is the README's example: 3 attempts of 800ms
// in a deadline of 1s. In a hang the second attempt gets only what is left
// and the third is never sent, as the policy's hang step says; when 20 %
// of attempts fail fast every attempt is available, and the lesson's 99 %
// succeed; no request succeeds after the deadline.
func TestDeadlineBoundsTheCall(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{Deadline: time.Second, Attempts: 3, Idempotent: true})
	require.Equal(t, 3, p.Attempts, "precondition: the deadline allows all three")
	require.Equal(t, 2, p.HangAttempts)
	s := h.Sampler()
	o := simulate.Options{Seed: 1, Requests: 20_000}

	hang := simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, false, o)
	// After 800ms and a wait of up to 25ms less than 200ms is left: the
	// second attempt gets the rest (at least the 40ms minimum), never a third.
	assert.InDelta(t, float64(p.HangAttempts), hang.AttemptsPerRequest, 0.001)
	assert.Zero(t, hang.Succeeded)

	fail := simulate.Replay(s, p, simulate.Condition{Name: "fail", FailRate: 0.2}, false, o)
	assert.GreaterOrEqual(t, fail.SuccessFraction, 0.98, "fast failures leave time for every retry")
	assert.InDelta(t, 1.24, fail.AttemptsPerRequest, 0.02)
	assert.LessOrEqual(t, fail.P99, time.Second)

	// A minimum above what is left stops the retry after a timeout.
	p.MinUsefulTry = 300 * ms
	hang = simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, false, o)
	assert.InDelta(t, 1.0, hang.AttemptsPerRequest, 0.001)
}

// TestSimulatorFollowsTheHangStep: for random deadlines and attempts the
// replayed hang sends as many attempts as the policy's hang step says on
// average (its waits are drawn, the step's are their means), and never
// keeps a request past the deadline.
func TestSimulatorFollowsTheHangStep(t *testing.T) {
	h, rec := domain()
	s := h.Sampler()
	for _, dl := range []time.Duration{900 * ms, 1700 * ms, 2 * time.Second, 2500 * ms, 5 * time.Second} {
		for _, n := range []int{2, 3, 5} {
			p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: dl, Attempts: n, Idempotent: true, BackoffBase: 10 * ms, BackoffCap: 20 * ms})
			require.NoError(t, err)
			hang := simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, false, simulate.Options{Seed: 2, Requests: 5_000})
			assert.InDelta(t, float64(p.HangAttempts), hang.AttemptsPerRequest, 0.51, "deadline %v, %d attempts", dl, n)
		}
	}
}

func TestNotIdempotentDoesNotRetryTimeouts(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{Attempts: 3, RetryBudget: 0.1})
	require.Equal(t, recommend.NeverSent, p.RetryOn)
	res, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1, Requests: 20_000})
	require.NoError(t, err)
	assert.InDelta(t, 1.0, find(t, res, "hang", false).AttemptsPerRequest, 0, "a timed-out POST is not repeated")
	assert.InDelta(t, 1.25, find(t, res, "fail 20%", false).AttemptsPerRequest, 0.02, "refused connections are")
}

// TestFastFailureIsARefusedConnection: the failing scenario's failures are
// refused connections, so a policy that does not retry connect-failure
// does not retry them, whatever else it retries.
func TestFastFailureIsARefusedConnection(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{Attempts: 3, Idempotent: true, RetryOn: []string{"503", "timeout"}})
	res, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1, Requests: 20_000})
	require.NoError(t, err)
	assert.InDelta(t, 1.0, find(t, res, "fail 20%", false).AttemptsPerRequest, 0.002, "only the few timed-out calls are retried")
	assert.InDelta(t, 0.8, find(t, res, "fail 20%", false).SuccessFraction, 0.01)
}

func TestRunOneAttemptHasNoBudgetScenarios(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{Deadline: time.Second, Attempts: 1, Idempotent: true, RetryBudget: 0.1})
	require.Equal(t, 1, p.Attempts)
	res, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1, Requests: 10_000, FailRate: 0.5})
	require.NoError(t, err)
	require.Len(t, res.Scenarios, 3, "nothing for a budget to limit")
	assert.Equal(t, "fail 50%", res.Scenarios[1].Name)
	assert.InDelta(t, 0.5, res.Scenarios[1].SuccessFraction, 0.02)
}

func TestRunRejects(t *testing.T) {
	h, p := policy(t, recommend.PolicyOptions{})
	_, err := simulate.Run(context.Background(), h, p, simulate.Options{Requests: -1, FailRate: 2})
	require.Error(t, err)
	assert.ErrorContains(t, err, "requests -1")
	assert.ErrorContains(t, err, "fail rate 2")
	_, err = simulate.Run(context.Background(), histogram.New(), p, simulate.Options{})
	assert.ErrorIs(t, err, recommend.ErrNoSamples)
}

func BenchmarkRun(b *testing.B) {
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: 3 * time.Second, Attempts: 3, Idempotent: true, RetryBudget: 0.1})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1})
	}
}

// TestRunCancelled: a cancelled context ends the replay with its error.
func TestRunCancelled(t *testing.T) {
	h := histogram.New()
	for i := range 1000 {
		h.Record(time.Duration(1+i%100) * time.Millisecond)
	}
	p := recommend.Policy{Attempts: 3, PerTryTimeout: 50 * time.Millisecond, Deadline: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := simulate.Run(ctx, h, p, simulate.Options{Seed: 1, Requests: simulate.MaxRequests})
	require.ErrorIs(t, err, context.Canceled)
	res, err := simulate.Run(context.Background(), h, p, simulate.Options{Seed: 1, Requests: 4095})
	require.NoError(t, err)
	assert.Len(t, res.Scenarios, 3)
}
