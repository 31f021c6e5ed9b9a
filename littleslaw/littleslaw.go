// Package littleslaw applies Little's law (in flight = rate x time) to tell
// what a hang of a dependency costs, whether it exhausts the caller's pool,
// and how large a bulkhead prevents that (docs/method.md#6-littles-law).
package littleslaw

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Input is what is known about the calls to one dependency. Zero means
// unknown for every field.
type Input struct {
	Rate        float64       // mean calls per second
	PeakRate    float64       // calls per second in the busiest minute; 0 = unknown, Rate stands in
	Pool        int           // threads, connections or goroutines the calls share
	MeanLatency time.Duration // mean latency in normal operation
	P99         time.Duration // p99 latency, for the Hystrix rule of thumb
	Timeout     time.Duration // the (per-try) timeout a hang runs into
	Rejection   float64       // share of calls the bulkhead may reject in normal operation; default 0.001
	// Attempts is how many attempts each request makes during a hang, the
	// first included (every one times out); 0 or 1 = no retries.
	Attempts int
	// Backoff is the total wait between those attempts; Little's law is
	// about means, so give the expected total.
	Backoff time.Duration
	// Deadline is the caller's deadline over all attempts; 0 = none. A
	// request waits at most this long, whatever its attempts: the last one
	// gets only the time left.
	Deadline time.Duration
}

// DefaultRejection is the share of calls a bulkhead may reject in normal
// operation when Input.Rejection is not set (or not between 0 and 1).
const DefaultRejection = 0.001

// Result is Little's law applied to an Input. Fields whose inputs are
// unknown are zero and the matching Known flag is false.
type Result struct {
	Rate, PeakRate       float64
	Pool                 int
	RateKnown, PoolKnown bool
	MeanLatency          time.Duration // copied from Input, for Verdict
	Timeout              time.Duration // copied from Input, for Verdict
	Attempts             int           // copied from Input; 0 or 1 = one attempt
	Backoff              time.Duration // copied from Input; 0 with one attempt
	Deadline             time.Duration // copied from Input
	// HangWait is what each request waits during a hang: Attempts x Timeout
	// + Backoff, at most the Deadline.
	HangWait            time.Duration
	InFlightNormal      float64 // Rate x MeanLatency
	InFlightDuringHang  float64 // hang rate (PeakRate, else Rate) x HangWait
	PoolExhausted       bool
	SecondsToExhaustion float64 // Pool / hang rate, when PoolExhausted
	InFlightPeak        float64 // peak rate (else Rate) x MeanLatency: the normal demand the bulkhead is sized for
	Bulkhead            int     // Poisson quantile 1-Rejection of (peak rate x mean latency)
	Hystrix             int     // peak rate x p99 + breathing room
}

// InFlight is Little's law: the mean number of calls in flight when calls
// arrive at rate per second and each waits wait.
func InFlight(rate float64, wait time.Duration) float64 {
	return rate * wait.Seconds()
}

// HangWithRetries is Little's law during a hang when every request makes
// attempts attempts that all time out after perTry, with backoff in total
// between them (docs/method.md#6-littles-law): rate x (attempts x perTry + backoff).
// attempts below 1 count as 1, and then backoff does not count.
func HangWithRetries(rate float64, attempts int, perTry, backoff time.Duration) float64 {
	return InFlight(rate, hangWait(attempts, perTry, backoff, 0))
}

// hangWait is what a request waits during a hang: attempts x perTry +
// backoff (one attempt: perTry alone), cut at the deadline when there is
// one.
func hangWait(attempts int, perTry, backoff, deadline time.Duration) time.Duration {
	w := perTry
	if attempts > 1 {
		w = time.Duration(attempts)*perTry + backoff
	}
	if deadline > 0 {
		w = min(w, deadline)
	}
	return w
}

// PoissonQuantile returns the smallest k with P(X <= k) >= p for X Poisson
// with the given mean. It returns 0 for mean <= 0 or p <= 0 and
// math.MaxInt for p >= 1 (no finite k reaches it).
//
// Up to a mean of 1e7 the probabilities are summed outward from the mode,
// each from its neighbour, and divided by their total: no term underflows
// and no Lgamma error remains (terms below 1e-20 of the mode's are left
// out). Above that, where the sum would take hundreds of thousands of
// terms, the normal approximation with the Cornish-Fisher skew term and a
// continuity correction is within one of the exact answer.
func PoissonQuantile(mean, p float64) int {
	switch {
	case !(mean > 0) || !(p > 0):
		return 0
	case p >= 1:
		return math.MaxInt
	case mean > maxSummedMean:
		z := math.Sqrt2 * math.Erfinv(2*p-1)
		return max(0, int(math.Ceil(mean+z*math.Sqrt(mean)+(z*z-1)/6-0.5)))
	}
	lo, pmf := poissonTerms(mean)
	total := 0.0
	for _, t := range pmf {
		total += t
	}
	cdf := 0.0
	for i, t := range pmf {
		cdf += t
		if cdf/total >= p {
			return lo + i
		}
	}
	// p is within rounding of 1: the last term kept.
	return lo + len(pmf) - 1
}

