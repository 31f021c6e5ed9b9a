package plot

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hostileName = `<script>alert(1)</script>`

func sampleGraph() Graph {
	return Graph{
		Nodes: []string{"front", "cart", "db", "cart", "db", hostileName},
		Edges: []GraphEdge{
			{From: "front", To: "cart", P999Seconds: 0.2, TimeoutSeconds: 0.25},
			{From: "cart", To: "db", P999Seconds: 0.3, TimeoutSeconds: 0.4, Marks: []string{"inversion"}},
			{From: "db", To: "cart", P999Seconds: 0.01, TimeoutSeconds: 0.02},
			{From: "front", To: hostileName, P999Seconds: 0.05, TimeoutSeconds: 0.06},
		},
	}
}

type rect struct{ x, y, w, h float64 }

func nodeRects(t *testing.T, s Scene) map[string]rect {
	t.Helper()
	out := map[string]rect{}
	for _, r := range s.Rects {
		require.True(t, strings.HasPrefix(r.Class, "node"), r.Class)
		out[r.Tip] = rect{num(t, r.X), num(t, r.Y), num(t, r.W), num(t, r.H)}
	}
	return out
}

// onBorder reports whether (x, y) lies on r's border, within the one
// decimal the coordinates are written with.
func onBorder(r rect, x, y float64) bool {
	const eps = 0.051
	inX := x >= r.x-eps && x <= r.x+r.w+eps
	inY := y >= r.y-eps && y <= r.y+r.h+eps
	onV := math.Abs(x-r.x) <= eps || math.Abs(x-r.x-r.w) <= eps
	onH := math.Abs(y-r.y) <= eps || math.Abs(y-r.y-r.h) <= eps
	return inX && inY && (onV && inY || onH && inX)
}

// TestCallGraphGeometry: a box per service (names given twice count
// once), an arrow per edge from the border of its caller's box to the
// border of its callee's, its head's tip at the end; the roots at the
// left, each service one layer right of its nearest caller; the two
// arrows of cart and db, who call each other, apart.
func TestCallGraphGeometry(t *testing.T) {
	g := sampleGraph()
	s, ok := CallGraph("call-graph-plot", g)
	require.True(t, ok)
	assert.Equal(t, "call-graph-plot", s.ID)
	boxes := nodeRects(t, s)
	require.Len(t, boxes, 4)
	require.Len(t, s.Lines, len(g.Edges))
	require.Len(t, s.Paths, len(g.Edges))
	for i, e := range g.Edges {
		l := s.Lines[i]
		x1, y1, x2, y2 := num(t, l.X1), num(t, l.Y1), num(t, l.X2), num(t, l.Y2)
		assert.True(t, onBorder(boxes[e.From], x1, y1), "%s -> %s starts on %s's border: (%v, %v) %v", e.From, e.To, e.From, x1, y1, boxes[e.From])
		assert.True(t, onBorder(boxes[e.To], x2, y2), "%s -> %s ends on %s's border: (%v, %v) %v", e.From, e.To, e.To, x2, y2, boxes[e.To])
		assert.True(t, strings.HasPrefix(s.Paths[i].D, fmt.Sprintf("M%s %s ", l.X2, l.Y2)), "the head's tip is the line's end: %s", s.Paths[i].D)
		assert.Contains(t, l.Tip, e.From+" → "+e.To+": ")
	}
	assert.Equal(t, boxes["front"].x, 24.0, "the root at the left")
	assert.Greater(t, boxes["cart"].x, boxes["front"].x)
	assert.Equal(t, boxes["cart"].x, boxes[hostileName].x, "both one layer right of front")
	assert.Greater(t, boxes["db"].x, boxes["cart"].x, "db back to cart does not pull cart right")
	assert.Less(t, boxes[hostileName].y, boxes["cart"].y, "a layer by name: '<' before 'c'")
	cartDB, dbCart := s.Lines[1], s.Lines[2]
	ax, ay, bx, by := num(t, cartDB.X1), num(t, cartDB.Y1), num(t, cartDB.X2), num(t, cartDB.Y2)
	px, py := (num(t, dbCart.X1)+num(t, dbCart.X2))/2, (num(t, dbCart.Y1)+num(t, dbCart.Y2))/2
	dist := math.Abs((bx-ax)*(py-ay)-(by-ay)*(px-ax)) / math.Hypot(bx-ax, by-ay)
	assert.InDelta(t, graphPair, dist, 0.2, "the pair's arrows are drawn apart")

	for _, r := range s.Rects {
		assert.LessOrEqual(t, num(t, r.X)+num(t, r.W), float64(s.Width))
		assert.LessOrEqual(t, num(t, r.Y)+num(t, r.H), float64(s.Height))
	}
}

// TestCallGraphMarks: an edge with a finding is drawn in the warning
// class and says its marks in words, under it.
func TestCallGraphMarks(t *testing.T) {
	s, ok := CallGraph("g", sampleGraph())
	require.True(t, ok)
	assert.Equal(t, "edge flagged", s.Lines[1].Class)
	assert.Equal(t, "arrow flagged", s.Paths[1].Class)
	assert.Equal(t, "edge", s.Lines[0].Class)
	var marks, labels []string
	for _, l := range s.Texts {
		switch l.Class {
		case "edge-mark":
			marks = append(marks, l.Text)
		case "edge-label", "edge-label flagged":
			labels = append(labels, l.Text)
		}
	}
	assert.Equal(t, []string{"! inversion"}, marks)
	assert.Contains(t, labels, "p99.9 300ms, timeout 400ms")
	assert.Len(t, labels, 4)
}

