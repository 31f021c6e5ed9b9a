package promsource

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Kinds of histogram.
const (
	Classic = "classic" // NAME_bucket{le} cumulative counters
	Native  = "native"  // exponential buckets in one sample
)

// ErrEmptyWindow is returned (wrapped) when a histogram holds no call.
var ErrEmptyWindow = errors.New("no calls in the window")

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

// Histogram is the bucketed latency of one group over one window, as
// Prometheus's increase() gave it: counts may be fractional (increase()
// extrapolates to the window's edges).
type Histogram struct {
	Kind    string
	Buckets []Bucket // by Hi, repaired; counts >= 0
	Count   float64  // calls, the sum of the bucket counts
	// Negative counts the calls of a native histogram's negative buckets:
	// a latency below zero is a bug of the exporter; they are left out.
	Negative float64
	// Repairs says, for people, what had to be repaired before the buckets
	// could be read (non-monotonic cumulative counts, duplicate bounds).
	Repairs []string
}

// LE is one classic bucket series as a query returns it: the upper bound
// (the le label, in the metric's unit) and the cumulative count.
type LE struct {
	Upper      float64
	Cumulative float64
}

// FromClassic builds a histogram from classic cumulative buckets, in the
// metric's unit (unit is what one of its units lasts). It repairs the buckets the
// way PromQL's histogram_quantile does: buckets with the same bound are
// added up, and a cumulative count below the one of a lower bucket is raised
// to it (increase() extrapolates each bucket series on its own, so the sums
// can come out slightly non-monotonic). Without a +Inf bucket the total is
// unknown and FromClassic fails, as histogram_quantile returns NaN.
func FromClassic(les []LE, unit time.Duration) (*Histogram, error) {
	h := &Histogram{Kind: Classic}
	s := slices.Clone(les)
	slices.SortStableFunc(s, func(a, b LE) int {
		switch {
		case a.Upper < b.Upper:
			return -1
		case a.Upper > b.Upper:
			return 1
		}
		return 0
	})
	// Coalesce equal bounds (le="1" and le="1.0" after a sum by le).
	var merged []LE
	dups := 0
	for _, b := range s {
		if math.IsNaN(b.Upper) || math.IsNaN(b.Cumulative) {
			continue
		}
		if n := len(merged); n > 0 && merged[n-1].Upper == b.Upper {
			merged[n-1].Cumulative += b.Cumulative
			dups++
			continue
		}
		merged = append(merged, b)
	}
	if dups > 0 {
		h.Repairs = append(h.Repairs, fmt.Sprintf("%d bucket series had the same le bound as another (such as le=\"1\" and le=\"1.0\"); their counts were added up, as histogram_quantile does", dups))
	}
	if len(merged) == 0 {
		return nil, fmt.Errorf("%w: no bucket series", ErrEmptyWindow)
	}
	if !math.IsInf(merged[len(merged)-1].Upper, 1) {
		return nil, fmt.Errorf("the histogram has no le=\"+Inf\" bucket, so its total is unknown (histogram_quantile returns NaN for it); the largest bound is %v", merged[len(merged)-1].Upper)
	}
	// PromQL's ensureMonotonic: a cumulative count never decreases.
	raised, by := 0, 0.0
	top := math.Inf(-1)
	for i := range merged {
		if merged[i].Cumulative < top {
			raised++
			by = max(by, top-merged[i].Cumulative)
			merged[i].Cumulative = top
		}
		top = merged[i].Cumulative
	}
	if raised > 0 {
		h.Repairs = append(h.Repairs, fmt.Sprintf("%d cumulative bucket counts were below the count of a lower bucket (by up to %s calls), which cannot be; they were raised to it, as histogram_quantile does. increase() extrapolates each bucket series on its own, so small differences are normal; large ones point at buckets that changed over the window", raised, human.Number(by)))
	}
	u := unit.Seconds()
	prevUpper, prevCum := 0.0, 0.0
	for i, b := range merged {
		lo := prevUpper
		if i == 0 {
			lo = math.Min(0, b.Upper*u)
		}
		c := math.Max(b.Cumulative-prevCum, 0)
		h.Buckets = append(h.Buckets, Bucket{Lo: lo, Hi: b.Upper * u, Count: c, Cumulative: b.Cumulative})
		prevUpper, prevCum = b.Upper*u, b.Cumulative
	}
	h.Count = merged[len(merged)-1].Cumulative
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: every bucket's increase is 0", ErrEmptyWindow)
	}
	return h, nil
}

