package histogram_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
)

const ms = time.Millisecond

// within asserts |got-want| <= rel*want + 1 µs: HDR precision at 3 digits
// (a bucket is at most 1/1024 of its values wide) plus the truncation of
// sub-microsecond parts.
func within(t *testing.T, want, got time.Duration, rel float64, msgAndArgs ...any) {
	t.Helper()
	slack := time.Duration(rel*float64(want)) + time.Microsecond
	assert.LessOrEqual(t, (got - want).Abs(), slack, append([]any{"want %v, got %v", want, got}, msgAndArgs...)...)
}

func record(t *testing.T, l *histogram.Latency, ds ...time.Duration) {
	t.Helper()
	for _, d := range ds {
		require.True(t, l.Record(d), "Record(%v)", d)
	}
}

// msRange returns from, from+1ms, ..., to.
func msRange(from, to int) []time.Duration {
	var ds []time.Duration
	for i := from; i <= to; i++ {
		ds = append(ds, time.Duration(i)*ms)
	}
	return ds
}

// TestMixtureAgainstExact is the package's "done when" test: on the worked
// example (docs/method.md#12-the-worked-example, 200,000 mixture samples) every answer matches the exact
// one computed from the sorted samples, within HDR precision.
func TestMixtureAgainstExact(t *testing.T) {
	samples := mixture.Default().Generate(1, 200_000)
	l := histogram.New()
	record(t, l, samples...)
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	n := len(sorted)
	require.EqualValues(t, n, l.Count())

	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
		rank := int(math.Ceil(q*float64(n) - 1e-9)) // q*N is an integer here
		want := sorted[rank-1]
		got := l.Quantile(q)
		within(t, want, got, 1e-3, "q=%v", q)
		// Quantile returns the highest equivalent value: never below the sample.
		assert.GreaterOrEqual(t, got, want, "q=%v", q)
	}
	assert.Equal(t, l.Max(), l.Quantile(1))
	within(t, sorted[n-1], l.Max(), 1e-3)
	within(t, sorted[0], l.Min(), 1e-3)

	var sum float64
	for _, d := range samples {
		sum += float64(d)
	}
	within(t, time.Duration(sum/float64(n)), l.Mean(), 1e-3, "mean")

	for _, cut := range []time.Duration{50 * ms, 250 * ms, 500 * ms, 800 * ms, time.Second} {
		above := n - sortedUpTo(sorted, cut)
		// Samples just below cut may share its bucket and count as above:
		// a bucket is at most 1/1024 of its values wide.
		slack := sortedUpTo(sorted, cut) - sortedUpTo(sorted, cut-cut/1024-time.Microsecond)
		got := l.CountAbove(cut)
		assert.GreaterOrEqual(t, got, int64(above), "cut %v: never below the truth", cut)
		assert.LessOrEqual(t, got, int64(above+slack), "cut %v", cut)
		assert.InDelta(t, float64(above)/float64(n), l.FractionAbove(cut), float64(slack+1)/float64(n), "cut %v", cut)
		assert.GreaterOrEqual(t, l.CountBetween(0, cut)+l.CountAbove(cut), l.Count(), "cut %v", cut)
	}
	assert.Zero(t, l.CountAbove(time.Second), "the mixture never exceeds 1 s")
}

// sortedUpTo returns how many of sorted are <= d.
func sortedUpTo(sorted []time.Duration, d time.Duration) int {
	i, _ := slices.BinarySearch(sorted, d+1)
	return i
}

func TestRecordRange(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		ok   bool
	}{
		{"zero", 0, true},
		{"below a microsecond", 400 * time.Nanosecond, true}, // nginx's 0.000
		{"negative", -time.Nanosecond, false},
		{"Highest", histogram.Highest, true},
		{"just above Highest", histogram.Highest + time.Nanosecond, false},
		{"25 h", 25 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := histogram.New()
			assert.Equal(t, tt.ok, l.Record(tt.d))
			below, above := l.OutOfRange()
			if tt.ok {
				assert.EqualValues(t, 1, l.Count())
				assert.Zero(t, below+above)
				within(t, tt.d, l.Max(), 1e-3)
				return
			}
			assert.Zero(t, l.Count())
			if tt.d < 0 {
				assert.EqualValues(t, 1, below)
			} else {
				assert.EqualValues(t, 1, above)
			}
		})
	}

	t.Run("counts add up", func(t *testing.T) {
		l := histogram.New()
		l.Record(-time.Second)
		l.Record(25 * time.Hour)
		l.RecordCensored(48 * time.Hour)
		l.RecordCensored(-time.Millisecond)
		l.Record(0)
		l.Record(700 * time.Nanosecond)
		below, above := l.OutOfRange()
		assert.EqualValues(t, 2, below)
		assert.EqualValues(t, 2, above)
		assert.EqualValues(t, 2, l.Count())
		assert.Zero(t, l.Censored(), "censored samples out of range are not recorded")
		assert.Zero(t, l.Max(), "sub-microsecond values are recorded as 0")
	})
}