// maxSummedMean is the largest mean for which PoissonQuantile sums terms.
const maxSummedMean = 1e7

// PoissonCDF returns P(X <= k) for X Poisson with the given mean by summing
// terms outward from the mode; it is meant for means up to about 1e7.
func PoissonCDF(k int, mean float64) float64 {
	if k < 0 {
		return 0
	}
	if !(mean > 0) {
		return 1
	}
	lo, pmf := poissonTerms(mean)
	total, cdf := 0.0, 0.0
	for i, t := range pmf {
		total += t
		if lo+i <= k {
			cdf += t
		}
	}
	return cdf / total
}

// poissonTerms returns the Poisson probabilities that matter for the mean,
// in order from k = lo, each relative to the probability at the mode.
func poissonTerms(mean float64) (lo int, pmf []float64) {
	const negligible = 1e-20
	mode := int(math.Floor(mean))
	// Below the mode: P(k-1) = P(k) * k / mean.
	var down []float64
	t := 1.0
	for k := mode; k > 0; k-- {
		t *= float64(k) / mean
		if t < negligible {
			break
		}
		down = append(down, t)
	}
	lo = mode - len(down)
	pmf = make([]float64, 0, 2*len(down)+16)
	for i := len(down) - 1; i >= 0; i-- {
		pmf = append(pmf, down[i])
	}
	// The mode and above: P(k+1) = P(k) * mean / (k+1).
	t = 1.0
	for k := mode; t >= negligible; k++ {
		pmf = append(pmf, t)
		t *= mean / float64(k+1)
	}
	return lo, pmf
}

// Hystrix's rule of thumb for a thread pool, from the Hystrix wiki
// (Configuration, coreSize): "requests per second at peak when healthy x
// 99th percentile latency in seconds + some breathing room"; its example is
// 30 rps x 0.2 s = 6, + breathing room = 10 threads. The wiki leaves the
// breathing room open. We take ceil(peak x p99) plus half of it, at least
// 4: that reproduces the wiki's example (6 + 4 = 10) and keeps the room in
// proportion for large pools, where a fixed 4 would be lost in the noise.
func hystrix(peak float64, p99 time.Duration) int {
	base := int(math.Ceil(InFlight(peak, p99)))
	return base + max(4, (base+1)/2)
}

// Analyze applies Little's law to in. The hang rate is PeakRate when known,
// else Rate: hangs do not wait for quiet hours. Everything that depends on
// an unknown input is zero.
//
// RateKnown reports Rate > 0. When only PeakRate is given, the values that
// need only the hang rate (in flight during a hang, exhaustion, bulkhead,
// Hystrix) are still computed; InFlightNormal stays zero.
func Analyze(in Input) Result {
	r := Result{
		Rate:        max(in.Rate, 0),
		PeakRate:    max(in.PeakRate, 0),
		Pool:        max(in.Pool, 0),
		MeanLatency: max(in.MeanLatency, 0),
		Timeout:     max(in.Timeout, 0),
		Attempts:    max(in.Attempts, 0),
	}
	if r.Attempts > 1 {
		r.Backoff = max(in.Backoff, 0)
	}
	r.Deadline = max(in.Deadline, 0)
	r.HangWait = hangWait(r.Attempts, r.Timeout, r.Backoff, r.Deadline)
	r.RateKnown = r.Rate > 0
	r.PoolKnown = r.Pool > 0
	rejection := in.Rejection
	if !(rejection > 0 && rejection < 1) {
		rejection = DefaultRejection
	}
	hang := r.hangRate()

	r.InFlightNormal = InFlight(r.Rate, r.MeanLatency)
	r.InFlightDuringHang = InFlight(hang, r.HangWait)
	if r.PoolKnown && hang > 0 && r.InFlightDuringHang > float64(r.Pool) {
		r.PoolExhausted = true
		r.SecondsToExhaustion = float64(r.Pool) / hang
	}
	r.InFlightPeak = InFlight(hang, r.MeanLatency)
	if r.InFlightPeak > 0 {
		r.Bulkhead = max(1, PoissonQuantile(r.InFlightPeak, 1-rejection))
	}
	if hang > 0 && in.P99 > 0 {
		r.Hystrix = hystrix(hang, in.P99)
	}
	return r
}

