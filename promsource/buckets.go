package promsource

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
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
// unknown and FromClassic fails, as histogram_quantile returns NaN; with only
// the +Inf bucket no latency is known and it fails with ErrOnlyInf.
//
// What PromQL does not repair is repaired conservatively and noted, with
// Divergence saying that histogram_quantile reads the data otherwise: a
// NaN bucket count is taken as the count of the bucket below it (its calls
// move up, never down); a negative count as 0; the calls at or below a
// negative bound, which no latency can have, are left out (Negative), as
// for native histograms.
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
	dups, nanLE := 0, 0
	for _, b := range s {
		if math.IsNaN(b.Upper) {
			nanLE++
			continue
		}
		if n := len(merged); n > 0 && merged[n-1].Upper == b.Upper {
			merged[n-1].Cumulative += b.Cumulative
			dups++
			continue
		}
		merged = append(merged, b)
	}
	var diverges []string
	if nanLE > 0 {
		h.repair("nan-le", finding.Fields{"buckets": nanLE}, "%d bucket series had le=\"NaN\", which bounds nothing; they were left out", nanLE)
		diverges = append(diverges, "buckets with le=\"NaN\" were left out")
	}
	if dups > 0 {
		h.repair("duplicate-le", finding.Fields{"buckets": dups}, "%d bucket series had the same le bound as another (such as le=\"1\" and le=\"1.0\"); their counts were added up, as histogram_quantile does", dups)
	}
	if len(merged) == 0 {
		return nil, fmt.Errorf("%w: no bucket series", ErrEmptyWindow)
	}
	last := merged[len(merged)-1]
	switch {
	case !math.IsInf(last.Upper, 1):
		return nil, fmt.Errorf("the histogram has no le=\"+Inf\" bucket, so its total is unknown (histogram_quantile returns NaN for it); the largest bound is %v", last.Upper)
	case math.IsNaN(last.Cumulative):
		return nil, errors.New("the le=\"+Inf\" bucket's count is NaN, so the total is unknown: the exporter or a recording rule wrote NaN into a counter")
	case last.Cumulative < 0:
		return nil, fmt.Errorf("the le=\"+Inf\" bucket's count is negative (%s), which no count of calls can be: the series is not a counter's increase", human.Number(last.Cumulative))
	case len(merged) == 1:
		if !(last.Cumulative > 0) {
			return nil, fmt.Errorf("%w: every bucket's increase is 0", ErrEmptyWindow)
		}
		return nil, &OnlyInfError{Calls: last.Cumulative}
	}
	// Counts PromQL leaves as they are: NaN takes the count below it (0 for
	// the first bucket), a negative count 0.
	nanCount, negCount := 0, 0
	for i := range merged {
		below := 0.0
		if i > 0 {
			below = merged[i-1].Cumulative
		}
		switch c := merged[i].Cumulative; {
		case math.IsNaN(c):
			nanCount++
			merged[i].Cumulative = below
		case c < 0:
			negCount++
			merged[i].Cumulative = 0
		}
	}
	if nanCount > 0 {
		h.repair("nan-count", finding.Fields{"buckets": nanCount}, "%d bucket counts were NaN (the exporter or a recording rule wrote NaN into a counter); each was taken as the count of the bucket below it, which moves its calls to higher buckets, never lower", nanCount)
		diverges = append(diverges, "histogram_quantile keeps NaN bucket counts, which tunetimeout took as the count below")
	}
	if negCount > 0 {
		h.repair("negative-count", finding.Fields{"buckets": negCount}, "%d cumulative bucket counts were negative, which no count of calls can be; they were taken as 0", negCount)
		diverges = append(diverges, "histogram_quantile keeps negative bucket counts, which tunetimeout took as 0")
	}
	// PromQL's ensureMonotonic: a cumulative count never decreases. Since
	// Prometheus 2.49 PromQL also flattens increases smaller than 1e-12 of
	// a count (ensureMonotonicAndIgnoreSmallDeltas, float noise of sums);
	// this does not, which changes an answer only when q x N falls inside
	// such a sliver.
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
		h.repair("non-monotonic", finding.Fields{"buckets": raised, "by_calls": by}, "%d cumulative bucket counts were below the count of a lower bucket (by up to %s calls), which cannot be; they were raised to it, as histogram_quantile does. increase() extrapolates each bucket series on its own, so small differences are normal; large ones point at buckets that changed over the window", raised, human.Number(by))
	}
	// Negative bounds: an exporter bug. The calls at or below the largest
	// one took less than no time; they are left out, the rest start at 0.
	neg := 0
	for neg < len(merged) && merged[neg].Upper < 0 {
		neg++
	}
	if neg > 0 {
		h.Negative = merged[neg-1].Cumulative
		bounds := make([]string, 0, min(neg, 3))
		for _, b := range merged[:min(neg, 3)] {
			bounds = append(bounds, fmt.Sprintf("le=%q", strconv.FormatFloat(b.Upper, 'g', -1, 64)))
		}
		if neg > 3 {
			bounds = append(bounds, "...")
		}
		h.repair("negative-le", finding.Fields{"bounds": neg, "calls": h.Negative}, "%d bucket bounds are negative (%s): a latency below zero is a bug of the exporter; the %s calls at or below them are left out, and the lowest bucket kept starts at 0",
			neg, strings.Join(bounds, " "), human.Number(h.Negative))
		diverges = append(diverges, "histogram_quantile reads the negative buckets, which tunetimeout left out")
		for i := range merged[neg:] {
			merged[neg+i].Cumulative -= h.Negative
		}
		merged = merged[neg:]
		if len(merged) == 1 {
			if !(merged[0].Cumulative > 0) {
				return nil, fmt.Errorf("%w: every call lies at or below a negative bucket bound", ErrEmptyWindow)
			}
			return nil, &OnlyInfError{Calls: merged[0].Cumulative}
		}
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
	h.Divergence = strings.Join(diverges, "; ")
	h.Count = merged[len(merged)-1].Cumulative
	h.noteBeyond(unit)
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: every bucket's increase is 0", ErrEmptyWindow)
	}
	return h, nil
}

