package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report/plot"
)

// CallGraph is the graph of a report whose groups are edges between
// services ("frontend cart": frontend calls cart), as spans grouped by
// caller and callee give them, and what its timeouts do along it.
type CallGraph struct {
	Edges []Edge `json:"edges"`
	// Paths are the paths from the roots (services nobody in the graph
	// calls) to the services that call no one further, cycles broken, at
	// most MaxListedPaths of them, most attempts first (analysis fills
	// them in from the spans' links).
	Paths []Path `json:"paths"`
	// PathsTotal is how many paths were walked; those beyond the listed
	// ones are left out. PathsCut: the walk stopped at its bound, so
	// there may be more.
	PathsTotal int  `json:"paths_total"`
	PathsCut   bool `json:"paths_cut"`
	// DeadlineSeconds is --deadline, which the paths' budgets are held
	// against; nil without it.
	DeadlineSeconds *float64 `json:"deadline_seconds"`
	// AttemptGroupsClosedEarly counts the calls (a parent span's attempts
	// at one callee) counted before all their attempts may have been
	// seen, because too many were open at once; 0 when none.
	AttemptGroupsClosedEarly int64 `json:"attempt_groups_closed_early"`
	// CallsUnrooted counts, with edge budgets, the client spans whose
	// trace's root was not read (or beyond the traces kept): they are in
	// no budget.
	CallsUnrooted int64 `json:"calls_unrooted,omitempty"`
	// Plan is the chain's plan (analyze --plan); absent without it.
	Plan *ChainPlan `json:"plan,omitempty"`
	// Findings are the graph's: a timeout inversion is a service whose
	// calls downstream may take longer than its caller waits for it
	// (TT-TIMEOUT-INVERSION); the others are analysis's
	// (TT-DEADLINE-NOT-PROPAGATED, TT-CALL-OUTLIVES-CALLER,
	// TT-RETRY-AMPLIFICATION, TT-DEADLINE-BUDGET).
	Findings []Finding `json:"findings"`
}

// MaxListedPaths bounds CallGraph.Paths.
const MaxListedPaths = 100

// Path is one path of the call graph from a root.
type Path struct {
	// Edges are the path's groups ("caller callee"), the root's first.
	Edges []string `json:"edges"`
	// AttemptsMax and AttemptsMean are the attempts at the path's last
	// callee per call of the root: the product of the edges' attempts
	// per call (their max, their mean). nil when an edge's attempts are
	// unknown (its spans were read once only, from standard input).
	AttemptsMax  *float64 `json:"attempts_max"`
	AttemptsMean *float64 `json:"attempts_mean"`
	// TimeoutSecondsTotal is the sum of the edges' recommended timeouts:
	// the budget the chain needs when each hop spends its timeout in turn.
	TimeoutSecondsTotal float64 `json:"timeout_seconds_total"`
	// DeadlineShares are each edge's timeout over the deadline, and
	// FitsDeadline whether the total is within it; nil without
	// --deadline.
	DeadlineShares []float64 `json:"deadline_shares"`
	FitsDeadline   *bool     `json:"fits_deadline"`
}

