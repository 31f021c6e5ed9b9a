// Package histogram turns samples into HDR latency histograms. It is the only
// package that touches hdrhistogram-go.
package histogram

import (
	"math"
	"slices"
	"sort"
	"time"
)

const (
	// Lowest is the smallest latency told apart from zero.
	Lowest = time.Microsecond
	// Highest is the largest latency recorded; longer ones are counted as
	// out of range.
	Highest = 24 * time.Hour
	// Digits is the number of significant decimal digits kept.
	Digits = 3
)

// Latency is a latency histogram with its right-censored samples and the
// samples it could not record.
//
// Values are kept in whole microseconds (sub-microsecond parts are truncated,
// so anything below Lowest, zero included, is recorded as 0) with Digits
// significant digits: two values in the same HDR bucket are "equivalent" and
// cannot be told apart. Every query answers in those terms; Quantile, Max and
// the bounds of QuantileInterval return the highest value equivalent to the
// sample they stand for, Min the lowest.
//
// Censoring: a right-censored sample (RecordCensored: "took at least d") is
// recorded at its lower bound d, counts in Count, and is also kept in a
// histogram of censored values. Quantile is computed over all recorded values
// with censored ones at their lower bound, so it is a lower bound of the true
// quantile as soon as one censored sample lies at or below the estimate (its
// true value could lie above the estimate and push it up); QuantileIsLowerBound
// says when that is the case.
//
// Nothing is dropped silently: negative values and values above Highest are
// not recorded but counted, see OutOfRange. Count, quantiles and fractions are
// over the recorded values only.
//
// Memory grows with the buckets filled, not with the range (see counts): a
// few hundred bytes for a few dozen samples, about 16 KB for 10,000 samples
// of the worked example's latency, at most about 60 KB; every answer is the
// one a dense hdrhistogram-go histogram of the same geometry gives.
//
// A Latency is not safe for concurrent use: callers must synchronize every
// Record and Merge against all other use, queries included (they fill a
// cache). The zero value is not ready for use; call New.
type Latency struct {
	h counts // every recorded value, censored ones at their lower bound
	// censored holds the censored values only, with the geometry of h; nil
	// until the first censored sample.
	censored     *counts
	below, above int64 // not recorded: negative, above Highest
	// exact holds the values samples were recorded at exactly (the bounds
	// of bucketed data, see SnapTo), sorted; nil for ordinary samples.
	exact []time.Duration
	// aboveAt maps the HDR value where RecordAboveN put samples to the bound
	// they exceed; nil for ordinary samples.
	aboveAt map[int64]time.Duration
	// filled caches the buckets of h that hold samples, in value order, with
	// cumulative counts, for the queries a report asks hundreds of times;
	// nil when h has changed since.
	filled *view
}

// Interval is a distribution-free confidence interval for a quantile, from
// order statistics (docs/method.md#1-the-quantile).
type Interval struct {
	Quantile   float64       // q, 0 < q <= 1
	Confidence float64       // e.g. 0.95
	Lo, Hi     time.Duration // bounds of the true q-quantile
	HiKnown    bool          // false when the upper rank lies beyond the largest sample
	Above      int64         // samples above the q-quantile estimate
}

// highestMicros is Highest in the histogram's unit.
const highestMicros = int64(Highest / time.Microsecond)

// New returns an empty latency histogram covering Lowest to Highest with
// Digits significant digits.
func New() *Latency {
	return &Latency{}
}

// micros converts d to the histogram's unit, truncating sub-microsecond
// parts. It reports false, after counting d, when d is out of range.
func (l *Latency) micros(d time.Duration) (int64, bool) {
	return toMicros(d, &l.below, &l.above)
}

// toMicros converts d to the histograms' unit, truncating sub-microsecond
// parts; out of range, it counts d in *below or *above and reports false.
func toMicros(d time.Duration, below, above *int64) (int64, bool) {
	switch {
	case d < 0:
		*below++
		return 0, false
	case d > Highest:
		*above++
		return 0, false
	}
	return int64(d / time.Microsecond), true
}

// toDuration converts a value in the histogram's unit back to a duration.
func toDuration(us int64) time.Duration {
	return time.Duration(us) * time.Microsecond
}

// Record records one sample. It returns false when d is negative or above
// Highest; such a sample is counted by OutOfRange instead. Record does not
// allocate.
func (l *Latency) Record(d time.Duration) bool {
	us, ok := l.micros(d)
	if !ok {
		return false
	}
	l.filled = nil
	if !l.h.inc(int(countsIndex(us))) {
		// Reached only past MaxInt64 samples; counted all the same.
		l.above++
		return false
	}
	return true
}

