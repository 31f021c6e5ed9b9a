package report

import (
	"bytes"
	"encoding/json"
	"html"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
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

func TestDistributionBins(t *testing.T) {
	h := histogram.New()
	for i := range 1000 {
		h.Record(time.Duration(10+i%90) * time.Millisecond) // 10ms to 99ms
	}
	h.Record(800 * time.Millisecond)
	d := newDistribution(h.Bars())
	require.NotNil(t, d)
	assert.Equal(t, 0.00891, d.LowestSeconds, "the grid bound below 10ms")
	assert.Equal(t, 0.01, d.Bins[0].UpperSeconds, "10ms is a bound: the 10ms samples are at most it")
	assert.Equal(t, 0.891, d.Bins[len(d.Bins)-1].UpperSeconds, "800ms lies above the bound 0.794 and at most 0.891")
	assert.Len(t, d.Bins, 40, "20 per decade from 10ms to 891ms, the empty ones between included")
	var n int64
	for i, b := range d.Bins {
		n += b.Count
		if i > 0 {
			assert.Greater(t, b.UpperSeconds, d.Bins[i-1].UpperSeconds)
		}
	}
	assert.Equal(t, h.Count(), n)
	assert.Equal(t, int64(1), d.Bins[len(d.Bins)-1].Count)
	assert.Equal(t, int64(0), d.Bins[len(d.Bins)-2].Count)

	// From 1µs to a day: eleven decades fit in 100 bins at 5 per decade.
	wide := histogram.New()
	wide.Record(0)
	wide.Record(time.Microsecond)
	wide.Record(20 * time.Millisecond)
	wide.Record(24 * time.Hour)
	d = newDistribution(wide.Bars())
	assert.LessOrEqual(t, len(d.Bins), MaxBins)
	assert.Len(t, d.Bins, 56, "5 per decade: from 1µs to 100,000s, eleven decades and the first bound")
	assert.Equal(t, 1e-6, d.Bins[0].UpperSeconds, "zero and 1µs share the first bin")
	assert.Equal(t, int64(2), d.Bins[0].Count)
	assert.Equal(t, 6.31e-7, d.LowestSeconds, "one fifth of a decade below 1µs, on the grid")
	assert.Nil(t, newDistribution(nil))
}

func TestGridBounds(t *testing.T) {
	var decade []float64
	for k := range 20 {
		decade = append(decade, gridBound(k-60))
	}
	assert.Equal(t, []float64{0.001, 0.00112, 0.00126, 0.00141, 0.00158, 0.00178, 0.002, 0.00224, 0.00251, 0.00282,
		0.00316, 0.00355, 0.00398, 0.00447, 0.00501, 0.00562, 0.00631, 0.00708, 0.00794, 0.00891}, decade)
	for _, v := range []float64{1e-6, 0.00112, 0.001121, 0.8, 0.794, 86400} {
		k := gridIndex(v)
		assert.True(t, gridBound(k-1) < v && v <= gridBound(k), "%v in (%v, %v]", v, gridBound(k-1), gridBound(k))
	}
}
