package recommend

import "time"

// Bounds are a call policy as a client enforces it: the timers a config
// sets (or a snippet writes) rather than the numbers a policy was fitted
// with. `check` reads every target's config into Bounds, and NewPolicy walks
// a hang with the same code (HangWalk), so that analyze and check hold one
// model of a call (docs/method.md#attempts-inside-a-deadline).
type Bounds struct {
	// Overall bounds the whole call, every attempt and every wait between
	// them (Envoy's route timeout, the gRPC deadline, Istio's http.timeout,
	// Gateway API's timeouts.request, Linkerd's timeout.linkerd.io/request,
	// nginx's proxy_next_upstream_timeout); 0: nothing does.
	Overall time.Duration
	// PerTry bounds one attempt; 0: none, each attempt runs until Overall
	// ends the call (Envoy without per_try_timeout, gRPC, which has no
	// per-attempt timeout). A per-try timeout not below Overall is the
	// same as none: Overall ends the attempt first.
	PerTry time.Duration
	// Attempts counts all attempts, the first included (1: no retries).
	Attempts int
	// RetriesTimeouts says an attempt that its per-try timeout ended is
	// retried (Envoy's 5xx, gateway-error and reset; nginx's timeout;
	// HAProxy's response-timeout).
	RetriesTimeouts bool
	Backoff         Backoff
	// WaitGrowth, when set, is how each wait's nominal value grows: Base x
	// WaitGrowth^retry, and WaitAbove the share a wait may be drawn above
	// it, both before the Cap (resilience4j's exponentialBackoffMultiplier
	// and randomizedWaitFactor): the worst case takes each wait at its
	// largest rather than every wait at the Cap.
	WaitGrowth, WaitAbove float64
	// MinUsefulTry: an attempt with less than this left before Overall is
	// not sent (0: any time left is used, as proxies do).
	MinUsefulTry time.Duration
	// Before are the timers that may run out before an attempt's request
	// is sent, one after the other and each once per attempt (HAProxy's
	// timeout queue and timeout connect; nginx's proxy_connect_timeout),
	// where nothing bounds the attempts together: a try takes up to their
	// sum and PerTry. A hang leaves them alone (the connection is made, the
	// answer never comes). Targets with Overall count nothing here: it
	// ends the call whatever runs.
	Before []time.Duration
	// RetryWindow: no attempt after the first starts later than this after
	// the first began (nginx's proxy_next_upstream_timeout); one begun
	// before it runs its own timers. 0: no such bound.
	RetryWindow time.Duration
}

// BeforeSum is the longest the timers before a request take in one
// attempt: Before summed.
func (b Bounds) BeforeSum() time.Duration {
	var s time.Duration
	for _, d := range b.Before {
		s += d
	}
	return s
}

// Try is one attempt of a walk through a hang: when it starts and how long
// it runs before its timer (or the overall bound) ends it.
type Try struct {
	Start, Length time.Duration
}

// EffectivePerTry is the timer that ends one attempt in a hang: the per-try
// timeout when it is below the overall bound, else the overall bound; 0
// when nothing ends it.
func (b Bounds) EffectivePerTry() time.Duration {
	switch {
	case b.PerTry > 0 && (b.Overall == 0 || b.PerTry < b.Overall):
		return b.PerTry
	default:
		return b.Overall
	}
}

// PerTryMatters reports whether the per-try timeout ends an attempt before
// the overall bound does, so that a timed-out attempt can be retried at
// all: a per-try timeout equal to the overall one, or none, and a written
// default are one config.
func (b Bounds) PerTryMatters() bool {
	return b.PerTry > 0 && (b.Overall == 0 || b.PerTry < b.Overall)
}

