package plot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundaryRows: a 1.5x trigger recovered from at 1 s and 2 s, not at 5 s,
// and again at 10 s (a run of the sweep need not be monotone); 3x only at
// 1 s; 5x never.
func boundaryRows() []BoundaryRow {
	return []BoundaryRow{
		{Name: "1.5x", Factor: 1.5, Recovered: []bool{true, true, false, true}, RecoverySeconds: []float64{5, 12, 0, 40}},
		{Name: "3x", Factor: 3, Recovered: []bool{true, false, false, false}, RecoverySeconds: []float64{30, 0, 0, 0}},
		{Name: "5x", Factor: 5, Recovered: []bool{false, false, false, false}, RecoverySeconds: []float64{0, 0, 0, 0}},
	}
}

// TestBoundaryGrid: one cell per size and length, its class and symbol
// saying recovered or not (colour is not the only sign), the own trigger
// outlined on its cell, and the boundary a line down each row at its first
// cell not recovered: 1.5x after 2 s (the 10 s cell recovered beyond the
// failure lies right of it), 3x after 1 s, 5x at the grid's left edge.
func TestBoundaryGrid(t *testing.T) {
	durations := []float64{1, 2, 5, 10}
	s, ok := Boundary("g1", "slowdown", durations, boundaryRows(), OwnTrigger{Name: "slow:3x:5s", Factor: 3, Seconds: 5}, 300)
	require.True(t, ok)
	assert.Equal(t, "g1-boundary", s.ID)

	type cell struct{ class, x, y, tip string }
	var cells []cell
	var own []Shape
	for _, r := range s.Rects {
		switch r.Class {
		case "boundary-cell recovered", "boundary-cell not-recovered":
			cells = append(cells, cell{r.Class, r.X, r.Y, r.Tip})
		case "own-trigger":
			own = append(own, r)
		}
	}
	require.Len(t, cells, 3*4, "one cell per size and length")
	// Cells of 80 wide and 32 high from (110, 30), row by row.
	assert.Equal(t, cell{"boundary-cell recovered", "190.0", "30.0", "1.5x for 2s: recovered 12s after it ended"}, cells[1])
	assert.Equal(t, cell{"boundary-cell not-recovered", "270.0", "30.0", "1.5x for 5s: not recovered within 5m"}, cells[2])
	assert.Equal(t, cell{"boundary-cell recovered", "350.0", "30.0", "1.5x for 10s: recovered 40s after it ended"}, cells[3])
	assert.Equal(t, cell{"boundary-cell not-recovered", "190.0", "62.0", "3x for 2s: not recovered within 5m"}, cells[5])
	assert.Equal(t, cell{"boundary-cell not-recovered", "110.0", "94.0", "5x for 1s: not recovered within 5m"}, cells[8])
	recovered := 0
	for _, c := range cells {
		if c.class == "boundary-cell recovered" {
			recovered++
		}
	}
	assert.Equal(t, 4, recovered)

	// Each cell's symbol, at its centre.
	marks := map[string]string{}
	for _, l := range s.Texts {
		if l.Class == "cell-mark recovered" || l.Class == "cell-mark not-recovered" {
			marks[l.X+","+l.Y] = l.Text
		}
	}
	assert.Len(t, marks, 12)
	assert.Equal(t, "✓ 12s", marks["230.0,50.0"], "1.5x for 2s")
	assert.Equal(t, "✗", marks["310.0,50.0"], "1.5x for 5s")
	assert.Equal(t, "✓ 30s", marks["150.0,82.0"], "3x for 1s")

	// The boundary: down at x 270 (after 2 s) for 1.5x, 190 for 3x, 110
	// (the left edge) for 5x, joined across at the rows' borders.
	require.Len(t, s.Paths, 1)
	assert.Equal(t, "boundary-line", s.Paths[0].Class)
	assert.Equal(t, "M270.0 30.0 L270.0 62.0 L190.0 62.0 L190.0 94.0 L110.0 94.0 L110.0 126.0", s.Paths[0].D)

	// The own trigger, 3x for 5 s: the third cell of the second row.
	require.Len(t, own, 1)
	assert.Equal(t, []string{"272.0", "64.0", "76.0", "28.0"}, []string{own[0].X, own[0].Y, own[0].W, own[0].H})
	assert.Equal(t, "your trigger slow:3x:5s: not recovered", own[0].Tip)
	assert.Empty(t, s.Dots)
	assert.Contains(t, s.Note, "Outlined: your trigger, slow:3x:5s.")

	// Column ticks under each cell.
	var ticks []string
	for _, l := range s.Texts {
		if l.Class == "tick" {
			ticks = append(ticks, l.Text+"@"+l.X)
		}
	}
	assert.Equal(t, []string{"1s@150.0", "2s@230.0", "5s@310.0", "10s@390.0"}, ticks)
}

// TestBoundaryOwnTriggerBetweenCells: a trigger the sweep did not run is a
// ring where it falls, between the sizes (linear) and the lengths (log);
// beyond the longest, on the grid's right edge.
func TestBoundaryOwnTriggerBetweenCells(t *testing.T) {
	durations := []float64{1, 2, 5, 10}
	s, ok := Boundary("g1", "slowdown", durations, boundaryRows(), OwnTrigger{Name: "slow:2x:3s", Factor: 2, Seconds: 3, Recovered: true}, 300)
	require.True(t, ok)
	require.Len(t, s.Dots, 1)
	// Row 0.5 + 0.5/1.5 of the way from 1.5x to 3x; column 1.5 +
	// ln(3/2)/ln(5/2) from 2 s to 5 s.
	assert.Equal(t, "265.4", s.Dots[0].X)
	assert.Equal(t, "56.7", s.Dots[0].Y)
	assert.Equal(t, "your trigger slow:2x:3s: recovered", s.Dots[0].Tip)
	for _, r := range s.Rects {
		assert.NotEqual(t, "own-trigger", r.Class, "no cell is outlined")
	}

	s, _ = Boundary("g1", "slowdown", durations, boundaryRows(), OwnTrigger{Name: "slow:5x:10m", Factor: 5, Seconds: 600}, 300)
	require.Len(t, s.Dots, 1)
	assert.Equal(t, "430.0", s.Dots[0].X, "the right edge")
	assert.Equal(t, "110.0", s.Dots[0].Y, "the 5x row's middle")
}

// TestBoundaryNothing: no plot without rows or durations, nor when a row's
// outcomes do not match the durations (a report written before they were
// kept).
func TestBoundaryNothing(t *testing.T) {
	_, ok := Boundary("g1", "", nil, boundaryRows(), OwnTrigger{}, 300)
	assert.False(t, ok)
	_, ok = Boundary("g1", "", []float64{1, 2, 5}, boundaryRows(), OwnTrigger{}, 300)
	assert.False(t, ok)
	_, ok = Boundary("g1", "", []float64{1}, nil, OwnTrigger{}, 300)
	assert.False(t, ok)
}
