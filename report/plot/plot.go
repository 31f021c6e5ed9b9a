// Package plot draws the plots of the HTML report as SVG scenes: a plot is
// a few primitives (lines, paths, rectangles, circles, texts) that the
// report's HTML template writes out, so html/template escapes every text
// and attribute in them like the rest of the page. The geometry is computed
// here, in the viewBox's units; coordinates are written with one decimal.
// Each plot takes its own input type, so the package knows nothing of the
// report's model (as vegeta keeps lib/plot apart from its reporters).
package plot

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Scene is one SVG plot.
type Scene struct {
	ID     string // "g1-percentiles"
	Class  string // "percentiles", "histogram", "littles-law"
	Title  string // the accessible name, also the figure's caption
	Note   string // how to read it, under the plot
	Width  int
	Height int
	Rects  []Shape
	Lines  []Shape
	Paths  []Shape
	Dots   []Shape
	Texts  []Label
}

// Shape is a line (X1 Y1 X2 Y2), a rectangle (X Y W H), a path (D) or a
// circle (X Y R), with a CSS class and a tooltip.
type Shape struct {
	Class            string
	X1, Y1, X2, Y2   string
	X, Y, W, H, R, D string
	Tip              string
	// Fill is a rectangle's colour when it is data (a heat map's cell):
	// "#rrggbb"; empty, its class's.
	Fill string
}

// Label is a text at (X, Y); Anchor is start, middle or end.
type Label struct {
	Class, X, Y, Anchor, Text string
}

// Group is what the plots of one group draw: its latency by percentile,
// its histogram, its recommendation and what a hang holds in flight.
type Group struct {
	Name    string // for the titles
	Samples int64
	// Percentiles are the measured ones, the maximum (Quantile 1) among
	// them.
	Percentiles    []Percentile
	Recommendation Recommendation
	Candidates     []Candidate
	// Distribution is the latency histogram; nil when there is none.
	Distribution *Distribution
	LittlesLaw   LittlesLaw
	// HangAttempts is how many attempts a request makes during a hang when
	// the call policy retries timeouts; 0 or 1 when it does not.
	HangAttempts int
}

// Percentile is one measured percentile.
type Percentile struct {
	Quantile, Seconds float64
	LowerBound        bool // censored calls make it only a lower bound
}

// Recommendation is the recommended timeout and the quantile it builds on.
type Recommendation struct {
	Quantile, TimeoutSeconds, CutOffFraction float64
	Interval                                 Interval
}

// Interval is the confidence interval of the chosen quantile; HighSeconds
// nil: beyond the largest sample.
type Interval struct {
	Confidence, LowSeconds float64
	HighSeconds            *float64
}

// Candidate is a timeout and the share of calls it cuts off.
type Candidate struct {
	TimeoutSeconds, CutOffFraction float64
}

// Distribution is a histogram: bins from LowestSeconds, each up to its
// UpperSeconds.
type Distribution struct {
	LowestSeconds float64
	Bins          []Bin
}

// Bin is one bin of a Distribution.
type Bin struct {
	UpperSeconds float64
	Count        int64
}

// LittlesLaw is what the in-flight bar compares; nil: unknown.
type LittlesLaw struct {
	InFlightNormal, InFlightDuringHang *float64
	Bulkhead, Pool                     *int
	PoolExhausted                      *bool
}

// percentile returns the seconds at quantile q, 0 when g lacks it.
func percentile(g Group, q float64) float64 {
	for _, p := range g.Percentiles {
		if p.Quantile == q {
			return p.Seconds
		}
	}
	return 0
}

func ptr[T any](v T) *T { return &v }

// f1 writes a coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// frame is the plotting area inside a Scene.
type frame struct{ left, top, right, bottom float64 }

func (f frame) width() float64  { return f.right - f.left }
func (f frame) height() float64 { return f.bottom - f.top }

// box draws the frame's box.
func (s *Scene) box(f frame) {
	s.Rects = append(s.Rects, Shape{Class: "frame", X: f1(f.left), Y: f1(f.top), W: f1(f.width()), H: f1(f.height())})
}

// xTick draws a vertical grid line at x with a label under the frame.
func (s *Scene) xTick(f frame, x float64, text string) {
	s.Lines = append(s.Lines, Shape{Class: "grid", X1: f1(x), Y1: f1(f.top), X2: f1(x), Y2: f1(f.bottom)})
	s.Texts = append(s.Texts, Label{Class: "tick", X: f1(x), Y: f1(f.bottom + 14), Anchor: "middle", Text: text})
}