func TestEmpty(t *testing.T) {
	l := histogram.New()
	assert.Zero(t, l.Quantile(0.5))
	assert.Zero(t, l.Quantile(1))
	assert.Zero(t, l.Mean())
	assert.Zero(t, l.Min())
	assert.Zero(t, l.Max())
	assert.Zero(t, l.FractionAbove(time.Millisecond))
	assert.False(t, l.QuantileIsLowerBound(0.5))
	iv := l.QuantileInterval(0.99, 0.95)
	assert.False(t, iv.HiKnown)
	assert.Zero(t, iv.Lo)
}

func TestQuantileSmall(t *testing.T) {
	l := histogram.New()
	record(t, l, msRange(1, 100)...) // 1 ms .. 100 ms
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.01, 1 * ms},
		{0.5, 50 * ms},
		{0.9, 90 * ms},
		{0.99, 99 * ms},
		{1, 100 * ms},
		{1.5, 100 * ms}, // clamped to 1
		{0, 1 * ms},     // Min
		{-1, 1 * ms},    // Min
	}
	for _, tt := range tests {
		got := l.Quantile(tt.q)
		assert.GreaterOrEqual(t, got, tt.want, "q=%v", tt.q)
		within(t, tt.want, got, 1e-3, "q=%v", tt.q)
	}
}

// TestQuantileCutsOffAtMostItsShare pins the rank rule: Quantile(q) is the
// sample of rank ceil(q*N), the smallest with at most (1-q)*N samples above
// it, so a timeout there cuts off at most the share 1-q. hdrhistogram-go's
// round(q*N) takes rank 1,598 of 1,600 at p99.9, with 2 samples (0.125 %)
// above. q*N computed with a rounding error (2000*0.999 is
// 1998.0000000000002) is the integer it should be.
func TestQuantileCutsOffAtMostItsShare(t *testing.T) {
	for _, tt := range []struct {
		n    int
		q    float64
		want time.Duration // rank ceil(q*n) of 1..n ms
	}{
		{1600, 0.999, 1599 * ms}, // 1598.4 -> 1599: 1 above (0.0625 %)
		{2000, 0.999, 1998 * ms}, // 1998 exactly: 2 above (0.1 %)
		{1000, 0.999, 999 * ms},
		{1001, 0.999, 1000 * ms}, // 999.999 -> 1000
		{100, 0.994, 100 * ms},   // 99.4 -> 100, where round takes 99
		{10, 0.05, 1 * ms},       // 0.5 -> 1
		{10, 0.15, 2 * ms},       // 1.5 -> 2, where round would take 2 as well
		{10, 0.11, 2 * ms},       // 1.1 -> 2, where round takes 1
	} {
		l := histogram.New()
		record(t, l, msRange(1, tt.n)...)
		got := l.Quantile(tt.q)
		assert.GreaterOrEqual(t, got, tt.want, "n=%d q=%v", tt.n, tt.q)
		within(t, tt.want, got, 1e-3, "n=%d q=%v", tt.n, tt.q)
		above := l.CountAbove(got)
		assert.LessOrEqual(t, float64(above), (1-tt.q)*float64(tt.n)+1e-9, "n=%d q=%v: %d above", tt.n, tt.q, above)
	}
}

