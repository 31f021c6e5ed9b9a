package analysis

import (
	"context"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// chainSimRequests is how many requests of the root each run of the chain
// simulation replays when --requests does not say: a run of three hops
// of three attempts sends 27 attempts per request, so 10,000 requests
// keep the eight runs well under a second; the figures are shares and
// means, known to about 1 % (one standard error of a share at 50 %: 0.5 %).
const chainSimRequests = 10_000

// maxChainSimAttempts bounds the attempts of one run: requests times the
// attempts every hop retrying may send to the bottom. A deep path's
// product (3 attempts over 10 hops: 59,049) replays fewer requests, at
// least one, instead of running for hours.
const maxChainSimAttempts = 20_000_000

// chainSimGroup is what the chain simulation needs of one fitted edge.
type chainSimGroup struct {
	latency *histogram.Latency
	policy  recommend.Policy // the fitted (planned) policy
	timeout time.Duration    // the recommended timeout, before any plan
}

// simulateChain replays the call graph's longest path (the first of the
// longest, paths being listed most amplified first) under each of
// simulate.ChainFaults at its bottom hop, every hop retrying against the
// plan (docs/chain.md, "The chain simulated"); nil without a path of two
// hops or more, or without a fitted group for one of its edges.
func simulateChain(ctx context.Context, g *report.CallGraph, fitted map[string]chainSimGroup, b *budgetCounter, o Options) (*report.ChainSimulation, error) {
	var path []string
	for _, p := range g.Paths {
		if len(p.Edges) > len(path) {
			path = p.Edges
		}
	}
	if len(path) < 2 {
		return nil, nil
	}
	requests := o.Simulate.Requests
	if requests == 0 {
		requests = chainSimRequests
	}
	// spent is the median time spent above an edge's calls; 0 unknown.
	spent := func(edge string) time.Duration {
		if b == nil || b.edges[edge] == nil || b.edges[edge].spent.Count() == 0 {
			return 0
		}
		return b.edges[edge].spent.Quantile(0.5)
	}
	every := make([]simulate.ChainSimHop, len(path))
	plan := make([]simulate.ChainSimHop, len(path))
	own := make([]float64, len(path))
	for k, name := range path {
		f, ok := fitted[name]
		if !ok || f.latency.Count() == 0 {
			return nil, nil
		}
		var w time.Duration
		if k+1 < len(path) {
			w = max(spent(path[k+1])-spent(name), 0)
		}
		own[k] = w.Seconds()
		plan[k] = simulate.ChainSimHop{Latency: f.latency.Sampler(), Own: w, Policy: f.policy}
		naive := f.policy
		// Every hop retries what an idempotent call retries by default,
		// whatever its calls' method: the chain as it is commonly built.
		naive.Attempts, naive.PerTryTimeout, naive.Deadline = max(o.Policy.Attempts, 1), f.timeout, o.Policy.Deadline
		naive.RetryOn = recommend.DefaultRetryOn
		every[k] = simulate.ChainSimHop{Latency: plan[k].Latency, Own: w, Policy: naive}
	}
	product := 1
	for range path {
		product = min(product*max(o.Policy.Attempts, 1), maxChainSimAttempts)
	}
	requests = max(min(requests, maxChainSimAttempts/product), 1)
	_, bottom := splitEdge(path[len(path)-1])
	out := &report.ChainSimulation{Path: path, FaultAt: bottom, OwnSeconds: own, Requests: requests, Seed: o.Simulate.Seed, Runs: []report.ChainRun{}}
	for _, f := range simulate.ChainFaults(len(path) - 1) {
		for _, set := range []struct {
			name string
			hops []simulate.ChainSimHop
		}{{report.ChainEveryHopRetries, every}, {report.ChainPlanned, plan}} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			res, err := simulate.ChainSimulate(ctx, set.hops, f, requests, o.Simulate.Seed)
			if err != nil {
				return nil, err
			}
			out.Runs = append(out.Runs, report.ChainRun{Fault: f.Name, Policies: set.name, SuccessFraction: res.SuccessFraction,
				AttemptsMean: res.AttemptsMean, AttemptsMax: res.AttemptsMax, WorkAfterRootSeconds: res.WorkAfterRoot.Seconds()})
		}
	}
	return out, nil
}
