package advice

import (
	"context"
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// HerdOptions ask for the herd (simulate.RunHerd): the crowd that fails
// at once, and the capacity it retries against.
type HerdOptions struct {
	// Clients is the crowd (--herd); or ClientInstances (--clients) times
	// the calls each has in flight at the peak rate (Little's law: peak
	// rate x mean latency, of the data).
	Clients, ClientInstances int
	// CapacityPerSecond is what the dependency serves the herd (--capacity);
	// 0 = Headroom x the busiest second of the data: the spare capacity of
	// a dependency sized at (1 + Headroom) x its peak.
	CapacityPerSecond float64
	Headroom          float64
	RejectCost        float64
}

// DefaultHeadroom is the spare capacity of a dependency, as a share of its
// busiest second, when --capacity is not given: sized at 1.5 x its peak.
const DefaultHeadroom = 0.5

// Asked says whether a herd is asked for.
func (h HerdOptions) Asked() bool { return h.Clients > 0 || h.ClientInstances > 0 }

// RunHerd replays the herd with the attempts and backoff of po (with its
// defaults), the crowd and capacity taken from h or, where not given,
// from the groups (every group's calls reach the one dependency): the
// busiest second of all their calls, and their calls in flight at the
// peak rate (the busiest minute's, or rate, the --rate shared by the
// groups' calls) x their mean latency. It returns the herd and the
// simulation's advice, which sizes the policy's backoff.
func RunHerd(ctx context.Context, h HerdOptions, po recommend.PolicyOptions, seed uint64, rate float64, groups []*histogram.Group) (*report.Herd, simulate.HerdAdvice, error) {
	out := &report.Herd{}
	crowd := h.Clients
	out.ClientsSource = usage.Herd.String()
	all := histogram.NewArrivals()
	var inFlight, calls float64
	for _, g := range groups {
		if g.Latency != nil {
			calls += float64(g.Latency.Count() + total(g.Excluded))
		}
	}
	for _, g := range groups {
		if g.Arrivals != nil {
			all.Merge(g.Arrivals)
		}
		if g.Latency == nil || g.Latency.Count() == 0 {
			continue
		}
		var peak float64
		switch {
		case rate > 0 && calls > 0:
			peak = rate * float64(g.Latency.Count()+total(g.Excluded)) / calls
		case MeasuredRates(g.Arrivals):
			peak = BusiestMinuteRate(g.Arrivals)
		}
		inFlight += peak * g.Latency.Mean().Seconds()
	}
	if crowd == 0 {
		if inFlight <= 0 {
			return nil, simulate.HerdAdvice{}, usage.About(usage.Clients, fmt.Errorf("%s: the data give no calls in flight at the peak (no rates: give %s, or %s)", usage.Clients, usage.Rate, usage.Herd))
		}
		crowd = max(1, int(float64(h.ClientInstances)*inFlight+0.5))
		out.ClientsSource = fmt.Sprintf("%s %d x %s calls in flight each at the peak rate (Little's law)", usage.Clients, h.ClientInstances, human.Number(inFlight))
	}
	capacity := h.CapacityPerSecond
	out.CapacitySource = usage.Capacity.String()
	if capacity == 0 {
		busiest, _ := all.Busiest(time.Second)
		if busiest == 0 {
			return nil, simulate.HerdAdvice{}, usage.About(usage.Herd, fmt.Errorf("%s: give %s (calls/s the dependency serves the herd): the data have no timestamps to measure the busiest second from", usage.Herd, usage.Capacity))
		}
		headroom := h.Headroom
		if headroom == 0 {
			headroom = DefaultHeadroom
		}
		capacity = float64(busiest) * headroom
		out.CapacitySource = fmt.Sprintf("%s x the busiest second, %s calls (%s: the spare capacity of a dependency sized at %s x its peak)",
			human.Number(headroom), human.Count(busiest), usage.Headroom, human.Number(1+headroom))
	}
	res, err := simulate.RunHerd(ctx, simulate.HerdOptions{Clients: crowd, CapacityPerSecond: capacity, RejectCost: h.RejectCost,
		Attempts: po.Attempts, Seed: seed, Deadline: po.Deadline,
		Backoff: recommend.Backoff{Jitter: po.Jitter, Base: po.BackoffBase, Cap: po.BackoffCap}})
	if err != nil {
		return nil, simulate.HerdAdvice{}, err
	}
	FillHerd(out, res)
	return out, res.Advice, nil
}

// FillHerd fills h from a replay; the sources of the crowd and the
// capacity are the caller's.
func FillHerd(h *report.Herd, r simulate.HerdResult) {
	o := r.Options
	h.Clients, h.CapacityPerSecond, h.RejectCost, h.Attempts, h.Seed = o.Clients, o.CapacityPerSecond, o.RejectCost, o.Attempts, o.Seed
	h.WindowSeconds = r.Window.Seconds()
	h.Strategies = []report.HerdStrategy{}
	for _, run := range r.Runs {
		s := report.HerdStrategy{Name: run.Strategy, Calls: run.Calls, Served: run.Served, GaveUp: run.GaveUp,
			BusiestRetryMsCalls: run.BusiestRetryCalls, SeriesStepMs: run.SeriesStep}
		// The HTML plots the policy against no jitter: only their series
		// are kept, never nil.
		if run.Strategy == simulate.HerdPolicy || run.Strategy == simulate.HerdNone {
			s.CallsPerMs = append([]int64{}, run.Series...)
		}
		if run.LastServedMs >= 0 {
			s.LastServedMs = &run.LastServedMs
		}
		h.Strategies = append(h.Strategies, s)
	}
	h.RecommendedBackoff = report.RecommendedBackoff{BaseSeconds: r.Advice.Base.Seconds(), CapSeconds: r.Advice.Cap.Seconds(), Reason: r.Advice.Reason}
	h.Findings = finding.Clone(r.Advice.Findings)
	h.Warnings = append([]string{}, finding.Messages(h.Findings)...)
}
