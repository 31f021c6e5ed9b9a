package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	m := &Metastability{Trigger: "slow:3x:10s", TriggerKind: "slow", TriggerFactor: 3, TriggerSeconds: 10, WorkersSource: "--workers",
		RateSource: "--rate", RecoverWithinSeconds: 300, Reason: "stuck",
		Series: LoopSeries{DemandPerSecond: []float64{}, GoodputPerSecond: []float64{}, AttemptsPerSecond: []float64{}, QueueMax: []int{}}}
	swept := []float64{1, 2, 5, 10}
	m.Boundary = []BoundaryPoint{
		{Factor: 1.5, LongestRecoveredSeconds: 2, SweptSeconds: swept, Recovered: []bool{true, true, false, true},
			RecoverySeconds: []*float64{ptr(5.0), ptr(12.0), nil, ptr(40.0)}},
		{Factor: 3, LongestRecoveredSeconds: 1, SweptSeconds: swept, Recovered: []bool{true, false, false, false},
			RecoverySeconds: []*float64{ptr(30.0), nil, nil, nil}},
	}
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
