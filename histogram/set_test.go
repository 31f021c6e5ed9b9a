package histogram_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// at returns t0 + sec seconds + frac of a second.
func at(sec int64, frac time.Duration) time.Time {
	return t0.Add(time.Duration(sec)*time.Second + frac)
}

func TestArrivalsHandMade(t *testing.T) {
	// Calls per second from t0: 3 1 0 5 2 0 0 0 0 4.
	a := histogram.NewArrivals()
	for sec, n := range []int{3, 1, 0, 5, 2, 0, 0, 0, 0, 4} {
		for i := range n {
			a.Add(at(int64(sec), time.Duration(i)*100*time.Millisecond))
		}
	}
	assert.EqualValues(t, 15, a.Count())
	assert.Equal(t, 10*time.Second, a.Span())
	assert.InDelta(t, 1.5, a.MeanRate(), 1e-12)

	tests := []struct {
		w         time.Duration
		calls     int64
		startSec  int64
		rationale string
	}{
		{time.Second, 5, 3, "the busiest second"},
		{0, 5, 3, "w below 1 s reads as 1 s"},
		{1500 * time.Millisecond, 5, 3, "w is truncated to whole seconds"},
		{2 * time.Second, 7, 3, "seconds 3-4"},
		{3 * time.Second, 7, 3, "seconds 3-5; 2-4 has 7 too but starts without calls"},
		{5 * time.Second, 11, 0, "seconds 0-4"},
		{7 * time.Second, 11, 0, "seconds 0-6 and 1-7 hold 11 and 8; 3-9 holds 11 too"},
		{8 * time.Second, 11, 0, "seconds 0-7; 2-9 holds 11 too"},
		{10 * time.Second, 15, 0, "the whole span"},
		{time.Hour, 15, 0, "longer than the span: everything"},
	}
	for _, tt := range tests {
		calls, start := a.Busiest(tt.w)
		assert.Equal(t, tt.calls, calls, "w=%v: %s", tt.w, tt.rationale)
		assert.Equal(t, at(tt.startSec, 0), start.UTC(), "w=%v: %s", tt.w, tt.rationale)
	}
}

// TestArrivalsBusiestStaysInSpan pins that a window never runs past the last
// second: with calls at seconds 0, 5 and 6 (1, 1 and 3 calls), the busiest
// 3 s window is seconds 4-6, not 5-7.
func TestArrivalsBusiestStaysInSpan(t *testing.T) {
	a := histogram.NewArrivals()
	for sec, n := range map[int64]int{0: 1, 5: 1, 6: 3} {
		for range n {
			a.Add(at(sec, 0))
		}
	}
	calls, start := a.Busiest(3 * time.Second)
	assert.EqualValues(t, 4, calls)
	assert.Equal(t, at(4, 0), start.UTC())
}

func TestArrivalsEmpty(t *testing.T) {
	a := histogram.NewArrivals()
	assert.Zero(t, a.Count())
	assert.Zero(t, a.Span())
	assert.Zero(t, a.MeanRate())
	calls, start := a.Busiest(time.Second)
	assert.Zero(t, calls)
	assert.True(t, start.IsZero())
}

// naive is the obvious map-based reference for Arrivals.
type naive map[int64]int64

func (n naive) busiest(w int64) int64 {
	first, last := int64(1<<62), int64(-1<<62)
	var total int64
	for s, c := range n {
		first, last = min(first, s), max(last, s)
		total += c
	}
	if last-first+1 <= w {
		return total
	}
	var best int64
	for s := first; s+w-1 <= last; s++ {
		best = max(best, n.window(s, w))
	}
	return best
}

func (n naive) window(start, w int64) int64 {
	var sum int64
	for s := start; s < start+w; s++ {
		sum += n[s]
	}
	return sum
}

