package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// CallGraph is the graph of a report whose groups are edges between
// services ("frontend cart": frontend calls cart), as spans grouped by
// caller and callee give them, and what its timeouts do along it.
type CallGraph struct {
	Edges []Edge `json:"edges"`
	// Findings are the graph's: a timeout inversion is a service whose
	// calls downstream may take longer than its caller waits for it
	// (TT-TIMEOUT-INVERSION).
	Findings []Finding `json:"findings"`
}

// Edge is one group seen as a call from Caller to Callee.
type Edge struct {
	Group          string  `json:"group"`
	Caller         string  `json:"caller"`
	Callee         string  `json:"callee"`
	Calls          int64   `json:"calls"`
	P999Seconds    float64 `json:"p99_9_seconds"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// NewCallGraph reads the groups as edges (a name of two words, caller and
// callee) and finds the inversions: for a service B called by A and
// calling C, B's recommended timeout towards C at or above A's towards B
// means that when C is slow A gives up first, and B goes on working for a
// caller that is gone. nil when fewer than two groups read as edges.
func NewCallGraph(groups []Group) *CallGraph {
	g := &CallGraph{Edges: []Edge{}, Findings: []Finding{}}
	for _, gr := range groups {
		parts := strings.Fields(gr.Name)
		if len(parts) != 2 {
			continue
		}
		g.Edges = append(g.Edges, Edge{Group: gr.Name, Caller: parts[0], Callee: parts[1], Calls: gr.Samples,
			P999Seconds: percentile(gr, 0.999), TimeoutSeconds: gr.Recommendation.TimeoutSeconds})
	}
	if len(g.Edges) < 2 {
		return nil
	}
	sort.Slice(g.Edges, func(i, j int) bool { return g.Edges[i].Group < g.Edges[j].Group })
	for _, up := range g.Edges {
		for _, down := range g.Edges {
			if down.Caller != up.Callee || down.Callee == up.Caller {
				continue
			}
			if down.TimeoutSeconds >= up.TimeoutSeconds {
				g.Findings = append(g.Findings, finding.Newf(finding.TimeoutInversion, finding.Fields{
					"upstream": up.Group, "downstream": down.Group,
					"upstream_timeout_seconds": up.TimeoutSeconds, "downstream_timeout_seconds": down.TimeoutSeconds},
					"%s waits %s for %s, but %s's calls to %s get %s: when %s is slow, %s gives up first and %s works on for nobody; give %s's calls to %s less than %s, or %s's to %s more",
					up.Caller, human.Seconds(up.TimeoutSeconds), up.Callee, down.Caller, down.Callee, human.Seconds(down.TimeoutSeconds),
					down.Callee, up.Caller, up.Callee, down.Caller, down.Callee, human.Seconds(up.TimeoutSeconds), up.Caller, up.Callee))
			}
		}
	}
	return g
}

// callGraphSection is the call graph: its edges and their timeouts, and
// the inversions along it.
func callGraphSection(r *Report) *Section {
	cg := r.CallGraph
	if cg == nil {
		return nil
	}
	t := &Table{Class: "call-graph", Columns: []Column{{Title: "caller"}, {Title: "callee"}, {Title: "calls", Numeric: true},
		{Title: "p99.9", Numeric: true}, {Title: "timeout", Numeric: true}}}
	for _, e := range cg.Edges {
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: e.Caller}, {Text: e.Callee}, {Text: human.Count(e.Calls)},
			{Text: human.Seconds(e.P999Seconds)}, {Text: human.Seconds(e.TimeoutSeconds)}}})
	}
	s := &Section{ID: "call-graph", Title: fmt.Sprintf("Call graph (%d edges)", len(cg.Edges)), Blocks: []Block{{Table: t}}}
	for _, f := range cg.Findings {
		s.Blocks = append(s.Blocks, Block{Notice: &Notice{Severity: string(f.Severity), Text: f.Message, Code: string(f.Code)}})
	}
	inverted := false
	for _, f := range cg.Findings {
		inverted = inverted || f.Code == finding.TimeoutInversion
	}
	if !inverted {
		s.Blocks = append(s.Blocks, textPara("No timeout inversion: every service's timeouts downstream are shorter than its callers' towards it."))
	}
	return s
}