// hangRate is the rate a hang runs into: the peak when known.
func (r Result) hangRate() float64 {
	if r.PeakRate > 0 {
		return r.PeakRate
	}
	return r.Rate
}

// HangAt returns how many calls wait at once during a hang with the given
// timeout (hang rate x timeout) and that number as a multiple of the pool;
// poolMultiple is 0 when the pool is unknown.
func (r Result) HangAt(timeout time.Duration) (inFlight, poolMultiple float64) {
	inFlight = InFlight(r.hangRate(), timeout)
	if r.PoolKnown {
		poolMultiple = inFlight / float64(r.Pool)
	}
	return inFlight, poolMultiple
}

// attemptsOf says "2 attempts of 800ms".
func attemptsOf(n int, perTry time.Duration) string {
	if n <= 1 {
		return "1 attempt of " + human.Duration(perTry)
	}
	return fmt.Sprintf("%d attempts of up to %s", n, human.Duration(perTry))
}

// Verdict says in one or two sentences what a hang costs.
func (r Result) Verdict() string {
	hang := r.hangRate()
	switch {
	case hang <= 0 && !r.PoolKnown:
		return fmt.Sprintf("Give %s (or timestamps) and %s to see what a hang costs.", usage.Rate, usage.Pool)
	case hang <= 0:
		return fmt.Sprintf("Give %s (or timestamps) to see what a hang costs the pool of %s.", usage.Rate, human.Count(int64(r.Pool)))
	case r.Timeout <= 0:
		return "Give a timeout to see what a hang costs."
	}
	at := "During a hang"
	if r.PeakRate > 0 {
		at = "During a hang at the peak rate"
	}
	wait := human.Duration(r.Timeout)
	switch {
	case r.Deadline > 0 && r.HangWait == r.Deadline && (r.Attempts > 1 || r.Timeout != r.Deadline):
		// The deadline ends the wait: the last attempt got only what was left.
		wait = fmt.Sprintf("%s (the deadline, over %s)", human.Duration(r.Deadline), attemptsOf(r.Attempts, r.Timeout))
	case r.Attempts > 1:
		// Each request waits for every attempt to time out and for the
		// backoff between them: retries multiply what a hang holds.
		wait = fmt.Sprintf("(%d attempts x %s + %s of backoff)", r.Attempts, human.Duration(r.Timeout), human.Duration(r.Backoff))
	}
	waiting, verb := human.NumberOf(r.InFlightDuringHang, "call"), "wait"
	if waiting == "1 call" {
		verb = "waits"
	}
	s := fmt.Sprintf("%s, %s calls/s x %s = %s %s at once", at, human.Number(hang), wait, waiting, verb)
	var b strings.Builder
	switch {
	case !r.PoolKnown:
		fmt.Fprintf(&b, "%s; give %s to compare that with the pool the calls share.", s, usage.Pool)
	case r.PoolExhausted:
		fmt.Fprintf(&b, "%s, %s x the pool of %s: the pool is exhausted %s s into the hang.",
			s, strconv.FormatFloat(r.InFlightDuringHang/float64(r.Pool), 'f', 1, 64), human.Count(int64(r.Pool)),
			strconv.FormatFloat(r.SecondsToExhaustion, 'f', 2, 64))
	default:
		fmt.Fprintf(&b, "%s, within the pool of %s.", s, human.Count(int64(r.Pool)))
	}
	if r.PoolKnown && r.Bulkhead > r.Pool {
		fmt.Fprintf(&b, " Even normal demand needs a bulkhead of %s, more than the pool of %s: the pool itself is too small.",
			human.Count(int64(r.Bulkhead)), human.Count(int64(r.Pool)))
	} else if r.PoolExhausted && r.Bulkhead > 0 {
		fmt.Fprintf(&b, " A bulkhead of %s (normal demand is %s in flight) keeps the rest of the pool serving other work.",
			human.Count(int64(r.Bulkhead)), human.Number(r.InFlightPeak))
	}
	return b.String()
}

