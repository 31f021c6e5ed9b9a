package targets

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
	"github.com/tunetimeout/tunetimeout/target"
)

// targetPolicy is the call policy a target's config makes, by the target's
// documented semantics (behaviour, read back from the snippet): what bounds
// the whole call, what one attempt may take, which failures are retried,
// and how little time left still gets an attempt.
func targetPolicy(b behaviour) recommend.Policy {
	p := recommend.Policy{
		Deadline:      b.bound,
		Attempts:      b.attempts,
		PerTryTimeout: b.perTry,
		Backoff:       recommend.Backoff{Jitter: recommend.JitterFull, Base: b.base, Cap: max(b.cap, b.base)},
		MinUsefulTry:  max(b.minUseful, time.Nanosecond),
	}
	if p.PerTryTimeout == 0 { // gRPC: no per-try timeout, the call's deadline ends the attempt
		p.PerTryTimeout = b.bound
	}
	if b.retryNeverSent {
		p.RetryOn = append(p.RetryOn, recommend.RetryConnectFailure)
	}
	if b.timeouts {
		p.RetryOn = append(p.RetryOn, recommend.RetryTimeout)
	}
	return p
}

// TestSimulatorFollowsTargets replays the README's example (3 idempotent
// attempts of 800ms in a 1s deadline, a 2ms RTT) through each target's
// config as the target runs it: what counts as an attempt and what bounds
// the call differ, and so do a hang and fast failures.
func TestSimulatorFollowsTargets(t *testing.T) {
	h := histogram.New()
	for _, d := range mixture.Default().Generate(1, 200_000) {
		h.Record(d)
	}
	ro := recommend.DefaultOptions()
	ro.RTT = 2 * time.Millisecond
	rec, err := recommend.Recommend(h, ro)
	require.NoError(t, err)
	pol, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: time.Second, Attempts: 3, Idempotent: true})
	require.NoError(t, err)
	ll := littleslaw.Analyze(littleslaw.Input{Rate: 400, Pool: 200, MeanLatency: h.Mean(), P99: h.Quantile(0.99),
		Timeout: pol.PerTryTimeout, Attempts: pol.HangAttempts, Backoff: pol.HangBackoff, Deadline: pol.Deadline})
	rep := &report.Report{Groups: []report.Group{advice.NewGroup(advice.Result{
		Group: &histogram.Group{Name: "all", Latency: h, Excluded: map[string]int64{}}, Recommendation: rec, Policy: pol, LittlesLaw: ll})}}
	opts := simulate.Options{Seed: 1, Requests: 20_000}
	s := h.Sampler()

	for _, tc := range []struct {
		target string
		opts   target.Options
		// What a hang does: attempts per request and at most how long a
		// caller waits; what 20 % of refused connections leave.
		hangAttempts float64
		hangWait     time.Duration
		failSuccess  float64
		why          string
	}{
		{"envoy", target.Options{}, 2, time.Second, 0.99, "the route timeout cuts the second attempt at 1s; Envoy sends it however little time is left"},
		{"istio", target.Options{}, 2, time.Second, 0.99, "Istio's VirtualService is Envoy's route"},
		{"gateway-api", target.Options{GatewayAPIChannel: target.GatewayExperimental}, 2, time.Second, 0.8, "an attempt that reaches backendRequest is retried within request (GEP-1731); retry codes are the backend's answers, so a refused connection is not retried"},
		{"linkerd", target.Options{}, 2, time.Second, 0.8, "retry.linkerd.io/timeout ends and retries an attempt, timeout.linkerd.io/request the call; Linkerd retries answers' status codes, not refused connections"},
		{"grpc", target.Options{}, 1, time.Second, 0.99, "no per-try timeout: the first attempt runs into the call's deadline; fast failures answer and are retried"},
		{"go", target.Options{}, 2, time.Second, 0.99, "Do gives each attempt the smaller of PerTry and the time left"},
		{"httpx", target.Options{}, 1, time.Second, 0.99, "send() starts an attempt only while a whole one fits: after a timeout none does"},
		{"nginx", target.Options{}, 1, time.Second, 0.99, "no try begins after proxy_next_upstream_timeout, the deadline less one try"},
		{"haproxy", target.Options{}, 1, time.Second, 0.99, "only connection failures fit as retries: timed-out attempts are not retried"},
		{"resilience4j", target.Options{}, 1, time.Second, 0.8, "nothing bounds the call: only one attempt that may time out in full fits, so nothing is retried"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			body, err := Render(tc.target, rep, tc.opts)
			require.NoError(t, err)
			bs, err := readers[tc.target](body)
			require.NoError(t, err)
			b := bs[0]
			p := targetPolicy(b)
			hang := simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, false, opts)
			fail := simulate.Replay(s, p, simulate.Condition{Name: "fail 20%", FailRate: 0.2}, false, opts)
			assert.InDelta(t, tc.hangAttempts, hang.AttemptsPerRequest, 0.01, "%s: %+v", tc.why, b)
			assert.LessOrEqual(t, b.worst, tc.hangWait, tc.why)
			assert.InDelta(t, tc.failSuccess, fail.SuccessFraction, 0.01, "%s: %+v", tc.why, b)
		})
	}
}
