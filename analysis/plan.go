package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// The chain's plan (analyze --plan, docs/chain.md): given the root's
// deadline, each hop of the call graph gets the time its calls have left
// of it at the recommendation's quantile of the time spent above them
// (readBudgets) as its own deadline, and retries stay at one layer: the
// calls of the roots (services nobody calls: they own the deadline) by
// default, or the calls to the leaves (services that call no one: the
// adapter nearest the dependency) with PlanInnermost. Every other hop makes
// one attempt. Each edge's policy is fitted to its plan as analyze fits
// any policy, so the report, the snippets and check read one plan.
const (
	PlanOutermost = "outermost"
	PlanInnermost = "innermost"
)

// minPlanDeadline is the least deadline a hop is planned with: a hop with
// less left at the quantile should drop the work (TT-NO-BUDGET-LEFT).
const minPlanDeadline = time.Millisecond

// planEdge is one edge's part of the plan.
type planEdge struct {
	caller, callee string
	deadline       time.Duration
	attempts       int
	retries        bool // the edge is the layer that keeps retries
	known          bool // its calls' budget was read
	// left is what its calls have left of the root's deadline at the
	// quantile (known only).
	left time.Duration
	// wait is how long its caller waits for a call, once its policy is
	// fitted (fitted): what its snippets write over the call; 0 before.
	wait time.Duration
	// cappedBy names the edge above whose wait bounds this edge's
	// deadline below its budget ("" when the budget does), and own is the
	// time the caller spends before the call at the quantile.
	cappedBy string
	own      time.Duration
}

// chainPlan is the plan of a call graph's edges, by group name.
type chainPlan struct {
	retryAt  string
	attempts int // the retry layer's
	deadline time.Duration
	quantile float64
	edges    map[string]planEdge
}

// newChainPlan plans the edges among names (groups "caller callee"; other
// names are left alone) under o's deadline and attempts, with b's budgets
// (nil: every hop keeps the whole deadline).
func newChainPlan(names []string, b *budgetCounter, o Options) *chainPlan {
	p := &chainPlan{retryAt: o.Plan, deadline: o.Policy.Deadline, quantile: budgetQuantile(o), attempts: max(o.Policy.Attempts, 1), edges: map[string]planEdge{}}
	called, calls := map[string]bool{}, map[string]bool{}
	for _, n := range names {
		if caller, callee, ok := groupname.Edge(n); ok {
			calls[caller], called[callee] = true, true
		}
	}
	attempts := max(o.Policy.Attempts, 1)
	for _, n := range names {
		caller, callee, ok := groupname.Edge(n)
		if !ok {
			continue
		}
		root, leaf := !called[caller], !calls[callee]
		e := planEdge{caller: caller, callee: callee, deadline: o.Policy.Deadline, attempts: 1}
		if p.retryAt == PlanInnermost && leaf || p.retryAt != PlanInnermost && root {
			e.attempts, e.retries = attempts, true
		}
		if b != nil {
			if left, ok := b.leftAt(n, p.quantile); ok {
				e.left, e.known = left, true
				if !root {
					e.deadline = max(left, minPlanDeadline)
				}
			}
		}
		p.edges[n] = e
	}
	return p
}

// order returns the indexes of names in the order their policies are
// fitted: an edge after every edge into its caller (whose waits bound it:
// apply), the others (names not planned, edges on a cycle) in their order.
func (p *chainPlan) order(names []string) []int {
	into := map[string]int{} // a service's edges in, not yet fitted
	for _, n := range names {
		if e, ok := p.edges[n]; ok {
			into[e.callee]++
		}
	}
	done := make([]bool, len(names))
	var out []int
	for progress := true; progress; {
		progress = false
		for i, n := range names {
			e, ok := p.edges[n]
			if done[i] || ok && into[e.caller] > 0 {
				continue
			}
			done[i], progress = true, true
			out = append(out, i)
			if ok {
				into[e.callee]--
			}
		}
	}
	for i := range names {
		if !done[i] {
			out = append(out, i)
		}
	}
	return out
}