// TestCountAtBucketBoundaries pins that a value recorded as exactly d, or
// equivalent to d in HDR terms, counts as above d unless d is the highest
// value of its bucket: the bucket may hold calls above d, and a cut-off
// share is an upper bound, never below the truth. 50 ms lies in a bucket of
// width 32 µs, [49.984 ms, 50.015 ms]; below 2.048 ms buckets are 1 µs wide.
func TestCountAtBucketBoundaries(t *testing.T) {
	l := histogram.New()
	record(t, l,
		49_900*time.Microsecond,
		50*ms, 50*ms,
		50_010*time.Microsecond, // equivalent to 50 ms
		50_016*time.Microsecond, // next bucket
		1000*time.Microsecond, 1001*time.Microsecond,
	)
	tests := []struct {
		name    string
		d       time.Duration
		above   int64
		between [2]time.Duration
		inside  int64
	}{
		{"exactly 50 ms: its bucket straddles it", 50 * ms, 4, [2]time.Duration{50 * ms, 50 * ms}, 3},
		{"the top of 50 ms's bucket", 50_015 * time.Microsecond, 1, [2]time.Duration{50_015 * time.Microsecond, time.Second}, 4},
		{"the next bucket, from its lowest value", 50_016 * time.Microsecond, 1, [2]time.Duration{49 * ms, 50_016 * time.Microsecond}, 5},
		{"the top of the next bucket", 50_047 * time.Microsecond, 0, [2]time.Duration{49 * ms, 50_047 * time.Microsecond}, 5},
		{"1 ms exact buckets", 1 * ms, 6, [2]time.Duration{1 * ms, 1 * ms}, 1},
		{"1.001 ms", 1001 * time.Microsecond, 5, [2]time.Duration{1000 * time.Microsecond, 1001 * time.Microsecond}, 2},
		{"negative", -ms, 7, [2]time.Duration{-ms, 0}, 0},
		{"reversed bounds", 0, 7, [2]time.Duration{time.Second, 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.above, l.CountAbove(tt.d))
			assert.InDelta(t, float64(tt.above)/7, l.FractionAbove(tt.d), 1e-12)
			assert.Equal(t, tt.inside, l.CountBetween(tt.between[0], tt.between[1]))
		})
	}
}

func TestQuantileIsLowerBound(t *testing.T) {
	tests := []struct {
		name     string
		censored []time.Duration
		q        float64
		want     bool
	}{
		{"no censored samples", nil, 0.99, false},
		{"censored above the estimate", []time.Duration{500 * ms}, 0.5, false},
		{"censored sample is the max", []time.Duration{500 * ms}, 1, true},
		{"censored below the estimate", []time.Duration{30 * ms}, 0.5, true},
		// p50 of 101 samples is 51 ms, whose bucket is [50.976 ms, 51.007 ms]:
		// a censored 51.005 ms is above the sample but equivalent to it.
		{"censored equivalent to the estimate", []time.Duration{51_005 * time.Microsecond}, 0.5, true},
		{"censored in the next bucket", []time.Duration{51_008 * time.Microsecond}, 0.5, false},
		{"one of several below", []time.Duration{900 * ms, 10 * ms, 950 * ms}, 0.99, true},
		{"several, all above", []time.Duration{900 * ms, 950 * ms}, 0.9, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := histogram.New()
			record(t, l, msRange(1, 100)...)
			for _, d := range tt.censored {
				require.True(t, l.RecordCensored(d))
			}
			assert.EqualValues(t, len(tt.censored), l.Censored())
			assert.EqualValues(t, 100+len(tt.censored), l.Count(), "Count includes censored samples")
			assert.Equal(t, tt.want, l.QuantileIsLowerBound(tt.q), "Quantile(%v) = %v", tt.q, l.Quantile(tt.q))
		})
	}
}

