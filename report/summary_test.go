package report

import (
	"bytes"
	"encoding/json"
	"html"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// riskGroup is a group with a p99.9 of base seconds whose interval reaches
// up to hi (nil: unbounded) and a pool that a hang exhausts after
// exhaustAfter seconds (0: it fits; < 0: unknown).
func riskGroup(name string, base float64, hi *float64, exhaustAfter float64) Group {
	g := Group{Name: name, Samples: 1000,
		Percentiles: []Percentile{{Quantile: 0.5, Seconds: base / 10}, {Quantile: 0.999, Seconds: base}},
		Recommendation: Recommendation{Quantile: 0.999, BaseSeconds: base, TimeoutSeconds: base,
			Interval: Interval{Confidence: 0.95, LowSeconds: base * 0.9, HighSeconds: hi}},
	}
	switch {
	case exhaustAfter > 0:
		g.LittlesLaw.PoolExhausted, g.LittlesLaw.SecondsToExhaustion = ptr(true), ptr(exhaustAfter)
	case exhaustAfter == 0:
		g.LittlesLaw.PoolExhausted = ptr(false)
	}
	return g
}

func TestUncertainty(t *testing.T) {
	assert.InDelta(t, 0.25, Uncertainty(riskGroup("a", 0.8, ptr(1.0), 0)), 1e-12, "(1 - 0.8) / 0.8")
	assert.True(t, math.IsInf(Uncertainty(riskGroup("a", 0.8, nil, 0)), 1), "no upper end: unbounded")
	lb := riskGroup("a", 0.8, ptr(0.9), 0)
	lb.Recommendation.LowerBound = true
	assert.True(t, math.IsInf(Uncertainty(lb), 1), "a lower bound is not bounded above")
	assert.Equal(t, 0.0, Uncertainty(riskGroup("a", 0, ptr(0.0), 0)))
}

func TestSummarizeRiskOrder(t *testing.T) {
	r := &Report{Groups: []Group{
		riskGroup("/calm", 0.8, ptr(0.808), 0),          // fits, +1 %
		riskGroup("/thin", 0.8, ptr(1.2), 0),            // fits, +50 %
		riskGroup("/unknown-pool", 0.8, ptr(0.88), -1),  // unknown, +10 %
		riskGroup("/exhausted-late", 0.8, ptr(0.8), 5),  // exhausted after 5s
		riskGroup("/exhausted-soon", 0.8, ptr(0.8), .5), // exhausted after 0.5s
		riskGroup("/unbounded", 0.8, nil, 0),            // fits, unbounded
		riskGroup("/also-calm", 0.8, ptr(0.808), 0),     // ties /calm: by name
	}}
	var names []string
	for _, row := range Summarize(r) {
		names = append(names, row.Group)
		assert.Equal(t, r.Groups[row.Index].Name, row.Group, "Index points back at the group")
	}
	assert.Equal(t, []string{"/exhausted-soon", "/exhausted-late", "/unbounded", "/thin", "/unknown-pool", "/also-calm", "/calm"}, names)

	rows := Summarize(r)
	assert.Nil(t, rows[2].Uncertainty, "unbounded is null in JSON")
	assert.Equal(t, "unbounded", UncertaintyText(rows[2].Uncertainty))
	assert.Equal(t, "+50 %", UncertaintyText(rows[3].Uncertainty))
	assert.Equal(t, "exhausted after 0.5s", rows[0].PoolVerdict)
	assert.Equal(t, 0.08, rows[0].P50Seconds)
}

// TestSummaryInEveryFormat: text, JSON, Markdown and HTML put the summary
// first, riskiest group first, when there are several groups, and leave it
// out for one.
func TestSummaryInEveryFormat(t *testing.T) {
	r := &Report{Input: Input{Files: []string{"x.csv"}}, Groups: []Group{
		riskGroup("/b-calm", 0.8, ptr(0.808), 0),
		riskGroup("/a-exhausted", 0.8, ptr(0.808), 1),
	}}
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			write, err := Lookup(format)
			require.NoError(t, err)
			var b bytes.Buffer
			require.NoError(t, write(&b, r))
			out := b.String()
			if format == "html" {
				out = html.UnescapeString(out)
			}
			if format == "json" {
				var doc struct{ Summary []SummaryRow }
				require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
				require.Len(t, doc.Summary, 2)
				assert.Equal(t, "/a-exhausted", doc.Summary[0].Group)
				assert.Contains(t, out, `"uncertainty": 0.01`)
				return
			}
			i, j, k := indexOf(out, "Summary"), indexOf(out, "/a-exhausted"), indexOf(out, "/b-calm")
			require.True(t, i >= 0 && j >= 0 && k >= 0, out)
			assert.Less(t, i, j, "the summary comes first")
			assert.Less(t, j, k, "riskiest first, though its name sorts after")
			assert.Contains(t, out, "+1 %")
		})
	}
	one := &Report{Input: Input{Files: []string{"x.csv"}}, Groups: r.Groups[:1]}
	for _, format := range Formats() {
		write, _ := Lookup(format)
		var b bytes.Buffer
		require.NoError(t, write(&b, one))
		assert.NotContains(t, b.String(), "Summary", format)
		assert.NotContains(t, b.String(), `"summary"`, format)
	}
}

func indexOf(s, sub string) int { return bytes.Index([]byte(s), []byte(sub)) }
