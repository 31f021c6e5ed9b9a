package report

import (
	"fmt"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/report/plot"
)

// Profile is a group's windows pooled by the hour of the day (daily) or
// of the week (weekly) in a time zone: per slot the calls of that hour on
// every day it occurred, their quantiles and the timeout they give; the
// worst slot when one is worse beyond the noise (docs/windows.md).
type Profile struct {
	Kind string `json:"kind"` // daily or weekly
	TZ   string `json:"tz"`   // the IANA zone of the slots' hours
	// Quantile is the recommendation's quantile, the one Cells show.
	Quantile    float64       `json:"quantile"`
	SlotSeconds float64       `json:"slot_seconds"`
	Slots       []ProfileSlot `json:"slots"`
	// WorstSlot is the slot whose lower bound, holding for all the slots
	// at once, lies above the upper bound of the other slots pooled, the
	// highest such; null when none does.
	WorstSlot *WorstSlot `json:"worst_slot"`
	// CallsNeeded is, when no slot is told apart, about how many calls a
	// slot would need (as WindowCallsNeeded); -1: more than the period
	// holds.
	CallsNeeded int64  `json:"calls_needed,omitempty"`
	Reason      string `json:"reason"`
	// Cells are the quantile per day and hour of the period, in the zone:
	// the heat map's cells.
	Cells []ProfileCell `json:"cells"`
}

// ProfileSlot is one hour of the day (or of the week) pooled across the
// days it occurred.
type ProfileSlot struct {
	Slot  string `json:"slot"`  // "18:00-19:00", or "Mon 18:00-19:00"
	Index int    `json:"index"` // hour of the day, or of the week from Monday 00:00
	// Days counts the days (weeks, for weekly) with calls in the slot, Of
	// the days of the period the slot's hour lies in.
	Days          int          `json:"days"`
	Of            int          `json:"of"`
	Samples       int64        `json:"samples"`
	RatePerSecond float64      `json:"rate_per_second"`
	Percentiles   []Percentile `json:"percentiles"`
	// QuantileSeconds is the recommendation's quantile over the slot's
	// calls, with its interval; FamilyLowSeconds the lower bound that
	// holds for all the slots at once (Bonferroni), which ranks them.
	QuantileSeconds  float64  `json:"quantile_seconds"`
	Interval         Interval `json:"interval"`
	FamilyLowSeconds float64  `json:"family_low_seconds"`
	TimeoutSeconds   float64  `json:"timeout_seconds"`
	// Significant: FamilyLowSeconds lies above RestHighSeconds, the upper
	// bound of the other slots pooled (the whole period less this slot).
	Significant     bool     `json:"significant"`
	RestHighSeconds *float64 `json:"rest_high_seconds,omitempty"`
}

// WorstSlot is the slot the timeout must survive.
type WorstSlot struct {
	Slot                string  `json:"slot"`
	Index               int     `json:"index"`
	Days                int     `json:"days"`
	Of                  int     `json:"of"`
	Samples             int64   `json:"samples"`
	QuantileSeconds     float64 `json:"quantile_seconds"`
	TimeoutSeconds      float64 `json:"timeout_seconds"`
	WholeTimeoutSeconds float64 `json:"whole_timeout_seconds"`
	// Used says the group's recommendation is this slot's (not with
	// --for all).
	Used   bool   `json:"used"`
	Reason string `json:"reason"`
}

// ProfileCell is one hour of one day: its calls and the quantile.
type ProfileCell struct {
	Day             string  `json:"day"` // 2026-11-02, in the zone
	Hour            int     `json:"hour"`
	Weekday         int     `json:"weekday"` // 0 Monday .. 6 Sunday
	Samples         int64   `json:"samples"`
	QuantileSeconds float64 `json:"quantile_seconds"`
}

// profileSection is the group's profile: the reason, then a row per slot
// with calls, the worst marked.
func profileSection(g Group) *Section {
	p := g.Profile
	if p == nil {
		return nil
	}
	q := human.Quantile(p.Quantile)
	t := &Table{Class: "profile", Columns: []Column{{Title: "slot (" + p.TZ + ")"}, {Title: "days", Numeric: true}, {Title: "calls", Numeric: true},
		{Title: "p50", Numeric: true}, {Title: "p99", Numeric: true}, {Title: "p99.9", Numeric: true},
		{Title: q + " interval", Numeric: true}, {Title: "timeout", Numeric: true}, {Title: ""}}}
	for _, s := range p.Slots {
		pc := func(quantile float64) string {
			for _, pc := range s.Percentiles {
				if pc.Quantile == quantile {
					return human.Seconds(pc.Seconds)
				}
			}
			return "-"
		}
		interval, timeout := "-", "-"
		if s.Samples > 0 {
			hi := "beyond the largest call"
			if s.Interval.HighSeconds != nil {
				hi = human.Seconds(*s.Interval.HighSeconds)
			}
			interval = human.Seconds(s.Interval.LowSeconds) + " to " + hi
			timeout = human.Seconds(s.TimeoutSeconds)
		}
		mark := ""
		switch {
		case p.WorstSlot != nil && p.WorstSlot.Index == s.Index:
			mark = "worst"
		case s.Significant:
			mark = "worse than the whole"
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: s.Slot}, {Text: fmt.Sprintf("%d of %d", s.Days, s.Of)}, {Text: human.Count(s.Samples)},
			{Text: pc(0.5)}, {Text: pc(0.99)}, {Text: pc(0.999)}, {Text: interval}, {Text: timeout}, {Text: mark}}})
	}
	title := "Daily profile"
	if p.Kind == "weekly" {
		title = "Weekly profile"
	}
	return &Section{ID: "profile", Title: title, Blocks: []Block{textPara(p.Reason), {Table: t}}}
}

// profilePlot is the group's profile as a heat map, for HTML.
func profilePlot(id string, g Group) (plot.Scene, bool) {
	p := g.Profile
	if p == nil {
		return plot.Scene{}, false
	}
	cells := make([]plot.ProfileCell, len(p.Cells))
	for i, c := range p.Cells {
		cells[i] = plot.ProfileCell{Day: c.Day, Hour: c.Hour, Samples: c.Samples, Quantile: c.QuantileSeconds}
		if ws := p.WorstSlot; ws != nil {
			cells[i].Worst = c.Hour == ws.Index%24 && (p.Kind != "weekly" || c.Weekday == ws.Index/24)
		}
	}
	return plot.Profile(id, g.Name, human.Quantile(p.Quantile), p.TZ, cells, g.Recommendation.TimeoutSeconds)
}
