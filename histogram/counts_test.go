package histogram

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/mixture"
)

// pair is a Latency and the dense reference fed the same samples.
type pair struct {
	l *Latency
	d *denseLatency
}

func newPair() pair { return pair{New(), newDense()} }

// latencyDraw draws a latency of one of several shapes, out-of-range ones
// now and then.
func latencyDraw(r *rand.Rand, shape int) time.Duration {
	switch r.IntN(50) {
	case 0:
		return -time.Duration(r.Int64N(int64(time.Second)))
	case 1:
		return Highest + time.Duration(r.Int64N(2))*time.Microsecond
	case 2:
		return time.Duration(r.Int64N(int64(time.Microsecond)))
	}
	switch shape % 6 {
	case 0: // the first bucket, one value per microsecond
		return time.Duration(r.Int64N(3000)) * time.Microsecond
	case 1: // the worked example
		v := 20 * time.Millisecond.Seconds() * math.Exp(0.5*r.NormFloat64())
		if r.Float64() < 0.02 {
			v += 0.15 + 0.65*r.Float64()
		}
		return time.Duration(v * float64(time.Second))
	case 2: // log-uniform over the whole range: sparse, every page
		return time.Duration(math.Exp(r.Float64() * math.Log(float64(Highest))))
	case 3: // exponential
		return time.Duration(r.ExpFloat64() * float64(50*time.Millisecond))
	case 4: // whole milliseconds, as nginx logs them: sparse, with start
		return time.Duration(r.ExpFloat64()*100) * time.Millisecond
	default: // a few distinct values, many samples each
		return time.Duration(1+r.IntN(8)) * 100 * time.Millisecond
	}
}

// randomOps applies n random operations to p (samples, censored samples,
// bulk counts large enough to need more than 16 and 32 bits, bounds
// declared exact, +Inf buckets).
func randomOps(r *rand.Rand, p pair, shape, n int) {
	for range n {
		d := latencyDraw(r, shape)
		switch k := r.IntN(100); {
		case k < 80:
			p.l.Record(d)
			p.d.Record(d)
		case k < 88:
			p.l.RecordCensored(d)
			p.d.RecordCensored(d)
		case k < 95:
			c := 1 + r.Int64N(1<<uint(r.IntN(41)))
			p.l.RecordN(d, c)
			p.d.RecordN(d, c)
		case k < 98:
			c := r.Int64N(1 << 20)
			p.l.RecordCensoredN(d, c)
			p.d.RecordCensoredN(d, c)
		case k < 99:
			p.l.RecordAboveN(d, 3)
			p.d.RecordAboveN(d, 3)
		default:
			snap := []time.Duration{d, d.Round(time.Millisecond), time.Second}
			p.l.SnapTo(snap)
			p.d.SnapTo(snap)
		}
	}
}

// probes returns durations to ask about: the bounds of every filled bucket
// and their neighbours, and random ones.
func probes(r *rand.Rand, d *denseLatency) []time.Duration {
	out := []time.Duration{-time.Nanosecond, 0, 1, time.Microsecond, time.Millisecond, time.Second, Highest, Highest + time.Hour, math.MaxInt64}
	var filled []hdr.Bar
	for _, b := range d.h.Distribution() {
		if b.Count > 0 {
			filled = append(filled, b)
		}
	}
	for range min(len(filled), 40) {
		b := filled[r.IntN(len(filled))]
		for _, v := range []int64{b.From - 1, b.From, b.From + 1, b.To - 1, b.To, b.To + 1} {
			out = append(out, toDuration(v), toDuration(v)+time.Duration(r.Int64N(1000)))
		}
	}
	for range 30 {
		out = append(out, latencyDraw(r, r.IntN(6)))
	}
	return out
}

var quantiles = []float64{math.NaN(), -1, 0, 1e-12, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 0.99999, 1, 1.5, math.Inf(1)}