func TestQuantileInterval(t *testing.T) {
	tests := []struct {
		name         string
		n            int // samples 1 ms .. n ms
		q, conf      float64
		loRank       int // 0: Min
		hiRank       int // 0: beyond N, Max with HiKnown false
		above        int64
		wantQuantile time.Duration
	}{
		// 1000*0.9 = 900, z = 1.959964, s = sqrt(90) = 9.4868: 881.41 .. 918.59.
		{"p90 of 1000, 95 %", 1000, 0.9, 0.95, 881, 920, 100, 900 * ms},
		// z = 2.575829: 900 -/+ 24.436.
		{"p90 of 1000, 99 %", 1000, 0.9, 0.99, 875, 926, 100, 900 * ms},
		// s = sqrt(250) = 15.811: 500 -/+ 30.99.
		{"median of 1000", 1000, 0.5, 0.95, 469, 532, 500, 500 * ms},
		// docs/method.md#1-the-quantile: a p99.9 from 2,000 samples rests on 2 observations.
		// 1998 -/+ 1.959964*sqrt(1.998) = 2.770: 1995.23 .. 2000.77, upper
		// rank 2002 > 2000.
		{"p99.9 of 2000", 2000, 0.999, 0.95, 1995, 0, 2, 1998 * ms},
		// 10*0.1 = 1 -/+ 1.859: lower rank -1 gives Min.
		{"lower rank below 1", 10, 0.1, 0.95, 0, 4, 9, 1 * ms},
		{"q = 1", 50, 1, 0.95, 50, 0, 0, 50 * ms},
		{"confidence 0 is the point estimate", 1000, 0.9, 0, 900, 901, 100, 900 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := histogram.New()
			record(t, l, msRange(1, tt.n)...)
			iv := l.QuantileInterval(tt.q, tt.conf)
			assert.Equal(t, tt.q, iv.Quantile)
			assert.Equal(t, tt.conf, iv.Confidence)
			// Bounds are highest equivalent values; a rank off by one is off
			// by 1 ms, more than the 0.1 % slack.
			wantLo := time.Duration(tt.loRank) * ms
			if tt.loRank == 0 {
				wantLo = l.Min()
				assert.Equal(t, ms, wantLo)
			}
			assert.GreaterOrEqual(t, iv.Lo, wantLo, "Lo")
			assert.Less(t, iv.Lo, wantLo+wantLo/1000, "Lo")
			if tt.hiRank == 0 {
				assert.False(t, iv.HiKnown)
				assert.Equal(t, l.Max(), iv.Hi)
			} else {
				assert.True(t, iv.HiKnown)
				wantHi := time.Duration(tt.hiRank) * ms
				assert.GreaterOrEqual(t, iv.Hi, wantHi, "Hi")
				assert.Less(t, iv.Hi, wantHi+wantHi/1000, "Hi")
			}
			assert.Equal(t, tt.above, iv.Above)
			within(t, tt.wantQuantile, l.Quantile(tt.q), 1e-3)
		})
	}
}

func TestMerge(t *testing.T) {
	a, b, all := histogram.New(), histogram.New(), histogram.New()
	for i, d := range mixture.Default().Generate(7, 10_000) {
		h := a
		if i%3 == 0 {
			h = b
		}
		h.Record(d)
		all.Record(d)
	}
	a.Record(-time.Second)
	b.Record(-time.Second)
	b.Record(30 * time.Hour)
	b.RecordCensored(2 * time.Second)
	all.RecordCensored(2 * time.Second)
	a.Merge(b)

	assert.Equal(t, all.Count(), a.Count())
	assert.EqualValues(t, 1, a.Censored())
	below, above := a.OutOfRange()
	assert.EqualValues(t, 2, below)
	assert.EqualValues(t, 1, above)
	for _, q := range []float64{0.5, 0.99, 0.999, 1} {
		assert.Equal(t, all.Quantile(q), a.Quantile(q), "q=%v", q)
	}
	assert.True(t, a.QuantileIsLowerBound(1))
	assert.EqualValues(t, 3_334, b.Count()-1, "b is unchanged")

	t.Run("into itself doubles", func(t *testing.T) {
		n, c := a.Count(), a.Censored()
		p99 := a.Quantile(0.99)
		a.Merge(a)
		assert.Equal(t, 2*n, a.Count())
		assert.Equal(t, 2*c, a.Censored())
		assert.Equal(t, p99, a.Quantile(0.99))
		below, above := a.OutOfRange()
		assert.EqualValues(t, 4, below)
		assert.EqualValues(t, 2, above)
	})
}

func TestRecordDoesNotAllocate(t *testing.T) {
	l := histogram.New()
	l.RecordCensored(time.Second) // allocate the censored histogram up front
	allocs := testing.AllocsPerRun(1000, func() {
		l.Record(20 * ms)
		l.Record(-1)
		l.RecordCensored(900 * ms)
	})
	assert.Zero(t, allocs)
}

func BenchmarkRecord(b *testing.B) {
	samples := mixture.Default().Generate(1, 1<<16)
	l := histogram.New()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l.Record(samples[i&(len(samples)-1)])
	}
}

