package plot

import (
	"fmt"
	"math"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// ProfileCell is one hour of one day of a profile: its calls and the
// quantile (seconds; 0 without calls), Worst when it belongs to the worst
// slot.
type ProfileCell struct {
	Day      string // 2026-11-02
	Hour     int
	Samples  int64
	Quantile float64
	Worst    bool
}

// maxProfileRows bounds the days the heat map draws a row each.
const maxProfileRows = 120

// Profile draws a heat map, hour across and day down, of a quantile per
// hour (cells in time order), the worst slot's cells outlined, and a
// colour scale (log) with the recommended timeout as a line across it.
// Nothing without cells or beyond maxProfileRows days.
func Profile(id, name, quantile, zone string, cells []ProfileCell, timeout float64) (Scene, bool) {
	var days []string
	lo, hi := math.Inf(1), timeout
	for _, c := range cells {
		if len(days) == 0 || days[len(days)-1] != c.Day {
			days = append(days, c.Day)
		}
		if c.Quantile > 0 {
			lo, hi = min(lo, c.Quantile), max(hi, c.Quantile)
		}
	}
	if len(days) == 0 || len(days) > maxProfileRows || math.IsInf(lo, 1) || !(hi > 0) {
		return Scene{}, false
	}
	lo = min(lo, timeout)
	if hi <= lo {
		hi = lo * 1.01
	}
	rowH := max(4, min(16, 420/float64(len(days))))
	const cellW = 24.0
	f := frame{left: 90, top: 16, right: 90 + 24*cellW, bottom: 16 + rowH*float64(len(days))}
	s := Scene{ID: id + "-profile", Class: "profile", Width: int(f.right) + 130, Height: int(f.bottom) + 50,
		Title: fmt.Sprintf("%s hour by hour for %s (%s)", quantile, name, zone)}
	pos := func(v float64) float64 { return (math.Log(v) - math.Log(lo)) / (math.Log(hi) - math.Log(lo)) }
	row := make(map[string]int, len(days))
	for i, d := range days {
		row[d] = i
		if len(days) <= 40 || i%((len(days)+39)/40) == 0 {
			s.Texts = append(s.Texts, Label{Class: "tick", X: f1(f.left - 6), Y: f1(f.top + rowH*float64(i) + rowH*0.75), Anchor: "end", Text: d})
		}
	}
	for h := 0; h < 24; h += 3 {
		s.Texts = append(s.Texts, Label{Class: "tick", X: f1(f.left + cellW*float64(h) + cellW/2), Y: f1(f.bottom + 14), Anchor: "middle", Text: fmt.Sprintf("%02d", h)})
	}
	s.Texts = append(s.Texts, Label{Class: "axis-title", X: f1(f.left + f.width()/2), Y: f1(f.bottom + 32), Anchor: "middle", Text: "hour of the day (" + zone + ")"})
	var worst []Shape
	for _, c := range cells {
		x, y := f.left+cellW*float64(c.Hour), f.top+rowH*float64(row[c.Day])
		sh := Shape{Class: "profile-cell", X: f1(x), Y: f1(y), W: f1(cellW), H: f1(rowH),
			Tip: fmt.Sprintf("%s %02d:00: %s", c.Day, c.Hour, human.Calls(c.Samples))}
		if c.Quantile > 0 {
			sh.Fill = heat(pos(c.Quantile))
			sh.Tip += fmt.Sprintf(", %s %s", quantile, human.Seconds(c.Quantile))
		} else {
			sh.Class += " profile-empty"
		}
		s.Rects = append(s.Rects, sh)
		if c.Worst {
			worst = append(worst, Shape{Class: "worst-slot", X: f1(x + 1), Y: f1(y + 0.5), W: f1(cellW - 2), H: f1(rowH - 1), Tip: "the worst slot"})
		}
	}
	s.Rects = append(s.Rects, worst...)
	// The colour scale, bottom (fast) to top (slow), the timeout across.
	const steps = 24
	sx, sw := f.right+24, 16.0
	sh := f.bottom - f.top
	for i := range steps {
		s.Rects = append(s.Rects, Shape{Class: "scale-step", X: f1(sx), Y: f1(f.bottom - sh*float64(i+1)/steps), W: f1(sw), H: f1(sh/steps + 0.5),
			Fill: heat((float64(i) + 0.5) / steps)})
	}
	for _, v := range []float64{lo, hi} {
		s.Texts = append(s.Texts, Label{Class: "tick", X: f1(sx + sw + 4), Y: f1(f.bottom - sh*pos(v) + 4), Anchor: "start", Text: human.Seconds(v)})
	}
	ty := f.bottom - sh*pos(timeout)
	s.Lines = append(s.Lines, Shape{Class: "timeout", X1: f1(sx - 4), Y1: f1(ty), X2: f1(sx + sw + 4), Y2: f1(ty), Tip: "recommended timeout: " + human.Seconds(timeout)})
	s.Texts = append(s.Texts, Label{Class: "timeout-label", X: f1(sx - 6), Y: f1(ty + 4), Anchor: "end", Text: human.Seconds(timeout)})
	s.Note = fmt.Sprintf("%s of each hour's calls, darker is slower; the outlined cells are the worst slot, the red line on the scale the recommended timeout.", quantile)
	return s, true
}

// heat is the colour at t in [0, 1]: pale yellow to dark red.
func heat(t float64) string {
	t = min(max(t, 0), 1)
	mix := func(a, b float64) int { return int(math.Round(a + (b-a)*t)) }
	return fmt.Sprintf("#%02x%02x%02x", mix(255, 150), mix(245, 10), mix(200, 30))
}