// RecordCensored records a right-censored sample, one that took at least d
// (a timeout, an nginx 499). It counts in Count at d and in Censored. It
// returns false, counting the sample in OutOfRange, when d is negative or
// above Highest.
func (l *Latency) RecordCensored(d time.Duration) bool {
	if !l.Record(d) {
		return false
	}
	if l.censored == nil {
		l.censored = &counts{}
	}
	// Fewer samples than l.h, which just took d: this cannot fail.
	_ = l.censored.inc(int(countsIndex(int64(d / time.Microsecond))))
	return true
}

// RecordN records n samples at d, as n calls of Record would (a bucket count
// of a Prometheus histogram recorded at one bound). n <= 0 records nothing
// and returns true. Out of range, all n are counted by OutOfRange.
func (l *Latency) RecordN(d time.Duration, n int64) bool {
	if n <= 0 {
		return true
	}
	us, ok := l.micros(d)
	if !ok {
		if d < 0 {
			l.below += n - 1
		} else {
			l.above += n - 1
		}
		return false
	}
	l.filled = nil
	if !l.h.add(int(countsIndex(us)), n) {
		l.above += n
		return false
	}
	return true
}

// RecordCensoredN records n right-censored samples at d, as n calls of
// RecordCensored would.
func (l *Latency) RecordCensoredN(d time.Duration, n int64) bool {
	if n <= 0 {
		return true
	}
	if !l.RecordN(d, n) {
		return false
	}
	if l.censored == nil {
		l.censored = &counts{}
	}
	_ = l.censored.add(int(countsIndex(int64(d/time.Microsecond))), n)
	return true
}

// SnapTo declares that samples are recorded at these values exactly: the
// bounds of bucketed data (a Prometheus histogram's le). Quantile, Max, Min
// and the bounds of QuantileInterval then answer with the declared value
// equivalent to the sample (1s) instead of the highest or lowest value of
// its HDR bucket (1.000447s). Values not equivalent to a declared one are
// answered as usual.
func (l *Latency) SnapTo(values []time.Duration) {
	l.exact = append(l.exact, values...)
	slices.Sort(l.exact)
	l.exact = slices.Compact(l.exact)
}

// RecordAboveN records n right-censored samples that took more than d, by
// how much nobody knows (the +Inf bucket of a Prometheus histogram beyond
// its largest bound d). They are recorded just above d, at NextDistinct(d),
// so CountAbove(d) counts them (a timeout of d cuts them off), and queries
// that land on them answer d with QuantileIsLowerBound true.
func (l *Latency) RecordAboveN(d time.Duration, n int64) bool {
	at := l.NextDistinct(d)
	if !l.RecordCensoredN(at, n) {
		return false
	}
	if l.aboveAt == nil {
		l.aboveAt = make(map[int64]time.Duration)
	}
	l.aboveAt[int64(at/time.Microsecond)] = d
	return true
}

// snap returns the declared exact value equivalent to us, else us.
func (l *Latency) snap(us int64) time.Duration {
	for at, d := range l.aboveAt {
		if equivalent(at, us) {
			return d
		}
	}
	if e, ok := l.declared(us); ok {
		return e
	}
	return toDuration(us)
}

// bytes returns about how much memory l holds.
func (l *Latency) bytes() int {
	const latencyBytes = 160 // the struct
	n := latencyBytes + l.h.bytes() + 8*cap(l.exact) + 48*len(l.aboveAt)
	if l.censored != nil {
		n += 72 + l.censored.bytes()
	}
	if l.filled != nil {
		n += 48 + 2*cap(l.filled.at) + 8*cap(l.filled.cum)
	}
	return n
}

// Count returns the number of recorded samples, censored ones included and
// out-of-range ones excluded.
func (l *Latency) Count() int64 { return l.h.total }

// Censored returns how many of the recorded samples are right-censored.
func (l *Latency) Censored() int64 {
	if l.censored == nil {
		return 0
	}
	return l.censored.total
}

// OutOfRange returns how many samples were not recorded: below counts
// negative durations, above those longer than Highest (and values dropped
// by Merge).
func (l *Latency) OutOfRange() (below, above int64) { return l.below, l.above }

// valueAtQuantile returns the value at quantile q in [0, 1]: the highest
// value equivalent to the sample of rank ceil(q*N) (quantileRank), at least
// 1, and the lowest one for q = 0.
func (l *Latency) valueAtQuantile(q float64) int64 {
	return valueAtRank(l.filledBuckets(), l.h.total, quantileRank(q, l.h.total), q == 0)
}

