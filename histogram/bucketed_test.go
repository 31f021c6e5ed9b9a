package histogram

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bucketed data (Prometheus histograms) is recorded by count at bucket
// bounds; these pin the additions it needs.

func TestRecordN(t *testing.T) {
	l := New()
	require.True(t, l.RecordN(time.Second, 999))
	require.True(t, l.RecordCensoredN(2*time.Second, 1))
	require.True(t, l.RecordN(time.Second, 0), "nothing to record")
	assert.Equal(t, int64(1000), l.Count())
	assert.Equal(t, int64(1), l.Censored())
	assert.False(t, l.RecordN(-time.Second, 3))
	assert.False(t, l.RecordN(Highest+time.Hour, 4))
	below, above := l.OutOfRange()
	assert.Equal(t, []int64{3, 4}, []int64{below, above}, "all n are counted, not one")
}

func TestSnapTo(t *testing.T) {
	l := New()
	l.RecordN(time.Second, 10)
	l.RecordN(250*time.Millisecond, 10)
	assert.NotEqual(t, time.Second, l.Max(), "the top of the HDR bucket holding 1s")
	l.SnapTo([]time.Duration{250 * time.Millisecond, time.Second})
	assert.Equal(t, time.Second, l.Max())
	assert.Equal(t, time.Second, l.Quantile(0.99))
	assert.Equal(t, 250*time.Millisecond, l.Min())
	assert.Equal(t, 250*time.Millisecond, l.Quantile(0.5))
	iv := l.QuantileInterval(0.5, 0.95)
	assert.Equal(t, 250*time.Millisecond, iv.Lo)
}

func TestNextDistinct(t *testing.T) {
	l := New()
	for _, d := range []time.Duration{0, time.Microsecond, 999 * time.Microsecond, time.Second, 2500 * time.Millisecond, time.Hour} {
		next := l.NextDistinct(d)
		require.Greater(t, next, d)
		assert.LessOrEqual(t, float64(next-d), float64(d)/1000+float64(time.Microsecond), "within HDR precision of %v", d)
		// Recorded there, a sample counts above d; one microsecond less is
		// in d's bucket, and may be above d unless d is that bucket's top.
		h := New()
		h.Record(next)
		assert.Equal(t, int64(1), h.CountAbove(d), "%v", d)
		h2 := New()
		h2.Record(next - time.Microsecond)
		want := int64(1)
		if next-time.Microsecond == d {
			want = 0
		}
		assert.Equal(t, want, h2.CountAbove(d), "%v", d)
	}
	assert.Equal(t, Highest, l.NextDistinct(Highest))
}

func TestRecordAboveN(t *testing.T) {
	l := New()
	l.RecordN(time.Second, 999)
	l.SnapTo([]time.Duration{time.Second})
	require.True(t, l.RecordAboveN(time.Second, 1))
	assert.Equal(t, int64(1), l.Censored())
	assert.Equal(t, time.Second, l.Quantile(0.99))
	assert.False(t, l.QuantileIsLowerBound(0.99), "the quantile lies below the call that took longer")
	assert.Equal(t, time.Second, l.Quantile(1), "took more than 1s: answered as 1s")
	assert.True(t, l.QuantileIsLowerBound(1), "and that is a lower bound")
	assert.Equal(t, 0.001, l.FractionAbove(time.Second), "a timeout of 1s cuts it off")
	assert.Equal(t, time.Second, l.Max())

	m := New()
	m.Merge(l)
	assert.Equal(t, time.Second, m.Quantile(1), "Merge keeps the mapping")
}
