package plot

import (
	"fmt"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// HerdSeries is one strategy's calls per millisecond after the herd
// failed: CallsPerMs[i] holds the calls of StepMs milliseconds from
// i x StepMs on.
type HerdSeries struct {
	Name       string
	CallsPerMs []int64
	StepMs     int64
}

// Herd draws the calls per millisecond of each series over time, with the
// dependency's capacity per millisecond as a dashed line: where a line
// stays above it, the calls of that millisecond are turned away. It draws
// nothing without a point.
func Herd(id string, series []HerdSeries, capacityPerMs float64) (Scene, bool) {
	var lastMs, most float64
	for _, s := range series {
		step := float64(max(s.StepMs, 1))
		lastMs = max(lastMs, float64(len(s.CallsPerMs))*step)
		for _, v := range s.CallsPerMs {
			most = max(most, float64(v)/step)
		}
	}
	if lastMs == 0 || most == 0 {
		return Scene{}, false
	}
	s := Scene{ID: id + "-calls", Class: "herd", Width: 760, Height: 300, Title: "Calls per millisecond after the herd failed"}
	f := frame{left: 70, top: 16, right: 700, bottom: 250}
	yMax := max(most, capacityPerMs) * 1.05
	ystep := niceStep(yMax, 5)
	xstep := niceStep(lastMs, 6)
	px := func(ms float64) float64 { return f.left + ms/lastMs*f.width() }
	py := func(v float64) float64 { return f.bottom - v/yMax*f.height() }
	s.box(f)
	for v := 0.0; v <= yMax; v += ystep {
		s.yTick(f, py(v), human.Number(v))
	}
	for ms := 0.0; ms <= lastMs; ms += xstep {
		s.xTick(f, px(ms), human.Seconds(ms/1000))
	}
	s.axisTitles(f, "time since the failure", "calls per millisecond")
	for i, sr := range series {
		step := float64(max(sr.StepMs, 1))
		var d strings.Builder
		for k, v := range sr.CallsPerMs {
			cmd := "L"
			if k == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s ", cmd, f1(px(float64(k)*step)), f1(py(float64(v)/step)))
		}
		// After its last point nobody calls: the line comes down to 0
		// (a herd that gives up within milliseconds is a spike).
		fmt.Fprintf(&d, "L%s %s", f1(px(float64(len(sr.CallsPerMs))*step)), f1(py(0)))
		s.Paths = append(s.Paths, Shape{Class: fmt.Sprintf("series s%d", i+1), D: strings.TrimSpace(d.String()), Tip: sr.Name})
		s.Texts = append(s.Texts, Label{Class: fmt.Sprintf("legend s%d", i+1), X: f1(f.right - 4), Y: f1(f.top + 14 + 16*float64(i)), Anchor: "end", Text: sr.Name})
	}
	if capacityPerMs > 0 {
		s.Lines = append(s.Lines, Shape{Class: "capacity-line", X1: f1(f.left), Y1: f1(py(capacityPerMs)), X2: f1(f.right), Y2: f1(py(capacityPerMs)),
			Tip: "capacity: " + human.Number(capacityPerMs) + " calls per millisecond"})
	}
	s.Note = "Each line is one backoff's calls per millisecond; the dashed line is what the dependency serves in a millisecond. " +
		"Without jitter the clients come back together and every millisecond is over capacity; with jitter they spread below it."
	return s, true
}
