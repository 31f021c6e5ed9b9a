package analysis

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// stepWeek is a week of --step 1h classic buckets (le 0.1, 0.25, 0.5, 1,
// 2, +Inf): 1,500 calls an hour, 5 of them in (0.5s, 1s] and none slower;
// at 18:00 on the days peak says, 3,000 calls, 10 in (1s, 2s].
func stepWeek(t *testing.T, peak func(time.Time) bool) promsource.Group {
	t.Helper()
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	g := promsource.Group{Name: "all"}
	var total float64
	for h := range 7 * 24 {
		at := start.Add(time.Duration(h) * time.Hour)
		cum := []float64{900, 1350, 1495, 1500, 1500, 1500}
		if at.Hour() == 18 && peak(at) {
			cum = []float64{1800, 2700, 2980, 2990, 3000, 3000}
		}
		les := []promsource.LE{{Upper: 0.1, Cumulative: cum[0]}, {Upper: 0.25, Cumulative: cum[1]}, {Upper: 0.5, Cumulative: cum[2]},
			{Upper: 1, Cumulative: cum[3]}, {Upper: 2, Cumulative: cum[4]}, {Upper: math.Inf(1), Cumulative: cum[5]}}
		hist, err := promsource.FromClassic(les, time.Second)
		require.NoError(t, err)
		g.Steps = append(g.Steps, promsource.Step{End: at.Add(time.Hour), Hist: hist})
		total += cum[5]
	}
	g.Calls = total
	return g
}

// TestStepProfile (issue 31, item 4): Prometheus --step's steps pooled by
// hour of the day. The seven 18:00 steps hold 21,000 calls, 70 above 1s:
// the lower rank of their p99.9 for the 24 slots at once, 20,964 (21,000 x
// 0.999 less 3.08 x 4.58), lies in (1s, 2s], at or above the other slots'
// upper bound, 1s (their upper rank, 241,290 of 241,500, lies in (0.5s,
// 1s]); no other slot is told apart. A week with no peak names none.
func TestStepProfile(t *testing.T) {
	o := Options{Recommend: recommend.DefaultOptions()}
	p, slot, err := advice.StepProfile(stepWeek(t, everyDay), o.WindowOptions, o.Recommend, time.Hour, 0.999, 0.95, true)
	require.NoError(t, err)
	require.NotNil(t, slot, "the worst slot's buckets, for the recommendation")
	assert.Equal(t, 21000.0, slot.Count)
	require.NotNil(t, p, "a week of steps gets the daily profile")
	assert.Equal(t, "daily", p.Kind)
	require.Len(t, p.Slots, 24)
	assert.Len(t, p.Cells, 7*24)
	require.NotNil(t, p.WorstSlot, p.Reason)
	assert.Equal(t, "18:00-19:00", p.WorstSlot.Slot)
	assert.Equal(t, 7, p.WorstSlot.Days)
	assert.True(t, p.WorstSlot.Used)
	s := p.Slots[18]
	assert.EqualValues(t, 21000, s.Samples)
	assert.Equal(t, 2.0, s.QuantileSeconds, "p99.9's bucket (1s, 2s], at its upper bound")
	assert.Equal(t, 1.0, s.FamilyLowSeconds)
	require.NotNil(t, s.RestHighSeconds)
	assert.Equal(t, 1.0, *s.RestHighSeconds)
	assert.True(t, s.Significant)
	assert.InDelta(t, 21000.0/(7*3600), s.RatePerSecond, 1e-12)
	assert.Contains(t, p.WorstSlot.Reason, "18:00-19:00 UTC on 7 of 7 days")
	for _, o := range p.Slots {
		if o.Index != 18 {
			assert.False(t, o.Significant, o.Slot)
			assert.Equal(t, 1.0, o.QuantileSeconds, o.Slot)
			assert.EqualValues(t, 10500, o.Samples, o.Slot)
		}
	}
	assert.Equal(t, 2.0, p.Cells[18].QuantileSeconds, "Monday 18:00")
	assert.Equal(t, 1.0, p.Cells[17].QuantileSeconds)

	none, slot, err := advice.StepProfile(stepWeek(t, func(time.Time) bool { return false }), o.WindowOptions, o.Recommend, time.Hour, 0.999, 0.95, true)
	require.NoError(t, err)
	assert.Nil(t, slot)
	require.NotNil(t, none)
	assert.Nil(t, none.WorstSlot)
	assert.Contains(t, none.Reason, "No hour of the day is worse beyond the noise")

	g := stepWeek(t, everyDay)
	g.Steps = g.Steps[:48]
	short, _, err := advice.StepProfile(g, o.WindowOptions, o.Recommend, time.Hour, 0.999, 0.95, true)
	require.NoError(t, err)
	assert.Nil(t, short, "two days: auto pools nothing")
	_, _, err = advice.StepProfile(g, advice.WindowOptions{Profile: advice.ProfileDaily}, recommend.DefaultOptions(), 2*time.Hour, 0.999, 0.95, true)
	require.ErrorContains(t, err, "does not divide an hour")
}

