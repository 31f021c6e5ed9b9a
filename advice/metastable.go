package advice

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// NewMetastableCure is the report of a cure.
func NewMetastableCure(c simulate.Cure) *report.MetastableCure {
	out := &report.MetastableCure{Change: c.Kind, RecoverySeconds: c.Result.Recovery.Seconds(), PeakLoadRatio: c.Result.PeakLoadRatio,
		FinalGoodputRatio: c.Result.FinalGoodputRatio, Runs: c.Tried}
	after := fmt.Sprintf("recovers %s after the trigger ends, at a peak load of %s", human.Seconds(out.RecoverySeconds), human.Percent(out.PeakLoadRatio))
	switch c.Kind {
	case simulate.CureRetryBudget:
		out.RetryBudget = ptr(c.RetryBudget)
		out.Summary = fmt.Sprintf("a retry budget of %s of requests (%s %s%%, the largest tried that recovers) %s", human.Percent(c.RetryBudget), usage.RetryBudget, strconv.FormatFloat(c.RetryBudget*100, 'g', -1, 64), after)
	case simulate.CureAttempts:
		out.Attempts = ptr(c.Attempts)
		out.Summary = fmt.Sprintf("%s (%s %d, the most that recover) %s", human.Plural(int64(c.Attempts), "attempt"), usage.Attempts, c.Attempts, after)
	case simulate.CureBackoff:
		out.BackoffBaseSeconds, out.BackoffCapSeconds, out.Factor = ptr(c.Backoff.Base.Seconds()), ptr(c.Backoff.Cap.Seconds()), ptr(c.Factor)
		out.Summary = fmt.Sprintf("a backoff %sx as long (%s %s %s %s) %s", human.Number(c.Factor), usage.BackoffBase, human.Seconds(c.Backoff.Base.Seconds()), usage.BackoffCap, human.Seconds(c.Backoff.Cap.Seconds()), after)
	case simulate.CureDropExpired:
		out.Summary = fmt.Sprintf("a server that drops the calls whose caller gave up (%s) %s", usage.DropExpired, after)
		if c.Tried > 1 {
			out.Summary = fmt.Sprintf("a server that drops the calls whose caller gave up (%s; no change of the call policy tried does: budgets down to %s, fewer attempts, backoffs up to %sx as long) %s",
				usage.DropExpired, human.Percent(simulate.CureBudgets[len(simulate.CureBudgets)-1]), human.Number(simulate.CureBackoffFactors[len(simulate.CureBackoffFactors)-1]), after)
		}
	case simulate.CureRate:
		out.Factor, out.RatePerSecond = ptr(c.Factor), ptr(c.Rate)
		out.Summary = fmt.Sprintf("a rate of %s requests/s (%s of it shed or sent elsewhere; no change of the policy or the server tried does) %s", human.Number(c.Rate), human.Percent(1-c.Factor), after)
	}
	return out
}

// NewMetastability is the report of a closed loop; the sources of the
// workers and the rate are the caller's.
func NewMetastability(r simulate.LoopResult, workersSource, rateSource string) *report.Metastability {
	o := r.Options
	m := &report.Metastability{Trigger: o.Trigger.String(),
		TriggerKind: o.Trigger.Kind, TriggerFactor: o.Trigger.Factor, TriggerSeconds: o.Trigger.Duration.Seconds(), TriggerAtSeconds: o.TriggerAt.Seconds(), DurationSeconds: o.Duration.Seconds(),
		Workers: o.Workers, WorkersSource: workersSource, DropExpired: o.DropExpired, RatePerSecond: o.Rate, RateSource: rateSource,
		CapacityPerSecond: r.CapacityPerSecond, Utilization: r.Utilization, Seed: o.Seed,
		BaselineSuccess: r.BaselineSuccess, BaselineAttemptsPerRequest: r.BaselineAttempts,
		Recovered: r.Recovered, RecoverWithinSeconds: o.RecoverWithin.Seconds(),
		PeakLoadRatio: r.PeakLoadRatio, FinalGoodputRatio: r.FinalGoodputRatio, EndedSeconds: r.Ended.Seconds(), Reason: r.Reason,
		Requests: r.Requests, Attempts: r.Attempts, WastedAttempts: r.Wasted, DroppedAttempts: r.Dropped, RejectedAttempts: r.Rejected,
		PeakQueue: r.PeakQueue}
	if o.Queue > 0 {
		m.Queue = ptr(o.Queue)
	}
	if r.Recovery >= 0 {
		m.RecoverySeconds = ptr(r.Recovery.Seconds())
	}
	round := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = math.Round(x*10) / 10
		}
		return out
	}
	m.Series = report.LoopSeries{StepSeconds: r.Series.Step.Seconds(), DemandPerSecond: round(r.Series.Demand),
		GoodputPerSecond: round(r.Series.Goodput), AttemptsPerSecond: round(r.Series.Attempts), QueueMax: append([]int{}, r.Series.Queue...)}
	return m
}

// AddBoundary adds the stability boundary of a sweep to m.
func AddBoundary(m *report.Metastability, cells []simulate.SweepCell, factors []float64, durations []time.Duration) {
	swept := make([]float64, len(durations))
	for i, d := range durations {
		swept[i] = d.Seconds()
	}
	m.Boundary = []report.BoundaryPoint{}
	for _, f := range factors {
		b := report.BoundaryPoint{Factor: f, LongestRecoveredSeconds: simulate.Boundary(cells, f).Seconds(), SweptSeconds: swept,
			Recovered: make([]bool, len(durations)), RecoverySeconds: make([]*float64, len(durations))}
		for _, c := range cells {
			if i := slices.Index(durations, c.Duration); c.Factor == f && i >= 0 && c.Recovered {
				b.Recovered[i], b.RecoverySeconds[i] = true, ptr(c.Recovery.Seconds())
			}
		}
		m.Boundary = append(m.Boundary, b)
	}
}