// fitted records how long the caller of an edge waits for a call under
// its fitted policy, as its snippets write it over the call: the
// deadline when it retries or hedges, else its one attempt's timeout.
func (p *chainPlan) fitted(name string, pol recommend.Policy) {
	e, ok := p.edges[name]
	if !ok {
		return
	}
	e.wait = pol.PerTryTimeout
	if pol.Attempts > 1 || pol.Hedge != nil {
		e.wait = pol.Deadline
	}
	p.edges[name] = e
}

// capped bounds an edge's deadline by its caller's own calls: a caller B
// that waits w for C (its edge's fitted policy) gives C's calls to D no
// more than w less the time C spends before calling D (the time spent
// above C -> D less that above B -> C, at the quantile). Without it a hop
// whose caller gives up sooner than the root's deadline (a recommended
// timeout below its budget) would be planned the root's time and outwait
// its caller, an inversion check reports.
func (p *chainPlan) capped(name string) planEdge {
	e := p.edges[name]
	if !e.known {
		return e
	}
	for _, n := range slices.Sorted(maps.Keys(p.edges)) {
		in := p.edges[n]
		if in.callee != e.caller || in.wait <= 0 || !in.known {
			continue
		}
		own := max(in.left-e.left, 0)
		if c := max(in.wait-own, minPlanDeadline); c < e.deadline {
			e.deadline, e.cappedBy, e.own = c, n, own
		}
	}
	p.edges[name] = e
	return e
}

// apply returns o with the edge's plan in its policy, and the reason the
// policy's "plan" step gives; o unchanged and "" for a name not planned.
// The edges into its caller are fitted first (order), so that their waits
// bound it (capped).
func (p *chainPlan) apply(name string, o Options) (Options, string) {
	if _, ok := p.edges[name]; !ok {
		return o, ""
	}
	e := p.capped(name)
	o.Policy.Deadline, o.Policy.Attempts = e.deadline, e.attempts
	var b strings.Builder
	switch {
	case e.cappedBy != "":
		in := p.edges[e.cappedBy]
		fmt.Fprintf(&b, "the chain's plan: this hop gets %s, what %s's own call leaves it: %s waits %s for %s, less the %s %s spends before this call at %s of the time spent above it (the %s deadline leaves %s)",
			human.Duration(e.deadline), in.caller, in.caller, human.Duration(in.wait), e.caller, human.Duration(e.own), e.caller,
			human.Quantile(p.quantile), human.Duration(p.deadline), human.Duration(max(e.left, 0)))
	case e.deadline == p.deadline:
		fmt.Fprintf(&b, "the chain's plan: this hop owns the %s deadline", human.Duration(p.deadline))
	case e.deadline <= minPlanDeadline:
		fmt.Fprintf(&b, "the chain's plan: at %s of the time spent above this hop nothing is left of the %s deadline; the callee should drop such calls at once (TT-NO-BUDGET-LEFT)", human.Quantile(p.quantile), human.Duration(p.deadline))
	default:
		fmt.Fprintf(&b, "the chain's plan: this hop gets %s, what is left of the %s deadline at %s of the time spent above it", human.Duration(e.deadline), human.Duration(p.deadline), human.Quantile(p.quantile))
	}
	if e.retries {
		fmt.Fprintf(&b, ", and keeps the retries (%d attempts): it is the %s layer", e.attempts, p.retryAt)
	} else {
		fmt.Fprintf(&b, ", and makes one attempt: retries stay at the %s layer", p.retryAt)
	}
	return o, b.String()
}

// report is the plan as the call graph shows it.
func (p *chainPlan) report() *report.ChainPlan {
	out := &report.ChainPlan{RetryAt: p.retryAt, DeadlineSeconds: p.deadline.Seconds(), Quantile: p.quantile, RetryEdges: []string{}, Attempts: p.attempts}
	for _, n := range slices.Sorted(maps.Keys(p.edges)) {
		if p.edges[n].retries {
			out.RetryEdges = append(out.RetryEdges, n)
		}
	}
	return out
}
