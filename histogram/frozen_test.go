package histogram

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A frozen cell thaws to the cell it was: every bucket, the censored and
// connect histograms, out-of-range counts, exclusions, arrivals.
func TestFreezeThaw(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := NewCell(1_793_613_600)
	for i := range 500 {
		d := time.Duration(r.ExpFloat64() * float64(20*time.Millisecond))
		switch i % 50 {
		case 0:
			c.RecordCensored(d)
		case 1:
			c.Record(-time.Second) // below
		case 2:
			c.Record(48 * time.Hour) // above
		case 3:
			c.Exclude("status 5xx")
		}
		c.Record(d)
		c.RecordConnect(d / 10)
		c.Arrive(c.Start+int64(r.IntN(60)), 1)
	}
	b, ok := freeze(c)
	require.True(t, ok)
	got := thaw(c.Start, b)
	for _, p := range [][2]interface{ ForEachBucket(func(v, n int64) bool) }{{c.Latency, got.Latency}, {c.Censored, got.Censored}, {c.Connect, got.Connect}} {
		assert.Equal(t, buckets(p[0]), buckets(p[1]))
	}
	assert.Equal(t, c.Below, got.Below)
	assert.Equal(t, c.Above, got.Above)
	assert.Equal(t, c.Excluded, got.Excluded)
	assert.Equal(t, c.Seconds, got.Seconds)
	assert.Equal(t, c.Calls, got.Calls)
	assert.Equal(t, c.Count(), got.Count())
	assert.Less(t, len(b), c.bytes()/3, "frozen is small")
}

func buckets(p interface{ ForEachBucket(func(v, n int64) bool) }) [][2]int64 {
	var out [][2]int64
	p.ForEachBucket(func(v, n int64) bool { out = append(out, [2]int64{v, n}); return true })
	return out
}

// A group keeps hotCells timed cells open; samples that come back to a
// frozen one thaw it, and the totals are those of a set that froze
// nothing, whatever the order.
func TestFrozenCellsKeepEverySample(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := NewSet()
	s.Every(time.Minute)
	g := s.Group("g")
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	want := New()
	for i := range 20_000 {
		at := start.Add(time.Duration(i) * 300 * time.Millisecond) // 100 minutes in order
		if i%7 == 0 {
			at = start.Add(time.Duration(r.IntN(100)) * time.Minute) // and some late
		}
		d := time.Duration(1+r.IntN(100_000)) * time.Microsecond
		g.Cell(at).Record(d)
		want.Record(d)
	}
	assert.LessOrEqual(t, len(g.cells), hotCells)
	assert.Equal(t, 100, g.NumCells())
	other := NewSet()
	other.Every(time.Minute)
	other.Merge(s)
	other.Merge(s)
	totals, windows := other.Collapse()
	assert.Len(t, windows["g"].Starts, 100)
	got := totals.Group("g").Latency
	assert.Equal(t, 2*want.Count(), got.Count())
	for _, q := range []float64{0.5, 0.99, 0.999} {
		assert.Equal(t, want.Quantile(q), got.Quantile(q), q)
	}
}
