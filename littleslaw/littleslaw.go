// Package littleslaw applies Little's law (in flight = rate x time) to tell
// what a hang of a dependency costs, whether it exhausts the caller's pool,
// and how large a bulkhead prevents that (DOMAIN.md section 2).
package littleslaw

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
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
	InFlightNormal       float64       // Rate x MeanLatency
	InFlightDuringHang   float64       // hang rate (PeakRate, else Rate) x (Attempts x Timeout + Backoff)
	PoolExhausted        bool
	SecondsToExhaustion  float64 // Pool / hang rate, when PoolExhausted
	InFlightPeak         float64 // peak rate (else Rate) x MeanLatency: the normal demand the bulkhead is sized for
	Bulkhead             int     // Poisson quantile 1-Rejection of (peak rate x mean latency)
	Hystrix              int     // peak rate x p99 + breathing room
}

// InFlight is Little's law: the mean number of calls in flight when calls
// arrive at rate per second and each waits wait.
func InFlight(rate float64, wait time.Duration) float64 {
	return rate * wait.Seconds()
}

// HangWithRetries is Little's law during a hang when every request makes
// attempts attempts that all time out after perTry, with backoff in total
// between them (DOMAIN.md section 2): rate x (attempts x perTry + backoff).
// attempts below 1 count as 1, and then backoff does not count.
func HangWithRetries(rate float64, attempts int, perTry, backoff time.Duration) float64 {
	if attempts <= 1 {
		return InFlight(rate, perTry)
	}
	return rate * (float64(attempts)*perTry.Seconds() + backoff.Seconds())
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
	r.RateKnown = r.Rate > 0
	r.PoolKnown = r.Pool > 0
	rejection := in.Rejection
	if !(rejection > 0 && rejection < 1) {
		rejection = DefaultRejection
	}
	hang := r.hangRate()

	r.InFlightNormal = InFlight(r.Rate, r.MeanLatency)
	r.InFlightDuringHang = HangWithRetries(hang, r.Attempts, r.Timeout, r.Backoff)
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

// Verdict says in one or two sentences what a hang costs.
func (r Result) Verdict() string {
	hang := r.hangRate()
	switch {
	case hang <= 0 && !r.PoolKnown:
		return "Give --rate (or timestamps) and --pool to see what a hang costs."
	case hang <= 0:
		return fmt.Sprintf("Give --rate (or timestamps) to see what a hang costs the pool of %s.", human.Count(int64(r.Pool)))
	case r.Timeout <= 0:
		return "Give a timeout to see what a hang costs."
	}
	at := "During a hang"
	if r.PeakRate > 0 {
		at = "During a hang at the peak rate"
	}
	wait := human.Duration(r.Timeout)
	if r.Attempts > 1 {
		// Each request waits for every attempt to time out and for the
		// backoff between them: retries multiply what a hang holds.
		wait = fmt.Sprintf("(%d attempts x %s + %s of backoff)", r.Attempts, human.Duration(r.Timeout), human.Duration(r.Backoff))
	}
	s := fmt.Sprintf("%s, %s calls/s x %s = %s calls wait at once",
		at, human.Number(hang), wait, human.Number(r.InFlightDuringHang))
	var b strings.Builder
	switch {
	case !r.PoolKnown:
		b.WriteString(s + "; give --pool to compare that with the pool the calls share.")
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
