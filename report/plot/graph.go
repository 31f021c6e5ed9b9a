package plot

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Graph is what the call graph's plot draws: services and the calls
// between them, each call with its p99.9, its recommended timeout and the
// findings on it.
type Graph struct {
	Nodes []string // the services, by name
	Edges []GraphEdge
}

// GraphEdge is a call From one node To another (names in Nodes).
type GraphEdge struct {
	From, To                    string
	P999Seconds, TimeoutSeconds float64
	// Marks name the findings on the edge ("inversion", "deadline not
	// propagated"); an edge with marks is drawn in the warning colour and
	// its label says them, so the colour is never the only sign.
	Marks []string
	// LeftSeconds is the time the edge's calls have left of the root's
	// deadline at the recommendation's quantile, of DeadlineSeconds; nil
	// without a deadline.
	LeftSeconds     *float64
	DeadlineSeconds float64
	// RetryAttempts > 0 marks the edge as the layer that keeps the retries
	// in a chain's plan, with its attempts; the others make one.
	RetryAttempts int
}

// The call graph's layout, in the viewBox's units.
const (
	graphNodeW, graphNodeH = 150.0, 36.0
	graphColumn            = 300.0 // from one layer's left to the next's
	graphRow               = 84.0  // from one node's top to the next's
	graphMargin            = 24.0
	graphNameChars         = 20 // longer names are cut, whole in the tooltip
	// MaxGraphNodes bounds the graph drawn: beyond it, the tables say it
	// all and no plot is made.
	MaxGraphNodes = 60
	// graphPair is how far apart the two arrows of a pair of services
	// calling each other are drawn.
	graphPair = 10.0
)

// CallGraph draws g in layers: the roots (nodes no edge points to) at the
// left, every other node one layer right of the nearest node that calls
// it (breadth first from the roots, so cycles cannot loop; nodes no root
// reaches are laid out the same way from the left, by name), each layer's nodes by
// name from the top. Each edge is an arrow from the border of its caller's
// box to the border of its callee's, labelled at its middle. false when g
// has no edge or more than MaxGraphNodes nodes.
func CallGraph(id string, g Graph) (Scene, bool) {
	nodes := slices.Compact(slices.Sorted(slices.Values(g.Nodes)))
	if len(g.Edges) == 0 || len(nodes) > MaxGraphNodes {
		return Scene{}, false
	}
	called := map[string]bool{}
	for _, e := range g.Edges {
		called[e.To] = true
	}
	boxes, maxDepth, maxRows := graphLayout(nodes, graphDepths(nodes, g.Edges, called))
	s := Scene{ID: id, Class: "call-graph", Title: "Call graph",
		Width:  int(2*graphMargin + float64(maxDepth)*graphColumn + graphNodeW),
		Height: int(2*graphMargin + float64(maxRows-1)*graphRow + graphNodeH + 16),
		Note: "Each box is a service, the roots (called by no one here) at the left; each arrow a call, labelled with its p99.9 and its " +
			"recommended timeout, and with a deadline the time its calls have left of it. Arrows in red, marked \"!\" with the finding named under them, carry a finding " +
			"(a timeout inversion, a deadline not propagated, calls that outlive their caller, calls made without a useful try left). In a plan, the thick arrows are the layer that keeps the retries, marked \"retries\"."}
	for _, n := range nodes {
		b := boxes[n]
		class := "node"
		if !called[n] {
			class = "node root"
		}
		s.Rects = append(s.Rects, Shape{Class: class, X: f1(b.x), Y: f1(b.y), W: f1(graphNodeW), H: f1(graphNodeH), Tip: n})
		s.Texts = append(s.Texts, Label{Class: "node-label", X: f1(b.x + graphNodeW/2), Y: f1(b.y + graphNodeH/2 + 4), Anchor: "middle",
			Text: cut(n, graphNameChars)})
	}
	pairs := map[[2]string]bool{}
	for _, e := range g.Edges {
		pairs[[2]string{e.From, e.To}] = true
	}
	for _, e := range g.Edges {
		from, ok1 := boxes[e.From]
		to, ok2 := boxes[e.To]
		if !ok1 || !ok2 || e.From == e.To {
			continue // a node not listed, or a call to itself: no arrow
		}
		s.graphEdge(e, from, to, pairs[[2]string{e.To, e.From}])
	}
	return s, true
}

// graphDepths is the layer of each node: breadth first from the roots
// (the nodes not called), then from each node they do not reach, by name.
func graphDepths(nodes []string, edges []GraphEdge, called map[string]bool) map[string]int {
	out := map[string][]string{}
	for _, e := range edges {
		out[e.From] = append(out[e.From], e.To)
	}
	depth := map[string]int{}
	var queue []string
	visit := func(start []string, d int) {
		for _, n := range start {
			depth[n] = d
		}
		queue = append(queue[:0], start...)
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, m := range slices.Sorted(slices.Values(out[n])) {
				if _, ok := depth[m]; !ok {
					depth[m] = depth[n] + 1
					queue = append(queue, m)
				}
			}
		}
	}
	var roots []string
	for _, n := range nodes {
		if !called[n] {
			roots = append(roots, n)
		}
	}
	visit(roots, 0)
	for _, n := range nodes {
		if _, ok := depth[n]; !ok {
			visit([]string{n}, 0)
		}
	}
	return depth
}

// graphBox is the top left of a node's box.
type graphBox struct{ x, y float64 }