// yTick draws a horizontal grid line at y with a label left of the frame.
func (s *Scene) yTick(f frame, y float64, text string) {
	s.Lines = append(s.Lines, Shape{Class: "grid", X1: f1(f.left), Y1: f1(y), X2: f1(f.right), Y2: f1(y)})
	s.Texts = append(s.Texts, Label{Class: "tick", X: f1(f.left - 6), Y: f1(y + 4), Anchor: "end", Text: text})
}

// axisTitles names the axes.
func (s *Scene) axisTitles(f frame, x, y string) {
	s.Texts = append(s.Texts,
		Label{Class: "axis", X: f1(f.left + f.width()/2), Y: f1(f.bottom + 32), Anchor: "middle", Text: x},
		Label{Class: "axis", X: f1(f.left), Y: f1(f.top - 8), Anchor: "start", Text: y})
}

// niceStep returns a step of 1, 2 or 5 x 10^k that cuts span into about n
// parts.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// sideLabel is a label right of the frame at height y, moved apart from
// its neighbours by spread.
type sideLabel struct {
	y     float64
	class string
	text  string
}

// spread moves labels apart so that no two are closer than gap, keeping
// them within [top, bottom], and writes them right of the frame.
func (s *Scene) spread(f frame, labels []sideLabel, gap float64) {
	slices.SortStableFunc(labels, func(a, b sideLabel) int { return compareFloat(a.y, b.y) })
	for i := range labels {
		if i > 0 && labels[i].y < labels[i-1].y+gap {
			labels[i].y = labels[i-1].y + gap
		}
	}
	for i := len(labels) - 1; i >= 0; i-- {
		limit := f.bottom
		if i < len(labels)-1 {
			limit = labels[i+1].y - gap
		}
		labels[i].y = min(labels[i].y, limit)
	}
	for _, l := range labels {
		s.Texts = append(s.Texts, Label{Class: l.class, X: f1(f.right + 6), Y: f1(l.y + 4), Anchor: "start", Text: l.text})
	}
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// percentileTicks are the x ticks of the percentile plot: the quantile and
// its name. x is log10(1/(1-q)).
var percentileTicks = []struct {
	q    float64
	name string
}{
	{0, "0 %"}, {0.5, "50 %"}, {0.9, "90 %"}, {0.99, "99 %"}, {0.999, "99.9 %"},
	{0.9999, "99.99 %"}, {0.99999, "99.999 %"}, {0.999999, "99.9999 %"},
}

// percentileX is the x of a share below: log10(1/(1-q)).
func percentileX(q float64) float64 { return -math.Log10(1 - q) }

// Percentiles is the HdrHistogram-style percentile distribution: x the
// percentile on a log scale of 1/(1-q), y the latency. It marks the
// recommended timeout and the candidates (each labelled with the share it
// cuts off) and draws the confidence interval of the chosen quantile.
func Percentiles(id string, g Group) Scene {
	s := Scene{ID: id + "-percentiles", Class: "percentiles", Width: 760, Height: 340,
		Title: fmt.Sprintf("Latency by percentile of %s", g.Name)}
	f := frame{left: 64, top: 24, right: 530, bottom: 296}
	s.box(f)
	rec := g.Recommendation
	n := max(float64(g.Samples), 1)
	maxSeconds := percentile(g, 1)
	top := max(maxSeconds, rec.TimeoutSeconds, rec.Interval.LowSeconds)
	if h := rec.Interval.HighSeconds; h != nil {
		top = max(top, *h)
	}
	step := niceStep(top*1.05, 5)
	a := percentileAxes{f: f, xMax: max(4, math.Log10(n)), yMax: math.Ceil(top*1.05/step) * step}
	if a.yMax <= 0 {
		a.yMax, step = 1, 0.2
	}

	for _, t := range percentileTicks {
		if x := percentileX(t.q); x > 0 && x <= a.xMax+1e-9 {
			s.xTick(f, a.px(x), t.name)
		}
	}
	for v := 0.0; v <= a.yMax+step/2; v += step {
		s.yTick(f, a.py(v), human.Seconds(v))
	}
	s.axisTitles(f, "percentile (log scale of 1/(1-q))", "latency")

	pts, xEnd := percentileCurve(g, n, maxSeconds)
	s.curve(a, pts)
	s.timeouts(a, rec, g.Candidates)
	hiText := s.interval(a, rec)
	s.Note = fmt.Sprintf("Red: the recommended timeout; dashed: the candidates, each with the share of calls it cuts off at most. "+
		"The bar at %s is its %s confidence interval; the dots are the measured percentiles.", human.Quantile(rec.Quantile), human.Percent(rec.Interval.Confidence))
	s.percentileDots(a, g, xEnd, hiText)
	return s
}

// percentileAxes are the axes of the Percentiles plot within its frame:
// x, the percentile on a log scale (percentileX), up to xMax; y, the
// latency in seconds up to yMax.
type percentileAxes struct {
	f          frame
	xMax, yMax float64
}

func (a percentileAxes) px(x float64) float64 { return a.f.left + min(x, a.xMax)/a.xMax*a.f.width() }
func (a percentileAxes) py(sec float64) float64 {
	return a.f.bottom - min(sec, a.yMax)/a.yMax*a.f.height()
}

// curvePoint is a point of the percentile curve: x as percentileX, y in
// seconds.
type curvePoint struct{ x, y float64 }

// percentileCurve is the points the curve of g goes through, in order of
// x, and xEnd, the x of its maximum (maxSeconds; n calls). The curve
// goes through the measured percentiles and, between them, through the
// bins: a share F of the calls took at most the bin's upper bound. That
// bound may lie above the calls in the bin, so the bins only fill in
// where no percentile is near (Scene.curve), and the curve never falls.
func percentileCurve(g Group, n, maxSeconds float64) (pts []curvePoint, xEnd float64) {
	for _, p := range g.Percentiles {
		if p.Quantile < 1 {
			pts = append(pts, curvePoint{percentileX(p.Quantile), p.Seconds})
		}
	}
	// The maximum ends the curve, at the rank of the largest call (q = 1 -
	// 1/N), or after the last percentile when there are fewer calls than
	// it needs.
	xEnd = math.Log10(n)
	for _, p := range pts {
		xEnd = max(xEnd, p.x)
	}
	pts = append(pts, curvePoint{xEnd, maxSeconds})
	if d := g.Distribution; d != nil {
		var total, cum int64
		for _, b := range d.Bins {
			total += b.Count
		}
		pts = append(pts, curvePoint{0, d.LowestSeconds})
		for _, b := range d.Bins {
			cum += b.Count
			if b.Count > 0 && cum < total {
				pts = append(pts, curvePoint{percentileX(float64(cum) / float64(total)), b.UpperSeconds})
			}
		}
	}
	slices.SortStableFunc(pts, func(a, b curvePoint) int { return compareFloat(a.x, b.x) })
	return pts, xEnd
}

// curve draws the percentile curve through pts, never falling.
func (s *Scene) curve(a percentileAxes, pts []curvePoint) {
	path, last := "", 0.0
	for i, p := range pts {
		y := max(p.y, last)
		if i+1 < len(pts) && pts[i+1].y < y && pts[i+1].x-p.x < 0.05 {
			continue // a bin's bound just before a lower percentile
		}
		last = y
		cmd := " L"
		if path == "" {
			cmd = "M"
		}
		path += cmd + f1(a.px(p.x)) + " " + f1(a.py(y))
	}
	s.Paths = append(s.Paths, Shape{Class: "curve", D: path, Tip: "latency by percentile: through the measured percentiles, and the binned histogram between them"})
}

// timeouts draws the recommended timeout and the candidates, labelled
// right.
func (s *Scene) timeouts(a percentileAxes, rec Recommendation, candidates []Candidate) {
	f, py := a.f, a.py
	var side []sideLabel
	s.Lines = append(s.Lines, Shape{Class: "timeout", X1: f1(f.left), Y1: f1(py(rec.TimeoutSeconds)), X2: f1(f.right), Y2: f1(py(rec.TimeoutSeconds)),
		Tip: fmt.Sprintf("recommended timeout %s: cuts off at most %s", human.Seconds(rec.TimeoutSeconds), human.Percent(rec.CutOffFraction))})
	side = append(side, sideLabel{y: py(rec.TimeoutSeconds), class: "timeout-label",
		text: fmt.Sprintf("timeout %s: at most %s cut off", human.Seconds(rec.TimeoutSeconds), human.Percent(rec.CutOffFraction))})
	for _, c := range candidates {
		if c.TimeoutSeconds == rec.TimeoutSeconds || c.TimeoutSeconds > a.yMax {
			continue
		}
		y := py(c.TimeoutSeconds)
		s.Lines = append(s.Lines, Shape{Class: "candidate", X1: f1(f.left), Y1: f1(y), X2: f1(f.right), Y2: f1(y),
			Tip: fmt.Sprintf("candidate %s: cuts off at most %s", human.Seconds(c.TimeoutSeconds), human.Percent(c.CutOffFraction))})
		side = append(side, sideLabel{y: y, class: "candidate-label",
			text: fmt.Sprintf("%s: at most %s cut off", human.Seconds(c.TimeoutSeconds), human.Percent(c.CutOffFraction))})
	}
	s.spread(f, side, 13)
}

// interval draws the confidence interval of the chosen quantile, and
// returns the text of its upper end.
func (s *Scene) interval(a percentileAxes, rec Recommendation) (hiText string) {
	py := a.py
	iv := rec.Interval
	x := a.px(percentileX(rec.Quantile))
	hiY, hiText := a.f.top, "beyond the largest sample"
	if iv.HighSeconds != nil {
		hiY, hiText = py(*iv.HighSeconds), human.Seconds(*iv.HighSeconds)
	}
	tip := fmt.Sprintf("%s confidence interval of %s: %s to %s", human.Percent(iv.Confidence), human.Quantile(rec.Quantile), human.Seconds(iv.LowSeconds), hiText)
	class := "interval"
	if iv.HighSeconds == nil {
		class = "interval open"
	}
	s.Lines = append(s.Lines,
		Shape{Class: class, X1: f1(x), Y1: f1(py(iv.LowSeconds)), X2: f1(x), Y2: f1(hiY), Tip: tip},
		Shape{Class: "interval", X1: f1(x - 6), Y1: f1(py(iv.LowSeconds)), X2: f1(x + 6), Y2: f1(py(iv.LowSeconds)), Tip: tip})
	if iv.HighSeconds != nil {
		s.Lines = append(s.Lines, Shape{Class: "interval", X1: f1(x - 6), Y1: f1(hiY), X2: f1(x + 6), Y2: f1(hiY), Tip: tip})
	}
	return hiText
}

// percentileDots draws the measured percentiles of g with their values;
// the maximum at xEnd, and the chosen quantile's with its interval (up to
// hiText).
func (s *Scene) percentileDots(a percentileAxes, g Group, xEnd float64, hiText string) {
	f, rec := a.f, g.Recommendation
	iv := rec.Interval
	for _, p := range g.Percentiles {
		xq := xEnd
		if p.Quantile < 1 {
			xq = percentileX(p.Quantile)
		}
		if xq > a.xMax+1e-9 {
			continue
		}
		class, value := "point", human.Seconds(p.Seconds)
		if p.LowerBound {
			class, value = "point lower-bound", "≥ "+value
		}
		cx, cy := a.px(xq), a.py(p.Seconds)
		s.Dots = append(s.Dots, Shape{Class: class, X: f1(cx), Y: f1(cy), R: "3.5", Tip: human.Quantile(p.Quantile) + ": " + value})
		// The x axis names the percentile; the label gives the value,
		// below right of its point, under the rising curve (the maximum,
		// at the right end: above left).
		lx, ly, anchor := cx+6, min(cy+14, f.bottom-4), "start"
		switch {
		case p.Quantile == 1:
			lx, ly, anchor = cx-6, max(cy-8, f.top+12), "end"
		case cx > f.left+0.85*f.width():
			lx, anchor = cx-6, "end"
		}
		if p.Quantile == rec.Quantile {
			// With its interval, above left: over the curve, which rises
			// from the left.
			value += fmt.Sprintf(" (%s: %s to %s)", human.Percent(iv.Confidence), human.Seconds(iv.LowSeconds), hiText)
			lx, ly, anchor = cx-8, max(cy-8, f.top+12), "end"
		}
		s.Texts = append(s.Texts, Label{Class: "value", X: f1(lx), Y: f1(ly), Anchor: anchor, Text: value})
	}
}

// Histogram is the latency histogram on a log time axis, with the
// timeout line and the share of calls beyond it shaded.
func Histogram(id string, g Group) (Scene, bool) {
	d := g.Distribution
	if d == nil || len(d.Bins) == 0 {
		return Scene{}, false
	}
	s := Scene{ID: id + "-histogram", Class: "histogram", Width: 760, Height: 300,
		Title: fmt.Sprintf("Latency histogram of %s", g.Name)}
	f := frame{left: 64, top: 24, right: 740, bottom: 256}
	s.box(f)
	rec := g.Recommendation
	lo := d.LowestSeconds
	hi := max(d.Bins[len(d.Bins)-1].UpperSeconds, rec.TimeoutSeconds*1.25)
	// Whole 1-2-5 steps at both ends, so the first and last ticks sit on
	// the frame.
	lo = lowerTick(lo)
	hi = upperTick(hi)
	var most int64
	for _, b := range d.Bins {
		most = max(most, b.Count)
	}
	cMax := math.Pow(10, math.Ceil(math.Log10(float64(max(most, 1))*1.2)))
	const cMin = 0.5 // a bin of one call still shows
	px := func(sec float64) float64 {
		return f.left + (math.Log10(max(sec, lo))-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*f.width()
	}
	py := func(c float64) float64 {
		return f.bottom - (math.Log10(max(c, cMin))-math.Log10(cMin))/(math.Log10(cMax)-math.Log10(cMin))*f.height()
	}
	for _, t := range logTicks(lo, hi) {
		s.xTick(f, px(t), human.Seconds(t))
	}
	for c := 1.0; c <= cMax; c *= 10 {
		s.yTick(f, py(c), countTick(c))
	}
	s.axisTitles(f, "latency (log scale)", "calls per bin (log scale)")

	// The share beyond the timeout, shaded, under the bars.
	tx := px(rec.TimeoutSeconds)
	s.Rects = append(s.Rects, Shape{Class: "beyond", X: f1(tx), Y: f1(f.top), W: f1(f.right - tx), H: f1(f.height()),
		Tip: fmt.Sprintf("at most %s of calls took longer than %s", human.Percent(rec.CutOffFraction), human.Seconds(rec.TimeoutSeconds))})
	lower := d.LowestSeconds
	for _, b := range d.Bins {
		if b.Count > 0 {
			x0, x1 := px(lower), px(b.UpperSeconds)
			y := py(float64(b.Count))
			s.Rects = append(s.Rects, Shape{Class: "bar", X: f1(x0 + 0.5), Y: f1(y), W: f1(max(x1-x0-1, 0.5)), H: f1(f.bottom - y),
				Tip: fmt.Sprintf("%s to %s: %s", human.Seconds(lower), human.Seconds(b.UpperSeconds), human.Calls(b.Count))})
		}
		lower = b.UpperSeconds
	}
	s.Lines = append(s.Lines, Shape{Class: "timeout", X1: f1(tx), Y1: f1(f.top), X2: f1(tx), Y2: f1(f.bottom),
		Tip: "recommended timeout " + human.Seconds(rec.TimeoutSeconds)})
	beyond := int64(math.Round(rec.CutOffFraction * float64(g.Samples)))
	anchor, x := "start", tx+6
	if tx > f.left+f.width()*0.7 {
		anchor, x = "end", tx-6
	}
	s.Note = "Calls per bin on a log scale, so that the tail shows; shaded: the calls the recommended timeout cuts off."
	s.Texts = append(s.Texts,
		Label{Class: "timeout-label", X: f1(x), Y: f1(f.top + 14), Anchor: anchor, Text: "timeout " + human.Seconds(rec.TimeoutSeconds)},
		Label{Class: "beyond-label", X: f1(x), Y: f1(f.top + 28), Anchor: anchor,
			Text: fmt.Sprintf("at most %s of calls (%s) beyond it", human.Percent(rec.CutOffFraction), human.Count(beyond))})
	return s, true
}

// lowerTick is the largest 1-2-5 value at or below v.
func lowerTick(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*p <= v*(1+1e-9) {
			return m * p
		}
	}
	return p
}

// upperTick is the smallest 1-2-5 value at or above v.
func upperTick(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// logTicks are the 1-2-5 values from lo to hi; only powers of ten when
// there would be more than 12.
func logTicks(lo, hi float64) []float64 {
	var all, decades []float64
	for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi*(1+1e-9); p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * p
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				all = append(all, v)
				if m == 1 {
					decades = append(decades, v)
				}
			}
		}
	}
	if len(all) > 12 {
		return decades
	}
	return all
}