// valueAtRank returns the highest value equivalent to the r-th smallest
// recorded sample, 1 <= r <= Count().
func (l *Latency) valueAtRank(r int64) int64 {
	return valueAtRank(l.filledBuckets(), l.h.total, r, false)
}

// Quantile returns the latency at quantile q, 0 < q <= 1 (0.999 for p99.9):
// the recorded sample of rank ceil(q*N) among N, as its highest equivalent
// value, so that at most (1-q)*N samples lie above it: a timeout at
// Quantile(q) cuts off at most the share 1-q. Quantile(1) is Max. q above 1
// is read as 1; q <= 0 or NaN gives Min. An empty histogram gives 0. See
// Latency for censored samples.
func (l *Latency) Quantile(q float64) time.Duration {
	switch {
	case q > 1:
		q = 1
	case !(q > 0): // q <= 0 or NaN
		q = 0
	}
	return l.snap(l.valueAtQuantile(q))
}

// rawQuantile is Quantile without SnapTo.
func (l *Latency) rawQuantile(q float64) time.Duration {
	if q > 1 {
		q = 1
	} else if !(q > 0) {
		q = 0
	}
	return toDuration(l.valueAtQuantile(q))
}

// NextDistinct returns the smallest duration above d that the histogram
// tells apart from d: the start of the next HDR bucket. A sample that took
// more than d, recorded there, counts in CountAbove(d). It returns Highest
// when no such value is in range.
func (l *Latency) NextDistinct(d time.Duration) time.Duration {
	us := max(int64(d/time.Microsecond), 0)
	if us >= highestMicros {
		return Highest
	}
	// The values equivalent to us form an interval: widen, then bisect.
	step := int64(1)
	for us+step < highestMicros && equivalent(us, us+step) {
		step *= 2
	}
	lo, hi := us+step/2, min(us+step, highestMicros) // lo equivalent (or us), hi not (or the end)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if equivalent(us, mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return toDuration(hi)
}

// QuantileIsLowerBound reports whether Quantile(q) is only a lower bound of
// the true quantile: whether at least one censored sample is equivalent to
// or below it.
func (l *Latency) QuantileIsLowerBound(q float64) bool {
	if l.censored == nil || l.censored.total == 0 {
		return false
	}
	// Quantile returns the highest value of its bucket and this the lowest
	// of the smallest censored sample's bucket, so this compares buckets (in
	// raw values: SnapTo may have moved the answer within its bucket).
	first, _ := l.censored.first()
	return valueAt(int64(first)) <= int64(l.rawQuantile(q)/time.Microsecond)
}

// FractionAbove returns CountAbove(d) as a share of Count: at most the share
// of calls a timeout of d would cut off (the false-timeout rate), never
// below it. It returns 0 for an empty histogram.
func (l *Latency) FractionAbove(d time.Duration) float64 {
	n := l.Count()
	if n == 0 {
		return 0
	}
	return float64(l.CountAbove(d)) / float64(n)
}

// CountAbove returns how many recorded samples may lie strictly above d: an
// upper bound of the calls a timeout of d cuts off, never below the truth
// (docs/method.md#1-the-quantile). It counts the buckets above the one
// holding d and, unless every value of it is at or below d, that bucket
// too: a bucket that straddles d holds samples on both sides of it, in
// proportions the histogram does not know. The count is exact when d is the
// highest value of its bucket (Quantile and Max answer such values), when
// d's bucket is empty, and when it holds a value declared exact with SnapTo
// at or below d (a Prometheus le). Samples are compared in whole
// microseconds, as they are recorded.
func (l *Latency) CountAbove(d time.Duration) int64 {
	if d < 0 {
		return l.Count()
	}
	us := int64(d / time.Microsecond)
	i := countsIndex(us)
	if l.atOrBelow(i, d) {
		i++
	}
	v := l.filledBuckets()
	return l.h.total - v.before(v.from(i))
}

// atOrBelow reports whether every sample in bucket i, the one holding d,
// is at or below d: d is the bucket's highest value, or the bucket holds a
// value declared exact (SnapTo) at or below d. The bucket where RecordAboveN
// put samples is not: they took longer than their bound by an unknown time.
func (l *Latency) atOrBelow(i int64, d time.Duration) bool {
	us := int64(d / time.Microsecond)
	if highestAt(i) <= us {
		return true
	}
	for at := range l.aboveAt {
		if equivalent(at, us) {
			return false
		}
	}
	e, ok := l.declared(us)
	return ok && e <= d
}

