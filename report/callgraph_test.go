package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

func edgeGroup(name string, timeout float64) Group {
	return Group{Name: name, Samples: 100, Recommendation: Recommendation{TimeoutSeconds: timeout},
		Percentiles: []Percentile{{Quantile: 0.999, Seconds: timeout * 0.9}}}
}

// TestNewCallGraph: an inversion is a service whose timeout downstream is
// at or above its caller's towards it; a call back to the caller is no
// chain; groups that are not caller and callee make no graph.
func TestNewCallGraph(t *testing.T) {
	g := NewCallGraph([]Group{edgeGroup("a b", 0.5), edgeGroup("b c", 0.5), edgeGroup("b d", 0.2), edgeGroup("b a", 2)})
	require.NotNil(t, g)
	require.Len(t, g.Edges, 4)
	assert.Equal(t, "a b", g.Edges[0].Group, "sorted by group")
	require.Len(t, g.Findings, 1, "b -> c at 0.5 s is not below a -> b's 0.5 s; b -> d is; b -> a goes back to the caller")
	assert.Equal(t, "a b", g.Findings[0].Fields["upstream"])
	assert.Equal(t, "b c", g.Findings[0].Fields["downstream"])
	assert.Contains(t, g.Findings[0].Message, "a waits 500ms for b, but b's calls to c get 500ms")

	assert.Nil(t, NewCallGraph([]Group{edgeGroup("all", 1)}), "one group, no graph")
	assert.Nil(t, NewCallGraph([]Group{edgeGroup("GET /users", 1), edgeGroup("a b c", 1)}), "not caller and callee")
}

// graphReport is a report whose call graph has a service named like a
// script, an inversion (a b then b c), a path with its attempts and a
// deadline it does not fit.
func graphReport() *Report {
	r := unknowns()
	evil := "<script>alert(1)</script>"
	g := NewCallGraph([]Group{edgeGroup("a b", 0.5), edgeGroup("b c", 0.6), edgeGroup("a "+evil, 0.1)})
	mean, mx := 2.0, int64(2)
	for i := range g.Edges {
		g.Edges[i].AttemptsPerCallMean, g.Edges[i].AttemptsPerCallMax = &mean, &mx
	}
	d, fits, six := 1.0, false, 4.0
	g.DeadlineSeconds = &d
	g.Paths = []Path{{Edges: []string{"a b", "b c"}, AttemptsMax: &six, AttemptsMean: &six, TimeoutSecondsTotal: 1.1,
		DeadlineShares: []float64{0.5, 0.6}, FitsDeadline: &fits}}
	g.PathsTotal = 3
	r.CallGraph = g
	return r
}

// TestCallGraphSection: the paths table in every renderer, the graph drawn
// in HTML only, a box per service and an arrow per edge, the inversion's
// edges flagged in colour and in words, and the name from the data escaped.
func TestCallGraphSection(t *testing.T) {
	r := graphReport()
	var text, markdown, html bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	require.NoError(t, WriteMarkdown(&markdown, r))
	require.NoError(t, WriteHTML(&html, r))
	assert.Contains(t, text.String(), "a -> b -> c")
	assert.Contains(t, text.String(), "50 % + 60 %")
	assert.Contains(t, markdown.String(), "2 more paths are not listed.")
	assert.Contains(t, markdown.String(), `| a -\> b -\> c | 4 (max 4) | 1.1s | 50 % + 60 % | **no** |`)
	assert.NotContains(t, text.String()+markdown.String(), "<svg")

	out := html.String()
	i := strings.Index(out, `<svg id="call-graph-plot"`)
	require.GreaterOrEqual(t, i, 0, "the graph is drawn")
	svg := out[i : i+strings.Index(out[i:], "</svg>")]
	assert.Equal(t, 4, strings.Count(svg, `<rect class="node`), "a, b, c and the script")
	assert.Equal(t, 1, strings.Count(svg, `<rect class="node root"`), "a")
	assert.Equal(t, 3, strings.Count(svg, `<line class="edge`))
	assert.Equal(t, 2, strings.Count(svg, `<line class="edge flagged"`), "a b and b c invert")
	assert.Equal(t, 2, strings.Count(svg, ">! inversion</text>"), "the mark in words too")
	assert.Equal(t, 0, strings.Count(strings.ToLower(out), "<script"))
	assert.Contains(t, svg, ">&lt;script&gt;alert(1)&lt;/s…</text>")
	assert.Contains(t, svg, "<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>")
}

// TestPlotGraphPlan: the plot of a planned chain carries each edge's time
// left at the quantile (with --deadline), the plan's retry layer with its
// attempts, and TT-NO-BUDGET-LEFT as a mark on its edge.
func TestPlotGraphPlan(t *testing.T) {
	g := NewCallGraph([]Group{edgeGroup("a b", 0.5), edgeGroup("b c", 0.2)})
	require.NotNil(t, g)
	d := 1.0
	g.DeadlineSeconds = &d
	g.Edges[0].Budget = &EdgeBudget{LeftSeconds: Spread{P50: 1, AtQuantile: 1, Worst: 0.1}}
	g.Edges[1].Budget = &EdgeBudget{LeftSeconds: Spread{P50: 0.8, AtQuantile: 0.7, Worst: -0.1}}
	g.Plan = &ChainPlan{RetryAt: "outermost", DeadlineSeconds: 1, Quantile: 0.999, RetryEdges: []string{"a b"}, Attempts: 3}
	g.Findings = append(g.Findings, finding.New(finding.NoBudgetLeft, finding.Fields{"edge": "b c"}, "b's calls to c"))
	p := plotGraph(g)
	require.Len(t, p.Edges, 2)
	ab, bc := p.Edges[0], p.Edges[1]
	assert.Equal(t, 3, ab.RetryAttempts)
	assert.Equal(t, 0, bc.RetryAttempts)
	require.NotNil(t, ab.LeftSeconds)
	require.NotNil(t, bc.LeftSeconds)
	assert.InDelta(t, 0.7, *bc.LeftSeconds, 1e-12, "the time left at the quantile, not the median")
	assert.InDelta(t, 1, bc.DeadlineSeconds, 1e-12)
	assert.Equal(t, []string{"no useful time left"}, bc.Marks)
	assert.Empty(t, ab.Marks)

	var html bytes.Buffer
	r := unknowns()
	r.CallGraph = g
	require.NoError(t, WriteHTML(&html, r))
	assert.Contains(t, html.String(), "retries: 3 attempts")
	assert.Contains(t, html.String(), "left 700ms of 1s")
}
