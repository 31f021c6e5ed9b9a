package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report/plot"
)

// Window is one window of --window: its calls, their percentiles and the
// timeout they alone would get.
type Window struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Samples int64     `json:"samples"`
	// Percentiles are p50, p99, p99.9 and the recommendation's quantile.
	Percentiles []Percentile `json:"percentiles"`
	// QuantileSeconds is the recommendation's quantile in this window,
	// with its confidence interval; TimeoutSeconds the timeout it gives.
	QuantileSeconds float64  `json:"quantile_seconds"`
	Interval        Interval `json:"interval"`
	TimeoutSeconds  float64  `json:"timeout_seconds"`
	// EnoughData says the interval is narrow enough to rank the window
	// (--window-precision): a window without is "too few calls to tell".
	EnoughData    bool    `json:"enough_data"`
	RatePerSecond float64 `json:"rate_per_second"`
}

// WorstWindow is the window with the highest quantile among those with
// enough data: the one the timeout must survive.
type WorstWindow struct {
	Start           time.Time `json:"start"`
	End             time.Time `json:"end"`
	QuantileSeconds float64   `json:"quantile_seconds"`
	TimeoutSeconds  float64   `json:"timeout_seconds"`
	// WholeTimeoutSeconds is the timeout of the whole period, for
	// comparison.
	WholeTimeoutSeconds float64 `json:"whole_timeout_seconds"`
	// Significant says the window is worse beyond the noise: LowSeconds,
	// the lower bound of its quantile that holds for all the windows at
	// once, lies above RestHighSeconds, the upper bound of the other
	// windows pooled (both only when Significant).
	Significant     bool     `json:"significant"`
	LowSeconds      *float64 `json:"low_seconds,omitempty"`
	RestHighSeconds *float64 `json:"rest_high_seconds,omitempty"`
	// Used says the group's recommendation is this window's (--for
	// worst-window, the default with --window, when it is significant).
	Used   bool   `json:"used"`
	Reason string `json:"reason"`
	// TooFew counts the windows with too few calls to tell.
	TooFew int `json:"too_few_windows"`
}

// windowsSection is the group's windows: a row each (at most the first
// and last maxWindowRows when there are more), the worst marked.
func windowsSection(g Group) *Section {
	if len(g.Windows) == 0 {
		return nil
	}
	t := &Table{Class: "windows", Columns: []Column{{Title: "window"}, {Title: "calls", Numeric: true}, {Title: "p50", Numeric: true},
		{Title: "p99", Numeric: true}, {Title: "p99.9", Numeric: true}, {Title: "timeout", Numeric: true}, {Title: ""}}}
	rows := g.Windows
	skipped := 0
	if len(rows) > maxWindowRows {
		skipped = len(rows) - maxWindowRows
	}
	for i, w := range rows {
		if skipped > 0 && i == maxWindowRows/2 {
			t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: fmt.Sprintf("... %s windows more (all in the JSON)", human.Count(int64(skipped)))},
				{}, {}, {}, {}, {}, {}}})
		}
		if skipped > 0 && i >= maxWindowRows/2 && i < maxWindowRows/2+skipped {
			continue
		}
		mark := ""
		switch {
		case g.WorstWindow != nil && w.Start.Equal(g.WorstWindow.Start):
			mark = "worst"
		case !w.EnoughData && g.WorstWindow != nil && g.WorstWindow.Significant:
			// A window is told apart: the others are not too few to
			// tell, their own quantile is only not placed closely.
			mark = "wide interval"
		case !w.EnoughData:
			mark = "too few to tell"
		}
		p := func(q float64) string {
			for _, pc := range w.Percentiles {
				if pc.Quantile == q {
					return human.Seconds(pc.Seconds)
				}
			}
			return "-"
		}
		timeout := "-"
		if w.Samples > 0 {
			timeout = human.Seconds(w.TimeoutSeconds)
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: windowName(w.Start, w.End)}, {Text: human.Count(w.Samples)}, {Text: p(0.5)},
			{Text: p(0.99)}, {Text: p(0.999)}, {Text: timeout}, {Text: mark}}})
	}
	blocks := []Block{}
	if ww := g.WorstWindow; ww != nil {
		blocks = append(blocks, textPara(ww.Reason))
	} else {
		text := fmt.Sprintf("No window has enough calls above the quantile to tell which is the worst (%s): the recommendation is the whole period's.", usage.WindowPrecision)
		switch n := g.WindowCallsNeeded; {
		case n > 0:
			text += fmt.Sprintf(" To tell a window whose %s is a fifth above the rest's from the noise, it would need about %s calls, against the %s of the median window: longer windows, or a daily profile, would tell.",
				human.Quantile(g.Recommendation.Quantile), human.Count(n), human.Count(medianWindowCalls(g.Windows)))
		case n < 0:
			text += fmt.Sprintf(" Even with all the period's calls a window whose %s were a fifth above the rest's could not be told apart from it.", human.Quantile(g.Recommendation.Quantile))
		}
		blocks = append(blocks, textPara(text))
	}
	blocks = append(blocks, Block{Table: t})
	return &Section{ID: "windows", Title: "Windows", Blocks: blocks}
}

// medianWindowCalls is the median of the windows' calls, those with any.
func medianWindowCalls(ws []Window) int64 {
	var ns []int64
	for _, w := range ws {
		if w.Samples > 0 {
			ns = append(ns, w.Samples)
		}
	}
	if len(ns) == 0 {
		return 0
	}
	slices.Sort(ns)
	return ns[len(ns)/2]
}

// maxWindowRows bounds the windows the text shows; the JSON has them all.
const maxWindowRows = 48

// windowName is a window as people read it, in UTC.
func windowName(start, end time.Time) string {
	s, e := start.UTC(), end.UTC()
	if s.Year() == e.Year() && s.YearDay() == e.YearDay() || e.Equal(s.Truncate(24*time.Hour).Add(24*time.Hour)) && e.Sub(s) <= 24*time.Hour {
		if s.Second() == 0 && e.Second() == 0 {
			return s.Format("2006-01-02 15:04") + " to " + e.Format("15:04")
		}
		return s.Format("2006-01-02 15:04:05") + " to " + e.Format("15:04:05")
	}
	return s.Format("2006-01-02 15:04") + " to " + e.Format("2006-01-02 15:04")
}

// windowsPlot is the group's windows over time, for HTML.
func windowsPlot(id string, g Group) (plot.Scene, bool) {
	if len(g.Windows) < 2 {
		return plot.Scene{}, false
	}
	points := make([]plot.WindowPoint, len(g.Windows))
	for i, w := range g.Windows {
		p := plot.WindowPoint{Start: w.Start, TooFew: w.Samples > 0 && !w.EnoughData,
			Worst: g.WorstWindow != nil && g.WorstWindow.Significant && w.Start.Equal(g.WorstWindow.Start)}
		for _, pc := range w.Percentiles {
			switch pc.Quantile {
			case 0.5:
				p.P50 = pc.Seconds
			case 0.99:
				p.P99 = pc.Seconds
			case 0.999:
				p.P999 = pc.Seconds
			}
		}
		points[i] = p
	}
	return plot.Windows(id, g.Name, points, g.Recommendation.TimeoutSeconds)
}
