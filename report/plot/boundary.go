package plot

import (
	"fmt"
	"math"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// BoundaryRow is one trigger size of a stability sweep: per swept
// duration, whether the dependency recovered, and how long after the
// trigger ended it was back (where it was).
type BoundaryRow struct {
	Name            string // "3x", "outage"
	Factor          float64
	Recovered       []bool
	RecoverySeconds []float64
}

// OwnTrigger is the trigger the run was asked for, marked on the grid.
type OwnTrigger struct {
	Name      string // slow:3x:1m
	Factor    float64
	Seconds   float64
	Recovered bool
}

// Boundary size of a cell, in the viewBox's units.
const (
	boundaryCellH    = 32.0
	boundaryMaxCellW = 80.0
)

// Boundary draws the stability sweep as a grid, trigger size down (rows
// in the sweep's order) and its length across (durations ascending): each
// cell one run, coloured and marked with a symbol (✓ recovered, with the
// time it took; ✗ not), so that colour is not the only sign. The
// stability boundary is a line between each row's last recovered cell of
// the run of recovered ones from the shortest and its first cell that did
// not recover (simulate.Boundary: a recovered cell beyond a failure lies
// right of the line). The own trigger is outlined when it is a cell of
// the grid, else a ring where it falls between them. rowTitle names the
// size ("slowdown"). Nothing without a row or a duration, or when
// a row's outcomes do not match the durations.
func Boundary(id, rowTitle string, durations []float64, rows []BoundaryRow, own OwnTrigger, recoverWithinSeconds float64) (Scene, bool) {
	if len(rows) == 0 || len(durations) == 0 {
		return Scene{}, false
	}
	for _, r := range rows {
		if len(r.Recovered) != len(durations) || len(r.RecoverySeconds) != len(durations) {
			return Scene{}, false
		}
	}
	cellW := min(boundaryMaxCellW, 560/float64(len(durations)))
	f := frame{left: 110, top: 30, right: 110 + cellW*float64(len(durations)), bottom: 30 + boundaryCellH*float64(len(rows))}
	s := Scene{ID: id + "-boundary", Class: "boundary", Width: int(f.right) + 210, Height: int(f.bottom) + 50,
		Title: "The stability boundary: trigger size x how long it lasts, recovered or not"}
	s.Texts = append(s.Texts,
		Label{Class: "axis", X: f1(f.left + f.width()/2), Y: f1(f.bottom + 36), Anchor: "middle", Text: "how long the trigger lasts"},
		Label{Class: "axis", X: f1(f.left - 8), Y: f1(f.top - 10), Anchor: "end", Text: rowTitle})
	for j, d := range durations {
		s.Texts = append(s.Texts, Label{Class: "tick", X: f1(f.left + cellW*(float64(j)+0.5)), Y: f1(f.bottom + 16), Anchor: "middle", Text: human.Seconds(d)})
	}
	within := human.Seconds(recoverWithinSeconds)
	var line strings.Builder
	for i, r := range rows {
		y := f.top + boundaryCellH*float64(i)
		s.Texts = append(s.Texts, Label{Class: "row", X: f1(f.left - 8), Y: f1(y + boundaryCellH/2 + 4), Anchor: "end", Text: r.Name})
		first := len(durations) // the first cell not recovered
		for j, d := range durations {
			x := f.left + cellW*float64(j)
			trigger := fmt.Sprintf("%s for %s", r.Name, human.Seconds(d))
			cell := Shape{Class: "boundary-cell recovered", X: f1(x), Y: f1(y), W: f1(cellW), H: f1(boundaryCellH)}
			mark := Label{Class: "cell-mark recovered", X: f1(x + cellW/2), Y: f1(y + boundaryCellH/2 + 4), Anchor: "middle"}
			if r.Recovered[j] {
				back := human.Seconds(r.RecoverySeconds[j])
				cell.Tip = fmt.Sprintf("%s: recovered %s after it ended", trigger, back)
				mark.Text = "✓ " + back
			} else {
				first = min(first, j)
				cell.Class, mark.Class = "boundary-cell not-recovered", "cell-mark not-recovered"
				cell.Tip = fmt.Sprintf("%s: not recovered within %s", trigger, within)
				mark.Text = "✗"
			}
			s.Rects = append(s.Rects, cell)
			s.Texts = append(s.Texts, mark)
		}
		// The row's piece of the boundary: down its height at the column
		// of its first cell not recovered, joined across to the row above.
		x := f1(f.left + cellW*float64(first))
		if i == 0 {
			fmt.Fprintf(&line, "M%s %s", x, f1(y))
		} else {
			fmt.Fprintf(&line, " L%s %s", x, f1(y))
		}
		fmt.Fprintf(&line, " L%s %s", x, f1(y+boundaryCellH))
	}
	s.box(f)
	s.Paths = append(s.Paths, Shape{Class: "boundary-line", D: line.String(),
		Tip: "the stability boundary: left of it every trigger of its size recovered, every shorter one too"})

	// The own trigger.
	verdict := "not recovered"
	if own.Recovered {
		verdict = "recovered"
	}
	tip := fmt.Sprintf("your trigger %s: %s", own.Name, verdict)
	col := position(durations, own.Seconds, true)
	factors := make([]float64, len(rows))
	for i, r := range rows {
		factors[i] = r.Factor
	}
	row := position(factors, own.Factor, false)
	labelY := f.top + boundaryCellH*row + 4
	marked := "Outlined: your trigger, " + own.Name + "."
	if ci, ri := math.Round(col-0.5), math.Round(row-0.5); col-0.5 == ci && row-0.5 == ri {
		// On the grid: the cell itself, outlined.
		s.Rects = append(s.Rects, Shape{Class: "own-trigger", X: f1(f.left + cellW*ci + 2), Y: f1(f.top + boundaryCellH*ri + 2),
			W: f1(cellW - 4), H: f1(boundaryCellH - 4), Tip: tip})
	} else {
		s.Dots = append(s.Dots, Shape{Class: "own-trigger", X: f1(f.left + cellW*col), Y: f1(f.top + boundaryCellH*row), R: "6", Tip: tip})
		marked = fmt.Sprintf("The ring: your trigger, %s (%s), where it falls between the sizes and lengths swept.", own.Name, verdict)
	}
	s.Texts = append(s.Texts, Label{Class: "own-trigger-label", X: f1(f.right + 8), Y: f1(labelY), Anchor: "start", Text: "← your trigger: " + verdict})
	s.Note = fmt.Sprintf("Each cell is one run with a trigger of that size and length: ✓ recovered (green), with the time it took after the trigger ended; "+
		"✗ not recovered within %s (red). The thick line is the stability boundary: left of it every trigger recovered, every shorter one of its size too. %s",
		within, marked)
	return s, true
}

// position is where v falls among the sorted values at the centres of
// their cells (value i at i+0.5), between two on a log scale (logScale) or
// a linear one; 0 or len(values) (the grid's edges) outside them.
func position(values []float64, v float64, logScale bool) float64 {
	scale := func(x float64) float64 {
		if logScale {
			return math.Log(max(x, 1e-9))
		}
		return x
	}
	for i, x := range values {
		if v == x {
			return float64(i) + 0.5
		}
	}
	asc := len(values) < 2 || values[0] <= values[len(values)-1]
	for i := 0; i+1 < len(values); i++ {
		a, b := values[i], values[i+1]
		if (v > a && v < b) || (v < a && v > b) {
			return float64(i) + 0.5 + (scale(v)-scale(a))/(scale(b)-scale(a))
		}
	}
	if (v < values[0]) == asc {
		return 0
	}
	return float64(len(values))
}
