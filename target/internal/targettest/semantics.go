package targettest

// Each target's tests read its emitted configurations back (its
// snippet_test.go, Checks.Behaviours): by the target's own types where a
// Go parser exists and by its directives where none does, into what a
// call through it does by the target's documented semantics
// (docs/method.md#9-config-targets; the sources are in each target's
// file): the longest the caller can wait, the attempts, and whether
// anything is retried after the request was sent. Snippets holds every
// target, for random histograms and flags, to the deadline and the
// idempotency rule, and replays its semantics through the simulator.

import (
	"time"

	"github.com/tunetimeout/tunetimeout/recommend"
)

// Behaviour is what one route of an emitted config does.
type Behaviour struct {
	Name string
	// Worst is the longest a caller can wait, by the target's semantics.
	Worst time.Duration
	// Bound is the target's own bound over the whole call (Envoy's route
	// timeout, gRPC's timeout...); 0 when it has none.
	Bound time.Duration
	// PerTry bounds one attempt; 0 when the target has no such timer (gRPC).
	PerTry   time.Duration
	Attempts int
	// RetrySent: something is retried after the request was sent (a
	// timeout, a reset, a status code, a hedge).
	RetrySent bool
	// RetryNeverSent: a failure before the request was sent is retried.
	RetryNeverSent bool
	// Statuses are the HTTP statuses retried, Timeouts whether a per-try
	// timeout is.
	Statuses []string
	Timeouts bool
	// MinUseful: the least time left for which the target still sends an
	// attempt (Envoy sends one however little is left).
	MinUseful       time.Duration
	Base, Cap       time.Duration
	Hedge           time.Duration // the hedge delay; 0: none
	HedgeAttempts   int
	Connect, Setup  time.Duration // the connect timer; all the timers before the request is sent
	StaticAttempts  bool          // the attempts were fitted so that each may time out in full
	CatchAll        bool
	RetryExceptions []string
}

// NeverSentConds are the retry conditions of Envoy and Istio that a call
// that is not idempotent may have.
var NeverSentConds = map[string]bool{"connect-failure": true, "refused-stream": true, "reset-before-request": true}

// TargetPolicy is the call policy a target's config makes, by the target's
// documented semantics (Behaviour, read back from the snippet): what bounds
// the whole call, what one attempt may take, which failures are retried,
// and how little time left still gets an attempt.
func TargetPolicy(b Behaviour) recommend.Policy {
	p := recommend.Policy{
		Deadline:      b.Bound,
		Attempts:      b.Attempts,
		PerTryTimeout: b.PerTry,
		Backoff:       recommend.Backoff{Jitter: recommend.JitterFull, Base: b.Base, Cap: max(b.Cap, b.Base)},
		MinUsefulTry:  max(b.MinUseful, time.Nanosecond),
	}
	if p.PerTryTimeout == 0 { // gRPC: no per-try timeout, the call's deadline ends the attempt
		p.PerTryTimeout = b.Bound
	}
	if b.RetryNeverSent {
		p.RetryOn = append(p.RetryOn, recommend.RetryConnectFailure)
	}
	if b.Timeouts {
		p.RetryOn = append(p.RetryOn, recommend.RetryTimeout)
	}
	return p
}
