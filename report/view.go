package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// The cells the text, Markdown and HTML reports share: each figure is
// formatted here once, and the renderers only put the cells in their own
// syntax (tabwriter columns, pipe tables, template rows) and escape them.

// candidateCells is one row of a group's candidate timeouts.
type candidateCells struct {
	Timeout, CutOff, InFlight, Multiple string
	Chosen                              bool // the recommended timeout
}

func candidateRows(g Group) []candidateCells {
	rows := make([]candidateCells, 0, len(g.Candidates))
	for _, c := range g.Candidates {
		r := candidateCells{Timeout: human.Seconds(c.TimeoutSeconds), CutOff: human.Percent(c.CutOffFraction),
			InFlight: "-", Multiple: "-", Chosen: c.TimeoutSeconds == g.Recommendation.TimeoutSeconds}
		if c.InFlightDuringHang != nil {
			r.InFlight = human.Number(*c.InFlightDuringHang)
		}
		if c.PoolMultiple != nil {
			r.Multiple = fmt.Sprintf("%.2f", *c.PoolMultiple)
		}
		rows = append(rows, r)
	}
	return rows
}

// percentileCells is one row of a group's latency table. Value is the
// figure alone; a lower bound is marked by the renderer (">= " in text,
// "≥ " elsewhere).
type percentileCells struct {
	Name, Value, Note string
	LowerBound        bool
	Chosen            bool // the quantile the timeout builds on; Note is its interval
}

func percentileRows(g Group) []percentileCells {
	rec := g.Recommendation
	rows := make([]percentileCells, 0, len(g.Percentiles))
	for _, p := range g.Percentiles {
		r := percentileCells{Name: human.Quantile(p.Quantile), Value: human.Seconds(p.Seconds), LowerBound: p.LowerBound,
			Chosen: p.Quantile == rec.Quantile}
		if r.Chosen {
			r.Note = intervalText(rec)
		}
		rows = append(rows, r)
	}
	return rows
}

// excludedParts lists what a group did not count, "961 status 5xx", by
// reason; esc escapes the reason (which may come from the input) for the
// renderer, nil for none.
func excludedParts(g Group, esc func(string) string) []string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g.Excluded)) {
		reason := k
		if esc != nil {
			reason = esc(k)
		}
		parts = append(parts, human.Count(g.Excluded[k])+" "+reason)
	}
	return parts
}
