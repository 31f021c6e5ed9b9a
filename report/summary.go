package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// SummaryRow is one group's line of the summary table that every output
// format puts first when a report has several groups.
type SummaryRow struct {
	Group          string  `json:"group"`
	Samples        int64   `json:"samples"`
	P50Seconds     float64 `json:"p50_seconds"`
	P999Seconds    float64 `json:"p99_9_seconds"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// PoolExhausted is whether a hang exhausts the pool; null when the rate
	// or the pool is unknown.
	PoolExhausted *bool `json:"pool_exhausted"`
	// PoolVerdict says it in words: "exhausted after 0.5s", "fits", "unknown".
	PoolVerdict string `json:"pool_verdict"`
	// Uncertainty is the risk measure of the summary's order, see
	// Uncertainty; null when the interval has no upper end.
	Uncertainty *float64 `json:"uncertainty"`
	// Index is the group's position in Report.Groups.
	Index int `json:"-"`
}

// Uncertainty measures how much the data leave the recommendation open:
// the gap between the measured quantile the timeout builds on (p99.9 by
// default; Recommendation.BaseSeconds) and the upper end of its confidence
// interval, relative to the measured quantile:
//
//	(interval.high_seconds - base_seconds) / base_seconds
//
// 0.01 says the true quantile may lie 1 % above the measured one. It is
// +Inf when the interval has no upper end (the upper rank lies beyond the
// largest sample: too few calls above the quantile) or the quantile is only
// a lower bound (censored samples, or a pile-up at an existing timeout):
// then nothing in the data bounds the true quantile from above. A quantile
// of 0 s with a known interval gives 0.
func Uncertainty(g Group) float64 {
	rec := g.Recommendation
	if rec.LowerBound || rec.Interval.HighSeconds == nil {
		return math.Inf(1)
	}
	if rec.BaseSeconds <= 0 {
		return 0
	}
	return max(*rec.Interval.HighSeconds-rec.BaseSeconds, 0) / rec.BaseSeconds
}

// Summarize returns one row per group, riskiest first:
//
//  1. groups whose pool a hang exhausts (pool_exhausted true), sooner
//     exhaustion first; a pool that fits and an unknown pool rank alike;
//  2. then the widest Uncertainty first (unbounded intervals before any
//     bounded one);
//  3. then by name, so the order is stable.
func Summarize(r *Report) []SummaryRow {
	rows := make([]SummaryRow, 0, len(r.Groups))
	for i, g := range r.Groups {
		row := SummaryRow{
			Group:          g.Name,
			Samples:        g.Samples,
			P50Seconds:     percentile(g, 0.5),
			P999Seconds:    percentile(g, 0.999),
			TimeoutSeconds: g.Recommendation.TimeoutSeconds,
			PoolExhausted:  g.LittlesLaw.PoolExhausted,
			PoolVerdict:    poolVerdict(g.LittlesLaw, r.SharedPool != nil),
			Index:          i,
		}
		if u := Uncertainty(g); !math.IsInf(u, 1) {
			row.Uncertainty = ptr(u)
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b SummaryRow) int {
		ea, eb := a.exhausted(), b.exhausted()
		if ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if ea {
			if c := cmp.Compare(exhaustionSeconds(r.Groups[a.Index]), exhaustionSeconds(r.Groups[b.Index])); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(Uncertainty(r.Groups[b.Index]), Uncertainty(r.Groups[a.Index])); c != 0 {
			return c
		}
		return cmp.Compare(a.Group, b.Group)
	})
	return rows
}

func (row SummaryRow) exhausted() bool {
	return row.PoolExhausted != nil && *row.PoolExhausted
}

func exhaustionSeconds(g Group) float64 {
	if s := g.LittlesLaw.SecondsToExhaustion; s != nil {
		return *s
	}
	return math.Inf(1)
}

// UncertaintyText shows an uncertainty for people: "+1.2 %", "unbounded".
func UncertaintyText(u *float64) string {
	if u == nil {
		return "unbounded"
	}
	return "+" + human.Percent(*u)
}

// summaryLegend explains the summary's order and its uncertainty column;
// the quantile and the confidence are those the recommendations build on.
func summaryLegend(r *Report) string {
	q, c := "p99.9", "95 %"
	if len(r.Groups) > 0 {
		rec := r.Groups[0].Recommendation
		q, c = human.Quantile(rec.Quantile), human.Percent(rec.Interval.Confidence)
	}
	return fmt.Sprintf("Riskiest first: pools a hang exhausts, then the widest uncertainty, how far the %s "+
		"confidence interval of %s reaches above it (unbounded: nothing in the data bounds it).", c, q)
}
