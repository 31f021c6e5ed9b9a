package simulate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// The chain replayed (docs/chain.md, "The chain simulated"): requests of
// the root walk down one path of hops, each hop under its own call policy,
// with a fault at one hop, and what comes out is the share of the root's
// requests answered within its deadline, the attempts that reach each hop
// per request, and the work hops do after the root stopped waiting.
//
// The model. Hop k is the edge from one service to the next, root first.
// The bottom hop's attempt takes a latency drawn from its measured
// histogram (as Replay draws it). An upper hop's attempt is its callee's
// own work before it calls on (Own: the time spent above the next edge's
// calls less that above this edge's, at the median) followed by the whole
// call of the next hop, its retries included: the measured latency of an
// upper edge holds its callees' time already, so it is rebuilt from below
// and a fault at the bottom reaches every hop above. The work a callee
// does after its call returns is left out.
//
// An attempt ends when its answer arrives, or at its timer: the per-try
// timeout, or what is left of the hop's own deadline (counted from the
// hop's call, as a service that takes the time left from its caller or
// resets it counts it), whichever is first. A timed-out or failed attempt
// is retried as the hop's policy retries timeouts, refused connections (a
// fast failure at the faulty hop) or a 503 (a failure passed up from
// below), after its backoff, unless less than a useful try is left. No
// hop is cancelled by its caller: a hop whose caller gave up works on to
// its own timers (code that does not pass its context on), which is the
// work after the root stopped waiting. The faulty hop's callee answers no
// attempt (a hang: each lasts its timer), fails each at once (fast
// failures, FailLatency), or is Slowdown times slower (a slowdown: the
// bottom's drawn latency, an upper hop's own work).
//
// Work is the bottom's attempts (their latency; a hung one until its
// caller's timer) and every upper callee's own work; the work after the
// root stopped waiting is the part of it after the root's call ended,
// answered or not. Everything is drawn from one PCG generator seeded with
// the seed given: the same seed gives the same result.

// ChainSimHop is one hop of a path: its caller's policy towards it.
type ChainSimHop struct {
	// Latency is the hop's measured call latency; only the bottom hop's
	// is drawn, and it must have one.
	Latency *histogram.Sampler
	// Own is the hop's callee's own work before it calls the next hop
	// (ignored at the bottom).
	Own    time.Duration
	Policy recommend.Policy
}

// ChainFault is the fault at one hop's callee.
type ChainFault struct {
	Name     string
	Hop      int     // the hop whose callee is faulty (an index of the path)
	Hang     bool    // no attempt is answered
	Fail     bool    // every attempt fails at once (FailLatency)
	Slowdown float64 // > 1: the callee is that many times slower
}

// ChainFaults are the faults ChainSimulate is asked for by the report: none,
// fast failures, a hang and a slowdown x3, at hop.
func ChainFaults(hop int) []ChainFault {
	return []ChainFault{
		{Name: "none", Hop: hop},
		{Name: "fast failures", Hop: hop, Fail: true},
		{Name: "hang", Hop: hop, Hang: true},
		{Name: "slowdown x" + strconv.Itoa(ChainSlowdown), Hop: hop, Slowdown: ChainSlowdown},
	}
}

// ChainSlowdown is the slowdown of ChainFaults: three times slower, the
// metastability trigger's default size (analyze --trigger slow:3x).
const ChainSlowdown = 3

// ChainOutcome is a path replayed under one fault.
type ChainOutcome struct {
	Fault    ChainFault
	Requests int
	// SuccessFraction is the share of the root's requests answered within
	// its policy (and so within its deadline).
	SuccessFraction float64
	// AttemptsMean and AttemptsMax are the attempts that reach each hop's
	// callee per request of the root, root first.
	AttemptsMean []float64
	AttemptsMax  []int
	// WorkAfterRoot is the work done after the root's call ended, per
	// request on average.
	WorkAfterRoot time.Duration
}