func ExampleLatency() {
	l := histogram.New()
	for i := 1; i <= 1000; i++ {
		l.Record(time.Duration(i) * time.Millisecond)
	}
	l.RecordCensored(5 * time.Second) // a call cut off by a 5 s timeout
	l.Record(-time.Millisecond)       // a clock step: counted, not recorded

	below, above := l.OutOfRange()
	fmt.Println("count:", l.Count(), "censored:", l.Censored(), "out of range:", below, above)
	fmt.Println("p50:", l.Quantile(0.5).Round(time.Millisecond))
	fmt.Println("p99.9:", l.Quantile(0.999).Round(time.Millisecond), "lower bound:", l.QuantileIsLowerBound(0.999))
	fmt.Println("max:", l.Quantile(1).Round(time.Millisecond), "lower bound:", l.QuantileIsLowerBound(1))
	// The bucket holding 900ms (899.584ms to 900.095ms) may hold calls above
	// 900ms: it counts as cut off, and the share is an upper bound.
	fmt.Printf("a 900ms timeout cuts off at most %.2f%%\n", 100*l.FractionAbove(900*time.Millisecond))
	iv := l.QuantileInterval(0.99, 0.95)
	fmt.Println("p99 95% interval:", iv.Lo.Round(time.Millisecond), "-", iv.Hi.Round(time.Millisecond), "samples above:", iv.Above)
	// Output:
	// count: 1001 censored: 1 out of range: 1 0
	// p50: 501ms
	// p99.9: 1s lower bound: false
	// max: 5.001s lower bound: true
	// a 900ms timeout cuts off at most 10.19%
	// p99 95% interval: 984ms - 999ms samples above: 10
}

// TestCountsSeeLaterSamples pins the cache behind CountAbove and
// CountBetween: a sample recorded or merged after a query counts in the
// next one.
func TestCountsSeeLaterSamples(t *testing.T) {
	l := histogram.New()
	l.Record(10 * time.Millisecond)
	require.EqualValues(t, 1, l.CountAbove(time.Millisecond))
	l.Record(20 * time.Millisecond)
	assert.EqualValues(t, 2, l.CountAbove(time.Millisecond))
	l.RecordN(30*time.Millisecond, 3)
	assert.EqualValues(t, 5, l.CountBetween(time.Millisecond, time.Second))
	l.RecordCensored(40 * time.Millisecond)
	assert.EqualValues(t, 6, l.CountAbove(time.Millisecond))
	o := histogram.New()
	o.Record(50 * time.Millisecond)
	l.Merge(o)
	assert.EqualValues(t, 7, l.CountAbove(time.Millisecond))
	l.Merge(l)
	assert.EqualValues(t, 14, l.CountAbove(time.Millisecond))
	assert.EqualValues(t, 2, l.CountBetween(45*time.Millisecond, time.Second))
}

// TestQuantileIntervalWithout: the interval of a period's samples less one
// window's is the interval of a histogram of the rest, bound for bound,
// for windows that are and are not worse than the rest; a histogram that
// is not a part of l is refused.
func TestQuantileIntervalWithout(t *testing.T) {
	whole, part, rest := histogram.New(), histogram.New(), histogram.New()
	for i := range 20000 {
		d := time.Duration(1000+(i*7919)%400000) * time.Microsecond
		if i%10 == 0 {
			d *= 3 // the part is slower
			part.Record(d)
		} else {
			rest.Record(d)
		}
		whole.Record(d)
	}
	for _, q := range []float64{0.5, 0.99, 0.999} {
		for _, conf := range []float64{0.95, 0.9999} {
			got, ok := whole.QuantileIntervalWithout(part, q, conf)
			require.True(t, ok)
			assert.Equal(t, rest.QuantileInterval(q, conf), got, "q %v confidence %v", q, conf)
		}
	}
	// Without itself nothing is left; without nothing, the whole.
	got, ok := whole.QuantileIntervalWithout(whole, 0.99, 0.95)
	require.True(t, ok)
	assert.Equal(t, histogram.Interval{Quantile: 0.99, Confidence: 0.95}, got)
	got, ok = whole.QuantileIntervalWithout(histogram.New(), 0.99, 0.95)
	require.True(t, ok)
	assert.Equal(t, whole.QuantileInterval(0.99, 0.95), got)
	assert.True(t, got.HiKnown)
	// Few samples: the rest's upper bound is its largest, unknown.
	small, one := histogram.New(), histogram.New()
	record(t, small, 10*ms, 20*ms, 30*ms, 900*ms)
	record(t, one, 900*ms)
	got, ok = small.QuantileIntervalWithout(one, 0.999, 0.95)
	require.True(t, ok)
	assert.False(t, got.HiKnown)
	within(t, 30*ms, got.Hi, 0.001)
	_, ok = part.QuantileIntervalWithout(whole, 0.99, 0.95)
	assert.False(t, ok, "the whole is not a part of one window")
}