// TestStepProfileReport: a Prometheus group with --step over a week
// carries the profile into its report: the recommendation builds on the
// worst slot's steps pooled, Little's law at its rate, and says so; with
// --aggregate overall it is the whole window's; the HTML has the heat map.
func TestStepProfileReport(t *testing.T) {
	g := stepWeek(t, everyDay)
	var les []promsource.LE
	for _, b := range g.Steps[0].Hist.Buckets {
		les = append(les, promsource.LE{Upper: b.Hi})
	}
	for _, st := range g.Steps {
		for i, b := range st.Hist.Buckets {
			les[i].Cumulative += b.Cumulative
		}
	}
	overall, err := promsource.FromClassic(les, time.Second)
	require.NoError(t, err)
	g.Overall = overall
	res := &promsource.Result{Kind: promsource.Classic, Unit: time.Second, Window: 7 * 24 * time.Hour, Step: time.Hour, Groups: []promsource.Group{g}}
	o := Options{Recommend: recommend.DefaultOptions(), Rate: 0}
	run := func(p PrometheusOptions) *report.Report {
		r := &report.Report{Groups: []report.Group{}}
		require.NoError(t, bucketedGroups(context.Background(), o, p, res, r, true))
		return r
	}
	r := run(PrometheusOptions{})
	require.Len(t, r.Groups, 1)
	rg := r.Groups[0]
	require.NotNil(t, rg.Profile)
	require.NotNil(t, rg.Profile.WorstSlot)
	assert.Equal(t, "18:00-19:00", rg.Profile.WorstSlot.Slot)
	require.NotNil(t, rg.WorstWindow)
	assert.Equal(t, 18, rg.WorstWindow.Start.Hour(), "the worst step is a peak hour")
	assert.False(t, rg.WorstWindow.Used)
	assert.Contains(t, rg.WorstWindow.Reason, "The recommendation is the profile's worst hour's instead (18:00-19:00)")
	assert.Equal(t, "18:00-19:00", rg.Buckets.UsesWorstSlot)
	assert.False(t, rg.Buckets.UsesWorstStep)
	assert.Equal(t, 21000.0, rg.Buckets.Calls)
	assert.EqualValues(t, 21000, rg.Samples)
	assert.Equal(t, 2.0, rg.Recommendation.TimeoutSeconds, "the slot's p99.9 bucket (1s, 2s], at its upper bound")
	require.NotNil(t, rg.LittlesLaw)
	require.NotNil(t, rg.LittlesLaw.RatePerSecond)
	assert.InDelta(t, 21000.0/(7*3600), *rg.LittlesLaw.RatePerSecond, 1e-12, "Little's law at the slot's rate")
	var text, html bytes.Buffer
	require.NoError(t, report.WriteText(&text, r))
	assert.Contains(t, text.String(), "Daily profile")
	assert.Contains(t, text.String(), "Rate 0.83 calls/s in the profile's worst hour")
	assert.Contains(t, text.String(), "18:00-19:00  7 of 7  21,000  100ms  500ms     2s        1s to 2s       2s  worst")
	assert.Contains(t, rg.Profile.WorstSlot.Reason, "are that slot's, ahead of the worst step")
	assert.Contains(t, text.String(), "The recommendation builds on the profile's worst hour, 18:00-19:00, its steps pooled (21,000")
	require.NoError(t, report.WriteHTML(&html, r))
	assert.Equal(t, 7*24, strings.Count(html.String(), `class="profile-cell`), "the heat map: a cell per day and hour")
	assert.Equal(t, 7, strings.Count(html.String(), `class="worst-slot`), "the worst slot outlined on each day")

	all := run(PrometheusOptions{Overall: true}).Groups[0]
	require.NotNil(t, all.Profile.WorstSlot)
	assert.False(t, all.Profile.WorstSlot.Used)
	assert.Empty(t, all.Buckets.UsesWorstSlot)
	assert.EqualValues(t, 262500, all.Samples, "--aggregate overall: the whole window")
}
