package plot

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WindowPoint is one window of a group: its start and its p50, p99 and
// p99.9 (0: none, a window without calls).
type WindowPoint struct {
	Start          time.Time
	P50, P99, P999 float64 // seconds
	Worst          bool
	TooFew         bool // too few calls to rank it
}

// maxWindowDots bounds the windows drawn with a dot each; beyond, the
// lines alone are drawn.
const maxWindowDots = 1000

// Windows draws p50, p99 and p99.9 window by window over time (a log
// scale of latency), the recommended timeout as a line and the worst
// window marked. Nothing without two windows.
func Windows(id, name string, points []WindowPoint, timeout float64) (Scene, bool) {
	if len(points) < 2 {
		return Scene{}, false
	}
	lo, hi := math.Inf(1), timeout
	for _, p := range points {
		for _, v := range []float64{p.P50, p.P99, p.P999} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) || hi <= 0 {
		return Scene{}, false
	}
	lo, hi = lowerTick(lo*0.8), upperTick(hi*1.05)
	s := Scene{ID: id + "-windows", Class: "windows", Width: 760, Height: 320, Title: fmt.Sprintf("Latency window by window for %s", name)}
	f := frame{left: 70, top: 16, right: 700, bottom: 270}
	first, last := points[0].Start, points[len(points)-1].Start
	span := last.Sub(first).Seconds()
	px := func(t time.Time) float64 { return f.left + t.Sub(first).Seconds()/span*f.width() }
	py := func(v float64) float64 {
		return f.bottom - (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*f.height()
	}
	s.box(f)
	for _, v := range logTicks(lo, hi) {
		s.yTick(f, py(v), human.Seconds(v))
	}
	for i := 0; i < 6; i++ {
		t := first.Add(time.Duration(float64(i) / 5 * span * float64(time.Second)))
		s.xTick(f, px(t), t.UTC().Format("01-02 15:04"))
	}
	s.axisTitles(f, "window start (UTC)", "latency")
	for _, p := range points {
		if p.Worst {
			x := px(p.Start)
			w := max(f.width()/float64(len(points)), 3)
			s.Rects = append(s.Rects, Shape{Class: "worst-window", X: f1(x - w/2), Y: f1(f.top), W: f1(w), H: f1(f.height()),
				Tip: "the worst window: " + p.Start.UTC().Format(time.RFC3339)})
		}
	}
	series := []struct {
		class string
		v     func(WindowPoint) float64
		label string
	}{{"p50", func(p WindowPoint) float64 { return p.P50 }, "p50"}, {"p99", func(p WindowPoint) float64 { return p.P99 }, "p99"},
		{"p999", func(p WindowPoint) float64 { return p.P999 }, "p99.9"}}
	for k, sr := range series {
		var d strings.Builder
		pen := "M"
		for _, p := range points {
			v := sr.v(p)
			if v <= 0 {
				pen = "M" // a window without calls: a gap
				continue
			}
			fmt.Fprintf(&d, "%s%s %s ", pen, f1(px(p.Start)), f1(py(v)))
			pen = "L"
			if len(points) <= maxWindowDots {
				class := "window-point " + sr.class
				if p.TooFew {
					class += " too-few"
				}
				s.Dots = append(s.Dots, Shape{Class: class, X: f1(px(p.Start)), Y: f1(py(v)), R: "2.5",
					Tip: fmt.Sprintf("%s %s: %s", p.Start.UTC().Format("2006-01-02 15:04"), sr.label, human.Seconds(v))})
			}
		}
		s.Paths = append(s.Paths, Shape{Class: "window-line " + sr.class, D: strings.TrimSpace(d.String()), Tip: sr.label})
		s.Texts = append(s.Texts, Label{Class: "legend " + sr.class, X: f1(f.right + 6), Y: f1(f.top + 14 + 16*float64(k)), Anchor: "start", Text: sr.label})
	}
	s.Lines = append(s.Lines, Shape{Class: "timeout", X1: f1(f.left), Y1: f1(py(timeout)), X2: f1(f.right), Y2: f1(py(timeout)),
		Tip: "recommended timeout: " + human.Seconds(timeout)})
	s.Texts = append(s.Texts, Label{Class: "timeout-label", X: f1(f.left + 4), Y: f1(py(timeout) - 4), Anchor: "start", Text: "timeout " + human.Seconds(timeout)})
	s.Note = "p50, p99 and p99.9 of each window's calls; the red line is the recommended timeout, the shaded band the worst window. " +
		"Hollow points are windows with too few calls above the quantile to rank."
	return s, true
}