// graphLayout places each node's box: a column per layer (depth), the
// layer's nodes by name from the top; maxDepth is the last layer,
// maxRows the most nodes in one.
func graphLayout(nodes []string, depth map[string]int) (boxes map[string]graphBox, maxDepth, maxRows int) {
	layers := map[int][]string{}
	for _, n := range nodes { // by name within a layer
		d := depth[n]
		layers[d] = append(layers[d], n)
		maxDepth, maxRows = max(maxDepth, d), max(maxRows, len(layers[d]))
	}
	boxes = map[string]graphBox{}
	for d, ns := range layers {
		for i, n := range ns {
			boxes[n] = graphBox{x: graphMargin + float64(d)*graphColumn, y: graphMargin + float64(i)*graphRow}
		}
	}
	return boxes, maxDepth, maxRows
}

// graphEdge draws e as an arrow from the border of from's box to the
// border of to's, labelled at its middle; pair: to calls from too, and
// each arrow keeps to its right.
func (s *Scene) graphEdge(e GraphEdge, from, to graphBox, pair bool) {
	ax, ay := from.x+graphNodeW/2, from.y+graphNodeH/2
	bx, by := to.x+graphNodeW/2, to.y+graphNodeH/2
	if pair {
		// Each of the pair keeps to its right of the line between the
		// centres.
		dx, dy := bx-ax, by-ay
		l := math.Hypot(dx, dy)
		ox, oy := -dy/l*graphPair/2, dx/l*graphPair/2
		ax, ay, bx, by = ax+ox, ay+oy, bx+ox, by+oy
	}
	x1, y1 := exit(ax, ay, bx, by, from.x, from.y)
	x2, y2 := exit(bx, by, ax, ay, to.x, to.y)
	class, flag := "edge", ""
	label := fmt.Sprintf("p99.9 %s, timeout %s", human.Seconds(e.P999Seconds), human.Seconds(e.TimeoutSeconds))
	tip := e.From + " → " + e.To + ": " + label
	var left string
	if e.LeftSeconds != nil {
		left = fmt.Sprintf("left %s of %s", human.Seconds(*e.LeftSeconds), human.Seconds(e.DeadlineSeconds))
		tip += ", " + left + " (p99.9 of the time spent above)"
	}
	if e.RetryAttempts > 0 {
		class += " retry-layer"
		tip += fmt.Sprintf("; the plan's retry layer, %d attempts", e.RetryAttempts)
	}
	if len(e.Marks) > 0 {
		class, flag = class+" flagged", " flagged"
		tip += " (" + strings.Join(e.Marks, ", ") + ")"
	}
	mx, my := (x1+x2)/2, (y1+y2)/2
	s.Lines = append(s.Lines, Shape{Class: class, X1: f1(x1), Y1: f1(y1), X2: f1(x2), Y2: f1(y2), Tip: tip})
	s.Paths = append(s.Paths, Shape{Class: "arrow" + flag, D: arrowHead(x1, y1, x2, y2), Tip: tip})
	ly := my - 5
	if left != "" {
		s.Texts = append(s.Texts, Label{Class: "edge-label" + flag, X: f1(mx), Y: f1(ly - 13), Anchor: "middle", Text: label})
		s.Texts = append(s.Texts, Label{Class: "edge-label" + flag, X: f1(mx), Y: f1(ly), Anchor: "middle", Text: left})
	} else {
		s.Texts = append(s.Texts, Label{Class: "edge-label" + flag, X: f1(mx), Y: f1(ly), Anchor: "middle", Text: label})
	}
	// Under the line, in words: the retry layer, and the findings (the
	// colour is not the only sign).
	var under []string
	if e.RetryAttempts > 0 {
		under = append(under, fmt.Sprintf("retries: %d attempts", e.RetryAttempts))
	}
	if len(e.Marks) > 0 {
		under = append(under, "! "+strings.Join(e.Marks, ", "))
	}
	for i, u := range under {
		cls := "edge-mark"
		if i == 0 && e.RetryAttempts > 0 {
			cls = "edge-retry"
		}
		s.Texts = append(s.Texts, Label{Class: cls, X: f1(mx), Y: f1(my + 13 + 13*float64(i)), Anchor: "middle", Text: u})
	}
}

// exit is where the line from (ax, ay), inside the node box at (x, y),
// towards (bx, by) leaves the box.
func exit(ax, ay, bx, by, x, y float64) (float64, float64) {
	dx, dy := bx-ax, by-ay
	t := math.Inf(1)
	if dx > 0 {
		t = min(t, (x+graphNodeW-ax)/dx)
	} else if dx < 0 {
		t = min(t, (x-ax)/dx)
	}
	if dy > 0 {
		t = min(t, (y+graphNodeH-ay)/dy)
	} else if dy < 0 {
		t = min(t, (y-ay)/dy)
	}
	if math.IsInf(t, 1) {
		return ax, ay
	}
	return ax + t*dx, ay + t*dy
}

// arrowHead is a filled triangle with its tip at (x2, y2), pointing along
// the line from (x1, y1).
func arrowHead(x1, y1, x2, y2 float64) string {
	const long, wide = 9.0, 4.0
	dx, dy := x2-x1, y2-y1
	l := math.Hypot(dx, dy)
	if l == 0 {
		return ""
	}
	ux, uy := dx/l, dy/l
	bx, by := x2-ux*long, y2-uy*long
	return "M" + f1(x2) + " " + f1(y2) + " L" + f1(bx-uy*wide) + " " + f1(by+ux*wide) +
		" L" + f1(bx+uy*wide) + " " + f1(by-ux*wide) + " Z"
}

// cut shortens s to at most n characters, the last an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