// declared returns the value declared exact (SnapTo) equivalent to us.
func (l *Latency) declared(us int64) (time.Duration, bool) {
	if len(l.exact) == 0 {
		return 0, false
	}
	i, _ := slices.BinarySearch(l.exact, toDuration(us))
	for _, j := range []int{i - 1, i, i + 1} {
		if j >= 0 && j < len(l.exact) && equivalent(int64(l.exact[j]/time.Microsecond), us) {
			return l.exact[j], true
		}
	}
	return 0, false
}

// filledBuckets returns the buckets of h that hold samples, in value order.
func (l *Latency) filledBuckets() *view {
	if l.filled == nil {
		l.filled = newView(&l.h)
	}
	return l.filled
}

// CountBetween returns how many recorded samples v satisfy lo <= v <= hi,
// where a sample equivalent to lo or to hi counts. It returns 0 when lo > hi.
// CountBetween(0, d) + CountAbove(d) is Count() for every d >= 0 where
// CountAbove(d) is exact, and more where d's bucket straddles d (it counts
// in both).
func (l *Latency) CountBetween(lo, hi time.Duration) int64 {
	if lo > hi || hi < 0 {
		return 0
	}
	loUs := max(int64(lo/time.Microsecond), 0)
	hiUs := int64(hi / time.Microsecond)
	// The buckets from the one holding lo to the one holding hi.
	v := l.filledBuckets()
	return v.before(v.from(countsIndex(hiUs)+1)) - v.before(v.from(countsIndex(loUs)))
}

// Mean returns the mean of the recorded samples, each taken at the middle of
// its bucket; 0 when empty.
func (l *Latency) Mean() time.Duration {
	if l.h.total == 0 {
		return 0
	}
	// hdrhistogram-go's Mean, operation for operation: the same float64.
	var mean float64
	total := float64(l.h.total)
	for i, n := range l.h.all() {
		mean += float64(n) * float64(medianAt(int64(i))) / total
	}
	return time.Duration(math.Round(mean * float64(time.Microsecond)))
}

// Min returns the smallest recorded sample as the lowest value equivalent to
// it; 0 when empty.
func (l *Latency) Min() time.Duration {
	v := l.filledBuckets()
	if len(v.at) == 0 {
		return l.snap(0)
	}
	return l.snap(valueAt(int64(v.at[0])))
}

// Max returns the largest recorded sample as the highest value equivalent to
// it (so up to one bucket width, 0.1 %, above the sample); 0 when empty.
func (l *Latency) Max() time.Duration {
	v := l.filledBuckets()
	if len(v.at) == 0 {
		return l.snap(0)
	}
	return l.snap(highestAt(int64(v.at[len(v.at)-1])))
}

// Merge adds o's samples, censored samples and out-of-range counts to l.
// Values hdrhistogram drops while merging are counted as above range.
// Merging a histogram into itself doubles it.
func (l *Latency) Merge(o *Latency) {
	if o == nil {
		return
	}
	if o == l {
		c := &Latency{h: l.h.clone(), below: l.below, above: l.above}
		if l.censored != nil {
			cc := l.censored.clone()
			c.censored = &cc
		}
		o = c
	}
	l.below += o.below
	l.above += o.above
	l.filled = nil
	l.above += l.h.merge(&o.h)
	if len(o.exact) > 0 {
		l.SnapTo(o.exact)
	}
	for at, d := range o.aboveAt {
		if l.aboveAt == nil {
			l.aboveAt = make(map[int64]time.Duration)
		}
		l.aboveAt[at] = d
	}
	if o.censored != nil && o.censored.total > 0 {
		if l.censored == nil {
			l.censored = &counts{}
		}
		// The censored values are a subset of o.h's: a value dropped here
		// was dropped from l.h above and is counted.
		_ = l.censored.merge(o.censored)
	}
}

