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
func FromClassic(les []LE, unit time.Duration) (*histogram.Bucketed, error) {
	h := &histogram.Bucketed{Kind: Classic}
	merged, diverges := mergeLE(h, les)
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
	diverges = append(diverges, repairCounts(h, merged)...)
	merged, diverge, err := dropNegativeLE(h, merged)
	if err != nil {
		return nil, err
	}
	if diverge != "" {
		diverges = append(diverges, diverge)
	}
	u := unit.Seconds()
	prevUpper, prevCum := 0.0, 0.0
	for i, b := range merged {
		lo := prevUpper
		if i == 0 {
			lo = math.Min(0, b.Upper*u)
		}
		c := math.Max(b.Cumulative-prevCum, 0)
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: lo, Hi: b.Upper * u, Count: c, Cumulative: b.Cumulative})
		prevUpper, prevCum = b.Upper*u, b.Cumulative
	}
	h.Divergence = strings.Join(diverges, "; ")
	h.Count = merged[len(merged)-1].Cumulative
	noteBeyond(h, unit)
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: every bucket's increase is 0", ErrEmptyWindow)
	}
	return h, nil
}

// mergeLE sorts les by bound, leaves out the NaN bounds and coalesces
// equal bounds (le="1" and le="1.0" after a sum by le), noting both on h;
// diverges says where histogram_quantile reads them otherwise.
func mergeLE(h *histogram.Bucketed, les []LE) (merged []LE, diverges []string) {
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
	if nanLE > 0 {
		repair(h, "nan-le", finding.Fields{"buckets": nanLE}, "%d bucket series had le=\"NaN\", which bounds nothing; they were left out", nanLE)
		diverges = append(diverges, "buckets with le=\"NaN\" were left out")
	}
	if dups > 0 {
		repair(h, "duplicate-le", finding.Fields{"buckets": dups}, "%d bucket series had the same le bound as another (such as le=\"1\" and le=\"1.0\"); their counts were added up, as histogram_quantile does", dups)
	}
	return merged, diverges
}

// repairCounts repairs the cumulative counts of merged in place, noting
// it on h: NaN and negative counts, which PromQL leaves as they are (the
// divergences returned), and counts below a lower bucket's, as PromQL
// does.
func repairCounts(h *histogram.Bucketed, merged []LE) (diverges []string) {
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
		repair(h, "nan-count", finding.Fields{"buckets": nanCount}, "%d bucket counts were NaN (the exporter or a recording rule wrote NaN into a counter); each was taken as the count of the bucket below it, which moves its calls to higher buckets, never lower", nanCount)
		diverges = append(diverges, "histogram_quantile keeps NaN bucket counts, which tunetimeout took as the count below")
	}
	if negCount > 0 {
		repair(h, "negative-count", finding.Fields{"buckets": negCount}, "%d cumulative bucket counts were negative, which no count of calls can be; they were taken as 0", negCount)
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
		repair(h, "non-monotonic", finding.Fields{"buckets": raised, "by_calls": by}, "%d cumulative bucket counts were below the count of a lower bucket (by up to %s calls), which cannot be; they were raised to it, as histogram_quantile does. increase() extrapolates each bucket series on its own, so small differences are normal; large ones point at buckets that changed over the window", raised, human.Number(by))
	}
	return diverges
}

