package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
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
	deadline time.Duration
	attempts int
	retries  bool // the edge is the layer that keeps retries
	known    bool // its calls' budget was read
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
	p := &chainPlan{retryAt: o.Plan, deadline: o.Policy.Deadline, quantile: budgetQuantile(o), edges: map[string]planEdge{}}
	called, calls := map[string]bool{}, map[string]bool{}
	for _, n := range names {
		if f := strings.Fields(n); len(f) == 2 {
			calls[f[0]], called[f[1]] = true, true
		}
	}
	attempts := max(o.Policy.Attempts, 1)
	p.attempts = attempts
	for _, n := range names {
		f := strings.Fields(n)
		if len(f) != 2 {
			continue
		}
		root, leaf := !called[f[0]], !calls[f[1]]
		e := planEdge{deadline: o.Policy.Deadline, attempts: 1}
		if p.retryAt == PlanInnermost && leaf || p.retryAt != PlanInnermost && root {
			e.attempts, e.retries = attempts, true
		}
		if b != nil && !root {
			if left, ok := b.leftAt(n, p.quantile); ok {
				e.deadline, e.known = max(left, minPlanDeadline), true
			}
		}
		p.edges[n] = e
	}
	return p
}

// apply returns o with the edge's plan in its policy, and the reason the
// policy's "plan" step gives; o unchanged and "" for a name not planned.
func (p *chainPlan) apply(name string, o Options) (Options, string) {
	e, ok := p.edges[name]
	if !ok {
		return o, ""
	}
	o.Policy.Deadline, o.Policy.Attempts = e.deadline, e.attempts
	var b strings.Builder
	switch {
	case e.deadline == p.deadline:
		fmt.Fprintf(&b, "the chain's plan: this hop owns the %s deadline", human.Duration(p.deadline))
	case e.deadline <= minPlanDeadline:
		fmt.Fprintf(&b, "the chain's plan: at %s of the time spent above this hop nothing is left of the %s deadline; the callee should drop such calls at once (TT-NO-BUDGET-LEFT)", human.Quantile(p.quantile), human.Duration(p.deadline))
	default:
		fmt.Fprintf(&b, "the chain's plan: this hop gets %s, what is left of the %s deadline at %s of the time spent above it", human.Duration(e.deadline), human.Duration(p.deadline), human.Quantile(p.quantile))
	}
	if e.retries {
		fmt.Fprintf(&b, ", and keeps the retries (%d attempts): it is the %s layer", e.attempts, p.layerWord())
	} else {
		fmt.Fprintf(&b, ", and makes one attempt: retries stay at the %s layer", p.layerWord())
	}
	return o, b.String()
}

func (p *chainPlan) layerWord() string {
	if p.retryAt == PlanInnermost {
		return "innermost"
	}
	return "outermost"
}

// report is the plan as the call graph shows it.
func (p *chainPlan) report() *report.ChainPlan {
	out := &report.ChainPlan{RetryAt: p.layerWord(), DeadlineSeconds: p.deadline.Seconds(), Quantile: p.quantile, RetryEdges: []string{}, Attempts: p.attempts}
	for _, n := range slices.Sorted(maps.Keys(p.edges)) {
		if p.edges[n].retries {
			out.RetryEdges = append(out.RetryEdges, n)
		}
	}
	return out
}
