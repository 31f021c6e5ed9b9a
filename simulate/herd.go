package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// The herd (docs/policy.md#the-herd): Clients clients fail at the same
// instant (a job at the top of the minute, the end of a network blip) and
// retry against a dependency that serves CapacityPerSecond calls, where
// even a rejection costs RejectCost of a call's work. Time goes in steps
// of a millisecond. In each one the dependency has CapacityPerSecond/1000
// slots (the fractions carried to the next step: it cannot bank idle
// slots, only the part of one). The A calls that arrive in a step all cost
// it something: s of them served cost a slot each and the other A - s
// cost RejectCost each, so s + RejectCost x (A - s) <= slots, and
//
//	s = floor((slots - RejectCost x A) / (1 - RejectCost)), within [0, A].
//
// When the arrivals' rejections alone cost more than the slots, nobody is
// served: an overloaded server spends itself turning calls away. Which
// arrivals are served is drawn at random. A rejected client waits its
// strategy's backoff (rounded up to whole milliseconds, at least one) and
// tries again, until it has made Attempts attempts; then it gives up.

// Herd strategies: the backoffs the herd is replayed with.
const (
	HerdNone         = "none"         // no wait: the next millisecond
	HerdFixed        = "fixed"        // base every time
	HerdExponential  = "exponential"  // min(cap, base x 2^n), no jitter
	HerdEqual        = "equal"        // recommend.JitterEqual
	HerdFull         = "full"         // recommend.JitterFull
	HerdDecorrelated = "decorrelated" // recommend.JitterDecorrelated
	// HerdPolicy is the user's own policy: its jitter, base and cap.
	HerdPolicy = "your policy"
)

// HerdStrategies are the strategies RunHerd replays besides the user's
// policy, those without randomness first.
var HerdStrategies = []string{HerdNone, HerdFixed, HerdExponential, HerdEqual, HerdFull, HerdDecorrelated}

// MaxHerd bounds HerdOptions.Clients: 10 million clients take a few
// hundred MB and about a minute.
const MaxHerd = 10_000_000

// DefaultRejectCost is the share of a slot a rejection costs: a load
// shedder's 503 still reads the request and writes an answer.
const DefaultRejectCost = 0.05

// herdSeriesPoints bounds the calls-per-millisecond series kept for the
// plot: beyond it, neighbouring points are added up two by two.
const herdSeriesPoints = 2048

// HerdOptions are the herd and the dependency.
type HerdOptions struct {
	Clients           int
	CapacityPerSecond float64
	RejectCost        float64 // in [0, 1)
	Attempts          int     // the first included
	// Backoff is the user's policy's: its base and cap are those of the
	// fixed and exponential strategies and of the jitters too.
	Backoff recommend.Backoff
	Seed    uint64
	// Deadline is the caller's over all attempts; 0: none. The replay
	// does not apply it (a herd's clients would give up sooner); the
	// advice says when the backoff the crowd needs does not fit in it.
	Deadline time.Duration
}

// Validate says what is wrong with o.
func (o HerdOptions) Validate() error {
	var errs []error
	if o.Clients < 1 || o.Clients > MaxHerd {
		errs = append(errs, fmt.Errorf("the herd of %d clients must hold between 1 and %d", o.Clients, MaxHerd))
	}
	if !(o.CapacityPerSecond > 0) || math.IsInf(o.CapacityPerSecond, 0) {
		errs = append(errs, fmt.Errorf("capacity %v calls/s must be positive", o.CapacityPerSecond))
	}
	if !(o.RejectCost >= 0 && o.RejectCost < 1) {
		errs = append(errs, fmt.Errorf("reject cost %v must lie in [0, 1)", o.RejectCost))
	}
	if o.Attempts < 1 || o.Attempts > 100 {
		errs = append(errs, fmt.Errorf("attempts %d must lie between 1 and 100", o.Attempts))
	}
	if o.Backoff.Base <= 0 || o.Backoff.Cap < o.Backoff.Base {
		errs = append(errs, fmt.Errorf("backoff base %v and cap %v: the base must be positive and the cap at least the base", o.Backoff.Base, o.Backoff.Cap))
	}
	return errors.Join(errs...)
}

// HerdRun is one strategy's replay.
type HerdRun struct {
	Strategy string
	Calls    int64 // attempts made, the first ones included
	Served   int   // clients served
	GaveUp   int   // clients rejected on every attempt
	// BusiestRetryCalls is the most calls of one millisecond after the
	// first (the retries); BusiestRetryMs is that millisecond.
	BusiestRetryCalls int
	BusiestRetryMs    int64
	// LastServedMs is the millisecond the last client was served in, since
	// the failure; -1 when none was.
	LastServedMs int64
	// Series is the calls per millisecond from the failure on, SeriesStep
	// milliseconds a point (1, or a power of two when the run is long).
	Series     []int64
	SeriesStep int64
}

