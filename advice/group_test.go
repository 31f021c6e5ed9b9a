package advice

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/report"
)

func TestDistributionBins(t *testing.T) {
	h := histogram.New()
	for i := range 1000 {
		h.Record(time.Duration(10+i%90) * time.Millisecond) // 10ms to 99ms
	}
	h.Record(800 * time.Millisecond)
	d := newDistribution(h.Bars())
	require.NotNil(t, d)
	assert.Equal(t, 0.00891, d.LowestSeconds, "the grid bound below 10ms")
	assert.Equal(t, 0.01, d.Bins[0].UpperSeconds, "10ms is a bound: the 10ms samples are at most it")
	assert.Equal(t, 0.891, d.Bins[len(d.Bins)-1].UpperSeconds, "800ms lies above the bound 0.794 and at most 0.891")
	assert.Len(t, d.Bins, 40, "20 per decade from 10ms to 891ms, the empty ones between included")
	var n int64
	for i, b := range d.Bins {
		n += b.Count
		if i > 0 {
			assert.Greater(t, b.UpperSeconds, d.Bins[i-1].UpperSeconds)
		}
	}
	assert.Equal(t, h.Count(), n)
	assert.Equal(t, int64(1), d.Bins[len(d.Bins)-1].Count)
	assert.Equal(t, int64(0), d.Bins[len(d.Bins)-2].Count)

	// From 1µs to a day: eleven decades fit in 100 bins at 5 per decade.
	wide := histogram.New()
	wide.Record(0)
	wide.Record(time.Microsecond)
	wide.Record(20 * time.Millisecond)
	wide.Record(24 * time.Hour)
	d = newDistribution(wide.Bars())
	assert.LessOrEqual(t, len(d.Bins), report.MaxBins)
	assert.Len(t, d.Bins, 56, "5 per decade: from 1µs to 100,000s, eleven decades and the first bound")
	assert.Equal(t, 1e-6, d.Bins[0].UpperSeconds, "zero and 1µs share the first bin")
	assert.Equal(t, int64(2), d.Bins[0].Count)
	assert.Equal(t, 6.31e-7, d.LowestSeconds, "one fifth of a decade below 1µs, on the grid")
	assert.Nil(t, newDistribution(nil))
}

func TestGridBounds(t *testing.T) {
	var decade []float64
	for k := range 20 {
		decade = append(decade, gridBound(k-60))
	}
	assert.Equal(t, []float64{0.001, 0.00112, 0.00126, 0.00141, 0.00158, 0.00178, 0.002, 0.00224, 0.00251, 0.00282,
		0.00316, 0.00355, 0.00398, 0.00447, 0.00501, 0.00562, 0.00631, 0.00708, 0.00794, 0.00891}, decade)
	for _, v := range []float64{1e-6, 0.00112, 0.001121, 0.8, 0.794, 86400} {
		k := gridIndex(v)
		assert.True(t, gridBound(k-1) < v && v <= gridBound(k), "%v in (%v, %v]", v, gridBound(k-1), gridBound(k))
	}
}