// TestCallGraphPlan: with a deadline each edge says the time its calls have
// left of it; the plan's retry layer is drawn thick and says its attempts
// in words; a flagged edge of that layer keeps both marks.
func TestCallGraphPlan(t *testing.T) {
	left := func(v float64) *float64 { return &v }
	g := Graph{Nodes: []string{"gateway", "frontend", "orders", "payments"}, Edges: []GraphEdge{
		{From: "gateway", To: "frontend", P999Seconds: 0.3, TimeoutSeconds: 0.65, LeftSeconds: left(1), DeadlineSeconds: 1, RetryAttempts: 3},
		{From: "frontend", To: "orders", P999Seconds: 0.26, TimeoutSeconds: 0.55, LeftSeconds: left(0.97), DeadlineSeconds: 1},
		{From: "orders", To: "payments", P999Seconds: 0.054, TimeoutSeconds: 0.11, LeftSeconds: left(0.81), DeadlineSeconds: 1,
			Marks: []string{"no useful time left"}},
	}}
	s, ok := CallGraph("g", g)
	require.True(t, ok)
	assert.Equal(t, "edge retry-layer", s.Lines[0].Class)
	assert.Equal(t, "edge", s.Lines[1].Class)
	assert.Equal(t, "edge flagged", s.Lines[2].Class)
	assert.Contains(t, s.Lines[0].Tip, "left 1s of 1s (p99.9 of the time spent above); the plan's retry layer, 3 attempts")
	var texts []string
	for _, l := range s.Texts {
		if strings.HasPrefix(l.Class, "edge") {
			texts = append(texts, l.Class+": "+l.Text)
		}
	}
	assert.Equal(t, []string{
		"edge-label: p99.9 300ms, timeout 650ms", "edge-label: left 1s of 1s", "edge-retry: retries: 3 attempts",
		"edge-label: p99.9 260ms, timeout 550ms", "edge-label: left 970ms of 1s",
		"edge-label flagged: p99.9 54ms, timeout 110ms", "edge-label flagged: left 810ms of 1s", "edge-mark: ! no useful time left",
	}, texts)
	// The two lines of a label and the marks under the arrow do not overlap.
	for i := 0; i+1 < len(s.Texts); i++ {
		a, b := s.Texts[i], s.Texts[i+1]
		if strings.HasPrefix(a.Class, "edge") && strings.HasPrefix(b.Class, "edge") && a.X == b.X {
			assert.GreaterOrEqual(t, num(t, b.Y)-num(t, a.Y), 13.0, "%q above %q", a.Text, b.Text)
		}
	}
}

// TestCallGraphNamesOnlyAsText: names come from the data; they reach the
// scene as text and tooltips only (which html/template escapes), never in
// an id, a class, a path or a coordinate; a long one is cut, whole in the
// tooltip.
func TestCallGraphNamesOnlyAsText(t *testing.T) {
	g := sampleGraph()
	long := strings.Repeat("x", 40)
	g.Edges = append(g.Edges, GraphEdge{From: "front", To: long})
	g.Nodes = append(g.Nodes, long)
	s, ok := CallGraph("g", g)
	require.True(t, ok)
	assert.NotContains(t, s.ID+s.Class+s.Title+s.Note, "<")
	for _, sh := range slices.Concat(s.Rects, s.Lines, s.Paths, s.Dots) {
		assert.NotContains(t, sh.Class+sh.X+sh.Y+sh.W+sh.H+sh.D+sh.X1+sh.Y1+sh.X2+sh.Y2, "script")
	}
	var texts []string
	for _, l := range s.Texts {
		assert.NotContains(t, l.Class+l.X+l.Y+l.Anchor, "script")
		texts = append(texts, l.Text)
	}
	assert.Contains(t, texts, "<script>alert(1)</s…", "cut to 20 characters")
	assert.Contains(t, texts, strings.Repeat("x", 19)+"…")
	assert.Contains(t, nodeRects(t, s), long, "the whole name in the tooltip")
}

// TestCallGraphDeterministic: the layout depends on the graph, not on the
// order of its nodes.
func TestCallGraphDeterministic(t *testing.T) {
	g := sampleGraph()
	a, _ := CallGraph("g", g)
	slices.Reverse(g.Nodes)
	b, _ := CallGraph("g", g)
	assert.Equal(t, a, b)
}

// TestCallGraphBounds: no edge, or more than MaxGraphNodes services, is
// no plot; a graph that is all one cycle is laid out from its first name.
func TestCallGraphBounds(t *testing.T) {
	_, ok := CallGraph("g", Graph{Nodes: []string{"a"}})
	assert.False(t, ok)
	var big Graph
	for i := range MaxGraphNodes + 1 {
		big.Nodes = append(big.Nodes, fmt.Sprintf("s%d", i))
		big.Edges = append(big.Edges, GraphEdge{From: "s0", To: fmt.Sprintf("s%d", i+1)})
	}
	_, ok = CallGraph("g", big)
	assert.False(t, ok)

	s, ok := CallGraph("g", Graph{Nodes: []string{"b", "a"}, Edges: []GraphEdge{{From: "a", To: "b"}, {From: "b", To: "a"}}})
	require.True(t, ok)
	boxes := nodeRects(t, s)
	assert.Less(t, boxes["a"].x, boxes["b"].x)
}