// ChainSimulate replays requests requests of the root down hops under f,
// seeded with seed. A hop without a per-try timeout is refused. It stops
// with ctx's error soon after ctx is cancelled (every 1,024 requests).
func ChainSimulate(ctx context.Context, hops []ChainSimHop, f ChainFault, requests int, seed uint64) (ChainOutcome, error) {
	if len(hops) == 0 {
		return ChainOutcome{}, errors.New("a chain needs one hop at least")
	}
	if requests < 1 || requests > MaxRequests {
		return ChainOutcome{}, fmt.Errorf("requests %d must lie between 1 and %d", requests, MaxRequests)
	}
	if f.Hop < 0 || f.Hop >= len(hops) {
		return ChainOutcome{}, fmt.Errorf("the fault's hop %d is not on the path of %d hops", f.Hop, len(hops))
	}
	if hops[len(hops)-1].Latency == nil {
		return ChainOutcome{}, recommend.ErrNoSamples
	}
	for i, h := range hops {
		if h.Policy.PerTryTimeout <= 0 {
			return ChainOutcome{}, fmt.Errorf("hop %d has no per-try timeout", i)
		}
	}
	c := chainRun{hops: hops, f: f, r: rand.New(rand.NewPCG(seed, seed)), att: make([]int, len(hops))}
	out := ChainOutcome{Fault: f, Requests: requests, AttemptsMean: make([]float64, len(hops)), AttemptsMax: make([]int, len(hops))}
	var ok int
	var after time.Duration
	for i := range requests {
		if i%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return ChainOutcome{}, err
			}
		}
		clear(c.att)
		c.work = c.work[:0]
		c.total = 0
		end, answered := c.call(0, 0)
		if answered {
			ok++
		}
		for _, w := range c.work {
			if w[1] > end {
				after += w[1] - max(w[0], end)
			}
		}
		for k, n := range c.att {
			out.AttemptsMean[k] += float64(n)
			out.AttemptsMax[k] = max(out.AttemptsMax[k], n)
		}
	}
	for k := range out.AttemptsMean {
		out.AttemptsMean[k] /= float64(requests)
	}
	out.SuccessFraction = float64(ok) / float64(requests)
	out.WorkAfterRoot = after / time.Duration(requests)
	return out, nil
}

// chainRun is one path's replay state.
type chainRun struct {
	hops  []ChainSimHop
	f     ChainFault
	r     *rand.Rand
	att   []int              // attempts per hop, this request
	work  [][2]time.Duration // intervals of work, this request
	total int                // attempts, this request (bounded by maxChainAttempts)
}

// call is hop k's call made at time t under its policy: when it ends and
// whether it was answered.
func (c *chainRun) call(k int, t time.Duration) (time.Duration, bool) {
	h := c.hops[k]
	p := h.Policy
	bottom := k == len(c.hops)-1
	faulty := k == c.f.Hop
	var elapsed, prevWait time.Duration
	for a := range max(p.Attempts, 1) {
		if a > 0 {
			wait := p.Backoff.Wait(c.r, a-1, prevWait)
			prevWait = wait
			if p.Deadline > 0 && p.Deadline-(elapsed+wait) < max(p.MinUsefulTry, 1) {
				break // too little time left: not sent
			}
			elapsed += wait
		}
		if c.total >= maxChainAttempts {
			break
		}
		c.total++
		c.att[k]++
		perTry := p.PerTryTimeout
		if p.Deadline > 0 {
			perTry = min(perTry, p.Deadline-elapsed)
		}
		start := t + elapsed
		var took time.Duration // until the answer
		var answered bool
		var cond string // why a failed attempt failed
		switch {
		case faulty && c.f.Hang:
			c.work = append(c.work, [2]time.Duration{start, start + perTry})
			took, cond = perTry+1, recommend.RetryTimeout
		case faulty && c.f.Fail:
			took, cond = min(DefaultFailLatency, perTry), recommend.RetryConnectFailure
			c.work = append(c.work, [2]time.Duration{start, start + took})
		case bottom:
			lat := h.Latency.Sample(c.r)
			if faulty && c.f.Slowdown > 1 {
				lat = time.Duration(float64(lat) * c.f.Slowdown)
			}
			c.work = append(c.work, [2]time.Duration{start, start + lat})
			took, answered = lat, true
		default:
			own := h.Own
			if faulty && c.f.Slowdown > 1 {
				own = time.Duration(float64(own) * c.f.Slowdown)
			}
			c.work = append(c.work, [2]time.Duration{start, start + own})
			end, ok := c.call(k+1, start+own)
			took, answered, cond = end-start, ok, "503"
		}
		if answered && took <= perTry {
			return start + took, true
		}
		if took > perTry {
			took, cond = perTry, recommend.RetryTimeout
		}
		elapsed += took
		if !p.RetriesOn(cond) {
			break
		}
	}
	return t + elapsed, false
}
