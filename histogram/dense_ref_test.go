package histogram

// denseLatency is Latency as it was before its counts were compact
// (histogram/latency.go at 5516f45), over a dense hdrhistogram-go
// histogram: the reference TestLatencyMatchesDense compares Latency with.

import (
	"math"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

type denseLatency struct {
	h *hdr.Histogram // every recorded value, censored ones at their lower bound
	// censored holds the censored values only, with the geometry of h. It is
	// allocated on the first censored sample: a histogram costs about 230 KB.
	censored     *hdr.Histogram
	below, above int64 // not recorded: negative, above Highest
	// exact holds the values samples were recorded at exactly (the bounds
	// of bucketed data, see SnapTo), sorted; nil for ordinary samples.
	exact []time.Duration
	// aboveAt maps the HDR value where RecordAboveN put samples to the bound
	// they exceed; nil for ordinary samples.
	aboveAt map[int64]time.Duration
	// filled caches the buckets of h that hold samples, in value order, for
	// CountAbove and CountBetween, which a report asks hundreds of times
	// (h.Distribution walks and copies all 28,000 buckets each time); nil
	// when h has changed since.
	filled []hdr.Bar
}

func denseHDR() *hdr.Histogram {
	return hdr.New(int64(Lowest/time.Microsecond), highestMicros, Digits)
}

// New returns an empty latency histogram covering Lowest to Highest with
// Digits significant digits.
func newDense() *denseLatency {
	return &denseLatency{h: denseHDR()}
}

// micros converts d to the histogram's unit, truncating sub-microsecond
// parts. It reports false, after counting d, when d is out of range.
func (l *denseLatency) micros(d time.Duration) (int64, bool) {
	return toMicros(d, &l.below, &l.above)
}

// Record records one sample. It returns false when d is negative or above
// Highest; such a sample is counted by OutOfRange instead. Record does not
// allocate.
func (l *denseLatency) Record(d time.Duration) bool {
	us, ok := l.micros(d)
	if !ok {
		return false
	}
	l.filled = nil
	if l.h.RecordValue(us) != nil {
		// Not reached for values within [0, Highest]; counted all the same.
		l.above++
		return false
	}
	return true
}

// RecordCensored records a right-censored sample, one that took at least d
// (a timeout, an nginx 499). It counts in Count at d and in Censored. It
// returns false, counting the sample in OutOfRange, when d is negative or
// above Highest.
func (l *denseLatency) RecordCensored(d time.Duration) bool {
	if !l.Record(d) {
		return false
	}
	if l.censored == nil {
		l.censored = denseHDR()
	}
	// Same geometry as l.h, which just accepted d: this cannot fail.
	_ = l.censored.RecordValue(int64(d / time.Microsecond))
	return true
}

// RecordN records n samples at d, as n calls of Record would (a bucket count
// of a Prometheus histogram recorded at one bound). n <= 0 records nothing
// and returns true. Out of range, all n are counted by OutOfRange.
func (l *denseLatency) RecordN(d time.Duration, n int64) bool {
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
	if l.h.RecordValues(us, n) != nil {
		l.above += n
		return false
	}
	return true
}

// RecordCensoredN records n right-censored samples at d, as n calls of
// RecordCensored would.
func (l *denseLatency) RecordCensoredN(d time.Duration, n int64) bool {
	if n <= 0 {
		return true
	}
	if !l.RecordN(d, n) {
		return false
	}
	if l.censored == nil {
		l.censored = denseHDR()
	}
	_ = l.censored.RecordValues(int64(d/time.Microsecond), n)
	return true
}

// SnapTo declares that samples are recorded at these values exactly: the
// bounds of bucketed data (a Prometheus histogram's le). Quantile, Max, Min
// and the bounds of QuantileInterval then answer with the declared value
// equivalent to the sample (1s) instead of the highest or lowest value of
// its HDR bucket (1.000447s). Values not equivalent to a declared one are
// answered as usual.
func (l *denseLatency) SnapTo(values []time.Duration) {
	l.exact = append(l.exact, values...)
	slices.Sort(l.exact)
	l.exact = slices.Compact(l.exact)
}

// RecordAboveN records n right-censored samples that took more than d, by
// how much nobody knows (the +Inf bucket of a Prometheus histogram beyond
// its largest bound d). They are recorded just above d, at NextDistinct(d),
// so CountAbove(d) counts them (a timeout of d cuts them off), and queries
// that land on them answer d with QuantileIsLowerBound true.
func (l *denseLatency) RecordAboveN(d time.Duration, n int64) bool {
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
func (l *denseLatency) snap(us int64) time.Duration {
	for at, d := range l.aboveAt {
		if l.h.ValuesAreEquivalent(at, us) {
			return d
		}
	}
	if len(l.exact) > 0 {
		i, _ := slices.BinarySearch(l.exact, toDuration(us))
		for _, j := range []int{i - 1, i, i + 1} {
			if j >= 0 && j < len(l.exact) && l.h.ValuesAreEquivalent(int64(l.exact[j]/time.Microsecond), us) {
				return l.exact[j]
			}
		}
	}
	return toDuration(us)
}

// Count returns the number of recorded samples, censored ones included and
// out-of-range ones excluded.
func (l *denseLatency) Count() int64 { return l.h.TotalCount() }

// Censored returns how many of the recorded samples are right-censored.
func (l *denseLatency) Censored() int64 {
	if l.censored == nil {
		return 0
	}
	return l.censored.TotalCount()
}

// OutOfRange returns how many samples were not recorded: below counts
// negative durations, above those longer than Highest (and values dropped
// by Merge).
func (l *denseLatency) OutOfRange() (below, above int64) { return l.below, l.above }

// denseValueAtQuantile returns h's value at quantile q in [0, 1]: the
// sample of rank ceil(q*N) (quantileRank), at least 1, as its highest
// equivalent value (the lowest one for q = 0). hdrhistogram-go takes rank
// round(q*N) of a percentile: asked for the percentile 100*r/N it takes rank
// r, with room to spare for float rounding (r +- 0.5 both round to r).
func denseValueAtQuantile(h *hdr.Histogram, q float64) int64 {
	n := h.TotalCount()
	if n == 0 {
		return 0
	}
	if q == 0 {
		return h.ValueAtPercentile(0)
	}
	return denseValueAtRank(h, quantileRank(q, n))
}

func denseValueAtRank(h *hdr.Histogram, r int64) int64 {
	return h.ValueAtPercentile(float64(r) / float64(h.TotalCount()) * 100)
}

// valueAtRank returns the highest value equivalent to the r-th smallest
// recorded sample, 1 <= r <= Count().
func (l *denseLatency) valueAtRank(r int64) int64 {
	return denseValueAtRank(l.h, r)
}

// Quantile returns the latency at quantile q, 0 < q <= 1 (0.999 for p99.9):
// the recorded sample of rank ceil(q*N) among N, as its highest equivalent
// value. Quantile(1) is Max. q above 1 is read as 1; q <= 0 or NaN gives
// Min. An empty histogram gives 0. See Latency for censored samples.
func (l *denseLatency) Quantile(q float64) time.Duration {
	switch {
	case q > 1:
		q = 1
	case !(q > 0): // q <= 0 or NaN
		q = 0
	}
	return l.snap(denseValueAtQuantile(l.h, q))
}

// rawQuantile is Quantile without SnapTo.
func (l *denseLatency) rawQuantile(q float64) time.Duration {
	if q > 1 {
		q = 1
	} else if !(q > 0) {
		q = 0
	}
	return toDuration(denseValueAtQuantile(l.h, q))
}

// NextDistinct returns the smallest duration above d that the histogram
// tells apart from d: the start of the next HDR bucket. A sample that took
// more than d, recorded there, counts in CountAbove(d). It returns Highest
// when no such value is in range.
func (l *denseLatency) NextDistinct(d time.Duration) time.Duration {
	us := max(int64(d/time.Microsecond), 0)
	if us >= highestMicros {
		return Highest
	}
	// The values equivalent to us form an interval: widen, then bisect.
	step := int64(1)
	for us+step < highestMicros && l.h.ValuesAreEquivalent(us, us+step) {
		step *= 2
	}
	lo, hi := us+step/2, min(us+step, highestMicros) // lo equivalent (or us), hi not (or the end)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if l.h.ValuesAreEquivalent(us, mid) {
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
func (l *denseLatency) QuantileIsLowerBound(q float64) bool {
	if l.censored == nil || l.censored.TotalCount() == 0 {
		return false
	}
	// Quantile returns the highest value of its bucket and Min the lowest of
	// the smallest censored sample's bucket, so this compares buckets (in
	// raw values: SnapTo may have moved the answer within its bucket).
	return l.censored.Min() <= int64(l.rawQuantile(q)/time.Microsecond)
}

// FractionAbove returns the share of Count strictly above d: the share of
// calls a timeout of d would cut off (the false-timeout rate). A sample
// equivalent to d is not above it. It returns 0 for an empty histogram.
func (l *denseLatency) FractionAbove(d time.Duration) float64 {
	n := l.Count()
	if n == 0 {
		return 0
	}
	return float64(l.CountAbove(d)) / float64(n)
}

// CountAbove returns how many recorded samples may lie strictly above d:
// those of the buckets above the one holding d, and of that bucket unless
// every value of it is at or below d (d is its highest value, or it holds a
// value declared exact at or below d, and not the samples of RecordAboveN).
func (l *denseLatency) CountAbove(d time.Duration) int64 {
	if d < 0 {
		return l.Count()
	}
	us := int64(d / time.Microsecond)
	var n int64
	for _, b := range l.filledBuckets() {
		switch {
		case b.From > us:
			n += b.Count
		case l.h.ValuesAreEquivalent(b.From, us) && l.h.ValuesAreEquivalent(us, us+1) && !l.declaredAtOrBelow(b.From, d):
			// d's bucket, of which d is not the highest value.
			n += b.Count
		}
	}
	return n
}

// declaredAtOrBelow reports whether the bucket starting at from holds a
// value declared exact at or below d, and no samples of RecordAboveN.
func (l *denseLatency) declaredAtOrBelow(from int64, d time.Duration) bool {
	for at := range l.aboveAt {
		if l.h.ValuesAreEquivalent(at, from) {
			return false
		}
	}
	for _, e := range l.exact {
		if e <= d && l.h.ValuesAreEquivalent(int64(e/time.Microsecond), from) {
			return true
		}
	}
	return false
}

// filledBuckets returns the buckets of h that hold samples, in value order.
func (l *denseLatency) filledBuckets() []hdr.Bar {
	if l.filled == nil {
		l.filled = []hdr.Bar{}
		for _, b := range l.h.Distribution() {
			if b.Count > 0 {
				l.filled = append(l.filled, b)
			}
		}
	}
	return l.filled
}

// CountBetween returns how many recorded samples v satisfy lo <= v <= hi,
// where a sample equivalent to lo or to hi counts. It returns 0 when lo > hi.
func (l *denseLatency) CountBetween(lo, hi time.Duration) int64 {
	if lo > hi || hi < 0 {
		return 0
	}
	loUs := max(int64(lo/time.Microsecond), 0)
	hiUs := int64(hi / time.Microsecond)
	var n int64
	for _, b := range l.filledBuckets() {
		if b.To >= loUs && b.From <= hiUs {
			n += b.Count
		}
	}
	return n
}

// Mean returns the mean of the recorded samples, each taken at the middle of
// its bucket; 0 when empty.
func (l *denseLatency) Mean() time.Duration {
	return time.Duration(math.Round(l.h.Mean() * float64(time.Microsecond)))
}

// Min returns the smallest recorded sample as the lowest value equivalent to
// it; 0 when empty.
func (l *denseLatency) Min() time.Duration { return l.snap(l.h.Min()) }

// Max returns the largest recorded sample as the highest value equivalent to
// it (so up to one bucket width, 0.1 %, above the sample); 0 when empty.
func (l *denseLatency) Max() time.Duration { return l.snap(l.h.Max()) }

// Merge adds o's samples, censored samples and out-of-range counts to l.
// Values hdrhistogram drops while merging are counted as above range.
// Merging a histogram into itself doubles it.
func (l *denseLatency) Merge(o *denseLatency) {
	if o == nil {
		return
	}
	if o == l {
		c := &denseLatency{h: l.h.Clone(), below: l.below, above: l.above}
		if l.censored != nil {
			c.censored = l.censored.Clone()
		}
		o = c
	}
	l.below += o.below
	l.above += o.above
	l.filled = nil
	l.above += l.h.Merge(o.h)
	if len(o.exact) > 0 {
		l.SnapTo(o.exact)
	}
	for at, d := range o.aboveAt {
		if l.aboveAt == nil {
			l.aboveAt = make(map[int64]time.Duration)
		}
		l.aboveAt[at] = d
	}
	if o.censored != nil && o.censored.TotalCount() > 0 {
		if l.censored == nil {
			l.censored = denseHDR()
		}
		// The censored values are a subset of o.h's and have l.h's geometry:
		// a value dropped here was dropped from l.h above and is counted.
		_ = l.censored.Merge(o.censored)
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
func (l *denseLatency) QuantileInterval(q, confidence float64) Interval {
	iv := Interval{Quantile: q, Confidence: confidence}
	n := l.Count()
	if n == 0 {
		return iv
	}
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
	loRank := math.Floor(center - half + eps)
	hiRank := math.Ceil(center+half-eps) + 1

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

// Bars, Sampler and addPacked as they were.

func (l *denseLatency) Bars() []Bar {
	var out []Bar
	for _, b := range l.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		out = append(out, Bar{Lo: toDuration(b.From), Hi: toDuration(b.To), Count: b.Count})
	}
	return out
}

func (l *denseLatency) Sampler() *Sampler {
	if l.Count() == 0 {
		return nil
	}
	s := &Sampler{}
	var total int64
	for _, b := range l.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		total += b.Count
		s.cum = append(s.cum, total)
		s.from = append(s.from, b.From)
		s.width = append(s.width, max(b.To-b.From+1, 1))
	}
	return s
}

func (l *denseLatency) addPacked(all, censored *hdr.PackedHistogram, below, above int64) {
	l.filled = nil
	l.below += below
	l.above += above
	l.above += all.MergeInto(l.h)
	if censored != nil && censored.TotalCount() > 0 {
		if l.censored == nil {
			l.censored = denseHDR()
		}
		_ = censored.MergeInto(l.censored)
	}
}
