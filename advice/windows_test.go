package advice

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/promsource"
)

// TestCallsToTell (issue 31, item 5): the calls a window needs are the
// fewest for which a window shaped as the whole period but a fifth slower
// would have its lower bound (for all 168 windows at once) above the
// rest's upper bound: one call fewer would not. Computed here from the
// ranks by hand.
func TestCallsToTell(t *testing.T) {
	h := histogram.New()
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		h.Record(time.Duration(20 * math.Exp(0.8*r.NormFloat64()) * float64(time.Millisecond)))
	}
	restHi := h.QuantileInterval(0.999, 0.95).Hi.Seconds()
	conf := familyConfidence(0.95, 168)
	z := math.Sqrt2 * math.Erfinv(conf)
	assert.InDelta(t, 3.6174, z, 1e-4, "z for 1 - 0.05/168 two-sided")
	told := func(n int64) bool {
		nf, q := float64(n), 0.999
		lo := math.Floor(nf*q - z*math.Sqrt(nf*q*(1-q)) + 1e-9)
		return lo >= 1 && 1.2*h.Quantile(lo/nf).Seconds() > restHi
	}
	n := callsToTell(h, 0.999, conf, restHi)
	assert.EqualValues(t, 18767, n)
	assert.True(t, told(n))
	assert.False(t, told(n-1), "one call fewer would do")
	assert.InDelta(t, 0.2, toldAbove(h, 0.999, conf, restHi, n), 0.01, "n calls tell a window a fifth above the rest")
	assert.InDelta(t, 0.497, toldAbove(h, 0.999, conf, restHi, 1500), 0.001, "1,500 calls tell only a window half again the rest")
	assert.EqualValues(t, -1, callsToTell(h, 0.999, conf, 10*restHi), "not even the whole period")
}

// TestProfileZone: --tz moves the slots' hours, and the zone must not cut
// windows; auto leaves a period under three days alone.
func TestProfileZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC).Unix()
	week := []int64{start, start + 7*24*3600 - 3600}
	p, err := newProfiler(windowing{WindowOptions: WindowOptions{Profile: ProfileDaily, TZ: berlin}}, week, time.Hour, 0.999)
	require.NoError(t, err)
	slot, _ := p.slotOf(time.Unix(start+17*3600, 0)) // 17:00 UTC is 18:00 in Berlin in November
	assert.Equal(t, 18, slot)
	_, err = newProfiler(windowing{WindowOptions: WindowOptions{Profile: ProfileDaily, TZ: kolkata}}, week, time.Hour, 0.999)
	require.ErrorContains(t, err, "windows of 1h straddle the hours of Asia/Kolkata (UTC offset 5h30m0s): use --window 30m or shorter")
	p, err = newProfiler(windowing{WindowOptions: WindowOptions{TZ: kolkata}}, week, time.Hour, 0.999)
	require.NoError(t, err)
	assert.Nil(t, p, "auto skips what it cannot pool")
	p, err = newProfiler(windowing{}, []int64{start, start + 2*24*3600}, time.Hour, 0.999)
	require.NoError(t, err)
	assert.Nil(t, p, "under three days: no profile by default")
	p, err = newProfiler(windowing{}, []int64{start, start + 3*24*3600 - 3600}, time.Hour, 0.999)
	require.NoError(t, err)
	require.NotNil(t, p, "three days")
	assert.Equal(t, ProfileDaily, p.kind)
}

// TestBucketPoolOverlap: steps whose buckets overlap without being equal
// (a native histogram whose schema changed) cannot be added up: no
// histogram, so no profile; equal buckets add up.
func TestBucketPoolOverlap(t *testing.T) {
	a := &histogram.Bucketed{Kind: promsource.Native, Buckets: []histogram.Bucket{{Lo: 0, Hi: 1, Count: 5}, {Lo: 1, Hi: 2, Count: 1}}}
	b := &histogram.Bucketed{Kind: promsource.Native, Buckets: []histogram.Bucket{{Lo: 0, Hi: 1.5, Count: 5}, {Lo: 1.5, Hi: 2, Count: 1}}}
	var p bucketPool
	p.add(a)
	p.add(a)
	h := p.hist()
	require.NotNil(t, h)
	assert.Equal(t, 12.0, h.Count)
	assert.Equal(t, []histogram.Bucket{{Lo: 0, Hi: 1, Count: 10, Cumulative: 10}, {Lo: 1, Hi: 2, Count: 2, Cumulative: 12}}, h.Buckets)
	p.add(b)
	assert.Nil(t, p.hist())
}
