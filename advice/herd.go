package advice

import (
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

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
	h.Warnings = append([]string{}, r.Advice.Warnings...)
}
