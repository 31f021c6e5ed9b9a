package advice

import (
	"context"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// Options are what the advice of a group takes from the command line.
type Options struct {
	Recommend recommend.Options
	// Rate is calls per second from the user, shared among the groups by
	// their share of the calls; 0 = measured from timestamps.
	Rate float64
	Pool int // 0 = unknown
	// Candidates are the timeouts weighed; nil = the default ladder
	// around the recommendation. MoreCandidates join them, whichever
	// they are.
	Candidates, MoreCandidates []time.Duration
	// Policy is the call policy fitted to the caller's deadline, its
	// Method the group's (the caller reads it from the group's name).
	Policy recommend.PolicyOptions
	// Simulate configures the policy's replay, which runs when a deadline
	// or retries are asked for, or always with AlwaysSimulate.
	Simulate       simulate.Options
	AlwaysSimulate bool
	// Loop asks for the closed loop under a trigger; zero: none.
	Loop LoopOptions
}

// Analyse recommends a timeout for one group, fits its call policy, and
// applies Little's law, with the closed loop and the replay when asked.
// share is the group's share of all calls, used to split o.Rate.
// quantile, when not nil, answers the quantiles in place of g.Latency's
// (bucketed data: recommend.Measured.Quantile).
func Analyse(ctx context.Context, g *histogram.Group, o Options, share float64, quantile func(float64) time.Duration) (Result, error) {
	h := g.Latency
	rec, err := recommend.RecommendMeasured(h, recommend.Measured{ConnectTimes: g.Connect, ReusedConnects: g.ReusedConnects, Quantile: quantile}, o.Recommend)
	if err != nil {
		return Result{}, err
	}
	res := Result{Group: g, Recommendation: rec, RateSource: "unknown"}
	if quantile == nil {
		quantile = h.Quantile
	}
	in := littleslaw.Input{
		Pool:        o.Pool,
		MeanLatency: h.Mean(),
		P99:         quantile(0.99),
		Timeout:     rec.Timeout,
	}
	if m := g.Measured; m != nil && m.Mean > 0 {
		in.MeanLatency = m.Mean // exact, where bucketed data is not
	}
	switch {
	case o.Rate > 0:
		in.Rate = o.Rate * share
		res.RateSource = "flag"
	case g.Measured != nil && g.Measured.Rate > 0:
		// Rates a source measured as a whole (Prometheus's _count).
		in.Rate, in.PeakRate = g.Measured.Rate, g.Measured.PeakRate
		res.RateSource = g.Measured.Source
	case MeasuredRates(g.Arrivals):
		in.Rate, in.PeakRate = g.Arrivals.MeanRate(), BusiestMinuteRate(g.Arrivals)
		res.BusiestSecond, _ = g.Arrivals.Busiest(time.Second)
		res.RateSource = "measured"
	}
	po := o.Policy
	po.Methods = g.Methods
	pol, err := recommend.NewPolicy(h, rec, po)
	if err != nil {
		return Result{}, err
	}
	if o.Loop.Trigger != nil {
		// The closed loop runs the policy as asked; when its cure is a
		// retry budget, the policy is built again with it, so that its
		// findings, its simulation and its snippets (Envoy retry_budget,
		// Istio retryBudget, Linkerd's retryBudget) carry it. Other cures
		// are the metastable step's advice.
		if res.Metastability, err = RunLoop(ctx, h, pol, o.Loop, o.Simulate.Seed, in.Rate, in.PeakRate, res.RateSource); err != nil {
			return Result{}, err
		}
		if c := res.Metastability.Cure; c != nil && c.RetryBudget != nil {
			po.RetryBudget = *c.RetryBudget
			if pol, err = recommend.NewPolicy(h, rec, po); err != nil {
				return Result{}, err
			}
		}
		pol.Steps = append(pol.Steps, MetastableStep(res.Metastability))
	}
	res.Policy = pol
	// A hang runs into the per-try timeout, once per attempt when timeouts
	// are retried, and never for longer than the deadline.
	in.Timeout = pol.PerTryTimeout
	in.Attempts, in.Backoff = pol.Hang()
	in.Deadline = pol.Deadline
	res.LittlesLaw = littleslaw.Analyze(in)
	if o.AlwaysSimulate || pol.Deadline > 0 || pol.RequestedAttempts > 1 {
		sim, err := simulate.Run(ctx, h, pol, o.Simulate)
		if err != nil {
			return Result{}, err
		}
		res.Simulation = &sim
	}
	res.Candidates = o.Candidates
	if res.Candidates == nil {
		res.Candidates = recommend.Candidates(h, rec)
	}
	if len(o.MoreCandidates) > 0 {
		res.Candidates = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(res.Candidates), o.MoreCandidates...))))
	}
	return res, nil
}