// HangWalk follows a request while the dependency hangs: every attempt runs
// into its timer, the waits between attempts are their expected values
// under the backoff, no attempt is sent with less than MinUsefulTry (or,
// when that is 0, with nothing) left before Overall, and the last gets only
// what is left. It returns the attempts sent, the total backoff waited and
// whether a next attempt was left unsent for want of time (the retry it
// would have been: 0 when none was). bounded is false when nothing ends
// an attempt: the caller waits for ever.
func (b Bounds) HangWalk() (tries []Try, backoff time.Duration, unsent int, bounded bool) {
	perTry := b.EffectivePerTry()
	if perTry <= 0 {
		return []Try{{}}, 0, 0, false
	}
	n := 1
	if b.RetriesTimeouts {
		n = max(b.Attempts, 1)
	}
	expected, _ := b.Backoff.Cumulative(n - 1)
	dl, need := b.Overall, max(b.MinUsefulTry, time.Nanosecond)
	var elapsed, prevTotal time.Duration
	for a := range n {
		if a > 0 {
			total := expected[a-1]
			wait := total - prevTotal
			prevTotal = total
			if dl > 0 && dl-(elapsed+wait) < need {
				return tries, backoff, a + 1, true
			}
			if b.RetryWindow > 0 && elapsed+wait >= b.RetryWindow {
				return tries, backoff, a + 1, true
			}
			elapsed += wait
			backoff += wait
		}
		t := Try{Start: elapsed, Length: perTry}
		if dl > 0 && dl-elapsed < perTry {
			t.Length = dl - elapsed
		}
		tries = append(tries, t)
		elapsed += t.Length
	}
	return tries, backoff, 0, true
}

// Hang is HangWalk summed: the attempts a request sends in a hang, the
// backoff it waits between them and how long it waits in all; bounded false
// when nothing ends it.
func (b Bounds) Hang() (attempts int, backoff, wait time.Duration, bounded bool) {
	tries, backoff, _, bounded := b.HangWalk()
	if !bounded {
		return 1, 0, 0, false
	}
	last := tries[len(tries)-1]
	return len(tries), backoff, last.Start + last.Length, true
}

// StaticWorstCase is the longest a call may take when every attempt times
// out in full, after every timer before its request ran out too (Before),
// and every wait is at its largest (MaxWait), with nothing over all attempts to end it
// sooner: what a client without Overall must fit in the caller's
// deadline. No attempt starts after RetryWindow. An attempt whose failure
// is not a timeout costs no more. 0 when nothing ends an attempt.
func (b Bounds) StaticWorstCase() time.Duration {
	_, w := b.staticWalk(0)
	return w
}

// StaticAttempts is how many attempts StaticWorstCase makes.
func (b Bounds) StaticAttempts() int {
	n, _ := b.staticWalk(0)
	return n
}

// staticWalk sends the attempts of StaticWorstCase, at most limit of them
// when limit > 0, and returns how many it sent and when the last ended.
func (b Bounds) staticWalk(limit int) (int, time.Duration) {
	perTry := b.EffectivePerTry()
	if perTry <= 0 {
		return 1, 0
	}
	n := 1
	if b.RetriesTimeouts {
		n = max(b.Attempts, 1)
	}
	if limit > 0 {
		n = min(n, limit)
	}
	one := perTry
	if b.Overall == 0 {
		one += b.BeforeSum()
	}
	sent, end := 0, time.Duration(0)
	for a := range n {
		start := end
		if a > 0 {
			start += b.MaxWait(a - 1)
			if b.RetryWindow > 0 && start >= b.RetryWindow {
				break
			}
		}
		sent, end = a+1, start+one
	}
	if b.Overall > 0 {
		end = min(end, b.Overall)
	}
	return sent, end
}

// AttemptsWithin is how many attempts fit within d when each times out in
// full after its timers before the request, and each wait is at its
// largest (MaxWait): at least 1.
func (b Bounds) AttemptsWithin(d time.Duration) int {
	fit := 1
	for n := 2; n <= max(b.Attempts, 1); n++ {
		if sent, end := b.staticWalk(n); sent < n || end > d+time.Millisecond {
			break
		}
		fit = n
	}
	return fit
}

// MaxWait is the largest wait before retry i (0 for the first retry): the
// Cap, or, where WaitGrowth says how the waits grow, min(Cap, Base x
// WaitGrowth^i x (1 + WaitAbove)).
func (b Bounds) MaxWait(i int) time.Duration {
	if b.WaitGrowth <= 0 {
		return b.Backoff.Cap
	}
	w := float64(b.Backoff.Base) * (1 + b.WaitAbove)
	for range i {
		if w >= float64(b.Backoff.Cap) {
			break
		}
		w *= b.WaitGrowth
	}
	return min(time.Duration(w), b.Backoff.Cap)
}
