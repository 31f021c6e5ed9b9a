package analysis

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// LoopOptions ask for the closed loop of each group's dependency under a
// trigger (simulate.RunLoop, docs/metastability.md); Trigger nil: none.
type LoopOptions struct {
	Trigger *simulate.Trigger
	// Workers (--workers) or CapacityPerSecond (--capacity) size the
	// dependency; neither: DefaultUtilization at the rate.
	Workers           int
	CapacityPerSecond float64
	Queue             int
	DropExpired       bool
	TriggerAt         time.Duration
	Duration          time.Duration
	RecoverWithin     time.Duration
}

// runLoop runs the closed loop of group g's dependency through pol at
// rate (the --rate share, else the busiest minute), rateSource saying
// which.
func runLoop(ctx context.Context, h *histogram.Latency, pol recommend.Policy, o Options, rate, peak float64, rateSource string) (*report.Metastability, error) {
	lo := o.Loop
	switch {
	case rateSource == "flag":
		rateSource = "--rate"
	case peak > 0:
		rate, rateSource = peak, "the busiest minute"
	default:
		rateSource = "the mean rate"
	}
	if !(rate > 0) {
		return nil, fmt.Errorf("--trigger: the data give no rate (no timestamps): give --rate")
	}
	mean := h.Mean().Seconds()
	workers, source := lo.Workers, "--workers"
	switch {
	case workers > 0:
	case lo.CapacityPerSecond > 0:
		workers = max(1, int(math.Round(lo.CapacityPerSecond*mean)))
		source = fmt.Sprintf("--capacity %s calls/s x the mean latency of %s", human.Number(lo.CapacityPerSecond), human.Seconds(mean))
	default:
		workers = max(1, int(math.Ceil(rate*mean/simulate.DefaultUtilization)))
		source = fmt.Sprintf("Little's law: %s requests/s x the mean latency of %s busy at %s, rounded up", human.Number(rate), human.Seconds(mean), human.Percent(simulate.DefaultUtilization))
	}
	so := simulate.LoopOptions{Workers: workers, Queue: lo.Queue, DropExpired: lo.DropExpired,
		Rate: rate, Trigger: *lo.Trigger, TriggerAt: lo.TriggerAt, Duration: lo.Duration, RecoverWithin: lo.RecoverWithin, Seed: o.Simulate.Seed}
	res, err := simulate.RunLoop(ctx, h, pol, so)
	if err != nil {
		return nil, err
	}
	m := report.NewMetastability(res, source, rateSource)
	factors := simulate.SweepFactors
	if lo.Trigger.Kind == simulate.TriggerOutage {
		factors = []float64{0}
	}
	cells, err := simulate.SweepTrigger(ctx, h, pol, so, factors, simulate.SweepDurations)
	if err != nil {
		return nil, err
	}
	m.AddBoundary(cells, factors, simulate.SweepDurations)
	return m, nil
}