// HerdResult is every strategy's replay.
type HerdResult struct {
	Options HerdOptions
	Runs    []HerdRun // HerdStrategies' order, then HerdPolicy
	// Window is the jitter window the crowd needs: Clients / capacity, the
	// time the dependency takes to serve them all once.
	Window time.Duration
	Advice HerdAdvice
}

// HerdAdvice is the backoff sized from the crowd: a base whose first
// retry window (under the policy's jitter) spreads the herd over at least
// Window, a cap at least as wide, and what is wrong with the policy's own.
type HerdAdvice struct {
	Base, Cap time.Duration
	Reason    string
	// Findings are what is wrong with the policy's backoff for the
	// herd, and a crowd that no backoff within the deadline spreads
	// (TT-HERD-*, docs/findings.md).
	Findings []finding.Finding
}

// RunHerd replays the herd with every strategy and with the user's
// policy. It stops with ctx's error once ctx is cancelled.
func RunHerd(ctx context.Context, o HerdOptions) (HerdResult, error) {
	if err := o.Validate(); err != nil {
		return HerdResult{}, fmt.Errorf("invalid herd: %w", err)
	}
	res := HerdResult{Options: o, Window: CrowdWindow(o.Clients, o.CapacityPerSecond)}
	res.Advice = AdviseBackoff(o.Backoff, o.Clients, o.CapacityPerSecond)
	if o.Deadline > 0 && res.Window >= o.Deadline {
		res.Advice.Findings = append(res.Advice.Findings, finding.Newf(finding.HerdBeyondDeadline,
			finding.Fields{"window_seconds": res.Window, "deadline_seconds": o.Deadline},
			"the crowd needs %s to be served once, more than the deadline of %s: no backoff within one call spreads it; the dependency must shed the herd (a retry budget, a load shedder that answers 503 with Retry-After), or the clients must not fail together",
			dur(res.Window), dur(o.Deadline)))
	}
	for _, s := range append(HerdStrategies, HerdPolicy) {
		run, err := replayHerd(ctx, o, s)
		if err != nil {
			return HerdResult{}, err
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// CrowdWindow is the time a dependency of capacity calls per second takes
// to serve clients calls once: the least jitter window that spreads them
// out so that every one can be served (docs/method.md: N clients /
// capacity).
func CrowdWindow(clients int, capacity float64) time.Duration {
	if !(capacity > 0) {
		return 0
	}
	return time.Duration(math.Ceil(float64(clients) / capacity * float64(time.Second)))
}

// AdviseBackoff sizes the backoff for a crowd of clients against capacity
// calls per second. The first retries of a herd fall within the first
// retry window: uniform(0, base) under full jitter, (base/2, base) under
// equal jitter, (base, 3 x base) under decorrelated jitter. That spread
// must be at least CrowdWindow, so the base is the window, twice it, or
// half of it, rounded up to a value people write in configs
// (recommend.RoundUp, the timeout's own rule); the cap is at
// least the base and, by Envoy's rule, ten times it, or the policy's own
// cap when that is larger. A cap under the window is a warning (no retry
// of the herd is ever spread enough: it meets the same overload again), and
// so is a base under what the jitter needs (its first retries collide,
// until the windows have doubled past it).
func AdviseBackoff(b recommend.Backoff, clients int, capacity float64) HerdAdvice {
	need := CrowdWindow(clients, capacity)
	var a HerdAdvice
	base, spread := need, "uniform(0, base)"
	switch b.Jitter {
	case recommend.JitterEqual:
		base, spread = 2*need, "(base/2, base)"
	case recommend.JitterDecorrelated:
		base, spread = (need+1)/2, "(base, 3 x base)"
	}
	a.Base, _ = recommend.RoundUp(max(base, time.Millisecond))
	a.Cap = max(10*a.Base, b.Cap)
	a.Reason = fmt.Sprintf("%s clients at %s calls/s need %v to be served once; under %s jitter the first retry falls within %s, so the base is at least %v (%v, rounded up) and the cap ten times that (Envoy's rule) or the policy's own, whichever is larger",
		human.Count(int64(clients)), human.Number(capacity), dur(need), jitterName(b.Jitter), spread, dur(base), dur(a.Base))
	if b.Cap < need {
		a.Findings = append(a.Findings, finding.Newf(finding.HerdBackoffCapNarrow,
			finding.Fields{"cap_seconds": b.Cap, "window_seconds": need, "clients": clients, "capacity_per_second": capacity, "recommended_cap_seconds": a.Cap},
			"the backoff cap %v is narrower than the %v the crowd of %s needs at %s calls/s: no retry of clients that failed together is ever spread enough, and every one meets the same overload; raise it to %v or more",
			dur(b.Cap), dur(need), human.Count(int64(clients)), human.Number(capacity), dur(a.Cap)))
	}
	if b.Base < base {
		a.Findings = append(a.Findings, finding.Newf(finding.HerdBackoffBaseNarrow,
			finding.Fields{"base_seconds": b.Base, "needed_base_seconds": base, "clients": clients, "jitter": jitterName(b.Jitter), "recommended_base_seconds": a.Base},
			"the backoff base %v is narrower than the %v the crowd of %s needs under %s jitter: its first retries collide, until the windows have doubled past it; %v spreads the first one",
			dur(b.Base), dur(base), human.Count(int64(clients)), jitterName(b.Jitter), dur(a.Base)))
	}
	return a
}

// dur is a duration as people read it: "4.31s", "200ms".
func dur(d time.Duration) string { return human.Seconds(d.Seconds()) }

func jitterName(j recommend.Jitter) string {
	if j == "" {
		return string(recommend.JitterFull)
	}
	return string(j)
}

// herdClient is what the replay keeps of a client between its attempts.
type herdClient struct {
	attempts uint8
	prevWait time.Duration // decorrelated jitter's previous wait
}

// wait is the backoff before retry n (0 for the first retry) of a client
// under strategy s.
func (o HerdOptions) wait(r *rand.Rand, s string, n int, prev time.Duration) time.Duration {
	b := o.Backoff
	switch s {
	case HerdNone:
		return 0
	case HerdFixed:
		return b.Base
	case HerdExponential:
		return b.Window(n)
	case HerdEqual:
		b.Jitter = recommend.JitterEqual
	case HerdFull:
		b.Jitter = recommend.JitterFull
	case HerdDecorrelated:
		b.Jitter = recommend.JitterDecorrelated
	}
	return b.Wait(r, n, prev)
}

// replayHerd replays the herd under strategy s. The clients wait in a
// ring of millisecond slots as long as the longest wait: memory is the
// clients' small structs and their places in the ring, nothing per call.
func replayHerd(ctx context.Context, o HerdOptions, s string) (HerdRun, error) {
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	clients := make([]herdClient, o.Clients)
	longest := int64(o.Backoff.Cap/time.Millisecond) + 2
	ring := make([][]int32, longest+1)
	first := make([]int32, o.Clients)
	for i := range first {
		first[i] = int32(i)
	}
	ring[0] = first
	waiting := o.Clients
	run := HerdRun{Strategy: s, LastServedMs: -1, SeriesStep: 1}
	perMs := o.CapacityPerSecond / 1000
	carry := 0.0
	for t := int64(0); waiting > 0; t++ {
		if t%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return HerdRun{}, err
			}
		}
		slot := &ring[t%int64(len(ring))]
		arrivals := *slot
		*slot = nil
		a := len(arrivals)
		slots := perMs + carry
		whole := math.Floor(slots)
		carry = slots - whole
		served := 0
		if a > 0 {
			run.Calls += int64(a)
			if t > 0 && a > run.BusiestRetryCalls {
				run.BusiestRetryCalls, run.BusiestRetryMs = a, t
			}
			if room := (whole - o.RejectCost*float64(a)) / (1 - o.RejectCost); room > 0 {
				served = min(a, int(math.Floor(room+1e-9)))
			}
		}
		run.addSeries(t, int64(a))
		// The served ones drawn at random: a partial shuffle puts them
		// first.
		for i := range served {
			j := i + r.IntN(a-i)
			arrivals[i], arrivals[j] = arrivals[j], arrivals[i]
		}
		if served > 0 {
			run.Served += served
			run.LastServedMs = t
		}
		waiting -= served
		for _, id := range arrivals[served:] {
			c := &clients[id]
			c.attempts++
			if int(c.attempts) >= o.Attempts {
				run.GaveUp++
				waiting--
				continue
			}
			w := o.wait(r, s, int(c.attempts)-1, c.prevWait) // a first prevWait of 0 is the base
			c.prevWait = w
			ms := max(int64(1), int64(math.Ceil(float64(w)/float64(time.Millisecond))))
			ms = min(ms, longest)
			next := &ring[(t+ms)%int64(len(ring))]
			*next = append(*next, id)
		}
		if cap(arrivals) <= 1<<16 {
			*slot = arrivals[:0] // its array, again, for a later step
		}
	}
	return run, nil
}

// addSeries adds a millisecond's calls to the series, halving its
// resolution when it would grow beyond herdSeriesPoints.
func (run *HerdRun) addSeries(t, calls int64) {
	i := t / run.SeriesStep
	for i >= herdSeriesPoints {
		half := make([]int64, 0, herdSeriesPoints)
		for k := 0; k < len(run.Series); k += 2 {
			v := run.Series[k]
			if k+1 < len(run.Series) {
				v += run.Series[k+1]
			}
			half = append(half, v)
		}
		run.Series = half
		run.SeriesStep *= 2
		i = t / run.SeriesStep
	}
	for int64(len(run.Series)) <= i {
		run.Series = append(run.Series, 0)
	}
	run.Series[i] += calls
}
