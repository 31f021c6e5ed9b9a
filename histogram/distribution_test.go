package histogram

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBars(t *testing.T) {
	l := New()
	for _, d := range []time.Duration{0, 500 * time.Microsecond, 20 * time.Millisecond, 20 * time.Millisecond, 788479 * time.Microsecond} {
		require.True(t, l.Record(d))
	}
	require.True(t, l.RecordCensored(time.Second))
	bars := l.Bars()
	require.Len(t, bars, 5, "one bar per distinct HDR bucket; the two 20ms samples share one")
	var n int64
	for i, b := range bars {
		n += b.Count
		assert.LessOrEqual(t, b.Lo, b.Hi)
		if i > 0 {
			assert.Greater(t, b.Lo, bars[i-1].Hi, "lowest first, no overlap")
		}
	}
	assert.Equal(t, l.Count(), n, "the counts add up to Count, the censored sample included")
	assert.Equal(t, int64(2), bars[2].Count)
	assert.True(t, bars[3].Lo <= 788479*time.Microsecond && 788479*time.Microsecond <= bars[3].Hi, "the bar holds its sample: %v", bars[3])
	assert.Equal(t, time.Duration(0), bars[0].Lo)
	assert.Empty(t, New().Bars())
}