// requireSame checks every query of p.l against p.d.
func requireSame(t *testing.T, r *rand.Rand, p pair, msg string) {
	t.Helper()
	l, d := p.l, p.d
	require.Equal(t, d.Count(), l.Count(), msg)
	require.Equal(t, d.Censored(), l.Censored(), msg)
	db, da := d.OutOfRange()
	lb, la := l.OutOfRange()
	require.Equal(t, []int64{db, da}, []int64{lb, la}, msg)
	require.Equal(t, d.Min(), l.Min(), msg)
	require.Equal(t, d.Max(), l.Max(), msg)
	require.Equal(t, d.Mean(), l.Mean(), msg)
	require.Equal(t, d.h.Mean(), meanOf(&l.h), msg, "the float64 itself")
	qs := slices.Clone(quantiles)
	for range 8 {
		qs = append(qs, r.Float64())
	}
	for _, q := range qs {
		require.Equal(t, d.Quantile(q), l.Quantile(q), "%s: q=%v", msg, q)
		require.Equal(t, d.QuantileIsLowerBound(q), l.QuantileIsLowerBound(q), "%s: q=%v", msg, q)
		for _, c := range []float64{0, 0.95, 1} {
			want, got := d.QuantileInterval(q, c), l.QuantileInterval(q, c)
			want.Quantile, got.Quantile = 0, 0 // NaN is not NaN
			require.Equal(t, want, got, "%s: q=%v confidence %v", msg, q, c)
		}
	}
	ps := probes(r, d)
	for i, x := range ps {
		require.Equal(t, d.CountAbove(x), l.CountAbove(x), "%s: CountAbove(%v)", msg, x)
		require.Equal(t, d.FractionAbove(x), l.FractionAbove(x), "%s: FractionAbove(%v)", msg, x)
		y := ps[r.IntN(len(ps))]
		require.Equal(t, d.CountBetween(x, y), l.CountBetween(x, y), "%s: CountBetween(%v, %v)", msg, x, y)
		require.Equal(t, d.CountBetween(y, x), l.CountBetween(y, x), "%s: CountBetween(%v, %v)", msg, y, x)
		if i%5 == 0 {
			require.Equal(t, d.NextDistinct(x), l.NextDistinct(x), "%s: NextDistinct(%v)", msg, x)
		}
	}
	require.Equal(t, d.Bars(), l.Bars(), msg)
	require.Equal(t, d.Sampler(), l.Sampler(), msg)
}

func meanOf(c *counts) float64 {
	if c.total == 0 {
		return 0
	}
	var mean float64
	for i, n := range c.all() {
		mean += float64(n) * float64(medianAt(int64(i))) / float64(c.total)
	}
	return mean
}

// TestLatencyMatchesDense is the acceptance test of the compact counts:
// on random samples of several shapes (sparse and paged forms, counts past
// 16 and 32 bits, totals near MaxInt64, censored and out-of-range samples,
// SnapTo and RecordAboveN, merges of every pair of forms, into itself,
// interval logs' histograms), every query answers what the dense
// hdrhistogram-go histogram Latency used to hold answers: quantiles,
// confidence intervals, counts and fractions above and between, min, max,
// mean (the float64 itself), Bars, the Sampler.
func TestLatencyMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	sizes := []int{0, 1, 2, 10, 100, 1000, 5000, 30_000}
	if testing.Short() {
		sizes = sizes[:7]
	}
	forms := map[string]bool{}
	for _, n := range sizes {
		for shape := range 6 {
			name := fmt.Sprintf("%d samples, shape %d", n, shape)
			p := newPair()
			randomOps(r, p, shape, n)
			forms[form(&p.l.h)] = true
			requireSame(t, r, p, name)

			// Merge another of a different shape and size, then itself.
			o := newPair()
			randomOps(r, o, shape+1+r.IntN(5), r.IntN(2*n+1))
			p.l.Merge(o.l)
			p.d.Merge(o.d)
			requireSame(t, r, p, name+", merged")
			requireSame(t, r, o, name+", merged from")
			p.l.Merge(p.l)
			p.d.Merge(p.d)
			requireSame(t, r, p, name+", merged into itself")

			// An interval log's histograms.
			all, cens := newPacked(), newPacked()
			for range r.IntN(n + 1) {
				v, c := int64(latencyDraw(r, shape)/time.Microsecond), 1+r.Int64N(1000)
				if v < 0 || v > highestMicros {
					continue
				}
				_ = all.RecordValues(v, c)
				if r.IntN(10) == 0 {
					_ = cens.RecordValues(v, c)
				}
			}
			p.l.addPacked(all, cens, 1, 2)
			p.d.addPacked(all, cens, 1, 2)
			requireSame(t, r, p, name+", interval log")

			// Recording after queries (which fill the cache).
			randomOps(r, p, shape, 10)
			requireSame(t, r, p, name+", recorded after queries")
		}
	}
	assert.Equal(t, map[string]bool{"sparse": true, "sparse with start": true, "paged": true}, forms)
}

func form(c *counts) string {
	switch {
	case c.dir != nil:
		return "paged"
	case c.start != nil:
		return "sparse with start"
	}
	return "sparse"
}

