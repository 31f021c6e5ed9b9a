package recommend

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Defaults of a call policy (DOMAIN.md section 3).
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
	// amplificationWarning: above this many calls to the bottom layer per
	// request, the policy warns (3 attempts at 3 layers are 27).
	amplificationWarning = 10
	// minUsefulRatio: by default an attempt with less than this multiple of
	// the median left is not sent, the tight-tail rule's default ratio: a
	// timeout that close to the median fires on ordinary noise.
	minUsefulRatio = 2
)

// Retry conditions other than status codes.
const (
	RetryConnectFailure = "connect-failure" // the connection could not be made: the request was never sent
	RetryTimeout        = "timeout"         // the per-try timeout fired: the request may have taken effect
)

// DefaultRetryOn is what is retried by default (DOMAIN.md section 3):
// failures that can succeed later. 500 is not among them: a deterministic
// bug returns it every time.
var DefaultRetryOn = []string{RetryConnectFailure, RetryTimeout, "408", "429", "502", "503", "504"}

// safeWithoutIdempotency are the conditions under which the request was not
// processed, so repeating it is safe even for a POST:
//   - connect-failure: the request never left the client;
//   - 408: the server gave up waiting for the request before reading it;
//   - 425 (Too Early): the server refused to process early data;
//   - 429: rejected by rate limiting before any work;
//   - 503: usually sent by a proxy or a load shedder before the work starts
//     (RFC 9110: "currently unable to handle the request"). A server that
//     can answer 503 after doing the work should leave 503 out.
//
// A timeout, a 502 or a 504 (the upstream may have answered after the proxy
// gave up) and any other 5xx may come after the request took effect.
var safeWithoutIdempotency = []string{RetryConnectFailure, "408", "425", "429", "503"}

// PolicyOptions are the caller's choices for a call policy. Zero values
// take the defaults given per field.
type PolicyOptions struct {
	Deadline    time.Duration // the caller's deadline over all attempts; 0 = none
	Attempts    int           // most attempts, the first included; 0 = 1
	BackoffBase time.Duration // 0 = DefaultBackoffBase
	BackoffCap  time.Duration // 0 = DefaultBackoffCap, or 10 x BackoffBase when only that is given (Envoy's rule)
	Jitter      Jitter        // "" = full
	RetryBudget float64       // share of requests that may be retried (0.1 = 10 %); 0 = no budget
	RetryOn     []string      // conditions and status codes to retry; nil = DefaultRetryOn
	Idempotent  bool          // the call is safe to repeat (GET, PUT, DELETE, or an idempotency key)
	Layers      int           // layers of the call chain that retry like this; 0 = 1
	// MinUsefulTry: an attempt with less than this left before the
	// deadline is not sent. 0 = max(2 x p50, 1ms), at most the per-try
	// timeout.
	MinUsefulTry time.Duration
}

// Policy is a call policy fitted to a deadline: the per-try timeout, how
// many attempts fit, the backoff between them, what is retried and the
// retry budget, with the steps that produced it and warnings.
type Policy struct {
	Deadline          time.Duration // 0 = none
	RequestedAttempts int
	Attempts          int // attempts that fit the deadline in the worst case
	PerTryTimeout     time.Duration
	CutOff            float64 // share of the calls the per-try timeout cuts off
	Backoff           Backoff
	// ExpectedBackoff and LargestBackoff are the expected and the largest
	// total wait between Attempts attempts under the backoff's own schedule.
	ExpectedBackoff, LargestBackoff time.Duration
	// WorstCase is Attempts x PerTryTimeout + (Attempts-1) x Backoff.Cap:
	// every attempt times out and every wait is at the cap. It is what must
	// fit the deadline, whatever schedule a client uses below the cap.
	WorstCase     time.Duration
	RetryOn       []string // canonical: conditions first, then codes in order
	RetryBudget   float64  // 0 = none
	Idempotent    bool
	Layers        int
	Amplification int // Attempts ^ Layers, saturated at math.MaxInt
	MinUsefulTry  time.Duration
	Steps         []Step // rules: per-try, deadline, attempts, backoff, min-useful-try
	Warnings      []string
}

