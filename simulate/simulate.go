// Package simulate replays measured latency through a call policy: what
// share of requests succeeds within the deadline, how many attempts each
// costs the dependency (the load multiplier) and how long the successful
// ones take end to end, when the dependency is healthy, when a share of
// attempts fails fast, and when it hangs (docs/method.md#7-retries).
//
// Each request makes attempts in turn. An attempt's latency is drawn from
// the measured histogram (histogram.Sampler); it succeeds when that latency
// is within the per-try timeout, which is the policy's per-try timeout or
// the time left before the deadline, whichever is smaller. Between
// attempts the request waits a backoff drawn from the policy's jitter; an
// attempt with less than the policy's MinUsefulTry left before the
// deadline is not sent. With the retry budget on, each request earns
// RetryBudget tokens into a bucket that keeps at most MaxTokens, and each
// retry spends one: a retry without a whole token is not made.
//
// Requests are replayed one after another, so the bucket sees them in
// order; concurrency does not change the budget's steady state, which is
// what the figures show. Everything is drawn from one PCG generator seeded
// with Options.Seed: the same seed gives the same result.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

const (
	// DefaultRequests is how many requests each scenario replays: enough
	// for the success share to be known to about 0.1 % (one standard error
	// at 99 % is 0.03 %), and fast (well under a second for all scenarios).
	DefaultRequests = 100_000
	// DefaultFailRate is the share of attempts that fail fast in the
	// failing scenario: the 20 % failures of docs/method.md#retry-budgets.
	DefaultFailRate = 0.2
	// DefaultFailLatency is how long a fast failure takes: a refused
	// connection or a 503 from a load shedder returns in about a
	// millisecond.
	DefaultFailLatency = time.Millisecond
	// MaxTokens is the most tokens the retry budget's bucket keeps
	// (docs/method.md#retry-budgets: the bucket keeps at most 10). The bucket starts full.
	MaxTokens = 10
	// MaxRequests bounds Options.Requests.
	MaxRequests = 10_000_000
)

// Options are the simulation's knobs. Zero values take the defaults.
type Options struct {
	Seed        uint64        // seeds the PCG generator
	Requests    int           // requests per scenario; 0 = DefaultRequests
	FailRate    float64       // share of attempts failing fast in the failing scenario; 0 = DefaultFailRate
	FailLatency time.Duration // how long a fast failure takes; 0 = DefaultFailLatency
}

func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.Requests == 0 {
		o.Requests = DefaultRequests
	}
	if o.Requests < 1 || o.Requests > MaxRequests {
		errs = append(errs, fmt.Errorf("requests %d must lie between 1 and %d", o.Requests, MaxRequests))
	}
	if o.FailRate == 0 {
		o.FailRate = DefaultFailRate
	}
	if !(o.FailRate > 0 && o.FailRate <= 1) {
		errs = append(errs, fmt.Errorf("fail rate %v must lie between 0 (excluded) and 1", o.FailRate))
	}
	if o.FailLatency == 0 {
		o.FailLatency = DefaultFailLatency
	}
	if o.FailLatency < 0 {
		errs = append(errs, fmt.Errorf("fail latency %v must not be negative", o.FailLatency))
	}
	return o, errors.Join(errs...)
}

// Condition is a state of the dependency.
type Condition struct {
	Name     string
	FailRate float64 // share of attempts that fail fast with a refused connection
	Hang     bool    // no attempt is answered: each one runs into its timeout
}

// Scenario is one condition replayed with or without the retry budget.
type Scenario struct {
	Condition
	WithBudget         bool
	Requests           int
	Succeeded          int   // requests with a successful attempt within the deadline
	Attempts           int64 // attempts sent, over all requests
	SuccessFraction    float64
	AttemptsPerRequest float64       // the load multiplier
	P50, P99           time.Duration // end to end, successful requests only; 0 when none succeeded
}

// Result is the replay of every scenario.
type Result struct {
	Seed      uint64
	Requests  int
	Scenarios []Scenario
}

// Conditions returns the conditions Run replays: normal (the measured
// latency alone), failRate of attempts failing fast, and a hang.
func Conditions(failRate float64) []Condition {
	return []Condition{
		{Name: "normal"},
		{Name: "fail " + strconv.FormatFloat(100*failRate, 'g', 3, 64) + "%", FailRate: failRate},
		{Name: "hang", Hang: true},
	}
}

