package recommend

import (
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// DefaultHedgeAt is the quantile the hedge delay is taken at by default:
// p95 (docs/method.md#hedging, after Dean and Barroso's "The Tail at
// Scale").
const DefaultHedgeAt = 0.95

// Hedge is the hedging of an idempotent call: when no answer has come
// Delay after the last request was sent, another is sent without
// cancelling the ones in flight, up to Attempts requests in all; the first
// answer wins and the others are cancelled (gRPC's hedgingPolicy, Envoy's
// hedge_on_per_try_timeout).
//
// The figures assume that the requests' latencies are independent draws
// from the measured distribution: a slow server or a queue that slows every
// request at once makes hedging worth less than they say.
type Hedge struct {
	Quantile float64       // the quantile Delay was taken at
	Delay    time.Duration // rounded up to the millisecond
	Attempts int           // the most requests of one call, the first included
	// ExtraLoad is the expected number of requests per call beyond the
	// first: 0.05 is 5 % more requests to the dependency.
	ExtraLoad float64
	// P99 and P999 are the end-to-end latency with hedging; Without the
	// measured ones.
	P99, P999               time.Duration
	P99Without, P999Without time.Duration
}

// newHedge computes the hedge of attempts requests at the delay of
// quantile q: each request i (from 0) is sent at i x delay unless an
// answer came before, and the call's latency L is the smallest of i x
// delay + X_i over the requests, the X_i independent with the measured
// distribution. So P(L > t) = prod_i P(X > t - i x delay), and request i
// is sent when every earlier one is still out at i x delay: the expected
// extra requests are sum_{i>=1} prod_{j<i} P(X > (i-j) x delay).
func newHedge(h *histogram.Latency, q float64, attempts int) *Hedge {
	attempts = min(attempts, MaxHedgeAttempts)
	delay := ceilMillisecond(h.Quantile(q))
	hd := &Hedge{Quantile: q, Delay: delay, Attempts: attempts,
		P99Without: h.Quantile(0.99), P999Without: h.Quantile(0.999)}
	// FractionAbove is an upper bound of P(X > t) (a bucket that straddles
	// t counts as above it), so the hedged quantiles are upper bounds too.
	above := h.FractionAbove
	survival := func(t time.Duration) float64 { // P(L > t)
		p := 1.0
		for i := range attempts {
			p *= above(t - time.Duration(i)*delay)
		}
		return p
	}
	for i := 1; i < attempts; i++ {
		p := 1.0
		for j := range i {
			p *= above(time.Duration(i-j) * delay)
		}
		hd.ExtraLoad += p
	}
	hd.P99 = hedgedQuantile(survival, 0.99, h.Max())
	hd.P999 = hedgedQuantile(survival, 0.999, h.Max())
	return hd
}

// MaxHedgeAttempts is the most requests one hedged call sends: gRPC's limit
// for hedgingPolicy.maxAttempts (more are treated as 5), and more than any
// tail needs.
const MaxHedgeAttempts = 5

// hedgedQuantile returns the smallest whole microsecond t with P(L > t) <=
// 1 - q, by bisection: P(L > t) only falls as t grows, and L never exceeds
// the largest measured latency.
func hedgedQuantile(survival func(time.Duration) float64, q float64, largest time.Duration) time.Duration {
	lo, hi := time.Duration(0), largest
	if survival(lo) <= 1-q {
		return 0
	}
	for hi-lo > time.Microsecond {
		mid := (lo + hi) / 2
		if survival(mid) <= 1-q {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi.Round(time.Microsecond)
}

// ceilMillisecond rounds d up to a whole millisecond, at least 1ms: the
// resolution every target writes a hedging delay in.
func ceilMillisecond(d time.Duration) time.Duration {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(ms, 1) * time.Millisecond
}

// reason explains the hedge in one step.
func (hd *Hedge) reason() string {
	d := human.Duration
	more := "another"
	if hd.Attempts > 2 {
		more = fmt.Sprintf("another (up to %d in all)", hd.Attempts)
	}
	return fmt.Sprintf("when no answer has come %s (%s) after a request was sent, %s is sent without cancelling it; "+
		"with requests as independent draws from the measured latency, p99 falls from %s to %s and p99.9 from %s to %s, for %s more requests",
		d(hd.Delay), human.Quantile(hd.Quantile), more, d(hd.P99Without), d(hd.P99), d(hd.P999Without), d(hd.P999), human.Percent(hd.ExtraLoad))
}