// Retries reports whether the policy makes more than one attempt.
func (p Policy) Retries() bool { return p.Attempts > 1 }

// RetriesOn reports whether the policy retries on condition c (a name such
// as "timeout" or a status code such as "503").
func (p Policy) RetriesOn(c string) bool { return p.Attempts > 1 && slices.Contains(p.RetryOn, c) }

// Hang returns how many attempts a request makes when the dependency
// hangs, and the expected total backoff between them: every attempt when
// timeouts are retried, else one (without idempotency, a timed-out request
// is not repeated).
func (p Policy) Hang() (attempts int, backoff time.Duration) {
	if p.RetriesOn(RetryTimeout) {
		return p.Attempts, p.ExpectedBackoff
	}
	return 1, 0
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
	if o.RetryOn == nil {
		o.RetryOn = slices.Clone(DefaultRetryOn)
	}
	on, err := ParseRetryOn(o.RetryOn)
	if err != nil {
		errs = append(errs, err)
	}
	o.RetryOn = on
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
		case RetryConnectFailure, RetryTimeout:
			if !slices.Contains(conds, s) {
				conds = append(conds, s)
			}
			continue
		}
		code, err := strconv.Atoi(s)
		if err != nil || code < 100 || code > 599 {
			errs = append(errs, fmt.Errorf("retry-on %q is neither %s, %s nor an HTTP status code", raw, RetryConnectFailure, RetryTimeout))
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
	slices.SortFunc(conds, func(a, b string) int { // connect-failure before timeout
		return strings.Compare(a, b)
	})
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

// NewPolicy fits a call policy to the caller's deadline (DOMAIN.md section
// 3). The per-try timeout starts at rec.Timeout. The policy must fit the
// deadline in the worst case, every attempt timing out and every wait at
// the backoff cap:
//
//	attempts x per-try timeout + (attempts-1) x cap <= deadline
//
// When the requested attempts do not fit, NewPolicy keeps the per-try
// timeout and makes fewer attempts: a per-try timeout below the
// recommendation cuts off good calls on every request, while a missing
// retry only matters when an attempt fails. Only when one attempt at
// rec.Timeout is longer than the deadline is the per-try timeout lowered,
// to the deadline (a timeout longer than the caller waits is work done for
// nobody), with a warning giving the share of calls it cuts off. The
// warning for attempts that do not fit names the per-try timeout that would
// fit them all and what it would cut off, for the reader to weigh.
//
// Without Idempotent only failures after which the request was certainly
// not processed are retried (see safeWithoutIdempotency); timeout, 502,
// 504 and other 5xx are dropped from RetryOn, with a warning when retries
// were asked for. NewPolicy returns an error for invalid options (all
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
		RetryOn:           o.RetryOn,
		RetryBudget:       o.RetryBudget,
		Idempotent:        o.Idempotent,
		Layers:            o.Layers,
	}
	step := func(rule string, v time.Duration, format string, args ...any) {
		p.Steps = append(p.Steps, Step{Rule: rule, Value: v, Reason: fmt.Sprintf(format, args...)})
	}
	warn := func(format string, args ...any) {
		p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
	}
	// FractionAbove walks the whole histogram: call it once per value.
	recCut := h.FractionAbove(rec.Timeout)
	p.CutOff = recCut
	d := human.Duration
	maxWait := p.Backoff.Cap

	// 1. The per-try timeout starts at the recommendation.
	step("per-try", rec.Timeout, "each attempt gets the recommended timeout of %s (it cuts off %s of calls)",
		d(rec.Timeout), human.Percent(recCut))

	// 2. One attempt longer than the deadline: lower the per-try timeout.
	if dl := o.Deadline; dl > 0 && rec.Timeout > dl {
		p.PerTryTimeout = dl
		p.Attempts = 1
		cut := h.FractionAbove(dl)
		p.CutOff = cut
		step("deadline", dl, "the recommended %s is longer than the deadline of %s, and a timeout longer than the caller waits is work done for nobody: the per-try timeout is lowered to %s",
			d(rec.Timeout), d(dl), d(dl))
		warn("the recommended timeout of %s exceeds the deadline of %s: the per-try timeout is lowered to %s, which cuts off %s of calls instead of %s; raise the deadline or make the dependency faster",
			d(rec.Timeout), d(dl), d(dl), human.Percent(cut), human.Percent(recCut))
	}

	// 3. How many attempts fit the deadline in the worst case.
	if p.RequestedAttempts > 1 {
		asked := WorstCaseOf(p.RequestedAttempts, p.PerTryTimeout, maxWait)
		switch {
		case o.Deadline == 0:
			step("attempts", asked, "%d attempts of %s with waits capped at %s take at most %s; without a deadline nothing bounds that (give --deadline)",
				p.Attempts, d(p.PerTryTimeout), d(maxWait), d(asked))
		case asked <= o.Deadline:
			step("attempts", asked, "%d attempts of %s with waits capped at %s take at most %s, within the deadline of %s",
				p.Attempts, d(p.PerTryTimeout), d(maxWait), d(asked), d(o.Deadline))
		default:
			if p.PerTryTimeout == rec.Timeout {
				for p.Attempts > 1 && WorstCaseOf(p.Attempts, p.PerTryTimeout, maxWait) > o.Deadline {
					p.Attempts--
				}
			}
			fit := WorstCaseOf(p.Attempts, p.PerTryTimeout, maxWait)
			step("attempts", fit, "%d attempts of %s with waits capped at %s take up to %s, more than the deadline of %s: %s (at most %s)",
				p.RequestedAttempts, d(p.PerTryTimeout), d(maxWait), d(asked), d(o.Deadline), fitText(p.Attempts), d(fit))
			warn("%s", p.attemptsDoNotFit(h, recCut))
		}
	}

	// 4. The backoff between the attempts.
	p.ExpectedBackoff, p.LargestBackoff = p.Backoff.Totals(p.Attempts - 1)
	if p.Attempts > 1 {
		waits := "the wait between 2 attempts is"
		if p.Attempts > 2 {
			waits = fmt.Sprintf("the %d waits between %d attempts total", p.Attempts-1, p.Attempts)
		}
		step("backoff", p.ExpectedBackoff, "%s jitter between %s and %s: %s %s on average, at most %s",
			p.Backoff.Jitter, d(p.Backoff.Base), d(maxWait), waits, d(p.ExpectedBackoff), d(p.LargestBackoff))
	}
	p.WorstCase = WorstCaseOf(p.Attempts, p.PerTryTimeout, maxWait)

	// 5. What is too little time for an attempt.
	p.MinUsefulTry = o.MinUsefulTry
	p50 := h.Quantile(0.5)
	why := fmt.Sprintf("you set %s", d(o.MinUsefulTry))
	if p.MinUsefulTry == 0 {
		p.MinUsefulTry = max(minUsefulRatio*p50, MinTimeout)
		why = fmt.Sprintf("%d x the median of %s: less than that fires on ordinary noise", minUsefulRatio, d(p50))
	}
	if p.MinUsefulTry > p.PerTryTimeout {
		p.MinUsefulTry = p.PerTryTimeout
		why += fmt.Sprintf(", but never more than the per-try timeout of %s: the first attempt is always sent", d(p.PerTryTimeout))
	}
	if o.Deadline > 0 {
		step("min-useful-try", p.MinUsefulTry, "an attempt with less than %s left before the deadline is not sent (%s)", d(p.MinUsefulTry), why)
	}
	if p.PerTryTimeout < minUsefulRatio*p50 {
		warn("the per-try timeout of %s is below %d x the median (%s): it fires on ordinary noise, a GC pause or one TCP retransmission",
			d(p.PerTryTimeout), minUsefulRatio, d(p50))
	}

	// What is retried.
	if !p.Idempotent {
		var dropped []string
		p.RetryOn = slices.DeleteFunc(p.RetryOn, func(c string) bool {
			if slices.Contains(safeWithoutIdempotency, c) {
				return false
			}
			dropped = append(dropped, c)
			return true
		})
		if p.Attempts > 1 {
			what := "only failures after which the request was certainly not processed are retried"
			if len(dropped) > 0 {
				verb := "are"
				if len(dropped) == 1 {
					verb = "is"
				}
				what = fmt.Sprintf("%s %s not retried, as a timed-out POST may have taken effect", strings.Join(dropped, ", "), verb)
			}
			kept := "nothing else is on the list"
			if len(p.RetryOn) > 0 {
				kept = strings.Join(p.RetryOn, ", ") + " still are (the request was not processed)"
			}
			warn("retries on a call not marked idempotent (--idempotent): %s; %s. Mark the call idempotent when it is (GET, HEAD, OPTIONS, PUT, DELETE, or a request with an idempotency key)",
				what, kept)
		}
	}
	if p.Attempts > 1 && slices.Contains(p.RetryOn, "500") {
		warn("500 is retried: a deterministic bug returns it every time, so each such request costs %d calls for nothing", p.Attempts)
	}
	if p.Attempts > 1 && len(p.RetryOn) == 0 {
		warn("%d attempts but nothing to retry on: every failure ends the request", p.Attempts)
	}

	// Amplification across layers.
	p.Amplification = ipow(p.Attempts, p.Layers)
	if p.Amplification > amplificationWarning {
		warn("retries multiply across layers: %d attempts at each of %d layers send up to %s calls to the bottom layer for one request; retry at one layer, the others fail fast",
			p.Attempts, p.Layers, human.Count(int64(p.Amplification)))
	}
	if p.Attempts > 1 && p.RetryBudget == 0 {
		warn("no retry budget: during an outage %d attempts per request cost %d x the load on a dependency that is already failing; a budget of 10 %% (--retry-budget 10%%) keeps it near 1.1 x",
			p.Attempts, p.Attempts)
	}
	return p, nil
}