// TestArrivalsAgainstNaive exercises sparse and dense chunks, chunk
// boundaries, times before 1970 and out-of-order adds against a map.
func TestArrivalsAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	tests := []struct {
		name       string
		base, span int64 // Unix seconds
		calls      int
	}{
		{"sparse", t0.Unix(), 20_000, 300},
		{"dense", t0.Unix(), 3_000, 20_000},
		{"across 1970", -1_500, 3_000, 5_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := histogram.NewArrivals(), histogram.NewArrivals()
			ref := naive{}
			for i := range tt.calls {
				sec := tt.base + r.Int64N(tt.span)
				ref[sec]++
				tm := time.Unix(sec, r.Int64N(1e9))
				if i%2 == 0 {
					a.Add(tm)
				} else {
					b.Add(tm)
				}
			}
			a.Merge(b)
			require.EqualValues(t, tt.calls, a.Count())
			first, last := int64(1<<62), int64(-1<<62)
			for s := range ref {
				first, last = min(first, s), max(last, s)
			}
			assert.Equal(t, time.Duration(last-first+1)*time.Second, a.Span())
			for _, w := range []int64{1, 2, 7, 60, 1024, 1025, 5000} {
				calls, start := a.Busiest(time.Duration(w) * time.Second)
				assert.Equal(t, ref.busiest(w), calls, "w=%d", w)
				assert.Equal(t, calls, ref.window(start.Unix(), w), "w=%d: the window at start", w)
				assert.GreaterOrEqual(t, start.Unix(), first)
			}
		})
	}
}

func TestArrivalsMerge(t *testing.T) {
	a, b := histogram.NewArrivals(), histogram.NewArrivals()
	a.Add(at(0, 0))
	a.Add(at(1, 0))
	b.Add(at(1, 500*time.Millisecond))
	b.Add(at(1, 900*time.Millisecond))
	b.Add(at(5, 0))
	a.Merge(b)
	assert.EqualValues(t, 5, a.Count())
	assert.Equal(t, 6*time.Second, a.Span())
	calls, start := a.Busiest(time.Second)
	assert.EqualValues(t, 3, calls)
	assert.Equal(t, at(1, 0), start.UTC())
	assert.EqualValues(t, 3, b.Count(), "b is unchanged")

	a.Merge(a)
	assert.EqualValues(t, 10, a.Count())
	calls, _ = a.Busiest(time.Second)
	assert.EqualValues(t, 6, calls)
}

// TestArrivalsMemory pins the point of the chunked layout: a week of
// per-second data stays near 4 bytes a second (a map would take 10 times
// more), and a sparse week stays small.
func TestArrivalsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("adds 600,000 calls")
	}
	tests := []struct {
		name  string
		every int64 // seconds between calls
		limit uint64
	}{
		{"every second for a week", 1, 3 << 20},
		{"every minute for a week", 60, 256 << 10},
	}
	const week = 7 * 24 * 3600
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			a := histogram.NewArrivals()
			for s := int64(0); s < week; s += tt.every {
				a.Add(at(s, 0))
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			require.EqualValues(t, week/tt.every, a.Count())
			grown := after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
			t.Logf("heap grew by %d bytes", grown)
			assert.Less(t, grown, tt.limit)
			runtime.KeepAlive(a)
		})
	}
}

func TestSetGroupAndMerge(t *testing.T) {
	s1, s2 := histogram.NewSet(), histogram.NewSet()
	for name, n := range map[string]int{"/b": 3, "/a": 2} {
		g := s1.Group(name)
		for i := range n {
			g.Latency.Record(time.Duration(i+1) * ms)
			g.Arrivals.Add(at(int64(i), 0))
		}
	}
	s1.Group("/b").Excluded["status 500"] = 4
	s1.Group("/b").Excluded["status 404"] = 1

	g := s2.Group("/b")
	g.Latency.Record(900 * ms)
	g.Latency.RecordCensored(2 * time.Second)
	g.Arrivals.Add(at(10, 0))
	g.Arrivals.Add(at(10, 0))
	g.Excluded["status 500"] = 6
	s2.Group("/c").Excluded["status 400"] = 2

	require.Same(t, s1.Group("/b"), s1.Group("/b"), "Group creates once")
	s1.Merge(s2)

	var names []string
	for _, g := range s1.Groups() {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"/a", "/b", "/c"}, names)

	b := s1.Group("/b")
	assert.EqualValues(t, 5, b.Latency.Count())
	assert.EqualValues(t, 1, b.Latency.Censored())
	assert.Equal(t, map[string]int64{"status 500": 10, "status 404": 1}, b.Excluded)
	assert.EqualValues(t, 5, b.Arrivals.Count())
	assert.Equal(t, 11*time.Second, b.Arrivals.Span())
	assert.EqualValues(t, 2, s1.Group("/a").Latency.Count())
	assert.Equal(t, map[string]int64{"status 400": 2}, s1.Group("/c").Excluded)
	assert.Zero(t, s1.Group("/c").Latency.Count())

	// s2 is unchanged and shares nothing with s1.
	assert.EqualValues(t, 2, s2.Group("/b").Latency.Count())
	assert.Equal(t, map[string]int64{"status 500": 6}, s2.Group("/b").Excluded)
	s1.Group("/c").Excluded["status 400"]++
	assert.EqualValues(t, 2, s2.Group("/c").Excluded["status 400"])

	s1.Merge(s1)
	assert.EqualValues(t, 10, s1.Group("/b").Latency.Count())
	assert.Equal(t, map[string]int64{"status 500": 20, "status 404": 2}, s1.Group("/b").Excluded)
	assert.EqualValues(t, 10, s1.Group("/b").Arrivals.Count())
}

