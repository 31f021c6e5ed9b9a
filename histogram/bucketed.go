package histogram

import (
	"math"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// Bucket is one bucket of a histogram in seconds: the calls that took more
// than Lo and at most Hi. The last bucket of a classic histogram has Hi +Inf.
type Bucket struct {
	Lo, Hi float64
	Count  float64 // calls in this bucket alone
	// Cumulative is the calls in this bucket and all below it, as PromQL
	// sees them: Locate interpolates on it so that its estimate is
	// histogram_quantile's to the last bit.
	Cumulative float64
}

// Bucketed is the latency of one group over one window counted in
// buckets, as a source that holds no calls gives it: Prometheus's
// increase() (counts may be fractional: it extrapolates to the window's
// edges) and OTLP metrics. promsource fills it.
type Bucketed struct {
	Kind    string
	Buckets []Bucket // by Hi, repaired; counts >= 0
	Count   float64  // calls, the sum of the bucket counts
	// Negative counts the calls in negative buckets (native) or at or below
	// a negative bound (classic): a latency below zero is a bug of the
	// exporter; they are left out.
	Negative float64
	// Repairs say what had to be repaired before the buckets could be read
	// (non-monotonic cumulative counts, duplicate bounds...): findings of
	// code TT-BUCKET-REPAIR, their repair field saying which.
	Repairs []finding.Finding
	// Divergence says why Locate's estimate is not what Prometheus's
	// histogram_quantile answers for the same data, when a repair it does
	// not make (a NaN count, negative buckets left out) may change it; ""
	// when Locate reads the buckets as PromQL does.
	Divergence string
}

// Position is where a quantile lies in a histogram.
type Position struct {
	Quantile float64
	Bucket   Bucket // the bucket holding the quantile, (Lo, Hi]
	// Estimate is histogram_quantile's answer: linear interpolation within
	// Bucket (for a classic histogram exactly as PromQL computes it). In the
	// +Inf bucket PromQL returns the largest finite bound, which Estimate
	// holds too, with InInf set: it is no measurement.
	Estimate float64
	InInf    bool // the quantile lies beyond the largest finite bound
}

// Locate finds the q-quantile the way PromQL's histogram_quantile does: the
// first bucket whose cumulative count reaches rank q x Count, and a linear
// interpolation inside it (from 0 in the first bucket when its bound is
// positive).
func (h *Bucketed) Locate(q float64) Position {
	p := Position{Quantile: q}
	if h == nil || len(h.Buckets) == 0 || !(h.Count > 0) {
		p.Estimate = math.NaN()
		return p
	}
	rank := q * h.Count
	i := 0
	for ; i < len(h.Buckets)-1; i++ {
		if h.Buckets[i].Cumulative >= rank {
			break
		}
	}
	b := h.Buckets[i]
	cum, count := 0.0, b.Cumulative
	if i > 0 {
		cum = h.Buckets[i-1].Cumulative
		count -= cum
	}
	p.Bucket = b
	if math.IsInf(b.Hi, 1) {
		p.InInf = true
		p.Estimate = b.Lo
		if i == 0 {
			p.Estimate = math.NaN()
		}
		return p
	}
	if i == 0 && b.Hi <= 0 {
		p.Estimate = b.Hi
		return p
	}
	p.Estimate = b.Lo + (b.Hi-b.Lo)*((rank-cum)/count)
	return p
}

// Upper is the conservative reading of the q-quantile: the upper bound of
// the bucket Locate finds on the unrounded counts, or, beyond the largest
// finite bound, that bound as a lower bound (lower set). Latency holds whole
// calls, and rounding the counts of fractional increases can move a
// quantile of it to the bucket below (998.6 calls rounded to 999 reach the
// rank 999 that 999.4 of 1000.4 needed): the quantile the timeout builds on
// comes from here. A bucket bounded beyond MaxBound is read as +Inf.
func (h *Bucketed) Upper(q float64) (d time.Duration, lower bool) {
	p := h.Locate(q)
	if p.InInf || p.Bucket.Hi > MaxBound {
		return Seconds(max(h.LargestUsable(), 0)), true
	}
	return Seconds(max(p.Bucket.Hi, 0)), false
}

// LargestFinite returns the largest finite bucket bound; 0 without one.
func (h *Bucketed) LargestFinite() float64 {
	for i := len(h.Buckets) - 1; i >= 0; i-- {
		if !math.IsInf(h.Buckets[i].Hi, 1) {
			return h.Buckets[i].Hi
		}
	}
	return 0
}

// Bounds returns the finite upper bounds, ascending.
func (h *Bucketed) Bounds() []float64 {
	var out []float64
	for _, b := range h.Buckets {
		if !math.IsInf(b.Hi, 1) {
			out = append(out, b.Hi)
		}
	}
	return out
}

// Latency records the histogram into an HDR latency histogram, each bucket's
// calls at the bucket's upper bound: every quantile then comes out as the
// upper bound of the bucket holding it, the conservative reading of bucketed
// data. The calls of the +Inf bucket took longer than the largest finite
// bound and nobody knows by how much: they are recorded as right-censored
// just above that bound ("took longer"), so a quantile among them is
// reported as a lower bound, not as measured. Fractional counts are rounded
// on the cumulative counts, so the total is Count rounded.
func (h *Bucketed) Latency() *Latency {
	l := New()
	largest := h.LargestUsable()
	var bounds []time.Duration
	for _, b := range h.Buckets {
		if b.Hi <= MaxBound {
			bounds = append(bounds, Seconds(max(b.Hi, 0)))
		}
	}
	l.SnapTo(bounds)
	recorded := int64(0)
	for _, b := range h.Buckets {
		n := int64(math.Round(b.Cumulative)) - recorded
		if n <= 0 {
			continue
		}
		recorded += n
		if b.Hi > MaxBound {
			// Just above the largest bound a latency can have (the +Inf
			// bucket, or one beyond 24h): a timeout at that bound cuts
			// these calls off; quantiles among them answer the bound.
			l.RecordAboveN(Seconds(largest), n)
			continue
		}
		l.RecordN(Seconds(max(b.Hi, 0)), n)
	}
	return l
}

// MaxBound is the largest bucket bound, in seconds, that a timeout can be
// built on: Highest, 24 hours. Calls in a bucket bounded above
// it (a _seconds histogram fed milliseconds or nanoseconds has such bounds)
// count, as those of +Inf do, as taking longer than the largest bound
// within it.
var MaxBound = Highest.Seconds()

// LargestUsable returns the largest finite bucket bound within MaxBound;
// 0 without one.
func (h *Bucketed) LargestUsable() float64 {
	for i := len(h.Buckets) - 1; i >= 0; i-- {
		if h.Buckets[i].Hi <= MaxBound {
			return h.Buckets[i].Hi
		}
	}
	return 0
}

// Seconds converts seconds, as the buckets hold them, to a duration,
// rounded to the nanosecond. Beyond what a time.Duration holds it is the
// largest one (bounds that large are beyond MaxBound, and never built on).
func Seconds(s float64) time.Duration {
	if s >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

// Above returns the share of the calls that took longer than seconds, as
// far as the buckets tell: at least the calls of the buckets wholly above
// it, at most those of the buckets that reach above it; the two are equal
// (exact true) when seconds is a bucket bound, to a part in a million. A
// histogram without calls gives 0, 1.
func (h *Bucketed) Above(seconds float64) (lo, hi float64, exact bool) {
	if h == nil || !(h.Count > 0) {
		return 0, 1, false
	}
	exact = seconds <= 0
	var surely, maybe float64
	for _, b := range h.Buckets {
		if math.Abs(b.Hi-seconds) <= 1e-6*math.Max(seconds, 1e-9) || b.Lo >= seconds && math.Abs(b.Lo-seconds) <= 1e-6*math.Max(seconds, 1e-9) {
			exact = true
		}
		switch {
		case b.Lo >= seconds*(1-1e-6):
			surely += b.Count
			maybe += b.Count
		case b.Hi > seconds*(1+1e-6):
			maybe += b.Count
		}
	}
	return surely / h.Count, maybe / h.Count, exact
}
