package analysis

import (
	"context"
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
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

// runHerd replays the herd with the policy's attempts and backoff, the
// crowd and capacity taken from the flags or, where not given, from the
// groups (every group's calls reach the one dependency): the busiest
// second of all their calls, and their calls in flight at the peak rate
// (the busiest minute's, or --rate) x their mean latency. It returns the
// herd and the advice, which sizes the policy's backoff (sizeBackoff).
func runHerd(ctx context.Context, o Options, groups []*histogram.Group) (*report.Herd, simulate.HerdAdvice, error) {
	h := o.Herd
	po, err := o.Policy.WithDefaults()
	if err != nil {
		return nil, simulate.HerdAdvice{}, err
	}
	out := &report.Herd{}
	crowd := h.Clients
	out.ClientsSource = "--herd"
	all := histogram.NewArrivals()
	var inFlight, total float64
	for _, g := range groups {
		if g.Latency != nil {
			total += float64(g.Latency.Count() + sum(g.Excluded))
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
		case o.Rate > 0 && total > 0:
			peak = o.Rate * float64(g.Latency.Count()+sum(g.Excluded)) / total
		case measuredRates(g.Arrivals):
			peak = busiestMinuteRate(g.Arrivals)
		}
		inFlight += peak * g.Latency.Mean().Seconds()
	}
	if crowd == 0 {
		if inFlight <= 0 {
			return nil, simulate.HerdAdvice{}, fmt.Errorf("--clients: the data give no calls in flight at the peak (no rates: give --rate, or --herd)")
		}
		crowd = max(1, int(float64(h.ClientInstances)*inFlight+0.5))
		out.ClientsSource = fmt.Sprintf("--clients %d x %s calls in flight each at the peak rate (Little's law)", h.ClientInstances, human.Number(inFlight))
	}
	capacity := h.CapacityPerSecond
	out.CapacitySource = "--capacity"
	if capacity == 0 {
		busiest, _ := all.Busiest(time.Second)
		if busiest == 0 {
			return nil, simulate.HerdAdvice{}, fmt.Errorf("--herd: give --capacity (calls/s the dependency serves the herd): the data have no timestamps to measure the busiest second from")
		}
		headroom := h.Headroom
		if headroom == 0 {
			headroom = DefaultHeadroom
		}
		capacity = float64(busiest) * headroom
		out.CapacitySource = fmt.Sprintf("%s x the busiest second, %s calls (--headroom: the spare capacity of a dependency sized at %s x its peak)",
			human.Number(headroom), human.Count(busiest), human.Number(1+headroom))
	}
	res, err := simulate.RunHerd(ctx, simulate.HerdOptions{Clients: crowd, CapacityPerSecond: capacity, RejectCost: h.RejectCost,
		Attempts: po.Attempts, Seed: o.Simulate.Seed, Deadline: po.Deadline,
		Backoff: recommend.Backoff{Jitter: po.Jitter, Base: po.BackoffBase, Cap: po.BackoffCap}})
	if err != nil {
		return nil, simulate.HerdAdvice{}, err
	}
	advice.FillHerd(out, res)
	return out, res.Advice, nil
}

// sizeBackoff widens the policy's backoff to what the herd needs, never
// narrowing it: the groups' policies (and so the snippets) carry it. It
// returns the step each policy shows, or "" when nothing changed.
func sizeBackoff(o *Options, a simulate.HerdAdvice) (string, error) {
	po, err := o.Policy.WithDefaults()
	if err != nil {
		return "", err
	}
	base, cap := max(po.BackoffBase, a.Base), max(po.BackoffCap, a.Cap)
	if base == po.BackoffBase && cap == po.BackoffCap {
		return "", nil
	}
	o.Policy.BackoffBase, o.Policy.BackoffCap = base, cap
	return fmt.Sprintf("backoff from %s, capped at %s, widened from the policy's %s capped at %s for the herd: %s",
		human.Seconds(base.Seconds()), human.Seconds(cap.Seconds()), human.Seconds(po.BackoffBase.Seconds()), human.Seconds(po.BackoffCap.Seconds()), a.Reason), nil
}

// RunHerdOnly is the herd without data: --herd and --capacity given, no
// input to read. The report holds the herd alone.
func RunHerdOnly(ctx context.Context, o Options) (*report.Report, error) {
	o.defaults()
	if o.Herd.Clients <= 0 || o.Herd.CapacityPerSecond <= 0 {
		return nil, fmt.Errorf("without data, give --herd and --capacity")
	}
	r := &report.Report{Groups: []report.Group{}}
	r.Input.Files, r.Input.Formats, r.Input.BadExamples, r.Input.Notes, r.Input.Findings = []string{}, []string{}, []string{}, []string{}, []report.Finding{}
	h, _, err := runHerd(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	r.Herd = h
	return r, nil
}
