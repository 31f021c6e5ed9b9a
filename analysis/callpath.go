package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/report"
)

// The call graph's paths: retries that multiply along them, and the
// budget their timeouts need against the root's deadline.
//
// Attempts: the CLIENT spans of one parent span to one callee are the
// attempts of one call (a retrying HTTP or gRPC client makes a span per
// attempt under the span that calls). A service that calls the same callee
// several times on purpose under one span (a loop, a fan-out to shards)
// reads as retries too: the spans do not tell the two apart.
//
// Along a path from a root (a service nobody in the graph calls) the
// attempts per call multiply: A trying B 3 times and B trying C 3 times
// is up to 9 attempts at C per call of A (docs/method.md: retry at one layer,
// the others fail fast).
//
// Budget: a path's budget is the sum of its edges' recommended timeouts.
// The timeouts are nested, A -> B's must hold B's own work and B -> C's
// timeout, so the sum is what the root must allow when each hop waits its
// whole timeout in turn. Only a path is summed: calls a service makes in
// parallel (fan-out) are separate paths, each held against the deadline
// alone; retries, which would multiply a hop's time, are not counted.
const (
	// maxAttemptGroups bounds the calls whose attempts are counted at
	// once; beyond it the oldest is counted with the attempts seen so far
	// and counted apart (attempt_groups_closed_early): a later attempt of
	// it would count as a call of its own.
	maxAttemptGroups = 500_000
	// maxAttemptsPerRootCall is the most attempts at a callee per call of
	// the root (the product along a path) before TT-RETRY-AMPLIFICATION:
	// one layer retrying up to 3 attempts in all, the others failing fast.
	maxAttemptsPerRootCall = 3
	// maxPathsWalked bounds the walk of the paths from the roots, which
	// grow exponentially in a dense graph; report.MaxListedPaths of them
	// are listed.
	maxPathsWalked = 100_000
)

// attemptKey is one call: a parent span's calls to one callee.
type attemptKey struct {
	trace  [16]byte
	parent [8]byte
	callee string
}

// attemptGroup is an open call: its edge, its attempts so far and the
// latest end among them (ns since the epoch).
type attemptGroup struct {
	edge     string
	attempts int64
	end      int64
}

// attemptEdge is what one edge's calls came to.
type attemptEdge struct {
	calls, attempts, max int64
}

// attemptCounter counts the attempts per call of each edge from the
// CLIENT spans' links, holding at most max calls open (a FIFO of their
// keys closes the oldest when full).
type attemptCounter struct {
	max         int
	open        map[attemptKey]attemptGroup
	queue       []attemptKey
	head        int
	closedEarly int64
	latest      int64 // the latest end read, ns since the epoch
	edges       map[string]*attemptEdge
	names       edgeNames
}

func newAttemptCounter(max int) *attemptCounter {
	return &attemptCounter{max: max, open: map[attemptKey]attemptGroup{}, edges: map[string]*attemptEdge{}, names: edgeNames{}}
}

func (c *attemptCounter) add(l ingest.SpanLink) {
	if !l.Client {
		return
	}
	k := attemptKey{trace: l.TraceID, parent: l.ParentID, callee: l.Callee}
	end := l.End.UnixNano()
	c.latest = max(c.latest, end)
	if g, ok := c.open[k]; ok {
		g.attempts++
		g.end = max(g.end, end)
		c.open[k] = g
		return
	}
	// Calls whose last attempt ended spanHorizon before the latest end
	// read are over: closed as calls, not early (memory stays flat as the
	// input grows).
	for len(c.open) > softWaiting && c.head < len(c.queue) {
		old := c.queue[c.head]
		g, ok := c.open[old]
		if ok && g.end >= c.latest-int64(spanHorizon) {
			break
		}
		if ok {
			delete(c.open, old)
			c.close(g)
		}
		c.queue[c.head] = attemptKey{}
		c.head++
	}
	for len(c.open) >= c.max && c.head < len(c.queue) {
		old := c.queue[c.head]
		c.queue[c.head] = attemptKey{}
		c.head++
		if g, ok := c.open[old]; ok {
			delete(c.open, old)
			c.close(g)
			c.closedEarly++
		}
	}
	if c.head > 0 && c.head >= len(c.queue)/2 {
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
		if c.head == 0 && n >= 1024 {
			c.open = rebuilt(c.open) // the room of the calls closed (deadline.go)
		}
	}
	c.open[k] = attemptGroup{edge: c.names.name(l.Caller, l.Callee), attempts: 1, end: end}
	c.queue = append(c.queue, k)
}

