package recommend

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Defaults of a call policy (docs/method.md#7-retries).
const (
	// DefaultBackoffBase and DefaultBackoffCap are Envoy's retry backoff
	// defaults (RetryPolicy.retry_back_off: base_interval 25ms, max_interval
	// 10 x base). gRPC's retry policy has no defaults (initialBackoff and
	// maxBackoff are required), and its 1s initial *connection* backoff is
	// for reconnecting, not for retrying a call. 25ms waits out a brief
	// blip without adding much to a call that takes tens of milliseconds;
	// the 250ms cap keeps the waits small next to a per-try timeout.
	DefaultBackoffBase = 25 * time.Millisecond
	DefaultBackoffCap  = 250 * time.Millisecond
	// MaxAttempts is the most attempts a policy accepts. gRPC treats more
	// than 5 as 5; 100 is only a guard against typing errors.
	MaxAttempts = 100
	// MaxLayers is the most layers a policy accepts.
	MaxLayers = 20
	// minUsefulRatio: by default an attempt with less than this multiple of
	// the median left is not sent, the tight-tail rule's default ratio: a
	// timeout that close to the median fires on ordinary noise.
	minUsefulRatio = 2
)

// Retry conditions other than status codes.
const (
	RetryConnectFailure = "connect-failure" // the connection could not be made: the request was never sent
	RetryRefusedStream  = "refused-stream"  // HTTP/2 REFUSED_STREAM (RFC 9113 section 8.7): the server did not process the request
	RetryTimeout        = "timeout"         // the per-try timeout fired: the request may have taken effect
)

// DefaultRetryOn is what an idempotent call retries by default
// (docs/method.md#8-idempotency): failures that can succeed later. 500 is not among them: a
// deterministic bug returns it every time.
var DefaultRetryOn = []string{RetryConnectFailure, RetryRefusedStream, RetryTimeout, "408", "429", "502", "503", "504"}

// NeverSent are the failures that prove the request never reached the
// application, the only ones a call that is not idempotent may retry (RFC
// 9110 section 9.2.2: a client must not repeat a non-idempotent request
// unless it knows the first was never applied):
//   - connect-failure: the connection could not be made (refused, connect
//     timeout), so the request never left the client;
//   - refused-stream: an HTTP/2 server refused the stream before processing
//     it (RFC 9113 section 8.7; gRPC's transparent retries rest on it).
//
// A timeout, a reset after the request was sent, a 408, 429 or 503 (a proxy
// or a server may answer it after doing the work) and any other status may
// all follow a request that was applied.
var NeverSent = []string{RetryConnectFailure, RetryRefusedStream}

// IdempotentMethods are the request methods RFC 9110 section 9.2.2 defines
// as idempotent; POST, PATCH, CONNECT and LOCK are not.
var IdempotentMethods = []string{"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}

// SafeMethods are the request methods RFC 9110 section 9.2.1 defines as
// safe (read-only), the only ones hedged when the method is known: a hedge
// sends the request again while the first is still running, so two writes
// run at once and may interleave, which no write survives, idempotent or
// not (a PUT and its hedge racing a third client's PUT may leave either
// body).
var SafeMethods = []string{"GET", "HEAD", "OPTIONS", "TRACE"}

// What decided whether a call is idempotent (Policy.IdempotentFrom).
const (
	IdempotentFromMethod  = "method"  // the group's one method (--by method)
	IdempotentFromMethods = "methods" // the methods its calls had in the data
	IdempotentFromFlag    = "flag"    // --idempotent, with no method in the data
	IdempotentFromNone    = "none"    // nothing: not idempotent
)

// RFC9110 names the rule against repeating non-idempotent requests, for
// warnings.
const RFC9110 = "RFC 9110 section 9.2.2: a client must not repeat a non-idempotent request unless it knows the first was never applied"

// PolicyOptions are the caller's choices for a call policy. Zero values
// take the defaults given per field.
type PolicyOptions struct {
	Deadline    time.Duration // the caller's deadline over all attempts; 0 = none
	Attempts    int           // most attempts, the first included; 0 = 1
	BackoffBase time.Duration // 0 = DefaultBackoffBase
	BackoffCap  time.Duration // 0 = DefaultBackoffCap, or 10 x BackoffBase when only that is given (Envoy's rule)
	Jitter      Jitter        // "" = full
	RetryBudget float64       // share of requests that may be retried (0.1 = 10 %); 0 = no budget
	// RetryOn are the conditions and status codes to retry. nil = the
	// default: DefaultRetryOn for an idempotent call, NeverSent for one that
	// is not. A list given for a call that is not idempotent is kept as
	// given, with a warning for every condition that is not NeverSent.
	RetryOn    []string
	Idempotent bool // the call is safe to repeat (GET, PUT, DELETE, or an idempotency key)
	// Method is the request method of the group's calls when the data say
	// it (--by method); "" when unknown. When known it decides Idempotent:
	// idempotent when it is one of IdempotentMethods.
	Method string
	// Methods counts the group's calls by request method, when the data
	// say the method of each call (an nginx $request, a CSV method
	// column); nil when they do not. Without Method it decides Idempotent:
	// idempotent when every method is one of IdempotentMethods, not when
	// any is not (a route that mixes GET and POST is not retried, and the
	// policy says so). "other" is a method outside RFC 9110's, never
	// idempotent.
	Methods map[string]int64
	// IdempotentMethods overrides the package's IdempotentMethods (say,
	// POST added when every POST carries an idempotency key); nil = RFC
	// 9110's.
	IdempotentMethods []string
	Layers            int // layers of the call chain that retry like this; 0 = 1
	// MinUsefulTry: an attempt with less than this left before the
	// deadline is not sent. 0 = max(2 x p50, 1ms), at most the per-try
	// timeout.
	MinUsefulTry time.Duration
	// Hedge asks for hedged requests (idempotent calls only): a second
	// attempt is sent when the first has not answered after the hedge
	// delay, without cancelling it (docs/method.md#hedging).
	Hedge bool
	// HedgeAt is the quantile of the measured latency the hedge delay is
	// taken at; 0 = DefaultHedgeAt (p95).
	HedgeAt float64
}

// Policy is a call policy fitted to a deadline: the per-try timeout, how
// many attempts the deadline allows, the backoff between them, what is
// retried and the retry budget, what a hang and fast failures do with it,
// with the steps that produced it and warnings.
//
// With a deadline, the deadline bounds the whole call
// (docs/method.md#attempts-inside-a-deadline): each attempt gets the smaller of the per-try timeout and the time
// left, no attempt is sent with less than MinUsefulTry left, and a backoff
// that would leave less than that ends the call. A dependency that fails
// fast therefore gets every attempt, and a hang costs the caller the
// deadline. Clients with no bound over all attempts (HAProxy,
// resilience4j's Retry without an outer TimeLimiter) cannot do that: for
// them every attempt may time out in full, and StaticAttempts is how many
// fit. (nginx and the httpx snippet start an attempt only while a whole one
// fits, which keeps them within the deadline too; their snippets say so.)
type Policy struct {
	Deadline          time.Duration // 0 = none
	RequestedAttempts int
	// Attempts is how many attempts the policy allows: those asked for, as
	// many as are sure to be sent within the deadline when every attempt
	// fails fast and every wait is at its largest.
	Attempts      int
	PerTryTimeout time.Duration
	CutOff        float64 // share of the calls the per-try timeout cuts off
	Backoff       Backoff
	// ExpectedBackoff and LargestBackoff are the expected and the largest
	// total wait between Attempts attempts under the backoff's own schedule.
	ExpectedBackoff, LargestBackoff time.Duration
	// WorstCase is the longest the caller can wait: Attempts x
	// PerTryTimeout + (Attempts-1) x Backoff.Cap (every attempt times out,
	// every wait at the cap, whatever schedule a client draws below it),
	// and never more than the deadline when there is one.
	WorstCase time.Duration
	// StaticAttempts is how many attempts fit the deadline when every one
	// times out in full and every wait is at the cap: what a client without
	// a bound over all attempts may be given. Attempts without a deadline.
	StaticAttempts  int
	StaticWorstCase time.Duration // StaticAttempts x PerTryTimeout + (StaticAttempts-1) x Backoff.Cap
	// HangAttempts, HangBackoff and HangWait are what a request does when
	// the dependency hangs, with the expected wait between attempts: how
	// many attempts it sends, the backoff it waits between them, and how
	// long it waits in all (at most the deadline). One attempt when
	// timeouts are not retried.
	HangAttempts int
	HangBackoff  time.Duration
	HangWait     time.Duration
	// FastAttempts is how many attempts a request sends when every attempt
	// fails fast with a refused connection: Attempts when connection
	// failures are retried, else 1.
	FastAttempts int
	RetryOn      []string // canonical: conditions first, then codes in order
	RetryBudget  float64  // 0 = none
	Idempotent   bool
	Method       string // the request method Idempotent was taken from; "" when unknown
	// Methods are the request methods of the group's calls, sorted, when
	// the data say them (PolicyOptions.Methods); nil otherwise.
	Methods []string
	// IdempotentFrom says what decided Idempotent: IdempotentFromMethod,
	// IdempotentFromMethods, IdempotentFromFlag or IdempotentFromNone.
	IdempotentFrom string
	Layers         int
	Amplification  int // Attempts ^ Layers, saturated at math.MaxInt
	MinUsefulTry   time.Duration
	// Hedge is the hedging of the calls; nil when not asked for or not
	// allowed (a call that is not idempotent is never hedged).
	Hedge *Hedge
	Steps []Step // rules: per-try, deadline, attempts, backoff, min-useful-try, hang, fast-failures, static, hedge; metastable (added by analysis with --trigger)
	// Findings are the warnings about the policy, with their codes and
	// numbers (internal/finding); Warnings their messages, in order.
	Findings []finding.Finding
	Warnings []string
}

// Retries reports whether the policy makes more than one attempt.
func (p Policy) Retries() bool { return p.Attempts > 1 }

// RetriesOn reports whether the policy retries on condition c (a name such
// as "timeout" or a status code such as "503").
func (p Policy) RetriesOn(c string) bool { return p.Attempts > 1 && slices.Contains(p.RetryOn, c) }

// Hang returns how many attempts a request sends when the dependency
// hangs and the backoff it waits between them (HangAttempts, HangBackoff).
func (p Policy) Hang() (attempts int, backoff time.Duration) {
	return p.HangAttempts, p.HangBackoff
}

// WorstCaseOf is n attempts of perTry each with every wait between them at
// the cap: n x perTry + (n-1) x maxWait.
func WorstCaseOf(n int, perTry, maxWait time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(n)*perTry + time.Duration(n-1)*maxWait
}

// Validate reports every problem with o at once (nil when there is none),
// as NewPolicy would: callers can check options before reading any data.
func (o PolicyOptions) Validate() error {
	_, err := o.validate()
	return err
}

// WithDefaults is o checked, with the defaults filled in (the backoff's
// base, cap and jitter among them), except MinUsefulTry, which needs the
// histogram.
func (o PolicyOptions) WithDefaults() (PolicyOptions, error) { return o.validate() }

// validate checks o and returns it with the defaults filled in, except
// MinUsefulTry, which needs the histogram.
func (o PolicyOptions) validate() (PolicyOptions, error) {
	var errs []error
	if o.Deadline < 0 {
		errs = append(errs, fmt.Errorf("deadline %v must not be negative (0 means none)", o.Deadline))
	} else if o.Deadline > 0 && o.Deadline < MinTimeout {
		errs = append(errs, fmt.Errorf("deadline %v is below %v, the smallest timeout configs can express", o.Deadline, MinTimeout))
	}
	if o.Attempts == 0 {
		o.Attempts = 1
	}
	if o.Attempts < 1 || o.Attempts > MaxAttempts {
		errs = append(errs, fmt.Errorf("attempts %d must lie between 1 and %d (the first attempt counts)", o.Attempts, MaxAttempts))
	}
	if o.BackoffBase < 0 || o.BackoffCap < 0 {
		errs = append(errs, fmt.Errorf("backoff base %v and cap %v must not be negative", o.BackoffBase, o.BackoffCap))
	}
	switch {
	case o.BackoffBase == 0 && o.BackoffCap == 0:
		o.BackoffBase, o.BackoffCap = DefaultBackoffBase, DefaultBackoffCap
	case o.BackoffBase == 0:
		o.BackoffBase = min(DefaultBackoffBase, o.BackoffCap)
	case o.BackoffCap == 0:
		o.BackoffCap = min(10*o.BackoffBase, histogram.Highest)
	}
	if o.BackoffBase > 0 && o.BackoffCap > 0 && o.BackoffCap < o.BackoffBase {
		errs = append(errs, fmt.Errorf("backoff cap %v is below the base %v", o.BackoffCap, o.BackoffBase))
	}
	if o.BackoffCap > histogram.Highest {
		errs = append(errs, fmt.Errorf("backoff cap %v is above %v", o.BackoffCap, histogram.Highest))
	}
	j, err := ParseJitter(string(o.Jitter))
	if err != nil {
		errs = append(errs, err)
	}
	o.Jitter = j
	if !(o.RetryBudget >= 0 && o.RetryBudget <= 1) {
		errs = append(errs, fmt.Errorf("retry budget %v must lie between 0 (none) and 1 (100 %%)", o.RetryBudget))
	}
	if o.RetryOn != nil {
		on, err := ParseRetryOn(o.RetryOn)
		if err != nil {
			errs = append(errs, err)
		}
		o.RetryOn = on
	}
	o.Method = strings.ToUpper(strings.TrimSpace(o.Method))
	if o.IdempotentMethods == nil {
		o.IdempotentMethods = IdempotentMethods
	}
	methods := make([]string, 0, len(o.IdempotentMethods))
	for _, m := range o.IdempotentMethods {
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
			if !isToken(m) {
				errs = append(errs, fmt.Errorf("idempotent method %q is not an HTTP method name", m))
			}
			methods = append(methods, m)
		}
	}
	o.IdempotentMethods = methods
	if o.HedgeAt == 0 {
		o.HedgeAt = DefaultHedgeAt
	}
	if !(o.HedgeAt > 0 && o.HedgeAt < 1) {
		errs = append(errs, fmt.Errorf("hedge quantile %v must lie strictly between 0 and 1 (p95 is 0.95)", o.HedgeAt))
	}
	if o.Layers == 0 {
		o.Layers = 1
	}
	if o.Layers < 1 || o.Layers > MaxLayers {
		errs = append(errs, fmt.Errorf("layers %d must lie between 1 and %d", o.Layers, MaxLayers))
	}
	if o.MinUsefulTry < 0 {
		errs = append(errs, fmt.Errorf("minimum useful try %v must not be negative", o.MinUsefulTry))
	}
	return o, errors.Join(errs...)
}

// ParseRetryOn checks retry conditions and returns them canonical: lower
// case, without duplicates, the conditions (connect-failure, timeout) first,
// then status codes in order. Every problem is reported at once. Status
// codes that a retry cannot fix are refused with the reason: 400 and 422
// (the request is wrong), 401 and 403 (refresh the credentials once
// instead), 404 (the resource is not there), any other 4xx but 408, 425
// and 429, 501 and 505, and anything that is not a failure.
func ParseRetryOn(list []string) ([]string, error) {
	var errs []error
	var conds []string
	var codes []int
	for _, raw := range list {
		s := strings.ToLower(strings.TrimSpace(raw))
		switch s {
		case "":
			continue
		case RetryConnectFailure, RetryRefusedStream, RetryTimeout:
			if !slices.Contains(conds, s) {
				conds = append(conds, s)
			}
			continue
		}
		code, err := strconv.Atoi(s)
		if err != nil || code < 100 || code > 599 {
			errs = append(errs, fmt.Errorf("retry-on %q is neither %s, %s, %s nor an HTTP status code", raw, RetryConnectFailure, RetryRefusedStream, RetryTimeout))
			continue
		}
		if why := neverRetry(code); why != "" {
			errs = append(errs, fmt.Errorf("retry-on %d: never retried: %s", code, why))
			continue
		}
		if !slices.Contains(codes, code) {
			codes = append(codes, code)
		}
	}
	slices.Sort(conds) // connect-failure, refused-stream, timeout
	slices.Sort(codes)
	out := conds
	for _, c := range codes {
		out = append(out, strconv.Itoa(c))
	}
	if out == nil {
		out = []string{}
	}
	return out, errors.Join(errs...)
}

// neverRetry says why a status code must not be retried, "" when it may.
func neverRetry(code int) string {
	switch {
	case code < 400:
		return fmt.Sprintf("%d is not a failure", code)
	case code == 400:
		return "400 Bad Request: the request itself is wrong, and repeating it gets the same answer"
	case code == 401, code == 403:
		return fmt.Sprintf("%d: the credentials were refused; refresh them once instead of retrying", code)
	case code == 404:
		return "404 Not Found: the resource is not there, and a retry will not find it"
	case code == 422:
		return "422 Unprocessable Content: the server refused the request's content, and a retry gets the same answer"
	case code == 408, code == 425, code == 429:
		return ""
	case code < 500:
		return fmt.Sprintf("%d: a 4xx says the request itself is wrong (only 408, 425 and 429 may succeed later)", code)
	case code == 501, code == 505:
		return fmt.Sprintf("%d: the server does not support the request, and a retry will not change that", code)
	}
	return ""
}

// NewPolicy fits a call policy to the caller's deadline
// (docs/method.md#attempts-inside-a-deadline). The per-try timeout is rec.Timeout, lowered to the deadline only when
// one attempt at rec.Timeout is longer than it (a timeout longer than the
// caller waits is work done for nobody), with a warning giving the share of
// calls it cuts off.
//
// With a deadline the deadline bounds the whole call: each attempt gets
// min(per-try timeout, time left), no attempt is sent with less than
// MinUsefulTry left, and a backoff that would leave less than that ends the
// call. The policy allows as many of the requested attempts as are sure to
// be sent when every attempt fails fast and every wait is at its largest;
// a hang then costs the caller at most the deadline, and the steps say
// attempt by attempt what happens in a hang and under fast failures. For
// clients with no bound over all attempts, StaticAttempts is how many fit
// when every attempt times out in full and every wait is at the cap.
//
// Without Idempotent (or with a Method that is not idempotent) only
// failures that prove the request never reached the application
// (NeverSent) are retried unless RetryOn says otherwise, and then every
// other condition is warned about (RFC 9110 section 9.2.2); such a call is
// never hedged. NewPolicy returns an error for invalid options (all
// problems at once) and ErrNoSamples for an empty histogram.
func NewPolicy(h *histogram.Latency, rec Recommendation, o PolicyOptions) (Policy, error) {
	o, err := o.validate()
	if err != nil {
		return Policy{}, fmt.Errorf("invalid call policy: %w", err)
	}
	if h == nil || h.Count() == 0 {
		return Policy{}, ErrNoSamples
	}
	if rec.Timeout <= 0 {
		return Policy{}, errors.New("invalid call policy: the recommendation has no timeout")
	}
	p := Policy{
		Deadline:          o.Deadline,
		RequestedAttempts: o.Attempts,
		Attempts:          o.Attempts,
		PerTryTimeout:     rec.Timeout,
		Backoff:           Backoff{Jitter: o.Jitter, Base: o.BackoffBase, Cap: o.BackoffCap},
		RetryBudget:       o.RetryBudget,
		Idempotent:        o.Idempotent,
		Method:            o.Method,
		Layers:            o.Layers,
	}
	b := &policyBuilder{p: &p, h: h}
	// FractionAbove is an upper bound of the share cut off (docs/method.md#1-the-quantile).
	recCut := h.FractionAbove(rec.Timeout)
	p.CutOff = recCut

	// 1. The per-try timeout starts at the recommendation.
	b.step("per-try", rec.Timeout, "each attempt gets the recommended timeout of %s (it cuts off at most %s of calls)",
		human.Duration(rec.Timeout), human.Percent(recCut))

	// 2. One attempt longer than the deadline: lower the per-try timeout.
	b.deadline(rec.Timeout, recCut)

	// 3. How many attempts the deadline allows, and the backoff between them.
	b.attempts(o)

	// 4. What is retried: idempotency decides.
	b.retryOn(o)

	// 5. What a hang and fast failures do with the policy, and what fits
	// clients that cannot bound the whole call.
	b.hang()
	b.fastFailures()
	b.static(recCut)

	// 6. Hedging, for safe calls: idempotent, and not a write when the
	// method is known.
	b.hedge(o)

	// Amplification across layers, and the load of retries in an outage.
	b.amplification()
	p.Warnings = finding.Messages(p.Findings)
	return p, nil
}

// deadline is step 2 of NewPolicy: one attempt of the recommended
// timeout, cutting off recCut of the calls, is longer than the deadline,
// and the per-try timeout is lowered to it.
func (b *policyBuilder) deadline(timeout time.Duration, recCut float64) {
	p, d := b.p, human.Duration
	dl := p.Deadline
	if dl <= 0 || timeout <= dl {
		return
	}
	p.PerTryTimeout = dl
	cut := b.h.FractionAbove(dl)
	p.CutOff = cut
	b.step("deadline", dl, "the recommended %s is longer than the deadline of %s, and a timeout longer than the caller waits is work done for nobody: the per-try timeout is lowered to %s",
		d(timeout), d(dl), d(dl))
	b.warn(finding.TimeoutAboveDeadline, finding.Fields{"timeout_seconds": timeout, "deadline_seconds": dl,
		"per_try_timeout_seconds": dl, "cut_off_fraction": cut, "recommended_cut_off_fraction": recCut},
		"the recommended timeout of %s exceeds the deadline of %s: the per-try timeout is lowered to %s, which cuts off at most %s of calls instead of %s; raise the deadline or make the dependency faster",
		d(timeout), d(dl), d(dl), human.Percent(cut), human.Percent(recCut))
}

// attempts is step 3 of NewPolicy: what is too little time for an
// attempt, how many attempts the deadline allows, and the backoff between
// them.
func (b *policyBuilder) attempts(o PolicyOptions) {
	p, d := b.p, human.Duration
	// What is too little time for an attempt: needed to fit the attempts.
	p.MinUsefulTry = o.MinUsefulTry
	p50 := b.h.Quantile(0.5)
	minWhy := fmt.Sprintf("you set %s", d(o.MinUsefulTry))
	if p.MinUsefulTry == 0 {
		p.MinUsefulTry = max(minUsefulRatio*p50, MinTimeout)
		minWhy = fmt.Sprintf("%d x the median of %s: less than that fires on ordinary noise", minUsefulRatio, d(p50))
	}
	if p.MinUsefulTry > p.PerTryTimeout {
		p.MinUsefulTry = p.PerTryTimeout
		minWhy += fmt.Sprintf(", but never more than the per-try timeout of %s: the first attempt is always sent", d(p.PerTryTimeout))
	}

	b.expected, b.largest = p.Backoff.Cumulative(p.RequestedAttempts - 1)
	b.fitAttempts()
	p.ExpectedBackoff, p.LargestBackoff = b.totals(p.Attempts - 1)
	if p.Attempts > 1 {
		waits := "the wait between 2 attempts is"
		if p.Attempts > 2 {
			waits = fmt.Sprintf("the %d waits between %d attempts total", p.Attempts-1, p.Attempts)
		}
		b.step("backoff", p.ExpectedBackoff, "%s jitter between %s and %s: %s %s on average, at most %s",
			p.Backoff.Jitter, d(p.Backoff.Base), d(p.Backoff.Cap), waits, d(p.ExpectedBackoff), d(p.LargestBackoff))
	}
	if o.Deadline > 0 {
		b.step("min-useful-try", p.MinUsefulTry, "an attempt with less than %s left before the deadline is not sent, and a backoff that would leave less ends the call (%s)", d(p.MinUsefulTry), minWhy)
	}
	if p.PerTryTimeout < minUsefulRatio*p50 {
		b.warn(finding.PerTryNearMedian, finding.Fields{"per_try_timeout_seconds": p.PerTryTimeout, "ratio": minUsefulRatio, "median_seconds": p50},
			"the per-try timeout of %s is below %d x the median (%s): it fires on ordinary noise, a GC pause or one TCP retransmission",
			d(p.PerTryTimeout), minUsefulRatio, d(p50))
	}
}

// unsafeMethod is the method of o that is not safe to hedge: o.Method,
// or without it the first of the methods of the group's calls, when the
// data say them (one write among them and the group is not hedged); ""
// when every one is safe.
func unsafeMethod(o PolicyOptions) string {
	if o.Method != "" {
		if !slices.Contains(SafeMethods, o.Method) {
			return o.Method
		}
		return ""
	}
	for _, m := range slices.Sorted(maps.Keys(o.Methods)) {
		if !slices.Contains(SafeMethods, m) {
			return m
		}
	}
	return ""
}

// hedge is step 6 of NewPolicy: hedging, for safe calls, when asked.
func (b *policyBuilder) hedge(o PolicyOptions) {
	p, d := b.p, human.Duration
	unsafe := unsafeMethod(o)
	switch {
	case !o.Hedge:
	case unsafe != "":
		b.warn(finding.HedgeNotSafe, finding.Fields{"method": unsafe},
			"not hedged: %s is not a safe method (RFC 9110 section 9.2.1), and a hedge runs a second %s while the first is still running; only GET, HEAD, OPTIONS and TRACE are hedged",
			unsafe, unsafe)
	case !p.Idempotent:
		b.warn(finding.HedgeNotIdempotent, nil,
			"not hedged: the call is not idempotent, and a hedged request is sent twice while the first may take effect (%s)", RFC9110)
	default:
		hd := newHedge(b.h, o.HedgeAt, max(p.Attempts, 2))
		limit := p.WorstCase
		if p.Deadline > 0 {
			limit = p.Deadline
		}
		if hd.Delay >= limit {
			b.warn(finding.HedgeDelayTooLong, finding.Fields{"delay_seconds": hd.Delay, "quantile": hd.Quantile, "limit_seconds": limit},
				"not hedged: the hedge delay of %s (%s) is not below %s, the most the call may take", d(hd.Delay), human.Quantile(hd.Quantile), d(limit))
			break
		}
		p.Hedge = hd
		b.step("hedge", hd.Delay, "%s", hd.reason())
		if p.Deadline > 0 && hd.P999 > p.Deadline {
			b.warn(finding.HedgeP999BeyondDeadline, finding.Fields{"p999_seconds": hd.P999, "deadline_seconds": p.Deadline},
				"with hedging, p99.9 is still %s, beyond the deadline of %s", d(hd.P999), d(p.Deadline))
		}
		b.warn(finding.HedgeConnections, finding.Fields{"attempts": hd.Attempts},
			"hedging sends up to %d requests per call: during a hang each call holds that many connections until it ends", hd.Attempts)
	}
}

// amplification is the last of NewPolicy: the amplification across
// layers, and the load of retries in an outage without a budget.
func (b *policyBuilder) amplification() {
	p := b.p
	p.Amplification = ipow(p.Attempts, p.Layers)
	// Any product above the attempts of one layer is the amplification to
	// warn about (2 layers of 3 attempts send 9 calls to the bottom for one
	// request): the Google SRE book's advice is to retry at one layer.
	if p.Amplification > p.Attempts {
		b.warn(finding.Amplification, finding.Fields{"attempts": p.Attempts, "layers": p.Layers, "calls": p.Amplification},
			"retries multiply across layers: %d attempts at each of %d layers send up to %s calls to the bottom layer for one request; retry at one layer, the others fail fast",
			p.Attempts, p.Layers, human.Count(int64(p.Amplification)))
	}
	if p.Attempts > 1 && p.RetryBudget == 0 && len(p.RetryOn) > 0 {
		b.warn(finding.NoRetryBudget, finding.Fields{"attempts": p.Attempts, "suggested_budget_fraction": 0.1},
			"no retry budget: during an outage %d attempts per request cost %d x the load on a dependency that is already failing; a budget of 10 %% (%s 10%%) keeps it near 1.1 x",
			p.Attempts, p.Attempts, usage.RetryBudget)
	}
}

// policyBuilder collects the steps and warnings of one policy.
type policyBuilder struct {
	p *Policy
	h *histogram.Latency
	// expected and largest are the backoff's totals over the first k waits
	// (index k-1) of the requested attempts (Backoff.Cumulative).
	expected, largest []time.Duration
}

// totals is Backoff.Totals(retries) from the cumulative totals.
func (b *policyBuilder) totals(retries int) (expected, largest time.Duration) {
	if retries <= 0 {
		return 0, 0
	}
	return b.expected[retries-1], b.largest[retries-1]
}

func (b *policyBuilder) step(rule string, v time.Duration, format string, args ...any) {
	b.p.Steps = append(b.p.Steps, Step{Rule: rule, Value: v, Reason: fmt.Sprintf(format, args...)})
}

func (b *policyBuilder) warn(code finding.Code, fields finding.Fields, format string, args ...any) {
	b.p.Findings = append(b.p.Findings, finding.Newf(code, fields, format, args...))
}

// fitAttempts keeps as many of the requested attempts as are sure to be
// sent within the deadline when every attempt fails fast: the waits before
// the last one, each at its largest, must leave it MinUsefulTry. It sets
// WorstCase, and the attempts step.
func (b *policyBuilder) fitAttempts() {
	p, d := b.p, human.Duration
	if p.RequestedAttempts <= 1 {
		p.WorstCase = p.PerTryTimeout
		return
	}
	dl, cp := p.Deadline, p.Backoff.Cap
	if dl == 0 {
		p.WorstCase = WorstCaseOf(p.Attempts, p.PerTryTimeout, cp)
		b.step("attempts", p.WorstCase, "%d attempts of %s with waits capped at %s take at most %s; without a deadline nothing bounds that (give %s)",
			p.Attempts, d(p.PerTryTimeout), d(cp), d(p.WorstCase), usage.Deadline)
		return
	}
	for p.Attempts > 1 {
		if _, largest := b.totals(p.Attempts - 1); largest+p.MinUsefulTry <= dl {
			break
		}
		p.Attempts--
	}
	p.WorstCase = min(dl, WorstCaseOf(p.Attempts, p.PerTryTimeout, cp))
	_, largest := b.totals(p.Attempts - 1)
	each := fmt.Sprintf("each attempt gets the smaller of %s and the time left", d(p.PerTryTimeout))
	if p.Attempts == p.RequestedAttempts {
		b.step("attempts", p.WorstCase, "%d attempts within the deadline of %s: %s; when attempts fail fast all %d are sent (the waits before the last take at most %s, leaving it the %s an attempt needs); at most %s in all",
			p.Attempts, d(dl), each, p.Attempts, d(largest), d(p.MinUsefulTry), d(p.WorstCase))
		return
	}
	_, asked := b.totals(p.RequestedAttempts - 1)
	b.step("attempts", p.WorstCase, "%d attempts asked, but their %d waits take up to %s and the last attempt needs %s, more than the deadline of %s leaves: %s, %s; at most %s in all",
		p.RequestedAttempts, p.RequestedAttempts-1, d(asked), d(p.MinUsefulTry), d(dl), attemptsText(p.Attempts), each, d(p.WorstCase))
	if p.Attempts == 1 {
		b.warn(finding.NoRetriesFit, finding.Fields{"deadline_seconds": dl, "first_wait_seconds": p.Backoff.window(0), "min_useful_try_seconds": p.MinUsefulTry},
			"no retries fit the deadline of %s: even the first wait (up to %s) would leave less than the %s an attempt needs; raise the deadline or lower %s",
			d(dl), d(p.Backoff.window(0)), d(p.MinUsefulTry), usage.BackoffBase)
	}
}

// retryOn settles idempotency and what is retried.
func (b *policyBuilder) retryOn(o PolicyOptions) {
	p := b.p
	// The data decide where they say the method: the group's one method
	// (--by method), else the methods of its calls; --idempotent only
	// where they say nothing (RFC 9110 section 9.2.2).
	var unsafe []string // the group's methods that are not idempotent
	p.IdempotentFrom = IdempotentFromNone
	switch {
	case o.Method != "":
		p.IdempotentFrom = IdempotentFromMethod
		p.Idempotent = slices.Contains(o.IdempotentMethods, o.Method)
		if o.Idempotent && !p.Idempotent {
			b.warn(finding.MethodNotIdempotent, finding.Fields{"method": o.Method},
				"%s is not idempotent, so the group is not treated as idempotent despite %s; add %s to %s when every such request carries an idempotency key",
				o.Method, usage.Idempotent, o.Method, usage.IdempotentMethods)
		}
	case len(o.Methods) > 0:
		p.IdempotentFrom = IdempotentFromMethods
		p.Methods = slices.Sorted(maps.Keys(o.Methods))
		for _, m := range p.Methods {
			if !slices.Contains(o.IdempotentMethods, m) {
				unsafe = append(unsafe, m)
			}
		}
		p.Idempotent = len(unsafe) == 0
		if o.Idempotent && !p.Idempotent {
			b.warn(finding.MethodNotIdempotent, finding.Fields{"method": unsafe[0], "methods": p.Methods},
				"the group's calls include %s, not idempotent, so the group is not treated as idempotent despite %s; add %s to %s when every such request carries an idempotency key",
				b.methodsText(o.Methods, unsafe), usage.Idempotent, strings.Join(unsafe, ", "), usage.IdempotentMethods)
		}
	case o.Idempotent:
		p.IdempotentFrom = IdempotentFromFlag
		p.Idempotent = true
	}
	switch {
	case o.RetryOn == nil && p.Idempotent:
		p.RetryOn = slices.Clone(DefaultRetryOn)
	case o.RetryOn == nil:
		p.RetryOn = slices.Clone(NeverSent)
		switch {
		case p.Attempts <= 1:
		case len(unsafe) > 0 && len(unsafe) < len(p.Methods):
			// A route that mixes reads and writes: a retry of one of its
			// calls could be a write's.
			b.warn(finding.MethodsMixed, finding.Fields{"methods": p.Methods, "not_idempotent": unsafe, "retry_on": NeverSent},
				"the group's calls mix %s: %s not idempotent, so none of them is retried beyond failures that prove the request was never sent (%s); add method to %s (%s route,method) to retry the idempotent ones",
				b.methodsText(o.Methods, p.Methods), isAre(unsafe), strings.Join(NeverSent, ", "), usage.By, usage.By)
		default:
			what := fmt.Sprintf("the call is not marked idempotent (%s)", usage.Idempotent)
			switch {
			case p.Method != "":
				what = fmt.Sprintf("%s is not idempotent", p.Method)
			case len(unsafe) > 0:
				what = fmt.Sprintf("its calls are %s, not idempotent", b.methodsText(o.Methods, unsafe))
			}
			fields := finding.Fields{"retry_on": NeverSent, "method": nil} // method null: unknown
			if p.Method != "" {
				fields["method"] = p.Method
			} else if len(unsafe) > 0 {
				fields["method"] = unsafe[0]
			}
			b.warn(finding.RetryNeverSentOnly, fields,
				"%s, so only failures that prove the request was never sent are retried (%s): %s. Mark it idempotent when it is (GET, HEAD, OPTIONS, PUT, DELETE, or a request with an idempotency key)",
				what, strings.Join(NeverSent, ", "), RFC9110)
		}
	default:
		p.RetryOn = o.RetryOn
		if !p.Idempotent && p.Attempts > 1 {
			var risky []string
			for _, c := range p.RetryOn {
				if !slices.Contains(NeverSent, c) {
					risky = append(risky, c)
				}
			}
			if len(risky) > 0 {
				b.warn(finding.RetryOnNotIdempotent, finding.Fields{"risky": risky, "never_sent": NeverSent},
					"%s %s on a call that is not idempotent: the request may already have taken effect, and %s; only %s prove that",
					usage.RetryOn, strings.Join(risky, ", "), RFC9110, strings.Join(NeverSent, ", "))
			}
		}
	}
	if p.Attempts > 1 && slices.Contains(p.RetryOn, "500") {
		b.warn(finding.Retry500, finding.Fields{"attempts": p.Attempts},
			"500 is retried: a deterministic bug returns it every time, so each such request costs %d calls for nothing", p.Attempts)
	}
	if p.Attempts > 1 && len(p.RetryOn) == 0 {
		b.warn(finding.NothingToRetry, finding.Fields{"attempts": p.Attempts},
			"%d attempts but nothing to retry on: every failure ends the request", p.Attempts)
	}
}

// hang follows a request through a hang, every attempt running into its
// timeout, with the expected wait between attempts: HangAttempts,
// HangBackoff, HangWait, and the hang step.
func (b *policyBuilder) hang() {
	p, d := b.p, human.Duration
	dl := p.Deadline
	if !p.RetriesOn(RetryTimeout) {
		p.HangAttempts, p.HangWait = 1, p.PerTryTimeout
		switch {
		case p.Attempts > 1:
			b.step("hang", p.HangWait, "when the dependency hangs, the one attempt times out at %s and the call fails: timeouts are not retried (%s)",
				d(p.PerTryTimeout), b.whyNoTimeoutRetry())
		case dl > 0:
			b.step("hang", p.HangWait, "when the dependency hangs, the one attempt times out at %s", d(p.PerTryTimeout))
		}
		return
	}
	bounds := Bounds{Overall: dl, PerTry: p.PerTryTimeout, Attempts: p.Attempts, RetriesTimeouts: true,
		Backoff: p.Backoff, MinUsefulTry: p.MinUsefulTry}
	tries, backoff, unsent, _ := bounds.HangWalk()
	var clauses []string
	for a, t := range tries {
		if t.Length < p.PerTryTimeout {
			clauses = append(clauses, fmt.Sprintf("attempt %d at %s gets only the %s left", a+1, d(t.Start), d(t.Length)))
		} else {
			clauses = append(clauses, fmt.Sprintf("attempt %d at %s times out at %s", a+1, d(t.Start), d(t.Start+t.Length)))
		}
	}
	ended := ""
	if unsent > 0 {
		ended = fmt.Sprintf("attempt %d is not sent: after its wait less than %s would be left", unsent, d(p.MinUsefulTry))
	}
	last := tries[len(tries)-1]
	elapsed := last.Start + last.Length
	p.HangAttempts, p.HangBackoff = len(tries), backoff
	p.HangWait = elapsed
	if len(clauses) > 4 {
		clauses = append(clauses[:2], append([]string{"..."}, clauses[len(clauses)-2:]...)...)
	}
	s := "when the dependency hangs (waits at their mean): " + strings.Join(clauses, ", ")
	if ended != "" {
		s += "; " + ended
	}
	switch {
	case dl > 0 && elapsed == dl:
		s += fmt.Sprintf("; the caller waits %s, the deadline", d(elapsed))
	case dl > 0:
		s += fmt.Sprintf("; the caller waits %s, within the deadline of %s", d(elapsed), d(dl))
	default:
		s += fmt.Sprintf("; the caller waits %s: nothing but the attempts bounds it", d(elapsed))
	}
	b.step("hang", p.HangWait, "%s", s)
}

// whyNoTimeoutRetry says why a policy with retries does not retry timeouts.
func (b *policyBuilder) whyNoTimeoutRetry() string {
	if !b.p.Idempotent {
		return "the call is not idempotent: a timed-out request may have taken effect"
	}
	return fmt.Sprintf("timeout is not in %s", usage.RetryOn)
}

// fastFailures says what a request does when every attempt fails fast with
// a refused connection: FastAttempts and the fast-failures step.
func (b *policyBuilder) fastFailures() {
	p, d := b.p, human.Duration
	p.FastAttempts = 1
	if p.Attempts <= 1 {
		return
	}
	if !p.RetriesOn(RetryConnectFailure) {
		b.step("fast-failures", 0, "a refused connection is not retried (%s is not in %s): one attempt", RetryConnectFailure, usage.RetryOn)
		return
	}
	p.FastAttempts = p.Attempts
	b.step("fast-failures", p.ExpectedBackoff, "when every attempt fails fast (a refused connection), all %d are sent, with %s of backoff between them on average (at most %s)",
		p.Attempts, d(p.ExpectedBackoff), d(p.LargestBackoff))
}

// static fits the attempts for clients with no bound over all attempts:
// every attempt times out in full and every wait is at the cap.
func (b *policyBuilder) static(recCut float64) {
	p, d := b.p, human.Duration
	p.StaticAttempts = p.Attempts
	cp, dl := p.Backoff.Cap, p.Deadline
	if dl > 0 {
		for p.StaticAttempts > 1 && WorstCaseOf(p.StaticAttempts, p.PerTryTimeout, cp) > dl {
			p.StaticAttempts--
		}
	}
	p.StaticWorstCase = WorstCaseOf(p.StaticAttempts, p.PerTryTimeout, cp)
	if dl == 0 || p.Attempts <= 1 {
		return
	}
	who := "clients with no bound over all attempts (HAProxy, resilience4j's Retry without an outer TimeLimiter) must fit every attempt timing out in full, every wait at the cap of " + d(cp)
	if p.StaticAttempts == p.Attempts {
		b.step("static", p.StaticWorstCase, "%s: %d attempts of %s take at most %s, within the deadline of %s; their snippets make all %d",
			who, p.Attempts, d(p.PerTryTimeout), d(p.StaticWorstCase), d(dl), p.Attempts)
		return
	}
	s := fmt.Sprintf("%s: %s of %s %s the deadline of %s (%d would take %s), so their snippets let at most %s run into the timeout, and beyond that retry only refused connections (a retry of one costs no more than a connect)",
		who, attemptsText(p.StaticAttempts), d(p.PerTryTimeout), fitsVerb(p.StaticAttempts), d(dl),
		p.Attempts, d(WorstCaseOf(p.Attempts, p.PerTryTimeout, cp)), attemptsText(p.StaticAttempts))
	n := p.Attempts
	if alt := roundDown((dl - time.Duration(n-1)*cp) / time.Duration(n)); alt >= MinTimeout {
		s += fmt.Sprintf(". A per-try timeout of %s would fit all %d for them, but it cuts off at most %s of calls instead of %s",
			d(alt), n, human.Percent(b.h.FractionAbove(alt)), human.Percent(recCut))
	}
	b.step("static", p.StaticWorstCase, "%s", s)
}

// methodsText names methods with their calls, "GET (1,200) and POST
// (300)"; "other" reads "other methods".
func (b *policyBuilder) methodsText(calls map[string]int64, methods []string) string {
	parts := make([]string, len(methods))
	for i, m := range methods {
		name := m
		if m == "other" {
			name = "other methods"
		}
		parts[i] = fmt.Sprintf("%s (%s)", name, human.Count(calls[m]))
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// isAre says "POST is" or "POST and PATCH are".
func isAre(methods []string) string {
	if len(methods) == 1 {
		return methods[0] + " is"
	}
	return strings.Join(methods[:len(methods)-1], ", ") + " and " + methods[len(methods)-1] + " are"
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2), as a
// method name must be.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// roundDown rounds d down to a value people write in configs, with the
// step RoundUp uses at d's size (166ms -> 160ms); 0 for d <= 0.
func roundDown(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	_, step := RoundUp(d)
	return d / step * step
}

func attemptsText(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func fitsVerb(n int) string {
	if n == 1 {
		return "fits"
	}
	return "fit"
}

// ipow is b^e for small non-negative integers, saturated at math.MaxInt.
func ipow(b, e int) int {
	r := 1
	for range e {
		if b != 0 && r > math.MaxInt/b {
			return math.MaxInt
		}
		r *= b
	}
	return r
}
