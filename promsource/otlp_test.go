package promsource

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
)

func explicitPoint(series string, cumulative bool, start, end int64, bounds []float64, counts ...uint64) *ingest.MetricPoint {
	var n uint64
	for _, c := range counts {
		n += c
	}
	p := &ingest.MetricPoint{File: "m.jsonl", Record: 1, Metric: "d", Unit: time.Millisecond, UnitFrom: "u", Cumulative: cumulative,
		Series: series, Group: "g", Time: time.Unix(end, 0), Count: n, Sum: math.NaN(), Min: math.NaN(), Max: math.NaN(),
		Bounds: bounds, Counts: counts}
	if start > 0 {
		p.Start = time.Unix(start, 0)
	}
	return p
}

// A cumulative series: its latest point holds the others; a later start
// is a restart, whose counts add to those before it.
func TestOTLPSetCumulative(t *testing.T) {
	s := NewOTLPSet()
	b := []float64{10, 100}
	for _, p := range []*ingest.MetricPoint{
		explicitPoint("a", true, 1000, 1060, b, 1, 0, 0),
		explicitPoint("a", true, 1000, 1120, b, 5, 2, 0), // holds the one above
		explicitPoint("a", true, 1000, 1090, b, 3, 1, 0), // older: passed over
		explicitPoint("a", true, 1150, 1200, b, 0, 1, 1), // the process restarted
	} {
		require.NoError(t, s.Add(p, "", false))
	}
	res, err := s.Result("")
	require.NoError(t, err)
	require.Len(t, res.Groups, 1)
	g := res.Groups[0]
	require.NoError(t, g.Err)
	assert.Equal(t, 9.0, g.Calls, "7 of the first segment, 2 after the restart (1+0+0 and 3+1+0 are held by 5+2+0)")
	assert.Equal(t, OTLPExplicit, res.Kind)
	assert.Equal(t, 200*time.Second, res.Window, "from the earliest start to the latest point")
	assert.InDelta(t, 9.0/200, g.Rate, 1e-12)
	h := g.Overall
	require.Len(t, h.Buckets, 3)
	assert.Equal(t, []float64{5, 3, 1}, []float64{h.Buckets[0].Count, h.Buckets[1].Count, h.Buckets[2].Count})
	assert.Equal(t, 0.01, h.Buckets[0].Hi, "milliseconds to seconds")
	assert.True(t, math.IsInf(h.Buckets[2].Hi, 1), "no max: the last bucket is unbounded")
}

func TestOTLPSetDelta(t *testing.T) {
	s := NewOTLPSet()
	b := []float64{10, 100}
	p1 := explicitPoint("a", false, 1000, 1060, b, 1, 2, 0)
	p1.Sum, p1.Max = 90, 40
	p2 := explicitPoint("b", false, 1060, 1120, b, 0, 1, 0)
	p2.Sum, p2.Max = 30, 30
	p3 := explicitPoint("c", false, 1060, 1120, b, 4, 0, 0)
	for _, p := range []*ingest.MetricPoint{p1, p2} {
		require.NoError(t, s.Add(p, "", false))
	}
	require.NoError(t, s.Add(p3, "status 5xx", false))
	res, err := s.Result("d")
	require.NoError(t, err)
	g := res.Groups[0]
	require.NoError(t, g.Err)
	assert.Equal(t, 4.0, g.Calls)
	assert.Equal(t, map[string]int64{"status 5xx": 4}, g.Excluded)
	assert.InDelta(t, 0.030, g.Mean, 1e-12, "(90+30) ms / 4 calls")
	// The largest call, 40 ms, bounds the highest bucket that holds calls.
	last := g.Overall.Buckets[len(g.Overall.Buckets)-1]
	assert.Equal(t, 0.01, last.Lo)
	assert.Equal(t, 0.04, last.Hi)
	d, lower := g.Overall.Upper(0.999)
	assert.Equal(t, 40*time.Millisecond, d)
	assert.False(t, lower)

	// Bounds that differ within a group cannot be added.
	p4 := explicitPoint("e", false, 1060, 1120, []float64{10, 50, 100}, 1, 1, 0, 0)
	require.NoError(t, s.Add(p4, "", false))
	res, err = s.Result("d")
	require.NoError(t, err)
	assert.ErrorContains(t, res.Groups[0].Err, "do not all have the same explicit bounds")
}

func TestOTLPSetMetrics(t *testing.T) {
	s := NewOTLPSet()
	p := explicitPoint("a", false, 1000, 1060, []float64{1}, 1, 0)
	require.NoError(t, s.Add(p, "", false))
	q := explicitPoint("a", false, 1000, 1060, []float64{1}, 1, 0)
	q.Metric = "other"
	require.NoError(t, s.Add(q, "", false))
	require.NoError(t, s.Add(q, "", false))
	_, err := s.Result("")
	assert.ErrorContains(t, err, `holds 2 histograms of latency ("other", "d"): choose one with --metric`)
	_, err = s.Result("nope")
	assert.ErrorContains(t, err, `no histogram "nope"`)
	q.Unit = time.Second
	assert.ErrorContains(t, s.Add(q, "", false), "m.jsonl:1: metric other is in 1s here")
}

func expPoint(series string, scale, offset int32, zero uint64, counts ...uint64) *ingest.MetricPoint {
	n := zero
	for _, c := range counts {
		n += c
	}
	return &ingest.MetricPoint{File: "m", Metric: "d", Unit: time.Second, Series: series, Group: "g", Exponential: true,
		Start: time.Unix(1000, 0), Time: time.Unix(1060, 0), Count: n, Sum: math.NaN(), Min: math.NaN(), Max: math.NaN(),
		Scale: scale, Offset: offset, ZeroCount: zero, Counts: counts}
}

// Exponential series of two scales add up at the coarser one, exactly:
// at scale 1, index 2i and 2i+1 make scale 0's index i.
func TestOTLPSetExponentialScales(t *testing.T) {
	s := NewOTLPSet()
	// Scale 1: indexes -3..0: (2^-1.5, 2^-1], (2^-1, 2^-0.5], (2^-0.5, 1], (1, 2^0.5].
	require.NoError(t, s.Add(expPoint("a", 1, -3, 1, 1, 2, 3, 4), "", false))
	// Scale 0: indexes -1..0: (0.5, 1], (1, 2].
	require.NoError(t, s.Add(expPoint("b", 0, -1, 0, 10, 20), "", false))
	res, err := s.Result("")
	require.NoError(t, err)
	assert.Equal(t, OTLPExponential, res.Kind)
	h := res.Groups[0].Overall
	require.NotNil(t, h)
	type b struct{ lo, hi, n float64 }
	var got []b
	for _, x := range h.Buckets {
		got = append(got, b{x.Lo, x.Hi, x.Count})
	}
	assert.Equal(t, []b{{0, 0, 1}, {0.25, 0.5, 1}, {0.5, 1, 2 + 3 + 10}, {1, 2, 4 + 20}}, got)
	assert.Equal(t, 41.0, h.Count)
	pos := h.Locate(0.5)
	assert.Equal(t, 1.0, pos.Bucket.Lo)
	assert.Equal(t, 2.0, pos.Bucket.Hi)
}
