package report

import (
	"fmt"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/report/plot"
)

// Herd is the herd scenario (simulate.RunHerd, filled by
// advice.FillHerd): Clients that failed at the same instant retry against
// CapacityPerSecond, each strategy's outcome, and the backoff sized from
// the crowd.
type Herd struct {
	Clients           int     `json:"clients"`
	ClientsSource     string  `json:"clients_source"` // usage.Herd, or how usage.Clients made it
	CapacityPerSecond float64 `json:"capacity_per_second"`
	CapacitySource    string  `json:"capacity_source"` // usage.Capacity, or how the data made it
	RejectCost        float64 `json:"reject_cost"`
	Attempts          int     `json:"attempts"`
	Seed              uint64  `json:"seed"`
	// WindowSeconds is the jitter window the crowd needs: clients /
	// capacity.
	WindowSeconds      float64            `json:"window_seconds"`
	Strategies         []HerdStrategy     `json:"strategies"`
	RecommendedBackoff RecommendedBackoff `json:"recommended_backoff"`
	Warnings           []string           `json:"warnings"`
	// Findings are the warnings as findings, with their codes and
	// numbers (docs/findings.md); Warnings are their messages.
	Findings []Finding `json:"findings"`
}

// HerdStrategy is one strategy's replay of the herd.
type HerdStrategy struct {
	Name   string `json:"name"` // none, fixed, exponential, equal, full, decorrelated, your policy
	Calls  int64  `json:"calls"`
	Served int    `json:"served"`
	GaveUp int    `json:"gave_up"`
	// BusiestRetryMsCalls is the most calls in one millisecond after the
	// first.
	BusiestRetryMsCalls int `json:"busiest_retry_ms_calls"`
	// LastServedMs is the millisecond the last client was served in; null
	// when none was.
	LastServedMs *int64 `json:"last_served_ms"`
	// CallsPerMs is the calls per millisecond from the failure on, each
	// point SeriesStepMs milliseconds; only in the HTML's plot, and only
	// for the policy and for no jitter (nil for the other strategies).
	CallsPerMs   []int64 `json:"-"`
	SeriesStepMs int64   `json:"-"`
}

// RecommendedBackoff is the backoff sized from the crowd.
type RecommendedBackoff struct {
	BaseSeconds float64 `json:"base_seconds"`
	CapSeconds  float64 `json:"cap_seconds"`
	Reason      string  `json:"reason"`
}

// herdSection is the herd: a table of the strategies and the backoff
// sized from the crowd (withHerdPlot adds the HTML's plot).
func herdSection(r *Report) *Section {
	h := r.Herd
	if h == nil {
		return nil
	}
	t := &Table{Class: "herd", Columns: []Column{{Title: "backoff"}, {Title: "calls", Numeric: true}, {Title: "served", Numeric: true},
		{Title: "gave up", Numeric: true}, {Title: "busiest retry ms", Numeric: true}, {Title: "last served", Numeric: true}}}
	for _, s := range h.Strategies {
		last := "never"
		if s.LastServedMs != nil {
			last = human.Seconds(float64(*s.LastServedMs) / 1000)
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: s.Name}, {Text: human.Count(s.Calls)}, {Text: human.Count(int64(s.Served))},
			{Text: human.Count(int64(s.GaveUp))}, {Text: human.Count(int64(s.BusiestRetryMsCalls))}, {Text: last}}})
	}
	window := human.Seconds(h.WindowSeconds)
	blocks := []Block{
		textPara(fmt.Sprintf("%s clients fail at the same instant and retry, %d attempts each, against %s calls/s, a rejection costing %s of a call (the crowd: %s; the capacity: %s). Seed %d.",
			human.Count(int64(h.Clients)), h.Attempts, human.Number(h.CapacityPerSecond), human.Percent(h.RejectCost), h.ClientsSource, h.CapacitySource, h.Seed)),
		{Table: t},
		para("", text("The crowd needs a jitter window of at least "), strong(window),
			text(fmt.Sprintf(" (%s clients / %s calls/s). Backoff sized from it: base ", human.Count(int64(h.Clients)), human.Number(h.CapacityPerSecond))),
			strong(human.Seconds(h.RecommendedBackoff.BaseSeconds)), text(", cap "), strong(human.Seconds(h.RecommendedBackoff.CapSeconds)),
			text(". "+h.RecommendedBackoff.Reason+".")),
	}
	blocks = append(blocks, notices(h.Warnings, h.Findings)...)
	return &Section{ID: "herd", Title: "The herd", Blocks: blocks}
}

// withHerdPlot puts the calls per millisecond of the policy against no
// jitter (HTML) after the herd's blocks; blocks as they are when there is
// nothing to draw.
func withHerdPlot(r *Report, blocks []Block) []Block {
	h := r.Herd
	var series []plot.HerdSeries
	for _, s := range h.Strategies {
		if s.CallsPerMs != nil {
			series = append(series, plot.HerdSeries{Name: s.Name, CallsPerMs: s.CallsPerMs, StepMs: s.SeriesStepMs})
		}
	}
	if f, ok := plot.Herd("herd", series, h.CapacityPerSecond/1000); ok {
		blocks = append(blocks, Block{Figure: &f})
	}
	return blocks
}
