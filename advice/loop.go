package advice

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
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

// RunLoop runs the closed loop of a group's dependency, its latency h,
// through pol at rate (the --rate share, else the busiest minute, peak),
// rateSource saying which ("flag", else measured), seeded with seed: the
// run, its stability boundary and, when it does not recover, the cheapest
// cure.
func RunLoop(ctx context.Context, h *histogram.Latency, pol recommend.Policy, lo LoopOptions, seed uint64, rate, peak float64, rateSource string) (*report.Metastability, error) {
	switch {
	case rateSource == "flag":
		rateSource = usage.Rate.String()
	case peak > 0:
		rate, rateSource = peak, "the busiest minute"
	default:
		rateSource = "the mean rate"
	}
	if !(rate > 0) {
		return nil, usage.About(usage.Trigger, fmt.Errorf("%s: the data give no rate (no timestamps): give %s", usage.Trigger, usage.Rate))
	}
	mean := h.Mean().Seconds()
	workers, source := lo.Workers, usage.Workers.String()
	switch {
	case workers > 0:
	case lo.CapacityPerSecond > 0:
		workers = max(1, int(math.Round(lo.CapacityPerSecond*mean)))
		source = fmt.Sprintf("%s %s calls/s x the mean latency of %s", usage.Capacity, human.Number(lo.CapacityPerSecond), human.Seconds(mean))
	default:
		workers = max(1, int(math.Ceil(rate*mean/simulate.DefaultUtilization)))
		source = fmt.Sprintf("Little's law: %s requests/s x the mean latency of %s busy at %s, rounded up", human.Number(rate), human.Seconds(mean), human.Percent(simulate.DefaultUtilization))
	}
	so := simulate.LoopOptions{Workers: workers, Queue: lo.Queue, DropExpired: lo.DropExpired,
		Rate: rate, Trigger: *lo.Trigger, TriggerAt: lo.TriggerAt, Duration: lo.Duration, RecoverWithin: lo.RecoverWithin, Seed: seed}
	res, err := simulate.RunLoop(ctx, h, pol, so)
	if err != nil {
		return nil, err
	}
	m := NewMetastability(res, source, rateSource)
	factors := simulate.SweepFactors
	if lo.Trigger.Kind == simulate.TriggerOutage {
		factors = []float64{0}
	}
	cells, err := simulate.SweepTrigger(ctx, h, pol, so, factors, simulate.SweepDurations)
	if err != nil {
		return nil, err
	}
	AddBoundary(m, cells, factors, simulate.SweepDurations)
	if !res.Recovered {
		cure, err := simulate.FindCure(ctx, h, pol, so)
		if err != nil {
			return nil, err
		}
		if cure != nil {
			m.Cure = NewMetastableCure(*cure)
		} else {
			var tried []string
			if pol.Attempts > 1 {
				tried = append(tried, "retry budgets down to "+human.Percent(simulate.CureBudgets[len(simulate.CureBudgets)-1]), "fewer attempts down to one",
					"a backoff up to "+human.Number(simulate.CureBackoffFactors[len(simulate.CureBackoffFactors)-1])+"x as long")
			}
			if !lo.DropExpired {
				tried = append(tried, usage.DropExpired.String())
			}
			tried = append(tried, "the rate down to "+human.Percent(simulate.CureRateFactors[len(simulate.CureRateFactors)-1])+" of it")
			m.CureReason = "no change tried recovers (" + strings.Join(tried, ", ") + ")"
		}
	}
	return m, nil
}

// MetastableStep is the call policy's step "metastable": whether the
// policy recovers from the trigger, and if not the cheapest cure with its
// numbers; its value is the time to recover, with the cure when there is
// one (0 when nothing recovers).
func MetastableStep(m *report.Metastability) recommend.Step {
	st := recommend.Step{Rule: "metastable"}
	switch {
	case m.Recovered:
		st.Value = time.Duration(*m.RecoverySeconds * float64(time.Second))
		st.Reason = fmt.Sprintf("the dependency recovers from %s %s after it ends, with this policy as it is (%s busy before; docs/metastability.md)",
			m.Trigger, human.Seconds(*m.RecoverySeconds), human.Percent(m.Utilization))
	case m.Cure != nil:
		st.Value = time.Duration(m.Cure.RecoverySeconds * float64(time.Second))
		st.Reason = fmt.Sprintf("with the policy as asked the dependency does not recover from %s within %s (%s busy before); the cheapest change that does: %s",
			m.Trigger, human.Seconds(m.RecoverWithinSeconds), human.Percent(m.Utilization), m.Cure.Summary)
		if m.Cure.Change == simulate.CureRetryBudget {
			st.Reason += "; the policy here and its snippets carry the budget"
		}
	default:
		st.Reason = fmt.Sprintf("with the policy as asked the dependency does not recover from %s within %s (%s busy before), and %s",
			m.Trigger, human.Seconds(m.RecoverWithinSeconds), human.Percent(m.Utilization), m.CureReason)
	}
	return st
}
