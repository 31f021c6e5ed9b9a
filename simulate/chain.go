package simulate

import (
	"math"
	"time"
)

// The chain under a fault at its bottom (docs/chain.md): each hop is a
// service's policy towards the next (attempts, a per-try timeout, an
// overall timeout), the bottom service fails, and what matters is how many
// attempts reach it per request of the root, and how many of those start
// after the root has given up (work nobody waits for).
//
// Two faults. Fast failures: every attempt at the bottom fails at once,
// and every hop retries the failure, so the attempts multiply (the
// product of the hops' attempts). A hang: the bottom never answers, and
// every attempt ends only at a timer: a hop's attempt lasts its per-try
// timeout, or what is left of its overall timeout, or, when the hop is
// cancelled by its caller, what is left of the caller's attempt. The hops
// above bound the hops below in time, so the attempts at the bottom are
// often far fewer than the product, and the timing decides how many.
//
// Whether a hop stops when its caller gives up depends on the service: a
// proxy (Envoy, nginx) resets its upstream request when its downstream
// goes away, and a gRPC server's outgoing calls stop with the incoming
// call's context when the code passes it on; code that does not keeps
// working. ChainHang gives both: each hop cancelled by its caller, and
// none.

// ChainHop is one service's policy towards the next hop.
type ChainHop struct {
	// Attempts counts all attempts, the first included (at least 1).
	Attempts int
	// PerTry bounds each attempt; 0: none (the attempt lasts what is
	// left of Overall).
	PerTry time.Duration
	// Overall bounds the call, every attempt included; 0: none.
	Overall time.Duration
}

// ChainResult is what one request of the root sends to the bottom.
type ChainResult struct {
	// AttemptsAtBottom are the attempts that reach the bottom service.
	AttemptsAtBottom int
	// AfterRootGaveUp are those that start once the root has stopped
	// waiting (its overall timeout or its last attempt's timer); 0 when
	// the root never stops (no timer at all).
	AfterRootGaveUp int
	// RootGaveUp is when the root stopped waiting; 0 when it never does.
	RootGaveUp time.Duration
}

// maxChainAttempts bounds the attempts counted for one request: a chain
// of many hops each retrying multiplies beyond any use.
const maxChainAttempts = 1_000_000

// ChainFastFailures is the chain under fast failures at the bottom: every
// hop retries the failure it is given, at once, so the attempts at the
// bottom are the product of every hop's attempts (bounded by
// maxChainAttempts); none starts after the root gave up, as nothing
// waits.
func ChainFastFailures(hops []ChainHop) ChainResult {
	total := 1
	for _, h := range hops {
		total = min(total*max(h.Attempts, 1), maxChainAttempts)
	}
	return ChainResult{AttemptsAtBottom: total}
}

// ChainHang is the chain under a hang at the bottom: cancelled says each
// hop stops when its caller's attempt ends (the caller gives up or its
// timer fires); otherwise a hop works on for as long as its own timers
// allow. Backoff between attempts is left out (it only delays them).
func ChainHang(hops []ChainHop, cancelled bool) ChainResult {
	if len(hops) == 0 {
		return ChainResult{}
	}
	inf := time.Duration(math.MaxInt64)
	var res ChainResult
	// The root's own wait: its attempts in turn, each ended by its timers.
	rootEnd := endOf(hops[0], inf)
	if rootEnd < inf {
		res.RootGaveUp = rootEnd
	}
	// walk runs hop k's attempts from time start, allowed until limit (the
	// caller's attempt's end when cancelled, else none).
	var walk func(k int, start, limit time.Duration)
	walk = func(k int, start, limit time.Duration) {
		h := hops[k]
		end := limit
		if h.Overall > 0 {
			end = min(end, start+h.Overall)
		}
		t := start
		for a := 0; a < max(h.Attempts, 1) && t < end && res.AttemptsAtBottom < maxChainAttempts; a++ {
			stop := end
			if h.PerTry > 0 {
				stop = min(stop, t+h.PerTry)
			}
			if k == len(hops)-1 {
				res.AttemptsAtBottom++
				if rootEnd < inf && t >= rootEnd {
					res.AfterRootGaveUp++
				}
			} else if cancelled {
				walk(k+1, t, stop)
			} else {
				walk(k+1, t, inf)
			}
			if stop == inf {
				return // an attempt without a timer never ends
			}
			t = stop
		}
	}
	walk(0, 0, inf)
	return res
}

// endOf is when a hop's caller stops waiting for it, started at 0 and
// allowed until limit: after its attempts, each ended by its timers.
func endOf(h ChainHop, limit time.Duration) time.Duration {
	inf := time.Duration(math.MaxInt64)
	end := limit
	if h.Overall > 0 {
		end = min(end, h.Overall)
	}
	if h.PerTry > 0 {
		end = min(end, time.Duration(max(h.Attempts, 1))*h.PerTry)
	}
	if end == inf {
		return inf
	}
	return end
}