// dropNegativeLE leaves out the buckets of negative bounds, an exporter
// bug: the calls at or below the largest one took less than no time
// (h.Negative); the rest start at 0. diverge says so when there are any.
func dropNegativeLE(h *histogram.Bucketed, merged []LE) (kept []LE, diverge string, err error) {
	neg := 0
	for neg < len(merged) && merged[neg].Upper < 0 {
		neg++
	}
	if neg == 0 {
		return merged, "", nil
	}
	h.Negative = merged[neg-1].Cumulative
	bounds := make([]string, 0, min(neg, 3))
	for _, b := range merged[:min(neg, 3)] {
		bounds = append(bounds, fmt.Sprintf("le=%q", strconv.FormatFloat(b.Upper, 'g', -1, 64)))
	}
	if neg > 3 {
		bounds = append(bounds, "...")
	}
	repair(h, "negative-le", finding.Fields{"bounds": neg, "calls": h.Negative}, "%d bucket bounds are negative (%s): a latency below zero is a bug of the exporter; the %s calls at or below them are left out, and the lowest bucket kept starts at 0",
		neg, strings.Join(bounds, " "), human.Number(h.Negative))
	for i := range merged[neg:] {
		merged[neg+i].Cumulative -= h.Negative
	}
	merged = merged[neg:]
	if len(merged) == 1 {
		if !(merged[0].Cumulative > 0) {
			return nil, "", fmt.Errorf("%w: every call lies at or below a negative bucket bound", ErrEmptyWindow)
		}
		return nil, "", &OnlyInfError{Calls: merged[0].Cumulative}
	}
	return merged, "histogram_quantile reads the negative buckets, which tunetimeout left out", nil
}

// repair notes a repair of the buckets (Repairs).
func repair(h *histogram.Bucketed, kind string, fields finding.Fields, format string, args ...any) {
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
func FromNative(s *model.SampleHistogram, unit time.Duration) (*histogram.Bucketed, error) {
	h := &histogram.Bucketed{Kind: Native}
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
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: lo, Hi: hi, Count: c})
		h.Count += c
	}
	slices.SortFunc(h.Buckets, func(a, b histogram.Bucket) int {
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
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: largest, Hi: math.Inf(1), Count: short})
		h.Count += short
		repair(h, "count-beyond-buckets", finding.Fields{"calls": short}, "the histogram counts %s calls more than its buckets hold (NaN observations, or buckets with a NaN count): how long they took is unknown, so they count as taking longer than the largest bound", human.Number(short))
		diverges = append(diverges, "histogram_quantile ranks NaN observations otherwise")
	}
	cum := 0.0
	for i := range h.Buckets {
		cum += h.Buckets[i].Count
		h.Buckets[i].Cumulative = cum
	}
	if clamped > 0 {
		repair(h, "negative-increase", finding.Fields{"buckets": clamped}, "%d buckets had a negative increase (a counter reset increase() could not see); they were taken as 0", clamped)
		diverges = append(diverges, "histogram_quantile reads negative bucket counts, which tunetimeout took as 0")
	}
	if nans > 0 {
		repair(h, "nan-count", finding.Fields{"buckets": nans}, "%d buckets had a NaN count (the exporter wrote NaN); they were left out, and the calls the count holds beyond the other buckets count as slow", nans)
		diverges = append(diverges, "histogram_quantile reads NaN bucket counts, which tunetimeout left out")
	}
	if h.Negative > 0 {
		repair(h, "negative-buckets", finding.Fields{"calls": h.Negative}, "%s calls lie in negative buckets: a latency below zero is a bug of the exporter; they are left out", human.Number(h.Negative))
		diverges = append(diverges, "histogram_quantile reads the negative buckets, which tunetimeout left out")
	}
	h.Divergence = strings.Join(diverges, "; ")
	noteBeyond(h, unit)
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: the histogram's increase is empty", ErrEmptyWindow)
	}
	return h, nil
}

// noteBeyond adds a repair note for bucket bounds beyond histogram.MaxBound.
func noteBeyond(h *histogram.Bucketed, unit time.Duration) {
	n, first := 0, 0.0
	for _, b := range h.Buckets {
		if b.Hi > histogram.MaxBound && !math.IsInf(b.Hi, 1) {
			if n == 0 {
				first = b.Hi
			}
			n++
		}
	}
	if n == 0 {
		return
	}
	repair(h, "beyond-24h", finding.Fields{"bounds": n, "first_bound_seconds": first, "largest_usable_seconds": h.LargestUsable()},
		"%d bucket bounds lie beyond 24h, the longest latency tunetimeout reads (the first %s, le=%q in the metric's unit); their calls count as taking longer than %s, the largest bound within it. Bounds that large suggest a unit mix-up (milliseconds or nanoseconds observed into a _seconds histogram)",
		n, human.Seconds(first), strconv.FormatFloat(first/unit.Seconds(), 'g', -1, 64), human.Seconds(h.LargestUsable()))
}