// QuantileInterval returns a distribution-free confidence interval for the
// q-quantile from order statistics (docs/method.md#1-the-quantile). With N = Count(),
// z the standard normal quantile of (1+confidence)/2 and
// s = sqrt(N*q*(1-q)), the true quantile lies, with probability about
// confidence, between the samples of rank floor(N*q - z*s) and
// ceil(N*q + z*s) + 1. A lower rank below 1 gives Min; an upper rank beyond
// N gives Max with HiKnown false: the data cannot bound the quantile from
// above. Above is CountAbove(Quantile(q)); below about 10 the estimate rests
// on few samples. confidence is clamped to [0, 1]. An empty histogram gives
// zero bounds with HiKnown false.
func (l *Latency) QuantileInterval(q, confidence float64) Interval {
	iv := Interval{Quantile: q, Confidence: confidence}
	n := l.Count()
	if n == 0 {
		return iv
	}
	loRank, hiRank := intervalRanks(n, q, confidence)
	nf := float64(n)

	if loRank < 1 { // also -Inf for confidence 1
		iv.Lo = l.Min()
	} else {
		iv.Lo = l.snap(l.valueAtRank(floatRank(loRank, n)))
	}
	if hiRank > nf { // also +Inf
		iv.Hi = l.Max()
	} else {
		iv.Hi = l.snap(l.valueAtRank(floatRank(max(hiRank, 1), n)))
		iv.HiKnown = true
	}
	iv.Above = l.CountAbove(l.Quantile(q))
	return iv
}

// QuantileIntervalWithout is QuantileInterval of the samples of l less
// those of o, where o's are among l's (one window of a period, one slot of
// the day): the interval of the pooled rest, found by bisecting l's filled
// buckets with o's counts taken away, so that no histogram of the rest is
// built for each of thousands of windows. ok is false when o holds more
// samples than l in some bucket, and so is not a part of l.
func (l *Latency) QuantileIntervalWithout(o *Latency, q, confidence float64) (iv Interval, ok bool) {
	iv = Interval{Quantile: q, Confidence: confidence}
	lv, ov := l.filledBuckets(), o.filledBuckets()
	// rest is the rest's samples in l's filled buckets up to position k.
	rest := func(k int) int64 { return lv.cum[k] - ov.before(ov.from(int64(lv.at[k])+1)) }
	for k := range ov.at {
		if i, found := slices.BinarySearch(lv.at, ov.at[k]); !found || rest(i) < 0 || (i > 0 && rest(i) < rest(i-1)) {
			return iv, false
		}
	}
	n := l.Count() - o.Count()
	if n <= 0 {
		return iv, n == 0
	}
	// at is the position of the bucket holding the rest's sample of rank r.
	at := func(r int64) int {
		r = min(max(r, 1), n)
		return sort.Search(len(lv.at), func(k int) bool { return rest(k) >= r })
	}
	loRank, hiRank := intervalRanks(n, q, confidence)
	if loRank < 1 {
		iv.Lo = l.snap(valueAt(int64(lv.at[at(1)])))
	} else {
		iv.Lo = l.snap(highestAt(int64(lv.at[at(floatRank(loRank, n))])))
	}
	if hiRank > float64(n) {
		iv.Hi = l.snap(highestAt(int64(lv.at[at(n)])))
	} else {
		iv.Hi = l.snap(highestAt(int64(lv.at[at(floatRank(max(hiRank, 1), n))])))
		iv.HiKnown = true
	}
	iv.Above = n - rest(at(quantileRank(q, n)))
	return iv, true
}

// intervalRanks are QuantileInterval's ranks among n samples: the lower
// one below 1 when the data cannot bound the quantile from below, the
// upper one above n when they cannot from above.
func intervalRanks(n int64, q, confidence float64) (loRank, hiRank float64) {
	qq := min(max(q, 0), 1)
	if math.IsNaN(q) {
		qq = 0
	}
	c := min(max(confidence, 0), 1)
	if math.IsNaN(confidence) {
		c = 0
	}
	z := math.Sqrt2 * math.Erfinv(c) // = inverse normal CDF at (1+c)/2
	nf := float64(n)
	center := nf * qq
	half := z * math.Sqrt(nf*qq*(1-qq))
	if math.IsNaN(half) { // confidence 1 (z = +Inf) at q = 0 or 1: no spread
		half = 0
	}
	// N*q is often an integer computed with a rounding error (2000*0.999);
	// the tolerance keeps floor and ceil from stepping a whole rank on it.
	const eps = 1e-9
	return math.Floor(center - half + eps), math.Ceil(center+half-eps) + 1
}

// floatRank converts a rank of at least 1 computed in floats to an int64,
// at most n: float64(n) can round above n (float64(MaxInt64) is 2^63,
// which no int64 holds).
func floatRank(r float64, n int64) int64 {
	if r >= float64(n) {
		return n
	}
	return int64(r)
}

// BucketLowerMicros is the lowest value of the bucket us (microseconds)
// falls in: what the histogram keeps of it. Below 2,048 us every
// microsecond is a bucket; above, us with its lowest floor(log2(us)) - 10
// bits cleared (sqlsource writes the same arithmetic in SQL).
func BucketLowerMicros(us int64) int64 { return lowestEquivalent(us) }
