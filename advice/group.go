// Package advice is what is computed per group of calls, from the
// histogram, the recommendation, Little's law and the simulations, and its
// mapping to the report model: report holds the plain data and its
// renderers, advice fills it.
package advice

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

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
	// Metastability is the closed loop (--trigger); nil when not asked.
	Metastability *report.Metastability
}

// NewGroup turns one group's results into its report model.
func NewGroup(r Result) report.Group {
	h := r.Group.Latency
	rec := r.Recommendation
	g := report.Group{
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
	g.Percentiles = newPercentiles(h, rec.Quantile)
	g.Recommendation = newRecommendation(rec, h)
	g.Candidates = newCandidates(r.Candidates, h, r.LittlesLaw)
	g.LittlesLaw = newLittlesLaw(r)
	// Never nil, so that the JSON shows an empty list rather than null.
	g.Findings = finding.Clone(rec.Findings)
	if r.Policy.Attempts > 0 {
		g.Policy = newPolicy(r)
		g.Findings = append(g.Findings, finding.Clone(r.Policy.Findings)...)
	}
	g.Distribution = newDistribution(h.Bars())
	return g
}

// newPercentiles are h's standard percentiles (report.StandardQuantiles)
// and the recommendation's quantile, recQ, among them, in order.
func newPercentiles(h *histogram.Latency, recQ float64) []report.Percentile {
	qs := slices.Clone(report.StandardQuantiles)
	if !slices.Contains(qs, recQ) {
		qs = append(qs, recQ)
		slices.Sort(qs)
	}
	var out []report.Percentile
	for _, q := range qs {
		out = append(out, report.Percentile{
			Quantile:   q,
			Seconds:    h.Quantile(q).Seconds(),
			LowerBound: h.QuantileIsLowerBound(q),
		})
	}
	return out
}

// newRecommendation is the report of rec, with the share of h's calls
// its timeout cuts off.
func newRecommendation(rec recommend.Recommendation, h *histogram.Latency) report.Recommendation {
	out := report.Recommendation{
		Quantile:       rec.Quantile,
		BaseSeconds:    rec.Base.Seconds(),
		LowerBound:     rec.LowerBound,
		TimeoutSeconds: rec.Timeout.Seconds(),
		CutOffFraction: h.FractionAbove(rec.Timeout),
		Interval:       newInterval(rec.Interval),
		Steps:          []report.Step{},
		Warnings:       append([]string{}, rec.Warnings...),
	}
	out.ConnectsMeasured, out.ReusedConnects = rec.Connect.Measured, rec.Connect.Reused
	if rec.ConnectTimeout > 0 {
		out.ConnectTimeoutSeconds = ptr(rec.ConnectTimeout.Seconds())
	}
	for _, s := range rec.Steps {
		out.Steps = append(out.Steps, report.Step{Rule: s.Rule, Seconds: s.Value.Seconds(), Reason: s.Reason})
	}
	return out
}

// newInterval is the report of a quantile's confidence interval.
func newInterval(in histogram.Interval) report.Interval {
	out := report.Interval{Confidence: in.Confidence, LowSeconds: in.Lo.Seconds(), Above: in.Above}
	if in.HiKnown {
		out.HighSeconds = ptr(in.Hi.Seconds())
	}
	return out
}

// newCandidates are the candidate timeouts, each with the share of h's
// calls it cuts off and, by Little's law (ll), the calls a hang holds at
// once and their multiple of the pool, where the rate and the pool are
// known.
func newCandidates(candidates []time.Duration, h *histogram.Latency, ll littleslaw.Result) []report.Candidate {
	var out []report.Candidate
	for _, c := range candidates {
		cand := report.Candidate{TimeoutSeconds: c.Seconds(), CutOffFraction: h.FractionAbove(c)}
		if ll.RateKnown {
			inFlight, multiple := ll.HangAt(c)
			cand.InFlightDuringHang = ptr(inFlight)
			if ll.PoolKnown {
				cand.PoolMultiple = ptr(multiple)
			}
		}
		out = append(out, cand)
	}
	return out
}

// newLittlesLaw is the report of r's Little's law: the figures that need
// the rate only where it is known, those that need the pool only where it
// is.
func newLittlesLaw(r Result) report.LittlesLaw {
	ll := r.LittlesLaw
	out := report.LittlesLaw{RateSource: r.RateSource, Verdict: ll.Verdict()}
	if ll.RateKnown {
		out.RatePerSecond = ptr(ll.Rate)
		if ll.PeakRate > 0 {
			out.PeakRatePerSecond = ptr(ll.PeakRate)
		}
		out.InFlightNormal = ptr(ll.InFlightNormal)
		out.InFlightPeak = ptr(ll.InFlightPeak)
		out.InFlightDuringHang = ptr(ll.InFlightDuringHang)
		out.Bulkhead = ptr(ll.Bulkhead)
		if ll.Hystrix > 0 {
			out.HystrixBulkhead = ptr(ll.Hystrix)
		}
	}
	if r.BusiestSecond > 0 {
		out.BusiestSecond = ptr(float64(r.BusiestSecond))
	}
	if ll.PoolKnown {
		out.Pool = ptr(ll.Pool)
		if ll.RateKnown {
			out.PoolExhausted = ptr(ll.PoolExhausted)
			if ll.PoolExhausted {
				out.SecondsToExhaustion = ptr(ll.SecondsToExhaustion)
			}
		}
	}
	return out
}

// gridPerDecade is the finest grid of the bin bounds.
const gridPerDecade = 20

// gridBound returns the k-th bound of the grid, 10^(k/20) seconds rounded
// to three significant digits.
func gridBound(k int) float64 {
	v := math.Pow(10, float64(k)/gridPerDecade)
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}

// gridIndex returns the smallest k with gridBound(k) >= seconds, for
// seconds of at least 1µs.
func gridIndex(seconds float64) int {
	k := int(math.Ceil(gridPerDecade * math.Log10(seconds)))
	for gridBound(k-1) >= seconds {
		k--
	}
	for gridBound(k) < seconds {
		k++
	}
	return k
}

// newDistribution bins the histogram's buckets; nil when there are none.
func newDistribution(bars []histogram.Bar) *report.Distribution {
	if len(bars) == 0 {
		return nil
	}
	ks := make([]int, len(bars))
	for i, b := range bars {
		ks[i] = gridIndex(max(b.Lo.Seconds(), 1e-6))
	}
	lo, hi := ks[0], ks[len(ks)-1]
	// The coarsest grids keep every step-th bound: 20, 10, 5, 4, 2, 1 per decade.
	step := 1
	for _, s := range []int{1, 2, 4, 5, 10, 20} {
		step = s
		if ceilDiv(hi, s)-ceilDiv(lo, s)+1 <= report.MaxBins {
			break
		}
	}
	first, last := ceilDiv(lo, step), ceilDiv(hi, step)
	d := &report.Distribution{LowestSeconds: gridBound((first - 1) * step), Bins: make([]report.Bin, last-first+1)}
	for i := range d.Bins {
		d.Bins[i].UpperSeconds = gridBound((first + i) * step)
	}
	for i, b := range bars {
		d.Bins[ceilDiv(ks[i], step)-first].Count += b.Count
	}
	return d
}

// ceilDiv is a/b rounded towards +Inf, for b > 0.
func ceilDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// newPolicy turns the call policy and its simulation into their report
// section. In flight during a hang is Little's law with the retries, as
// littleslaw.Analyze computed it for the policy's attempts and backoff.
func newPolicy(r Result) *report.Policy {
	p := r.Policy
	out := &report.Policy{
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
		StaticAttempts:         p.StaticAttempts,
		StaticWorstCaseSeconds: p.StaticWorstCase.Seconds(),
		HangAttempts:           p.HangAttempts,
		HangWaitSeconds:        p.HangWait.Seconds(),
		HangBackoffSeconds:     p.HangBackoff.Seconds(),
		FastFailureAttempts:    p.FastAttempts,
		MinUsefulTrySeconds:    p.MinUsefulTry.Seconds(),
		RetryOn:                append([]string{}, p.RetryOn...),
		Idempotent:             p.Idempotent,
		Layers:                 p.Layers,
		Amplification:          p.Amplification,
		Steps:                  []report.Step{},
		Warnings:               append([]string{}, p.Warnings...),
	}
	if p.Deadline > 0 {
		out.DeadlineSeconds = ptr(p.Deadline.Seconds())
	}
	if p.RetryBudget > 0 {
		out.RetryBudget = ptr(p.RetryBudget)
	}
	if p.Method != "" {
		out.Method = ptr(p.Method)
	}
	if len(p.Methods) > 0 {
		out.Methods = append([]string{}, p.Methods...)
	}
	out.IdempotentSource = p.IdempotentFrom
	if out.IdempotentSource == "" {
		out.IdempotentSource = recommend.IdempotentFromNone
	}
	if hd := p.Hedge; hd != nil {
		out.Hedge = &report.Hedge{Quantile: hd.Quantile, DelaySeconds: hd.Delay.Seconds(), Attempts: hd.Attempts,
			ExtraLoadFraction: hd.ExtraLoad, P99Seconds: hd.P99.Seconds(), P999Seconds: hd.P999.Seconds()}
	}
	if ll := r.LittlesLaw; ll.RateKnown {
		out.InFlightDuringHang = ptr(ll.InFlightDuringHang)
	}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, report.Step{Rule: s.Rule, Seconds: s.Value.Seconds(), Reason: s.Reason})
	}
	if sim := r.Simulation; sim != nil {
		out.Simulation = &report.Simulation{Seed: sim.Seed, Requests: sim.Requests, Scenarios: []report.Scenario{}}
		for _, s := range sim.Scenarios {
			out.Simulation.Scenarios = append(out.Simulation.Scenarios, report.Scenario{
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
	out.Metastability = r.Metastability
	return out
}

// NewSharedPool is the hang of the whole dependency when its groups share a
// pool of pool calls; nil without a pool or with fewer than two groups.
func NewSharedPool(pool int, groups []littleslaw.Result) *report.SharedPool {
	if pool <= 0 || len(groups) < 2 {
		return nil
	}
	s := littleslaw.AnalyzeShared(pool, groups)
	out := &report.SharedPool{Pool: s.Pool, Groups: s.Groups, Verdict: s.Verdict()}
	if s.RateKnown {
		out.InFlightDuringHang = ptr(s.InFlightDuringHang)
		out.PoolExhausted = ptr(s.PoolExhausted)
		if s.PoolExhausted {
			out.SecondsToExhaustion = ptr(s.SecondsToExhaustion)
		}
	}
	if s.BulkheadsKnown {
		out.BulkheadsTotal = ptr(s.Bulkheads)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
