package report

import (
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// StandardQuantiles are the percentiles every report shows; 1 is the maximum.
var StandardQuantiles = []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1}

// Result is everything the analysis of one group produced.
type Result struct {
	Group          *histogram.Group
	Recommendation recommend.Recommendation
	Candidates     []time.Duration
	LittlesLaw     littleslaw.Result
	// RateSource says where the rate came from: "measured", "flag" or "unknown".
	RateSource string
	// BusiestSecond is the number of calls in the busiest second; 0 when unknown.
	BusiestSecond int64
	// Policy is the call policy (recommend.NewPolicy); the zero value (no
	// attempts) when none was computed, and then the report has none.
	Policy recommend.Policy
	// Simulation is the policy's replay; nil when not simulated.
	Simulation *simulate.Result
}

// NewGroup turns one group's results into its report section.
func NewGroup(r Result) Group {
	h := r.Group.Latency
	rec := r.Recommendation
	g := Group{
		Name:        r.Group.Name,
		Samples:     h.Count(),
		Censored:    h.Censored(),
		Excluded:    map[string]int64{},
		MeanSeconds: h.Mean().Seconds(),
	}
	for k, v := range r.Group.Excluded {
		g.Excluded[k] = v
	}
	if below, above := h.OutOfRange(); below+above > 0 {
		if below > 0 {
			g.Excluded["below range"] = below
		}
		if above > 0 {
			g.Excluded["above range"] = above
		}
	}

	qs := slices.Clone(StandardQuantiles)
	if !slices.Contains(qs, rec.Quantile) {
		qs = append(qs, rec.Quantile)
		slices.Sort(qs)
	}
	for _, q := range qs {
		g.Percentiles = append(g.Percentiles, Percentile{
			Quantile:   q,
			Seconds:    h.Quantile(q).Seconds(),
			LowerBound: h.QuantileIsLowerBound(q),
		})
	}

	g.Recommendation = Recommendation{
		Quantile:       rec.Quantile,
		BaseSeconds:    rec.Base.Seconds(),
		LowerBound:     rec.LowerBound,
		TimeoutSeconds: rec.Timeout.Seconds(),
		CutOffFraction: h.FractionAbove(rec.Timeout),
		Interval: Interval{
			Confidence: rec.Interval.Confidence,
			LowSeconds: rec.Interval.Lo.Seconds(),
			Above:      rec.Interval.Above,
		},
		Steps:    []Step{},
		Warnings: append([]string{}, rec.Warnings...),
	}
	if rec.Interval.HiKnown {
		g.Recommendation.Interval.HighSeconds = ptr(rec.Interval.Hi.Seconds())
	}
	if rec.ConnectTimeout > 0 {
		g.Recommendation.ConnectTimeoutSeconds = ptr(rec.ConnectTimeout.Seconds())
	}
	for _, s := range rec.Steps {
		g.Recommendation.Steps = append(g.Recommendation.Steps, Step{Rule: s.Rule, Seconds: s.Value.Seconds(), Reason: s.Reason})
	}

	ll := r.LittlesLaw
	for _, c := range r.Candidates {
		cand := Candidate{TimeoutSeconds: c.Seconds(), CutOffFraction: h.FractionAbove(c)}
		if ll.RateKnown {
			inFlight, multiple := ll.HangAt(c)
			cand.InFlightDuringHang = ptr(inFlight)
			if ll.PoolKnown {
				cand.PoolMultiple = ptr(multiple)
			}
		}
		g.Candidates = append(g.Candidates, cand)
	}

	g.LittlesLaw = LittlesLaw{RateSource: r.RateSource, Verdict: ll.Verdict()}
	if ll.RateKnown {
		g.LittlesLaw.RatePerSecond = ptr(ll.Rate)
		if ll.PeakRate > 0 {
			g.LittlesLaw.PeakRatePerSecond = ptr(ll.PeakRate)
		}
		g.LittlesLaw.InFlightNormal = ptr(ll.InFlightNormal)
		g.LittlesLaw.InFlightPeak = ptr(ll.InFlightPeak)
		g.LittlesLaw.InFlightDuringHang = ptr(ll.InFlightDuringHang)
		g.LittlesLaw.Bulkhead = ptr(ll.Bulkhead)
		if ll.Hystrix > 0 {
			g.LittlesLaw.HystrixBulkhead = ptr(ll.Hystrix)
		}
	}
	if r.BusiestSecond > 0 {
		g.LittlesLaw.BusiestSecond = ptr(float64(r.BusiestSecond))
	}
	if ll.PoolKnown {
		g.LittlesLaw.Pool = ptr(ll.Pool)
		if ll.RateKnown {
			g.LittlesLaw.PoolExhausted = ptr(ll.PoolExhausted)
			if ll.PoolExhausted {
				g.LittlesLaw.SecondsToExhaustion = ptr(ll.SecondsToExhaustion)
			}
		}
	}
	if r.Policy.Attempts > 0 {
		g.Policy = newPolicy(r)
	}
	return g
}

// newPolicy turns the call policy and its simulation into their report
// section. In flight during a hang is Little's law with the retries, as
// littleslaw.Analyze computed it for the policy's attempts and backoff.
func newPolicy(r Result) *Policy {
	p := r.Policy
	out := &Policy{
		RequestedAttempts:      p.RequestedAttempts,
		Attempts:               p.Attempts,
		PerTryTimeoutSeconds:   p.PerTryTimeout.Seconds(),
		CutOffFraction:         p.CutOff,
		BackoffBaseSeconds:     p.Backoff.Base.Seconds(),
		BackoffCapSeconds:      p.Backoff.Cap.Seconds(),
		Jitter:                 string(p.Backoff.Jitter),
		ExpectedBackoffSeconds: p.ExpectedBackoff.Seconds(),
		LargestBackoffSeconds:  p.LargestBackoff.Seconds(),
		WorstCaseSeconds:       p.WorstCase.Seconds(),
		MinUsefulTrySeconds:    p.MinUsefulTry.Seconds(),
		RetryOn:                append([]string{}, p.RetryOn...),
		Idempotent:             p.Idempotent,
		Layers:                 p.Layers,
		Amplification:          p.Amplification,
		Steps:                  []Step{},
		Warnings:               append([]string{}, p.Warnings...),
	}
	if p.Deadline > 0 {
		out.DeadlineSeconds = ptr(p.Deadline.Seconds())
	}
	if p.RetryBudget > 0 {
		out.RetryBudget = ptr(p.RetryBudget)
	}
	if ll := r.LittlesLaw; ll.RateKnown {
		out.InFlightDuringHang = ptr(ll.InFlightDuringHang)
	}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, Step{Rule: s.Rule, Seconds: s.Value.Seconds(), Reason: s.Reason})
	}
	if sim := r.Simulation; sim != nil {
		out.Simulation = &Simulation{Seed: sim.Seed, Requests: sim.Requests, Scenarios: []Scenario{}}
		for _, s := range sim.Scenarios {
			out.Simulation.Scenarios = append(out.Simulation.Scenarios, Scenario{
				Name:               s.Name,
				FailRate:           s.FailRate,
				Hang:               s.Hang,
				WithBudget:         s.WithBudget,
				SuccessFraction:    s.SuccessFraction,
				AttemptsPerRequest: s.AttemptsPerRequest,
				P50Seconds:         s.P50.Seconds(),
				P99Seconds:         s.P99.Seconds(),
			})
		}
	}
	return out
}
