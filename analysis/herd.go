package analysis

import (
	"context"
	"fmt"
	"time"

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
// groups (every group's calls reach the one dependency).
func runHerd(ctx context.Context, o Options, groups []*histogram.Group, r *report.Report) (*report.Herd, error) {
	h := o.Herd
	po, err := o.Policy.WithDefaults()
	if err != nil {
		return nil, err
	}
	out := &report.Herd{}
	crowd := h.Clients
	out.ClientsSource = "--herd"
	all := histogram.NewArrivals()
	var inFlight float64
	for _, g := range groups {
		if g.Arrivals != nil {
			all.Merge(g.Arrivals)
		}
	}
	for _, rg := range r.Groups {
		if v := rg.LittlesLaw.InFlightPeak; v != nil {
			inFlight += *v
		}
	}
	if crowd == 0 {
		if inFlight <= 0 {
			return nil, fmt.Errorf("--clients: the data give no calls in flight at the peak (no rates: give --rate, or --herd)")
		}
		crowd = max(1, int(float64(h.ClientInstances)*inFlight+0.5))
		out.ClientsSource = fmt.Sprintf("--clients %d x %s calls in flight each at the peak rate (Little's law)", h.ClientInstances, human.Number(inFlight))
	}
	capacity := h.CapacityPerSecond
	out.CapacitySource = "--capacity"
	if capacity == 0 {
		busiest, _ := all.Busiest(time.Second)
		if busiest == 0 {
			return nil, fmt.Errorf("--herd: give --capacity (calls/s the dependency serves the herd): the data have no timestamps to measure the busiest second from")
		}
		headroom := h.Headroom
		if headroom == 0 {
			headroom = DefaultHeadroom
		}
		capacity = float64(busiest) * headroom
		out.CapacitySource = fmt.Sprintf("%s x the busiest second, %s calls (--headroom: the spare capacity of a dependency sized at %s x its peak)",
			human.Number(headroom), human.Count(busiest), human.Number(1+headroom))
	}
	cost := h.RejectCost
	res, err := simulate.RunHerd(ctx, simulate.HerdOptions{Clients: crowd, CapacityPerSecond: capacity, RejectCost: cost,
		Attempts: po.Attempts, Seed: o.Simulate.Seed, Deadline: po.Deadline,
		Backoff: recommend.Backoff{Jitter: po.Jitter, Base: po.BackoffBase, Cap: po.BackoffCap}})
	if err != nil {
		return nil, err
	}
	report.FillHerd(out, res)
	return out, nil
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
	h, err := runHerd(ctx, o, nil, r)
	if err != nil {
		return nil, err
	}
	r.Herd = h
	return r, nil
}
