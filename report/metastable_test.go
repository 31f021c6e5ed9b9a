package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// TestMetastableCureSummary: each kind of cure says its change with the
// flag that makes it and its numbers.
func TestMetastableCureSummary(t *testing.T) {
	res := simulate.LoopResult{Recovered: true, Recovery: 5 * time.Second, PeakLoadRatio: 0.925, FinalGoodputRatio: 1}
	for _, c := range []struct {
		cure simulate.Cure
		want string
	}{
		{simulate.Cure{Kind: simulate.CureRetryBudget, RetryBudget: 0.02}, "a retry budget of 2 % of requests (--retry-budget 2%, the largest tried that recovers) recovers 5s after the trigger ends, at a peak load of 92.5 %"},
		{simulate.Cure{Kind: simulate.CureAttempts, Attempts: 2}, "2 attempts (--attempts 2, the most that recover)"},
		{simulate.Cure{Kind: simulate.CureBackoff, Factor: 4, Backoff: recommend.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}}, "a backoff 4x as long (--backoff-base 100ms --backoff-cap 1s)"},
		{simulate.Cure{Kind: simulate.CureDropExpired, Tried: 1}, "a server that drops the calls whose caller gave up (--drop-expired) recovers"},
		{simulate.Cure{Kind: simulate.CureDropExpired, Tried: 13}, "(--drop-expired; no change of the call policy tried does: budgets down to 1 %"},
		{simulate.Cure{Kind: simulate.CureRate, Factor: 0.9, Rate: 360}, "a rate of 360 requests/s (10 % of it shed or sent elsewhere"},
	} {
		c.cure.Result = res
		got := NewMetastableCure(c.cure)
		assert.Equal(t, c.cure.Kind, got.Change)
		assert.Contains(t, got.Summary, c.want)
		assert.Equal(t, 5.0, got.RecoverySeconds)
	}
}

// TestMetastabilitySectionCure: the text names the cure, or says that
// nothing tried recovers.
func TestMetastabilitySectionCure(t *testing.T) {
	m := &Metastability{Trigger: "slow:3x:1m", RecoverWithinSeconds: 300, Reason: "stuck", CapacityPerSecond: 444,
		Cure: &MetastableCure{Change: "drop-expired", Summary: "a server that drops the calls", Runs: 13}}
	text := sectionText(t, metastabilitySection(Group{Policy: &Policy{Metastability: m}}))
	assert.Contains(t, text, "The cheapest cure: a server that drops the calls (13 closed loops run")
	m.Cure, m.CureReason = nil, "no change tried recovers"
	assert.Contains(t, sectionText(t, metastabilitySection(Group{Policy: &Policy{Metastability: m}})), "No cure found: no change tried recovers.")
}

// boundaryReport is a report whose group ran slow:3x:1m and its sweep:
// 1.5x recovered from 1 s and 2 s (back 5 s and 12 s after), not 5 s,
// and again from 10 s; 3x only from 1 s.
func boundaryReport() *Report {
	r := unknowns()
	m := NewMetastability(simulate.LoopResult{Options: simulate.LoopOptions{Trigger: simulate.Trigger{Kind: simulate.TriggerSlow, Factor: 3, Duration: 10 * time.Second},
		RecoverWithin: 5 * time.Minute}, Recovery: -1}, "--workers", "--rate")
	m.Reason = "stuck"
	durations := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second}
	var cells []simulate.SweepCell
	for _, c := range []struct {
		f         float64
		recovered []int // seconds back, -1 not recovered
	}{{1.5, []int{5, 12, -1, 40}}, {3, []int{30, -1, -1, -1}}} {
		for i, back := range c.recovered {
			cells = append(cells, simulate.SweepCell{Factor: c.f, Duration: durations[i], Recovered: back >= 0, Recovery: time.Duration(back) * time.Second})
		}
	}
	m.AddBoundary(cells, []float64{1.5, 3}, durations)
	m.Cure = &MetastableCure{Change: "drop-expired", Summary: "a server that drops the calls", Runs: 13}
	r.Groups[0].Policy = &Policy{Attempts: 3, Metastability: m}
	return r
}

// TestBoundaryEveryCell: the JSON keeps every trigger's outcome beside the
// boundary, which counts only the recovered ones from the shortest (1.5x:
// 2 s, though 10 s recovered too); the text keeps its table alone.
func TestBoundaryEveryCell(t *testing.T) {
	m := boundaryReport().Groups[0].Policy.Metastability
	require.Len(t, m.Boundary, 2)
	b := m.Boundary[0]
	assert.Equal(t, 2.0, b.LongestRecoveredSeconds)
	assert.Equal(t, []bool{true, true, false, true}, b.Recovered)
	require.Len(t, b.RecoverySeconds, 4)
	assert.Equal(t, 12.0, *b.RecoverySeconds[1])
	assert.Nil(t, b.RecoverySeconds[2])
	assert.Equal(t, 40.0, *b.RecoverySeconds[3])
	assert.Equal(t, []bool{true, false, false, false}, m.Boundary[1].Recovered)

	var js bytes.Buffer
	require.NoError(t, WriteJSON(&js, boundaryReport()))
	var doc struct {
		Groups []struct {
			Policy struct {
				Metastability struct {
					Boundary []map[string]any `json:"boundary"`
				} `json:"metastability"`
			} `json:"policy"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	jb := doc.Groups[0].Policy.Metastability.Boundary[0]
	assert.Equal(t, []any{true, true, false, true}, jb["recovered"])
	assert.Equal(t, []any{5.0, 12.0, nil, 40.0}, jb["recovery_seconds"])
	text := mustText(t, boundaryReport())
	assert.Regexp(t, `trigger\s+longest recovered from\n\s+1.5 x\s+2s\n\s+3 x\s+1s\n`, text)
	assert.NotContains(t, text, "✓", "the grid is HTML's")
}

// TestBoundaryPlotInHTML: the HTML report draws the grid after the
// boundary's table and before the cure, a cell per size and length, the
// own trigger (3x for 10 s, not recovered) outlined on its cell.
func TestBoundaryPlotInHTML(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, boundaryReport()))
	out := b.String()
	assert.Contains(t, out, `<svg id="g1-boundary"`)
	assert.Equal(t, 4, strings.Count(out, `<rect class="boundary-cell recovered"`))
	assert.Equal(t, 4, strings.Count(out, `<rect class="boundary-cell not-recovered"`))
	assert.Contains(t, out, `<rect class="own-trigger" x="352.0" y="64.0" width="76.0" height="28.0"><title>your trigger slow:3x:10s: not recovered</title></rect>`)
	assert.Contains(t, out, `<path class="boundary-line" d="M270.0 30.0 L270.0 62.0 L190.0 62.0 L190.0 94.0">`)
	assert.Contains(t, out, `>✓ 12s</text>`)
	table, plot, cure := strings.Index(out, `<table class="boundary">`), strings.Index(out, `<svg id="g1-boundary"`), strings.Index(out, "The cheapest cure")
	assert.Less(t, table, plot, "after its table")
	assert.Less(t, plot, cure, "before the cure")

	// A report written before every cell was kept: the table, no plot.
	r := boundaryReport()
	for i := range r.Groups[0].Policy.Metastability.Boundary {
		r.Groups[0].Policy.Metastability.Boundary[i].Recovered = nil
	}
	b.Reset()
	require.NoError(t, WriteHTML(&b, r))
	assert.Contains(t, b.String(), `<table class="boundary">`)
	assert.NotContains(t, b.String(), `<rect class="boundary-cell`)
}