// close counts a call on its edge.
func (c *attemptCounter) close(g attemptGroup) {
	edge := g.edge
	if _, ok := c.edges[edge]; !ok && len(c.edges) >= maxDeadlineEdges {
		edge = histogram.Other
	}
	e := c.edges[edge]
	if e == nil {
		e = &attemptEdge{}
		c.edges[edge] = e
	}
	e.calls++
	e.attempts += g.attempts
	e.max = max(e.max, g.attempts)
}

// finish counts the calls still open: every attempt was read.
func (c *attemptCounter) finish() {
	for _, k := range c.queue[c.head:] {
		if g, ok := c.open[k]; ok {
			c.close(g)
		}
	}
	clear(c.open)
	c.queue, c.head = nil, 0
}

// addPaths sets the edges' attempts per call from c (finished), walks the
// paths of g from its roots and adds their findings: TT-RETRY-AMPLIFICATION
// where the attempts multiply beyond maxAttemptsPerRootCall, and with a
// deadline (> 0) TT-DEADLINE-BUDGET where the timeouts along a path add up
// to more. Roots are services that call and that no edge calls; a graph
// that is all cycles has none, and no paths.
func addPaths(g *report.CallGraph, c *attemptCounter, deadline time.Duration) {
	for i := range g.Edges {
		e := &g.Edges[i]
		if a := c.edges[e.Group]; a != nil && a.calls > 0 {
			mean, mx := float64(a.attempts)/float64(a.calls), a.max
			e.AttemptsPerCallMean, e.AttemptsPerCallMax = &mean, &mx
		}
	}
	g.AttemptGroupsClosedEarly = c.closedEarly
	if deadline > 0 {
		d := deadline.Seconds()
		g.DeadlineSeconds = &d
	}
	w := pathWalker{g: g, out: map[string][]int{}, on: map[string]bool{}}
	called := map[string]bool{}
	for i, e := range g.Edges { // sorted by group: the walk is deterministic
		w.out[e.Caller] = append(w.out[e.Caller], i)
		called[e.Callee] = true
	}
	var roots []string
	for caller := range w.out {
		if !called[caller] {
			roots = append(roots, caller)
		}
	}
	slices.Sort(roots)
	for _, r := range roots {
		w.walk(r)
	}
	g.PathsTotal, g.PathsCut = len(w.paths), w.cut
	type ranked struct {
		p                  report.Path
		amplified, tooLong bool
	}
	rs := make([]ranked, 0, len(w.paths))
	for _, idx := range w.paths {
		p := newPath(g, idx, deadline)
		rs = append(rs, ranked{p: p, amplified: p.AttemptsMax != nil && *p.AttemptsMax > maxAttemptsPerRootCall,
			tooLong: p.FitsDeadline != nil && !*p.FitsDeadline})
	}
	// Paths with findings first, then the most attempts, the longest
	// budget, and by name.
	slices.SortStableFunc(rs, func(a, b ranked) int {
		return cmp.Or(-cmp.Compare(btoi(a.amplified || a.tooLong), btoi(b.amplified || b.tooLong)),
			-cmp.Compare(orZero(a.p.AttemptsMax), orZero(b.p.AttemptsMax)),
			-cmp.Compare(a.p.TimeoutSecondsTotal, b.p.TimeoutSecondsTotal),
			slices.Compare(a.p.Edges, b.p.Edges))
	})
	if len(rs) > report.MaxListedPaths {
		rs = rs[:report.MaxListedPaths]
	}
	seen := map[string]bool{}
	for _, r := range rs {
		g.Paths = append(g.Paths, r.p)
		if r.amplified {
			// Trailing edges of one attempt multiply nothing: the finding
			// names the path up to the last edge that retries, once.
			edges := r.p.Edges
			for len(edges) > 1 && *edgeOf(g, edges[len(edges)-1]).AttemptsPerCallMax <= 1 {
				edges = edges[:len(edges)-1]
			}
			if key := strings.Join(edges, "\n"); !seen[key] {
				seen[key] = true
				g.Findings = append(g.Findings, amplificationFinding(g, edges, r.p, c.closedEarly))
			}
		}
		if r.tooLong {
			g.Findings = append(g.Findings, budgetFinding(g, r.p, deadline))
		}
	}
}

// pathWalker walks the paths from a root depth first, a service at most
// once on a path (cycles broken), at most maxPathsWalked paths in all.
type pathWalker struct {
	g     *report.CallGraph
	out   map[string][]int // edges by caller
	on    map[string]bool  // services on the current path
	stack []int
	paths [][]int
	cut   bool
}

func (w *pathWalker) walk(svc string) {
	if len(w.paths) >= maxPathsWalked {
		w.cut = true
		return
	}
	w.on[svc] = true
	defer delete(w.on, svc)
	further := false
	for _, i := range w.out[svc] {
		e := w.g.Edges[i]
		if w.on[e.Callee] {
			continue
		}
		further = true
		w.stack = append(w.stack, i)
		w.walk(e.Callee)
		w.stack = w.stack[:len(w.stack)-1]
	}
	if !further && len(w.stack) > 0 {
		if len(w.paths) >= maxPathsWalked {
			w.cut = true
			return
		}
		w.paths = append(w.paths, slices.Clone(w.stack))
	}
}

