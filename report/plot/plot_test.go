package plot

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample() Group {
	return Group{
		Name: "all", Samples: 200000,
		Percentiles: []Percentile{{0.5, 0.0203, false}, {0.9, 0.0403, false}, {0.99, 0.490, false},
			{0.999, 0.792, false}, {0.9999, 0.825, false}, {1, 0.844, false}},
		Recommendation: Recommendation{Quantile: 0.999, TimeoutSeconds: 0.8, CutOffFraction: 0.000655,
			Interval: Interval{Confidence: 0.95, LowSeconds: 0.788, HighSeconds: ptr(0.796)}},
		Candidates: []Candidate{{0.25, 0.0174}, {0.8, 0.000655}, {1, 0}},
		LittlesLaw: LittlesLaw{InFlightNormal: ptr(12.8), InFlightDuringHang: ptr(320.0), Bulkhead: ptr(25), Pool: ptr(200), PoolExhausted: ptr(true)},
	}
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

// TestPercentilesGeometry: the timeout line lies at the height of its
// seconds on the latency axis, between the frame's top and bottom, and
// each candidate below it lies lower on the page (greater y) the shorter
// it is; the percentile dots rise with the percentile.
func TestPercentilesGeometry(t *testing.T) {
	s := Percentiles("g1", sample())
	assert.Equal(t, "g1-percentiles", s.ID)
	var timeoutY float64
	candidates := map[string]float64{}
	for _, l := range s.Lines {
		switch l.Class {
		case "timeout":
			timeoutY = num(t, l.Y1)
			assert.Equal(t, l.Y1, l.Y2, "horizontal")
		case "candidate":
			candidates[l.Tip] = num(t, l.Y1)
		}
	}
	// The frame runs from y 24 (top) to 296 (bottom), 0 s at the bottom;
	// the axis tops out at a 1-2-5 step above 1.05 x the largest figure
	// (0.844 s): 1 s, so 0.8 s sits at 296 - 0.8 x 272.
	assert.InDelta(t, 296-0.8*272, timeoutY, 0.06)
	require.Len(t, candidates, 2, "the chosen candidate is the timeout line itself")
	assert.Greater(t, candidates["candidate 250ms: cuts off at most 1.74 %"], timeoutY)
	assert.Less(t, candidates["candidate 1s: cuts off at most 0 %"], timeoutY)
	last := 1e9
	for _, d := range s.Dots {
		y := num(t, d.Y)
		assert.LessOrEqual(t, y, last, "dot %s rises", d.Tip)
		last = y
	}
}

// TestInFlightBars: the bars share one scale, so the hang's bar is 320/200
// times the pool's, and an exhausted pool's hang bar says so.
func TestInFlightBars(t *testing.T) {
	s, ok := InFlight("g1", sample())
	require.True(t, ok)
	widths := map[string]float64{}
	for _, r := range s.Rects {
		widths[r.Class] = num(t, r.W)
	}
	assert.InDelta(t, 320.0/200, widths["bar hang exhausted"]/widths["bar pool"], 0.01)
	assert.InDelta(t, 25.0/200, widths["bar bulkhead"]/widths["bar pool"], 0.01)
	_, ok = InFlight("g1", Group{Name: "x"})
	assert.False(t, ok, "neither a rate nor a pool: nothing to draw")
}

// TestHistogramNeedsBins: no distribution, no histogram plot.
func TestHistogramNeedsBins(t *testing.T) {
	_, ok := Histogram("g1", sample())
	assert.False(t, ok)
	g := sample()
	g.Distribution = &Distribution{LowestSeconds: 0.001, Bins: []Bin{{0.01, 10}, {0.1, 100}, {1, 5}}}
	s, ok := Histogram("g1", g)
	require.True(t, ok)
	bars := 0
	for _, r := range s.Rects {
		if r.Class == "bar" {
			bars++
		}
	}
	assert.Equal(t, 3, bars)
}