// TestCountsEdges pins what random samples rarely reach: a bucket counted
// one by one past 16 bits, totals at MaxInt64 (refused, and dropped from
// merges), and the switch from the sparse form to the paged one.
func TestCountsEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	p := newPair()
	for range 3*loMax + 5 {
		p.l.Record(7 * time.Millisecond)
		p.d.Record(7 * time.Millisecond)
	}
	p.l.RecordN(8*time.Millisecond, loMax-1)
	p.d.RecordN(8*time.Millisecond, loMax-1)
	for range 3 {
		p.l.Record(8 * time.Millisecond)
		p.d.Record(8 * time.Millisecond)
	}
	require.NotNil(t, p.l.h.hi, "counts past 16 bits")
	requireSame(t, r, p, "past 16 bits")

	// The total at MaxInt64: more is refused and counted out of range.
	p.l.RecordN(time.Second, math.MaxInt64-p.l.Count())
	p.d.RecordN(time.Second, math.MaxInt64-p.d.Count())
	require.EqualValues(t, math.MaxInt64, p.l.Count())
	assert.False(t, p.l.Record(time.Millisecond))
	assert.False(t, p.d.Record(time.Millisecond))
	assert.False(t, p.l.RecordN(time.Millisecond, 2))
	assert.False(t, p.d.RecordN(time.Millisecond, 2))
	requireSame(t, r, p, "at MaxInt64")
	o := newPair()
	o.l.RecordN(time.Millisecond, 5)
	o.d.RecordN(time.Millisecond, 5)
	o.l.RecordCensored(2 * time.Millisecond)
	o.d.RecordCensored(2 * time.Millisecond)
	p.l.Merge(o.l)
	p.d.Merge(o.d)
	requireSame(t, r, p, "merged past MaxInt64")
	_, above := p.l.OutOfRange()
	assert.EqualValues(t, 1+2+6, above, "the refused samples and the dropped buckets")

	// Sparse until paging pays, then paged.
	c := &counts{}
	want := map[int]int64{}
	for i := range 200 {
		c.add(i*28, 1) // one bucket in every other page or so: paging does not pay
		want[i*28]++
	}
	assert.Nil(t, c.dir, "sparse buckets stay sparse")
	for i := range 5000 {
		c.add(10_000+i, 2) // filled pages: paging pays at 4,096 buckets
		want[10_000+i] += 2
	}
	require.NotNil(t, c.dir, "dense buckets turn paged")
	assert.Nil(t, c.idx)
	got := map[int]int64{}
	for i, k := range c.all() {
		got[i] = k
	}
	assert.Equal(t, want, got)
	assert.LessOrEqual(t, c.bytes(), 4*4*len(want), "at most four times the sparse form")
}

// TestCountsEncodeAsTheLibrary: the counts written as a V2 histogram (what
// an interval log holds) are the bytes hdrhistogram-go's encoder writes
// for the dense histogram of the same samples.
func TestCountsEncodeAsTheLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for i := range 60 {
		p := newPair()
		randomOps(r, p, i, []int{0, 3, 300, 3000}[i%4])
		want, err := p.d.h.Encode(hdr.V2CompressedEncodingCookieBase)
		require.NoError(t, err)
		got, err := encodeBuckets(func(yield func(int64, int64) bool) {
			for i, n := range p.l.h.all() {
				if !yield(valueAt(int64(i)), n) {
					return
				}
			}
		}, int64(p.l.Max()/time.Microsecond))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), i)
	}
}

// TestLatencyMemory is the budget: a group of the worked example's
// latency with a few thousand filled buckets costs at most 32 KB (a dense
// histogram cost 230 KB), and one of 50 samples at most 1 KB.
func TestLatencyMemory(t *testing.T) {
	tests := []struct {
		name    string
		samples int
		groups  int
		budget  int
	}{
		{"10,000 samples", 10_000, 100, 32 << 10},
		{"200,000 samples", 200_000, 10, 32 << 10},
		{"50 samples", 50, 10_000, 1 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := mixture.Default().Generate(1, tt.samples*min(tt.groups, 10))
			ls := make([]*Latency, tt.groups)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC() // and what sync.Pools held
			runtime.ReadMemStats(&before)
			for g := range ls {
				l := New()
				for i := range tt.samples {
					l.Record(samples[(g*tt.samples+i)%len(samples)])
				}
				ls[g] = l
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perGroup := int(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc)) / tt.groups
			filled := len(newView(&ls[0].h).at)
			t.Logf("%d filled buckets, %d bytes a histogram (counts alone: %d)", filled, perGroup, ls[0].h.bytes())
			assert.LessOrEqual(t, perGroup, tt.budget)
			assert.LessOrEqual(t, ls[0].h.bytes(), tt.budget)
			runtime.KeepAlive(ls)
			runtime.KeepAlive(samples)
		})
	}
}

// TestQuantileRankLargeTotals: the tolerance for float error in q x N is a
// few ulps, not a share of N, so that a true fraction of a rank still
// rounds up at large totals (0.9999 x 1,000,009,999 = 999,909,998.0001).
func TestQuantileRankLargeTotals(t *testing.T) {
	assert.EqualValues(t, 999_909_999, quantileRank(0.9999, 1_000_009_999))
	assert.EqualValues(t, 1_000_000_000_001, quantileRank(0.1, 10_000_000_000_001))
	assert.EqualValues(t, 1998, quantileRank(0.999, 2000))
	assert.EqualValues(t, 1599, quantileRank(0.999, 1600))
	assert.EqualValues(t, 1, quantileRank(math.NaN(), 10))
	assert.EqualValues(t, 10, quantileRank(1, 10))
}