// countTick writes a count axis label: 1, 10, 100, 1k, 10k, 1M.
func countTick(c float64) string {
	switch {
	case c >= 1e6:
		return strconv.FormatFloat(c/1e6, 'f', -1, 64) + "M"
	case c >= 1e3:
		return strconv.FormatFloat(c/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(c, 'f', -1, 64)
}

// InFlight compares, on one scale, the calls in flight normally, the
// bulkhead, the pool and the calls in flight during a hang (with the
// retries when the call policy retries timeouts, HangAttempts). false: neither the rate
// nor the pool is known, so there is nothing to draw.
func InFlight(id string, g Group) (Scene, bool) {
	ll := g.LittlesLaw
	if ll.InFlightNormal == nil && ll.Pool == nil {
		return Scene{}, false
	}
	type row struct {
		name, class string
		value       *float64
		unknown     string
	}
	hang := "in flight during a hang"
	if g.HangAttempts > 1 {
		hang = fmt.Sprintf("during a hang, %d attempts", g.HangAttempts)
	}
	hangClass := "hang"
	if ll.PoolExhausted != nil && *ll.PoolExhausted {
		hangClass = "hang exhausted"
	}
	var bulkhead, pool *float64
	if ll.Bulkhead != nil {
		bulkhead = ptr(float64(*ll.Bulkhead))
	}
	if ll.Pool != nil {
		pool = ptr(float64(*ll.Pool))
	}
	rows := []row{
		{"in flight normally", "normal", ll.InFlightNormal, "unknown without a rate"},
		{"bulkhead", "bulkhead", bulkhead, "unknown without a rate"},
		{"pool", "pool", pool, "unknown: give " + usage.Pool.String()},
		{hang, hangClass, ll.InFlightDuringHang, "unknown without a rate"},
	}
	s := Scene{ID: id + "-littles-law", Class: "littles-law", Width: 760, Height: 56 + 30*len(rows),
		Title: fmt.Sprintf("Calls in flight for %s (Little's law)", g.Name)}
	f := frame{left: 190, top: 16, right: 690, bottom: float64(16 + 30*len(rows))}
	most := 0.0
	for _, r := range rows {
		if r.value != nil {
			most = max(most, *r.value)
		}
	}
	step := niceStep(max(most, 1)*1.05, 5)
	xMax := math.Ceil(max(most, 1)*1.05/step) * step
	px := func(v float64) float64 { return f.left + v/xMax*f.width() }
	for v := 0.0; v <= xMax+step/2; v += step {
		s.Lines = append(s.Lines, Shape{Class: "grid", X1: f1(px(v)), Y1: f1(f.top), X2: f1(px(v)), Y2: f1(f.bottom)})
		s.Texts = append(s.Texts, Label{Class: "tick", X: f1(px(v)), Y: f1(f.bottom + 14), Anchor: "middle", Text: human.Number(v)})
	}
	s.Texts = append(s.Texts, Label{Class: "axis", X: f1(f.left + f.width()/2), Y: f1(f.bottom + 32), Anchor: "middle", Text: "calls in flight"})
	for i, r := range rows {
		y := f.top + 30*float64(i) + 5
		s.Texts = append(s.Texts, Label{Class: "row", X: f1(f.left - 8), Y: f1(y + 14), Anchor: "end", Text: r.name})
		if r.value == nil {
			s.Texts = append(s.Texts, Label{Class: "unknown", X: f1(f.left + 6), Y: f1(y + 14), Anchor: "start", Text: r.unknown})
			continue
		}
		w := max(px(*r.value)-f.left, 1)
		s.Rects = append(s.Rects, Shape{Class: "bar " + r.class, X: f1(f.left), Y: f1(y), W: f1(w), H: "20",
			Tip: r.name + ": " + human.Number(*r.value)})
		s.Texts = append(s.Texts, Label{Class: "value", X: f1(f.left + w + 6), Y: f1(y + 14), Anchor: "start", Text: human.Number(*r.value)})
	}
	s.Note = "Little's law: calls in flight = rate x time each call waits. During a hang every call waits the whole timeout"
	if g.HangAttempts > 1 {
		s.Note += ", once per attempt, plus the backoff between attempts"
	}
	s.Note += "; the dashed line is the pool. The bulkhead caps the calls to this dependency so that a hang cannot take the whole pool."
	if pool != nil {
		x := px(*pool)
		s.Lines = append(s.Lines, Shape{Class: "pool-line", X1: f1(x), Y1: f1(f.top - 4), X2: f1(x), Y2: f1(f.bottom),
			Tip: "the pool: " + human.Number(*pool)})
	}
	return s, true
}