// newPath is the path of g's edges idx: the attempts multiplied, the
// timeouts added, held against the deadline when there is one.
func newPath(g *report.CallGraph, idx []int, deadline time.Duration) report.Path {
	p := report.Path{Edges: make([]string, 0, len(idx))}
	amax, amean, known := 1.0, 1.0, true
	for _, i := range idx {
		e := g.Edges[i]
		p.Edges = append(p.Edges, e.Group)
		p.TimeoutSecondsTotal += e.TimeoutSeconds
		if e.AttemptsPerCallMax == nil {
			known = false
			continue
		}
		amax *= float64(*e.AttemptsPerCallMax)
		amean *= *e.AttemptsPerCallMean
	}
	if known {
		p.AttemptsMax, p.AttemptsMean = &amax, &amean
	}
	if deadline > 0 {
		d := deadline.Seconds()
		p.DeadlineShares = make([]float64, 0, len(idx))
		for _, i := range idx {
			p.DeadlineShares = append(p.DeadlineShares, g.Edges[i].TimeoutSeconds/d)
		}
		fits := p.TimeoutSecondsTotal <= d
		p.FitsDeadline = &fits
	}
	return p
}

func amplificationFinding(g *report.CallGraph, edges []string, p report.Path, closedEarly int64) report.Finding {
	var hops []string
	for _, name := range edges {
		e := edgeOf(g, name)
		if *e.AttemptsPerCallMax <= 1 {
			hops = append(hops, fmt.Sprintf("%s calls %s once per call", e.Caller, e.Callee))
			continue
		}
		hops = append(hops, fmt.Sprintf("%s tries %s up to %d times per call (%s on average)",
			e.Caller, e.Callee, *e.AttemptsPerCallMax, human.Number(*e.AttemptsPerCallMean)))
	}
	root, last := edgeOf(g, edges[0]).Caller, edgeOf(g, edges[len(edges)-1]).Callee
	early := ""
	if closedEarly > 0 {
		early = fmt.Sprintf("; %s calls were counted before all their attempts may have been read, more than %s being open at once",
			human.Count(closedEarly), human.Count(maxAttemptGroups))
	}
	return finding.Newf(finding.RetryAmplification, finding.Fields{
		"path": edges, "attempts_max": *p.AttemptsMax, "attempts_mean": *p.AttemptsMean,
		"attempts_limit": maxAttemptsPerRootCall, "attempt_groups_closed_early": closedEarly},
		"Along %s the attempts multiply: %s; that is up to %s attempts at %s per call of %s (%s on average), more than the %d allowed: retry at one layer and let the others fail fast%s",
		pathText(g, edges), strings.Join(hops, ", "), human.Number(*p.AttemptsMax), last, root,
		human.Number(*p.AttemptsMean), maxAttemptsPerRootCall, early)
}

func budgetFinding(g *report.CallGraph, p report.Path, deadline time.Duration) report.Finding {
	var hops []string
	for i, name := range p.Edges {
		e := edgeOf(g, name)
		hops = append(hops, fmt.Sprintf("%s -> %s %s (%s)", e.Caller, e.Callee, human.Seconds(e.TimeoutSeconds), human.Percent(p.DeadlineShares[i])))
	}
	root := edgeOf(g, p.Edges[0]).Caller
	return finding.Newf(finding.DeadlineBudget, finding.Fields{
		"path": p.Edges, "timeout_seconds_total": p.TimeoutSecondsTotal, "deadline_seconds": deadline},
		"The recommended timeouts along %s add up to %s, more than the deadline of %s at %s: %s of the deadline; when each hop waits out its timeout the chain outlasts the deadline: shorten the timeouts down the chain, or propagate the deadline so that each hop gets only the time left",
		pathText(g, p.Edges), human.Seconds(p.TimeoutSecondsTotal), human.Duration(deadline), root, strings.Join(hops, ", "))
}

// pathText is a path as its services, "a -> b -> c".
func pathText(g *report.CallGraph, edges []string) string {
	parts := []string{edgeOf(g, edges[0]).Caller}
	for _, name := range edges {
		parts = append(parts, edgeOf(g, name).Callee)
	}
	return strings.Join(parts, " -> ")
}

// edgeOf returns g's edge of group name, which is there.
func edgeOf(g *report.CallGraph, name string) *report.Edge {
	i, _ := slices.BinarySearchFunc(g.Edges, name, func(e report.Edge, name string) int { return strings.Compare(e.Group, name) })
	return &g.Edges[i]
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func orZero(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
