package analysis

import (
	"context"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/report"
)

// The deadline down the chain (docs/method.md, "the chain"): with
// --deadline, the root of a trace (its span without a parent) owns the
// deadline, and a call made below it has what the deadline leaves after
// the time already spent above it: from the root span's start to the
// call's CLIENT span's start (queueing, the work of every hop above, the
// network). The lesson's example: a 1s deadline; the next hops get 970ms
// and 810ms; a request that waited 900ms in a queue first gets 100ms, 70ms
// and -90ms, and the last hop must drop the work rather than do it.
//
// Per edge, the time spent above its calls is a histogram, so the budget
// left at its median, at the recommendation's quantile and at the worst
// call is known; the quantile is read as its highest equivalent value, so
// the budget left there is never above the truth. A call is made with no
// useful time left when less is left than the edge's minimum useful try:
// the call policy's (an attempt with less time is not sent: 2 x the
// median by default, recommend's min-useful-try), or the callee's median
// without a policy. It would more likely time out than succeed, and the
// callee should drop it at once.
const (
	// maxBudgetTraces bounds the traces whose root's start is kept for
	// the budget read; the calls of traces beyond it are not counted
	// (traces_unrooted).
	maxBudgetTraces = 1_000_000
)

// rootStarts are the traces' roots' starts, ns since the epoch: the
// earliest start of a span without a parent, at most max traces.
type rootStarts struct {
	max     int
	m       map[[16]byte]int64
	dropped int64
}

func (r *rootStarts) add(l ingest.SpanLink) {
	if l.ParentID != [8]byte{} {
		return
	}
	start := l.Start.UnixNano()
	if s, ok := r.m[l.TraceID]; ok {
		r.m[l.TraceID] = min(s, start)
		return
	}
	if len(r.m) >= r.max {
		r.dropped++
		return
	}
	r.m[l.TraceID] = start
}

// edgeSpent is what one edge's calls had spent above them.
type edgeSpent struct {
	spent *histogram.Latency
	worst time.Duration
	// past counts the calls made with the deadline passed.
	past int64
}

// budgetCounter reads the CLIENT spans against their traces' roots.
type budgetCounter struct {
	roots    *rootStarts
	deadline time.Duration
	edges    map[string]*edgeSpent
	names    edgeNames
	unrooted int64
}

func (b *budgetCounter) add(l ingest.SpanLink) {
	if !l.Client {
		return
	}
	root, ok := b.roots.m[l.TraceID]
	if !ok {
		b.unrooted++
		return
	}
	edge := b.names.name(l.Caller, l.Callee)
	if _, ok := b.edges[edge]; !ok && len(b.edges) >= maxDeadlineEdges {
		edge = histogram.Other
	}
	e := b.edges[edge]
	if e == nil {
		e = &edgeSpent{spent: histogram.New()}
		b.edges[edge] = e
	}
	// A call that starts before its root (two hosts' clocks) spent nothing.
	spent := max(time.Duration(l.Start.UnixNano()-root), 0)
	e.spent.Record(spent)
	e.worst = max(e.worst, spent)
	if spent >= b.deadline {
		e.past++
	}
}

// readBudgets reads the span inputs twice more, for the traces' roots and
// then for the calls below them, and returns what each edge's calls had
// spent of the deadline; nil without a deadline.
func readBudgets(ctx context.Context, o Options, stdin io.Reader) (*budgetCounter, error) {
	deadline := o.Policy.Deadline
	if deadline <= 0 {
		return nil, nil
	}
	roots := &rootStarts{max: maxBudgetTraces, m: map[[16]byte]int64{}}
	if err := scanLinks(ctx, o, stdin, roots.add); err != nil {
		return nil, err
	}
	b := &budgetCounter{roots: roots, deadline: deadline, edges: map[string]*edgeSpent{}, names: edgeNames{}}
	if err := scanLinks(ctx, o, stdin, b.add); err != nil {
		return nil, err
	}
	return b, nil
}

// budgetQuantile is the quantile budgets are read at: the
// recommendation's.
func budgetQuantile(o Options) float64 {
	q := 1 - o.Recommend.FalseTimeouts
	if !(q > 0 && q < 1) {
		q = 0.999
	}
	return q
}

