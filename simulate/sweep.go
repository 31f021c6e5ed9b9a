package simulate

import (
	"context"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// Sweep factors and durations: the grid of the stability boundary.
var (
	SweepFactors   = []float64{1.5, 2, 3, 5}
	SweepDurations = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute}
)

// SweepCell is one trigger of a sweep and whether the dependency came
// back from it.
type SweepCell struct {
	Factor    float64 // the trigger's factor; 0 for an outage
	Duration  time.Duration
	Recovered bool
	Recovery  time.Duration // < 0 when not recovered
}

// SweepTrigger runs the closed loop of o once per trigger of o's kind
// with each factor (ignored for an outage) and each duration, every run
// with o's seed, the duration of the run stretched to fit the trigger.
// The stability boundary is, per factor, the longest duration after
// which the dependency still recovers (Boundary).
func SweepTrigger(ctx context.Context, h *histogram.Latency, p recommend.Policy, o LoopOptions, factors []float64, durations []time.Duration) ([]SweepCell, error) {
	o = o.withDefaults()
	if o.Trigger.Kind == TriggerOutage {
		factors = []float64{0}
	}
	var cells []SweepCell
	for _, f := range factors {
		for _, d := range durations {
			run := o
			run.Trigger = Trigger{Kind: o.Trigger.Kind, Factor: f, Duration: d}
			run.Duration = max(o.Duration, o.TriggerAt+d+o.RecoverWithin+lifetime(p)+o.Window)
			res, err := RunLoop(ctx, h, p, run)
			if err != nil {
				return nil, err
			}
			cells = append(cells, SweepCell{Factor: f, Duration: d, Recovered: res.Recovered, Recovery: res.Recovery})
		}
	}
	return cells, nil
}

// Boundary is, for factor f, the longest duration of the sweep's cells
// that recovered with every shorter one recovering too; 0 when the
// shortest did not.
func Boundary(cells []SweepCell, f float64) time.Duration {
	var longest time.Duration
	for _, c := range cells {
		if c.Factor != f {
			continue
		}
		if !c.Recovered {
			return longest
		}
		longest = c.Duration
	}
	return longest
}