// FromNative builds a histogram from a native histogram sample, in the
// metric's unit. Positive buckets are (Lo, Hi] or [Lo, Hi) by their
// boundary rule; the zero bucket, which straddles 0, is read as (0, Hi];
// negative buckets are counted in Negative and left out. Negative counts
// (increase() across a reset it could not see) are clamped to 0 and reported.
func FromNative(s *model.SampleHistogram, unit time.Duration) (*Histogram, error) {
	h := &Histogram{Kind: Native}
	if s == nil {
		return nil, fmt.Errorf("%w: no histogram", ErrEmptyWindow)
	}
	u := unit.Seconds()
	clamped := 0
	for _, b := range s.Buckets {
		if b == nil {
			continue
		}
		lo, hi, c := float64(b.Lower)*u, float64(b.Upper)*u, float64(b.Count)
		if math.IsNaN(c) || c == 0 {
			continue
		}
		if c < 0 {
			clamped++
			continue
		}
		switch {
		case hi <= 0:
			h.Negative += c
			continue
		case lo < 0:
			lo = 0 // the zero bucket
		}
		h.Buckets = append(h.Buckets, Bucket{Lo: lo, Hi: hi, Count: c})
		h.Count += c
	}
	slices.SortFunc(h.Buckets, func(a, b Bucket) int {
		switch {
		case a.Hi < b.Hi:
			return -1
		case a.Hi > b.Hi:
			return 1
		}
		return 0
	})
	cum := 0.0
	for i := range h.Buckets {
		cum += h.Buckets[i].Count
		h.Buckets[i].Cumulative = cum
	}
	if clamped > 0 {
		h.Repairs = append(h.Repairs, fmt.Sprintf("%d buckets had a negative increase (a counter reset increase() could not see); they were taken as 0", clamped))
	}
	if h.Negative > 0 {
		h.Repairs = append(h.Repairs, fmt.Sprintf("%s calls lie in negative buckets: a latency below zero is a bug of the exporter; they are left out", human.Number(h.Negative)))
	}
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: the histogram's increase is empty", ErrEmptyWindow)
	}
	return h, nil
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
func (h *Histogram) Locate(q float64) Position {
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

// LargestFinite returns the largest finite bucket bound; 0 without one.
func (h *Histogram) LargestFinite() float64 {
	for i := len(h.Buckets) - 1; i >= 0; i-- {
		if !math.IsInf(h.Buckets[i].Hi, 1) {
			return h.Buckets[i].Hi
		}
	}
	return 0
}

// Bounds returns the finite upper bounds, ascending.
func (h *Histogram) Bounds() []float64 {
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
func (h *Histogram) Latency() *histogram.Latency {
	l := histogram.New()
	largest := h.LargestFinite()
	var bounds []time.Duration
	for _, b := range h.Buckets {
		if !math.IsInf(b.Hi, 1) {
			bounds = append(bounds, seconds(max(b.Hi, 0)))
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
		if math.IsInf(b.Hi, 1) {
			// Just above the largest bound: a timeout at that bound cuts
			// these calls off; quantiles among them answer the bound.
			l.RecordAboveN(seconds(largest), n)
			continue
		}
		l.RecordN(seconds(max(b.Hi, 0)), n)
	}
	return l
}

// seconds converts seconds to a duration, rounded to the nanosecond.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