// leftAt is the time edge's calls had left of the deadline at quantile q
// of the time spent above them (its highest equivalent value: never above
// the truth); false when none of its calls was read.
func (b *budgetCounter) leftAt(edge string, q float64) (time.Duration, bool) {
	s := b.edges[edge]
	if s == nil || s.spent.Count() == 0 {
		return 0, false
	}
	return b.deadline - s.spent.Quantile(q), true
}

// applyBudgets gives each edge of g its budget under the root's deadline
// (b, nil: nothing to do), with a TT-NO-BUDGET-LEFT finding per edge whose
// calls were made with less than the edge's minimum useful try left
// (useful, seconds by group name: minUsefulTries).
func applyBudgets(g *report.CallGraph, b *budgetCounter, o Options, useful map[string]float64) {
	if b == nil {
		return
	}
	deadline := b.deadline
	q := budgetQuantile(o)
	d := deadline.Seconds()
	g.DeadlineSeconds = &d
	g.CallsUnrooted = b.unrooted
	// below is an upper bound of the calls made with less than a useful
	// try left (spent more than the deadline less the try), at least those
	// made past the deadline.
	below := func(name string, s *edgeSpent) int64 {
		u := time.Duration(useful[name] * float64(time.Second))
		return max(s.spent.CountAbove(deadline-u), s.past)
	}
	for i := range g.Edges {
		e := &g.Edges[i]
		s := b.edges[e.Group]
		if s == nil || s.spent.Count() == 0 {
			continue
		}
		spent := report.Spread{P50: s.spent.Quantile(0.5).Seconds(), AtQuantile: s.spent.Quantile(q).Seconds(), Worst: s.worst.Seconds()}
		left := report.Spread{P50: d - spent.P50, AtQuantile: d - spent.AtQuantile, Worst: d - spent.Worst}
		e.Budget = &report.EdgeBudget{Calls: s.spent.Count(), Quantile: q, SpentAboveSeconds: spent, LeftSeconds: left,
			MinUsefulSeconds: useful[e.Group], TimeoutSeconds: max(min(e.TimeoutSeconds, left.AtQuantile), 0),
			CallsBelowMinUseful: below(e.Group, s), CallsPastDeadline: s.past}
	}
	for _, name := range slices.Sorted(maps.Keys(b.edges)) {
		s := b.edges[name]
		n := below(name, s)
		if n == 0 {
			continue
		}
		caller, callee := splitEdge(name)
		past := "none after it had passed"
		if s.past > 0 {
			past = human.Count(s.past) + " after it had passed (the worst " + human.Duration(s.worst-deadline) + " past)"
		}
		g.Findings = append(g.Findings, finding.Newf(finding.NoBudgetLeft, finding.Fields{
			"edge": name, "calls": s.spent.Count(), "calls_below_min_useful": n, "calls_past_deadline": s.past,
			"min_useful_seconds": useful[name], "deadline_seconds": d, "left_seconds_worst": d - s.worst.Seconds()},
			"%s of %s's calls to %s (%s) were made with less than a useful try (%s) left of the root's %s deadline, %s: pass the time left down with the call, have %s drop at once a call with less than that left, and %s not make it",
			human.Count(n), caller, callee, human.Percent(float64(n)/float64(s.spent.Count())),
			human.Seconds(useful[name]), human.Duration(deadline), past, callee, caller))
	}
}

// minUsefulTries is each group's minimum useful try, in seconds by name:
// its call policy's min-useful-try step, or its median without one.
func minUsefulTries(groups []report.Group) map[string]float64 {
	out := map[string]float64{}
	for _, g := range groups {
		for _, p := range g.Percentiles {
			if p.Quantile == 0.5 {
				out[g.Name] = p.Seconds
			}
		}
		if g.Policy == nil {
			continue
		}
		for _, st := range g.Policy.Steps {
			if st.Rule == "min-useful-try" {
				out[g.Name] = st.Seconds
			}
		}
	}
	return out
}