// Shared is a hang of one dependency whose calls, split into groups (routes,
// methods), share one pool: when the dependency hangs, every group hangs at
// once, so the calls in flight add up even when each group alone fits.
type Shared struct {
	Pool   int
	Groups int // the groups that share the pool
	// RateKnown: every group's rate is known, so the figures below are.
	RateKnown bool
	// InFlightDuringHang is the sum over the groups of hang rate x
	// HangWait: how many calls wait at once once the hang has lasted as
	// long as the longest wait.
	InFlightDuringHang  float64
	PoolExhausted       bool
	SecondsToExhaustion float64 // when the calls in flight first reach the pool
	// Bulkheads is the sum of the groups' bulkheads; BulkheadsKnown when
	// every group has one.
	Bulkheads      int
	BulkheadsKnown bool
	// FitAlone is how many of the groups a hang of their own would not
	// exhaust the pool with.
	FitAlone int
}

// AnalyzeShared adds up the hangs of groups that share a pool of pool
// calls. t seconds into a hang, group g holds rate_g x min(t, HangWait_g)
// calls (each call waits at most HangWait_g, then gives up), so the pool
// is exhausted at the first t where the sum reaches it; with equal waits
// that is pool / the sum of the rates.
func AnalyzeShared(pool int, groups []Result) Shared {
	s := Shared{Pool: max(pool, 0), Groups: len(groups), RateKnown: len(groups) > 0, BulkheadsKnown: len(groups) > 0}
	type hang struct {
		rate float64
		wait float64
	}
	var hangs []hang
	for _, g := range groups {
		rate := g.hangRate()
		if rate <= 0 {
			s.RateKnown = false
		}
		if g.Bulkhead <= 0 {
			s.BulkheadsKnown = false
		}
		s.Bulkheads += g.Bulkhead
		s.InFlightDuringHang += g.InFlightDuringHang
		if g.InFlightDuringHang <= float64(s.Pool) {
			s.FitAlone++
		}
		hangs = append(hangs, hang{rate, g.HangWait.Seconds()})
	}
	if !s.RateKnown {
		s.InFlightDuringHang = 0
		return s
	}
	if !s.BulkheadsKnown {
		s.Bulkheads = 0
	}
	if s.Pool == 0 || s.InFlightDuringHang <= float64(s.Pool) {
		return s
	}
	s.PoolExhausted = true
	// Walk the waits in order: between two of them the calls in flight
	// grow at the rate of the groups still filling.
	sort.Slice(hangs, func(i, j int) bool { return hangs[i].wait < hangs[j].wait })
	filling := 0.0
	for _, h := range hangs {
		filling += h.rate
	}
	t, held := 0.0, 0.0
	for _, h := range hangs {
		end := held + filling*(h.wait-t)
		if end >= float64(s.Pool) {
			s.SecondsToExhaustion = t + (float64(s.Pool)-held)/filling
			return s
		}
		held, t = end, h.wait
		filling -= h.rate
	}
	return s
}

// Verdict says in a few sentences what a hang costs the shared pool.
func (s Shared) Verdict() string {
	var b strings.Builder
	pool := human.Count(int64(s.Pool))
	if !s.RateKnown {
		fmt.Fprintf(&b, "The %d groups share the pool of %s; give %s (or timestamps) to see what a hang of the dependency costs it.", s.Groups, pool, usage.Rate)
	} else {
		fmt.Fprintf(&b, "When the dependency hangs, the %d groups hang together: %s calls wait at once (each group's rate x what each of its calls waits)",
			s.Groups, human.Number(s.InFlightDuringHang))
		if s.PoolExhausted {
			fmt.Fprintf(&b, ", %s x the pool of %s: the pool is exhausted %s s into the hang",
				strconv.FormatFloat(s.InFlightDuringHang/float64(s.Pool), 'f', 1, 64), pool, strconv.FormatFloat(s.SecondsToExhaustion, 'f', 2, 64))
			if s.FitAlone == s.Groups {
				b.WriteString(", though each group alone fits")
			}
			b.WriteString(".")
		} else {
			fmt.Fprintf(&b, ", within the pool of %s.", pool)
		}
	}
	if s.BulkheadsKnown {
		if s.Bulkheads > s.Pool {
			fmt.Fprintf(&b, " Their bulkheads add up to %s, more than the pool: even normal demand does not fit, so the pool itself is too small (or the groups do not share it).",
				human.Count(int64(s.Bulkheads)))
		} else {
			fmt.Fprintf(&b, " Their bulkheads add up to %s of the pool, leaving %s for everything else: with them a hang fills %s slots and the rest fail fast.",
				human.Count(int64(s.Bulkheads)), human.Count(int64(s.Pool-s.Bulkheads)), human.Count(int64(s.Bulkheads)))
		}
	}
	return b.String()
}