// Run replays the conditions of Conditions(o.FailRate) through p: each
// without the retry budget and, when p has one and retries, with it. It
// stops with ctx's error soon after ctx is cancelled (every 4,096 requests
// of a scenario).
func Run(ctx context.Context, h *histogram.Latency, p recommend.Policy, o Options) (Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Result{}, fmt.Errorf("invalid simulation: %w", err)
	}
	s := h.Sampler()
	if s == nil {
		return Result{}, recommend.ErrNoSamples
	}
	if p.Attempts < 1 || p.PerTryTimeout <= 0 {
		return Result{}, fmt.Errorf("invalid simulation: the policy makes %d attempts of %v", p.Attempts, p.PerTryTimeout)
	}
	res := Result{Seed: o.Seed, Requests: o.Requests}
	for _, c := range Conditions(o.FailRate) {
		for _, budget := range []bool{false, true} {
			if budget && !(p.RetryBudget > 0 && p.Attempts > 1) {
				continue
			}
			sc, err := replay(ctx, s, p, c, budget, o)
			if err != nil {
				return Result{}, err
			}
			res.Scenarios = append(res.Scenarios, sc)
		}
	}
	return res, nil
}

// Replay runs one scenario: o.Requests requests through p under condition
// c, with the retry budget when withBudget. o's zero fields take the
// defaults; Replay does not validate them (Run does).
func Replay(s *histogram.Sampler, p recommend.Policy, c Condition, withBudget bool, o Options) Scenario {
	sc, _ := replay(context.Background(), s, p, c, withBudget, o)
	return sc
}

// replay is Replay that ends with ctx's error once ctx is cancelled.
func replay(ctx context.Context, s *histogram.Sampler, p recommend.Policy, c Condition, withBudget bool, o Options) (Scenario, error) {
	if o.Requests == 0 {
		o.Requests = DefaultRequests
	}
	if o.FailLatency == 0 {
		o.FailLatency = DefaultFailLatency
	}
	r := rand.New(rand.NewPCG(o.Seed, o.Seed))
	sc := Scenario{Condition: c, WithBudget: withBudget, Requests: o.Requests}
	e2e := histogram.New()
	// A fast failure is a refused connection: the one failure every policy
	// may retry, idempotent or not (recommend.NeverSent).
	retryFast := p.RetriesOn(recommend.RetryConnectFailure)
	retryTimeout := p.RetriesOn(recommend.RetryTimeout)
	// A bucket that starts full and earns in float64 steps of the budget:
	// ten steps of 0.1 add up to 0.9999999999999999, hence the slack.
	const slack = 1e-9
	tokens := float64(MaxTokens)
	for i := range o.Requests {
		if i%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return Scenario{}, err
			}
		}
		if withBudget {
			tokens = min(MaxTokens, tokens+p.RetryBudget)
		}
		var elapsed, prevWait time.Duration
		for a := range p.Attempts {
			if a > 0 {
				wait := p.Backoff.Wait(r, a-1, prevWait)
				prevWait = wait
				if p.Deadline > 0 && p.Deadline-(elapsed+wait) < p.MinUsefulTry {
					break // too little time left: not sent
				}
				if withBudget {
					if tokens < 1-slack {
						break
					}
					tokens--
				}
				elapsed += wait
			}
			sc.Attempts++
			perTry := p.PerTryTimeout
			if p.Deadline > 0 {
				perTry = min(perTry, p.Deadline-elapsed)
			}
			var retry bool
			switch {
			case c.Hang:
				elapsed += perTry
				retry = retryTimeout
			case c.FailRate > 0 && r.Float64() < c.FailRate:
				elapsed += min(o.FailLatency, perTry)
				retry = retryFast
			default:
				if lat := s.Sample(r); lat <= perTry {
					elapsed += lat
					sc.Succeeded++
					e2e.Record(elapsed)
				} else {
					elapsed += perTry
					retry = retryTimeout
				}
			}
			if !retry {
				break
			}
		}
	}
	sc.SuccessFraction = float64(sc.Succeeded) / float64(sc.Requests)
	sc.AttemptsPerRequest = float64(sc.Attempts) / float64(sc.Requests)
	if sc.Succeeded > 0 {
		sc.P50, sc.P99 = e2e.Quantile(0.5), e2e.Quantile(0.99)
	}
	return sc, nil
}