// attemptsDoNotFit explains that fewer attempts than asked fit and what the
// per-try timeout that would fit them all costs.
func (p Policy) attemptsDoNotFit(h *histogram.Latency, recCut float64) string {
	d := human.Duration
	n, maxWait, dl := p.RequestedAttempts, p.Backoff.Cap, p.Deadline
	s := fmt.Sprintf("%d attempts do not fit the deadline of %s: in the worst case (every attempt times out, every wait at the cap of %s) they take %s; only %s of %s %s",
		n, d(dl), d(maxWait), d(WorstCaseOf(n, p.PerTryTimeout, maxWait)), attemptsText(p.Attempts), d(p.PerTryTimeout), fitsVerb(p.Attempts))
	alt := roundDown((dl - time.Duration(n-1)*maxWait) / time.Duration(n))
	if alt >= MinTimeout {
		s += fmt.Sprintf(". A per-try timeout of %s would fit all %d, but it cuts off %s of calls instead of %s",
			d(alt), n, human.Percent(h.FractionAbove(alt)), human.Percent(recCut))
	} else {
		s += fmt.Sprintf(". Even a per-try timeout of %s would not fit %d attempts with waits capped at %s: lower --backoff-cap or raise the deadline",
			d(MinTimeout), n, d(maxWait))
	}
	return s
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

// fitText says how many attempts fit: "1 attempt fits", "2 attempts fit".
func fitText(n int) string { return attemptsText(n) + " " + fitsVerb(n) }

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