// repair notes a repair of the buckets (Repairs).
func (h *Histogram) repair(kind string, fields finding.Fields, format string, args ...any) {
	fields["repair"] = kind
	h.Repairs = append(h.Repairs, finding.Newf(finding.BucketRepair, fields, format, args...))
}

// ErrOnlyInf is returned (wrapped in an *OnlyInfError) for a histogram
// whose only bucket is le="+Inf": it counts calls but says nothing of how
// long any took, and histogram_quantile returns NaN for it.
var ErrOnlyInf = errors.New(`the histogram has only the le="+Inf" bucket`)

// OnlyInfError is a histogram with only the +Inf bucket. Advice, when set,
// says which bounds to add (Fetch sets it from the mean latency).
type OnlyInfError struct {
	Calls  float64
	Advice string
}

func (e *OnlyInfError) Error() string {
	msg := fmt.Sprintf("%v: it counts %s calls but says nothing of how long any took (histogram_quantile returns NaN for it), so no timeout can be read from it", ErrOnlyInf, human.Number(e.Calls))
	if e.Advice != "" {
		msg += "; " + e.Advice
	}
	return msg
}

func (e *OnlyInfError) Unwrap() error { return ErrOnlyInf }

// BoundsAdvice proposes classic bucket bounds, as le labels in the metric's
// unit, for a histogram that has none: a 1-2.5-5 series from a quarter of
// the mean latency (seconds; from _sum / _count) to 25 times it, where
// timeouts are chosen; without a mean, client_golang's default buckets.
func BoundsAdvice(meanSeconds float64, unit time.Duration) string {
	var les []string
	u := unit.Seconds()
	if meanSeconds > 0 && !math.IsInf(meanSeconds, 0) {
		// The largest 1-2.5-5 value at most a quarter of the mean.
		lo := meanSeconds / 4
		dec := math.Pow(10, math.Floor(math.Log10(lo)))
		mant := 1.0
		for _, m := range []float64{5, 2.5, 1} {
			if m*dec <= lo*(1+1e-9) {
				mant = m
				break
			}
		}
		v := mant * dec
		for len(les) < 8 && v <= meanSeconds*25*(1+1e-9) {
			les = append(les, strconv.Quote(strconv.FormatFloat(v/u, 'g', 4, 64)))
			switch mant {
			case 1:
				mant = 2.5
			case 2.5:
				mant = 5
			default:
				mant, dec = 1, dec*10
			}
			v = mant * dec
		}
		return fmt.Sprintf("the mean latency from _sum / _count is %s: give the histogram bucket bounds around it, such as le=%s", human.Seconds(meanSeconds), strings.Join(les, ", "))
	}
	for _, v := range []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10} {
		les = append(les, strconv.Quote(strconv.FormatFloat(v/u, 'g', 4, 64)))
	}
	return "give the histogram bucket bounds, such as client_golang's default le=" + strings.Join(les, ", ")
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
	clamped, nans := 0, 0
	raw := 0.0 // what the buckets hold, as they are
	for _, b := range s.Buckets {
		if b == nil {
			continue
		}
		lo, hi, c := float64(b.Lower)*u, float64(b.Upper)*u, float64(b.Count)
		if math.IsNaN(c) {
			nans++
			continue
		}
		raw += c
		if c == 0 {
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
	// Calls the count holds and the buckets do not: NaN observations
	// (counted, in no bucket, and they make the sum NaN, which is how PromQL
	// tells them) or buckets whose count is NaN. Their latency is unknown;
	// they count as taking longer than the largest bound, where a timeout
	// would cut them off, never as fast.
	var diverges []string
	total := float64(s.Count)
	if (nans > 0 || math.IsNaN(float64(s.Sum))) && total-raw > 1e-9*max(total, 1) && !math.IsInf(total, 0) {
		short := total - raw
		largest := 0.0
		if n := len(h.Buckets); n > 0 {
			largest = h.Buckets[n-1].Hi
		}
		h.Buckets = append(h.Buckets, Bucket{Lo: largest, Hi: math.Inf(1), Count: short})
		h.Count += short
		h.repair("count-beyond-buckets", finding.Fields{"calls": short}, "the histogram counts %s calls more than its buckets hold (NaN observations, or buckets with a NaN count): how long they took is unknown, so they count as taking longer than the largest bound", human.Number(short))
		diverges = append(diverges, "histogram_quantile ranks NaN observations otherwise")
	}
	cum := 0.0
	for i := range h.Buckets {
		cum += h.Buckets[i].Count
		h.Buckets[i].Cumulative = cum
	}
	if clamped > 0 {
		h.repair("negative-increase", finding.Fields{"buckets": clamped}, "%d buckets had a negative increase (a counter reset increase() could not see); they were taken as 0", clamped)
		diverges = append(diverges, "histogram_quantile reads negative bucket counts, which tunetimeout took as 0")
	}
	if nans > 0 {
		h.repair("nan-count", finding.Fields{"buckets": nans}, "%d buckets had a NaN count (the exporter wrote NaN); they were left out, and the calls the count holds beyond the other buckets count as slow", nans)
		diverges = append(diverges, "histogram_quantile reads NaN bucket counts, which tunetimeout left out")
	}
	if h.Negative > 0 {
		h.repair("negative-buckets", finding.Fields{"calls": h.Negative}, "%s calls lie in negative buckets: a latency below zero is a bug of the exporter; they are left out", human.Number(h.Negative))
		diverges = append(diverges, "histogram_quantile reads the negative buckets, which tunetimeout left out")
	}
	h.Divergence = strings.Join(diverges, "; ")
	h.noteBeyond(unit)
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

// Upper is the conservative reading of the q-quantile: the upper bound of
// the bucket Locate finds on the unrounded counts, or, beyond the largest
// finite bound, that bound as a lower bound (lower set). Latency holds whole
// calls, and rounding the counts of fractional increases can move a
// quantile of it to the bucket below (998.6 calls rounded to 999 reach the
// rank 999 that 999.4 of 1000.4 needed): the quantile the timeout builds on
// comes from here. A bucket bounded beyond MaxBound is read as +Inf.
func (h *Histogram) Upper(q float64) (d time.Duration, lower bool) {
	p := h.Locate(q)
	if p.InInf || p.Bucket.Hi > MaxBound {
		return Seconds(max(h.LargestUsable(), 0)), true
	}
	return Seconds(max(p.Bucket.Hi, 0)), false
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
// built on: histogram.Highest, 24 hours. Calls in a bucket bounded above
// it (a _seconds histogram fed milliseconds or nanoseconds has such bounds)
// count, as those of +Inf do, as taking longer than the largest bound
// within it.
var MaxBound = histogram.Highest.Seconds()

// LargestUsable returns the largest finite bucket bound within MaxBound;
// 0 without one.
func (h *Histogram) LargestUsable() float64 {
	for i := len(h.Buckets) - 1; i >= 0; i-- {
		if h.Buckets[i].Hi <= MaxBound {
			return h.Buckets[i].Hi
		}
	}
	return 0
}

// noteBeyond adds a repair note for bucket bounds beyond MaxBound.
func (h *Histogram) noteBeyond(unit time.Duration) {
	n, first := 0, 0.0
	for _, b := range h.Buckets {
		if b.Hi > MaxBound && !math.IsInf(b.Hi, 1) {
			if n == 0 {
				first = b.Hi
			}
			n++
		}
	}
	if n == 0 {
		return
	}
	h.repair("beyond-24h", finding.Fields{"bounds": n, "first_bound_seconds": first, "largest_usable_seconds": h.LargestUsable()},
		"%d bucket bounds lie beyond 24h, the longest latency tunetimeout reads (the first %s, le=%q in the metric's unit); their calls count as taking longer than %s, the largest bound within it. Bounds that large suggest a unit mix-up (milliseconds or nanoseconds observed into a _seconds histogram)",
		n, human.Seconds(first), strconv.FormatFloat(first/unit.Seconds(), 'g', -1, 64), human.Seconds(h.LargestUsable()))
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
func (h *Histogram) Above(seconds float64) (lo, hi float64, exact bool) {
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