func TestSetLimitFoldsIntoOther(t *testing.T) {
	s := histogram.NewSet()
	s.Limit(2)
	s.Group("/a").Latency.Record(time.Millisecond)
	s.Group("/b").Latency.Record(time.Millisecond)
	for _, name := range []string{"/c", "/d", "/c", "/e"} {
		g := s.Group(name)
		require.Equal(t, histogram.Other, g.Name)
		g.Latency.Record(2 * time.Millisecond)
	}
	assert.Same(t, s.Group("/a"), s.Group("/a"), "groups kept before the limit stay")
	names := []string{}
	for _, g := range s.Groups() {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"/a", "/b", histogram.Other}, names)
	samples, groups := s.Folded()
	assert.EqualValues(t, 4, samples)
	assert.Equal(t, 3, groups)
	assert.EqualValues(t, 4, s.Group(histogram.Other).Latency.Count())

	// Merging carries the fold counts and the connect times.
	o := histogram.NewSet()
	o.Group("/a").RecordConnect(3 * time.Millisecond)
	s.Merge(o)
	require.NotNil(t, s.Group("/a").Connect)
	assert.EqualValues(t, 1, s.Group("/a").Connect.Count())
	assert.Nil(t, s.Group("/b").Connect, "connect histograms are made only when needed")
}

// TestSetFold: Fold counts a sample as Group does beyond the limit, and
// Merge adds up the folds of sets filled apart (one per core), counting a
// group folded in both once.
func TestSetFold(t *testing.T) {
	limited := histogram.NewSet()
	limited.Limit(1)
	limited.Group("/a")
	folding := histogram.NewSet()
	folding.Group("/a")
	for _, name := range []string{"/x", "/y", "/x"} {
		assert.Same(t, limited.Group(histogram.Other), limited.Group(name))
		assert.Same(t, folding.Group(histogram.Other), folding.Fold(name))
	}
	ls, lg := limited.Folded()
	fs, fg := folding.Folded()
	assert.Equal(t, []any{int64(3), 2}, []any{ls, lg})
	assert.Equal(t, []any{ls, lg}, []any{fs, fg})

	other := histogram.NewSet()
	other.Fold("/y").Latency.Record(time.Millisecond)
	other.Fold("/z")
	folding.Merge(other)
	fs, fg = folding.Folded()
	assert.EqualValues(t, 5, fs)
	assert.Equal(t, 3, fg, "/x, /y and /z")
	assert.EqualValues(t, 1, folding.Group(histogram.Other).Latency.Count())

	// Groups a SQL engine folded: their number, not their names, which
	// add to the named ones and survive a merge.
	engine := histogram.NewSet()
	engine.AddFoldedUnnamed(40, 7)
	engine.AddFoldedUnnamed(2, 0)
	folding.Merge(engine)
	fs, fg = folding.Folded()
	assert.EqualValues(t, 47, fs)
	assert.Equal(t, 10, fg, "three named and seven counted")
}