// Edge is one group seen as a call from Caller to Callee.
type Edge struct {
	Group          string  `json:"group"`
	Caller         string  `json:"caller"`
	Callee         string  `json:"callee"`
	Calls          int64   `json:"calls"`
	P999Seconds    float64 `json:"p99_9_seconds"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// AttemptsPerCallMean and AttemptsPerCallMax are the caller's
	// attempts per call: its CLIENT spans to the callee under one parent
	// span, the siblings being retries of one call. nil when unknown.
	AttemptsPerCallMean *float64 `json:"attempts_per_call_mean"`
	AttemptsPerCallMax  *int64   `json:"attempts_per_call_max"`
	// Budget is what the root's deadline leaves the edge's calls, with
	// --deadline and the spans read twice more; absent otherwise.
	Budget *EdgeBudget `json:"budget,omitempty"`
}

// EdgeBudget is the root's deadline down the chain at one edge: the time
// already spent above its calls (from the start of their trace's root
// span to the call's start), and the time it leaves them.
type EdgeBudget struct {
	// Calls are the edge's client spans whose trace's root was read.
	Calls int64 `json:"calls"`
	// Quantile is the recommendation's (1 - --false-timeouts).
	Quantile float64 `json:"quantile"`
	// SpentAboveSeconds is the time spent above the calls at their median,
	// at Quantile (its highest equivalent value: an upper bound) and at
	// the worst call; LeftSeconds is the deadline less each (negative:
	// the call was made after the deadline had passed).
	SpentAboveSeconds Spread `json:"spent_above_seconds"`
	LeftSeconds       Spread `json:"left_seconds"`
	// MinUsefulSeconds is the least time worth a try: the call policy's
	// min-useful-try (2 x the median by default), or the callee's median
	// without a policy. A call with less left would more likely time out
	// than succeed.
	MinUsefulSeconds float64 `json:"min_useful_seconds"`
	// TimeoutSeconds is the edge's timeout within its budget: its
	// recommended timeout, or the budget left at Quantile when less (0
	// when none is left).
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// CallsBelowMinUseful and CallsPastDeadline count the calls made with
	// less than MinUsefulSeconds left, and with the deadline passed.
	CallsBelowMinUseful int64 `json:"calls_below_min_useful"`
	CallsPastDeadline   int64 `json:"calls_past_deadline"`
}

// ChainPlan is the plan of analyze --plan: every hop's policy is fitted to
// the time its calls have left of the root's deadline at Quantile, and only
// RetryEdges (the outermost layer, or the innermost) keep retries.
type ChainPlan struct {
	RetryAt         string   `json:"retry_at"` // outermost, innermost
	DeadlineSeconds float64  `json:"deadline_seconds"`
	Quantile        float64  `json:"quantile"`
	RetryEdges      []string `json:"retry_edges"`
	Attempts        int      `json:"attempts"` // the retry layer's attempts (--attempts)
	// Simulation is one path replayed under faults at its bottom hop,
	// every hop retrying against the plan; absent when no path was found.
	Simulation *ChainSimulation `json:"simulation,omitempty"`
}

// ChainSimulation is a path of the call graph replayed (simulate's
// ChainSimulate, docs/chain.md "The chain simulated") under faults at its
// bottom hop's callee, with two sets of policies.
type ChainSimulation struct {
	// Path is the path's edges (groups), the root's first; FaultAt the
	// service at its bottom.
	Path    []string `json:"path"`
	FaultAt string   `json:"fault_at"`
	// OwnSeconds is each hop's callee's own work before it calls the next
	// hop (the median time spent above the next edge's calls less that
	// above this edge's), root first; the bottom's is 0.
	OwnSeconds []float64  `json:"own_seconds"`
	Requests   int        `json:"requests"`
	Seed       uint64     `json:"seed"`
	Runs       []ChainRun `json:"runs"`
}

// Policy sets of a ChainRun.
const (
	ChainEveryHopRetries = "every_hop_retries"
	ChainPlanned         = "plan"
)

// ChainRun is the path under one fault with one set of policies.
type ChainRun struct {
	Fault string `json:"fault"` // none, fast failures, hang, slowdown x3
	// Policies: every_hop_retries (each hop --attempts attempts of its
	// recommended timeout, within the whole deadline from its own call)
	// or plan (the plan's policies).
	Policies string `json:"policies"`
	// SuccessFraction is the share of the root's requests answered
	// within its deadline.
	SuccessFraction float64 `json:"success_fraction"`
	// AttemptsMean and AttemptsMax are the attempts that reach each
	// hop's callee per request of the root, root first.
	AttemptsMean []float64 `json:"attempts_per_request_mean"`
	AttemptsMax  []int     `json:"attempts_per_request_max"`
	// WorkAfterRootSeconds is the work done below after the root's call
	// ended, per request on average.
	WorkAfterRootSeconds float64 `json:"work_after_root_seconds"`
}

// Spread is a figure at a distribution's median, at a chosen quantile and
// at its worst.
type Spread struct {
	P50        float64 `json:"p50"`
	AtQuantile float64 `json:"at_quantile"`
	Worst      float64 `json:"worst"`
}

// NewCallGraph reads the groups as edges (a name of two words, caller and
// callee) and finds the inversions: for a service B called by A and
// calling C, B's recommended timeout towards C at or above A's towards B
// means that when C is slow A gives up first, and B goes on working for a
// caller that is gone. nil when fewer than two groups read as edges.
func NewCallGraph(groups []Group) *CallGraph {
	g := &CallGraph{Edges: []Edge{}, Paths: []Path{}, Findings: []Finding{}}
	for _, gr := range groups {
		caller, callee, ok := groupname.Edge(gr.Name)
		if !ok {
			continue
		}
		g.Edges = append(g.Edges, Edge{Group: gr.Name, Caller: caller, Callee: callee, Calls: gr.Samples,
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

// callGraphSection is the call graph: its edges and their timeouts, the
// paths from its roots with their attempts and budgets, the findings along
// it, and (HTML only) the graph drawn.
func callGraphSection(r *Report) *Section {
	cg := r.CallGraph
	if cg == nil {
		return nil
	}
	t := &Table{Class: "call-graph", Columns: []Column{{Title: "caller"}, {Title: "callee"}, {Title: "calls", Numeric: true},
		{Title: "p99.9", Numeric: true}, {Title: "timeout", Numeric: true}, {Title: "attempts per call", Numeric: true}}}
	for _, e := range cg.Edges {
		attempts := "unknown"
		if e.AttemptsPerCallMean != nil && e.AttemptsPerCallMax != nil {
			attempts = fmt.Sprintf("%s (max %d)", human.Number(*e.AttemptsPerCallMean), *e.AttemptsPerCallMax)
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: e.Caller}, {Text: e.Callee}, {Text: human.Count(e.Calls)},
			{Text: human.Seconds(e.P999Seconds)}, {Text: human.Seconds(e.TimeoutSeconds)}, {Text: attempts}}})
	}
	s := &Section{ID: "call-graph", Title: fmt.Sprintf("Call graph (%d edges)", len(cg.Edges)), Blocks: []Block{{Table: t}}}
	if fig, ok := plot.CallGraph("call-graph-plot", plotGraph(cg)); ok {
		s.Blocks = append(s.Blocks, Block{Figure: &fig})
	}
	if pt := pathsTable(cg); pt != nil {
		s.Blocks = append(s.Blocks, Block{Table: pt})
	}
	if bt := budgetTable(cg); bt != nil {
		s.Blocks = append(s.Blocks, Block{Table: bt})
	}
	if p := cg.Plan; p != nil {
		edges := "none"
		if len(p.RetryEdges) > 0 {
			var names []string
			for _, g := range p.RetryEdges {
				names = append(names, edgeArrow(cg, g))
			}
			edges = strings.Join(names, ", ")
		}
		s.Blocks = append(s.Blocks, textPara(fmt.Sprintf("The plan (%s): retries at the %s layer only (%s); every other hop makes one attempt; each within the time it has left of the %s deadline at %s, and no more than its caller's own call leaves it (each group's call policy says its part, step \"plan\").",
			usage.Plan, p.RetryAt, edges, human.Seconds(p.DeadlineSeconds), human.Quantile(p.Quantile))))
		if st := chainSimTable(cg, p.Simulation); st != nil {
			s.Blocks = append(s.Blocks, textPara("The chain under a fault at "+p.Simulation.FaultAt+" ("+pathArrows(cg, p.Simulation.Path)+")"+hangSummary(p.Simulation)+":"), Block{Table: st})
		}
	}
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

// pathsTable lists the graph's paths: the attempts at the last callee per
// root call, the timeouts summed and, with a deadline, each edge's share
// of it; nil when there are none.
func pathsTable(cg *CallGraph) *Table {
	if len(cg.Paths) == 0 {
		return nil
	}
	t := &Table{Class: "call-paths", Columns: []Column{{Title: "path"}, {Title: "attempts per root call", Numeric: true},
		{Title: "timeouts summed", Numeric: true}}}
	if cg.DeadlineSeconds != nil {
		t.Columns = append(t.Columns, Column{Title: "share of the deadline per edge", Numeric: true}, Column{Title: "fits the deadline"})
	}
	callers := map[string]Edge{}
	for _, e := range cg.Edges {
		callers[e.Group] = e
	}
	for _, p := range cg.Paths {
		parts := []string{}
		for i, g := range p.Edges {
			e := callers[g]
			if i == 0 {
				parts = append(parts, e.Caller)
			}
			parts = append(parts, e.Callee)
		}
		attempts := "unknown"
		if p.AttemptsMax != nil && p.AttemptsMean != nil {
			attempts = fmt.Sprintf("%s (max %s)", human.Number(*p.AttemptsMean), human.Number(*p.AttemptsMax))
		}
		row := Row{Cells: []Cell{{Text: strings.Join(parts, " -> ")}, {Text: attempts}, {Text: human.Seconds(p.TimeoutSecondsTotal)}}}
		if cg.DeadlineSeconds != nil && p.FitsDeadline != nil {
			var shares []string
			for _, sh := range p.DeadlineShares {
				shares = append(shares, human.Percent(sh))
			}
			fits := Cell{Text: "yes"}
			if !*p.FitsDeadline {
				fits = Cell{Text: "no", Strong: true}
			}
			row.Cells = append(row.Cells, Cell{Text: strings.Join(shares, " + ")}, fits)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Legend = "Attempts per root call: the attempts per call of the path's edges multiplied, on average (and at most), at its last callee for each call of its root."
	if cg.DeadlineSeconds != nil {
		t.Legend += " Timeouts summed: the edges' recommended timeouts added up, what the chain needs when each hop waits out its timeout in turn, held against the deadline of " +
			human.Seconds(*cg.DeadlineSeconds) + "; calls made in parallel are separate paths, never added."
	}
	if left := cg.PathsTotal - len(cg.Paths); left > 0 || cg.PathsCut {
		more := ""
		if cg.PathsCut {
			more = " or more (the walk stopped at its bound)"
		}
		t.Legend += fmt.Sprintf(" %s more paths%s are not listed.", human.Count(int64(left)), more)
	}
	return t
}

// budgetTable lists, with --deadline, what the root's deadline leaves each
// edge's calls; nil when no edge has a budget.
func budgetTable(cg *CallGraph) *Table {
	if cg.DeadlineSeconds == nil {
		return nil
	}
	var t *Table
	var q float64
	for _, e := range cg.Edges {
		b := e.Budget
		if b == nil {
			continue
		}
		if t == nil {
			q = b.Quantile
			qn := human.Quantile(q)
			t = &Table{Class: "call-budgets", Columns: []Column{{Title: "caller"}, {Title: "callee"},
				{Title: "spent above (p50)", Numeric: true}, {Title: "left (p50)", Numeric: true}, {Title: "left (" + qn + ")", Numeric: true},
				{Title: "left (worst)", Numeric: true}, {Title: "useful try", Numeric: true}, {Title: "timeout in budget", Numeric: true},
				{Title: "calls without useful time", Numeric: true}}}
		}
		none := Cell{Text: human.Count(b.CallsBelowMinUseful)}
		if b.CallsBelowMinUseful > 0 {
			none.Strong = true
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: e.Caller}, {Text: e.Callee}, {Text: human.Seconds(b.SpentAboveSeconds.P50)},
			{Text: human.Seconds(b.LeftSeconds.P50)}, {Text: human.Seconds(b.LeftSeconds.AtQuantile)}, {Text: human.Seconds(b.LeftSeconds.Worst)},
			{Text: human.Seconds(b.MinUsefulSeconds)}, {Text: human.Seconds(b.TimeoutSeconds)}, none}})
	}
	if t == nil {
		return nil
	}
	t.Legend = "The deadline down the chain: of the root's " + human.Seconds(*cg.DeadlineSeconds) +
		" deadline, what is left when each call is made, after the time spent above it since its trace's root began (queueing and every hop above); " +
		"at " + human.Quantile(q) + " an upper bound of the time spent, so a lower bound of the time left. Timeout in budget: the recommended timeout, or the time left at " +
		human.Quantile(q) + " when less. Useful try: the least time worth an attempt (the call policy's min-useful-try); a call made with less left (or none) should be dropped by the callee at once."
	if cg.CallsUnrooted > 0 {
		t.Legend += " " + human.Count(cg.CallsUnrooted) + " calls whose trace's root span was not read are in no row."
	}
	return t
}

// plotGraph is the graph for its plot, each edge marked with the
// findings on it.
func plotGraph(cg *CallGraph) plot.Graph {
	marks := map[string][]string{}
	mark := func(group any, m string) {
		if g, ok := group.(string); ok && !slices.Contains(marks[g], m) {
			marks[g] = append(marks[g], m)
		}
	}
	for _, f := range cg.Findings {
		switch f.Code {
		case finding.TimeoutInversion:
			mark(f.Fields["upstream"], "inversion")
			mark(f.Fields["downstream"], "inversion")
		case finding.DeadlineNotPropagated:
			mark(f.Fields["edge"], "deadline not propagated")
		case finding.CallOutlivesCaller:
			mark(f.Fields["edge"], "outlives its caller")
		case finding.NoBudgetLeft:
			mark(f.Fields["edge"], "no useful time left")
		}
	}
	retries := map[string]bool{}
	if cg.Plan != nil {
		for _, g := range cg.Plan.RetryEdges {
			retries[g] = true
		}
	}
	var g plot.Graph
	for _, e := range cg.Edges {
		g.Nodes = append(g.Nodes, e.Caller, e.Callee)
		ge := plot.GraphEdge{From: e.Caller, To: e.Callee, P999Seconds: e.P999Seconds, TimeoutSeconds: e.TimeoutSeconds,
			Marks: marks[e.Group]}
		if b := e.Budget; b != nil && cg.DeadlineSeconds != nil {
			left := b.LeftSeconds.AtQuantile
			ge.LeftSeconds, ge.DeadlineSeconds = &left, *cg.DeadlineSeconds
		}
		if retries[e.Group] {
			ge.RetryAttempts = max(cg.Plan.Attempts, 1)
		}
		g.Edges = append(g.Edges, ge)
	}
	return g
}

// edgeArrow is the edge of group g as "caller -> callee", or g itself when
// the graph has no such edge.
func edgeArrow(cg *CallGraph, g string) string {
	for _, e := range cg.Edges {
		if e.Group == g {
			return e.Caller + " -> " + e.Callee
		}
	}
	return g
}

// chainSimTable is the chain simulation: per fault at the path's bottom,
// every hop retrying against the plan; nil without one.
func chainSimTable(cg *CallGraph, sim *ChainSimulation) *Table {
	if sim == nil || len(sim.Runs) == 0 {
		return nil
	}
	t := &Table{Class: "chain-simulation", Columns: []Column{{Title: "fault"}, {Title: "policies"},
		{Title: "success", Numeric: true}, {Title: "attempts at " + sim.FaultAt + " per request", Numeric: true},
		{Title: "work after the root gave up", Numeric: true}}}
	names := map[string]string{ChainEveryHopRetries: "every hop retries", ChainPlanned: "the plan"}
	for _, r := range sim.Runs {
		last := len(r.AttemptsMean) - 1
		attempts := fmt.Sprintf("%s (max %d)", human.Number(r.AttemptsMean[last]), r.AttemptsMax[last])
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: r.Fault}, {Text: names[r.Policies]}, {Text: human.Percent(r.SuccessFraction)},
			{Text: attempts}, {Text: human.Seconds(r.WorkAfterRootSeconds)}}})
	}
	own := make([]string, len(sim.OwnSeconds)-1)
	for i, w := range sim.OwnSeconds[:len(sim.OwnSeconds)-1] {
		own[i] = human.Seconds(w)
	}
	t.Legend = fmt.Sprintf("%s requests of the root replayed (seed %d) down the path: %s's latency drawn from its measured calls, each hop above it its callee's own work before calling on (%s, root first: the median time spent above the next call less that above this one) and the whole call below. "+
		"Every hop retries: each hop makes the %s of its recommended timeout, retrying timeouts and 5xx as an idempotent call does, within the whole deadline counted from its own call (a hop that resets it); the plan: the plan's policies, retrying what they retry. "+
		"Success: the root's requests answered within its deadline. Work after the root gave up: the work below after the root's call ended, per request, no hop being cancelled by its caller (docs/chain.md).",
		human.Count(int64(sim.Requests)), sim.Seed, sim.FaultAt, strings.Join(own, ", "), usage.Attempts)
	return t
}

// pathArrows is a path's services joined by arrows.
func pathArrows(cg *CallGraph, edges []string) string {
	var parts []string
	for i, g := range edges {
		a := edgeArrow(cg, g)
		if i > 0 {
			if _, callee, ok := strings.Cut(a, " -> "); ok {
				a = callee
			}
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " -> ")
}

// hangSummary is the attempts at the bottom per request under a hang,
// every hop retrying against the plan, as a clause; "" without both runs.
func hangSummary(sim *ChainSimulation) string {
	var every, plan *ChainRun
	for i, r := range sim.Runs {
		if r.Fault != "hang" || len(r.AttemptsMean) == 0 {
			continue
		}
		switch r.Policies {
		case ChainEveryHopRetries:
			every = &sim.Runs[i]
		case ChainPlanned:
			plan = &sim.Runs[i]
		}
	}
	if every == nil || plan == nil {
		return ""
	}
	last := len(every.AttemptsMean) - 1
	return fmt.Sprintf("; under a hang there, every hop retrying sends %s attempts to %s per request, the plan %s",
		human.Number(every.AttemptsMean[last]), sim.FaultAt, human.Number(plan.AttemptsMean[len(plan.AttemptsMean)-1]))
}
