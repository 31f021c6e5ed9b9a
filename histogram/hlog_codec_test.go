package histogram

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeV2 writes exactly what hdrhistogram-go's encoder writes.
func TestEncodeV2MatchesTheLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := map[string]*hdr.PackedHistogram{"empty": newPacked()}
	one := newPacked()
	require.NoError(t, one.RecordValue(0))
	cases["zero"] = one
	top := newPacked()
	require.NoError(t, top.RecordValues(highestMicros, 1<<60))
	cases["the top, a huge count"] = top
	for i := range 200 {
		p := newPacked()
		n := 1 + r.IntN(5000)
		for range n {
			var v int64
			switch i % 4 {
			case 0:
				v = r.Int64N(2048) // the first bucket: single zeros between counts
			case 1:
				v = int64(r.ExpFloat64() * 20_000)
			default:
				v = r.Int64N(highestMicros)
			}
			require.NoError(t, p.RecordValues(v, 1+r.Int64N(1<<uint(r.IntN(40)))))
		}
		cases[string(rune('a'+i%26))+string(rune('0'+i/26))] = p
	}
	for name, p := range cases {
		want, err := p.Encode()
		require.NoError(t, err)
		got, err := encodeV2(p)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), name)
	}
	// Other geometries are the library's business.
	other := hdr.NewPacked(1000, 1<<40, 2)
	require.NoError(t, other.RecordValue(123456))
	want, _ := other.Encode()
	got, err := encodeV2(other)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestCountsIndex(t *testing.T) {
	h := hdr.New(1, highestMicros, Digits)
	for _, v := range []int64{0, 1, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 1 << 20, 123_456_789, highestMicros} {
		h.Reset()
		require.NoError(t, h.RecordValue(v))
		p := newPacked()
		p.MergeFrom(h)
		var idx []int64
		for lo := range p.ForEachBucket {
			idx = append(idx, countsIndex(lo))
		}
		require.Len(t, idx, 1)
		assert.Equal(t, countsIndex(v), idx[0], "v=%d", v)
	}
	assert.Equal(t, int64(2048), countsIndex(2048))
	assert.Equal(t, int64(2047), countsIndex(2047))
	assert.Equal(t, int64(2048+512), countsIndex(3072))
}

// The histogram lines are those hdrhistogram-go's log writer writes.
func TestHistogramLineIsTheLibrarys(t *testing.T) {
	plain, cells := NewSet(), NewSet()
	cells.Every(time.Minute)
	fill(t, plain, cells, 3_000)
	n := 0
	for _, g := range cells.Groups() {
		for _, start := range g.CellStarts() {
			c := g.CellAt(start)
			length := int64(60)
			if start == Untimed {
				start, length = 0, 0
			}
			var ours, theirs bytes.Buffer
			require.NoError(t, writeHistogram(&ours, escapeTag(g.Name), start, length, c.Latency))
			h := c.Latency.Clone()
			h.SetTag(escapeTag(g.Name))
			h.SetStartTimeMs(start * 1000)
			h.SetEndTimeMs((start + length) * 1000)
			require.NoError(t, hdr.NewHistogramLogWriter(&theirs).OutputIntervalPackedHistogram(h))
			assert.Equal(t, theirs.String(), ours.String())
			n++
		}
	}
	assert.Equal(t, 3*8, n)
}

// decodeOurs reads back what hdr.DecodePacked reads, bucket for bucket.
func TestDecodeOursMatchesTheLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	buckets := func(p *hdr.PackedHistogram) [][2]int64 {
		var out [][2]int64
		for v, n := range p.ForEachBucket {
			out = append(out, [2]int64{v, n})
		}
		return out
	}
	for i := range 300 {
		p := newPacked()
		for range r.IntN(3000) {
			v := int64(r.ExpFloat64() * float64([]int64{100, 20_000, 5_000_000}[i%3]))
			require.NoError(t, p.RecordValues(min(v, highestMicros), 1+r.Int64N(1<<uint(r.IntN(30)))))
		}
		text, err := encodeV2(p)
		require.NoError(t, err)
		want, err := hdr.DecodePacked(text)
		require.NoError(t, err)
		raw, err := decodeHistogramBase64(text)
		require.NoError(t, err)
		got, ok, err := decodeOurs(raw)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, buckets(want), buckets(got), i)
		assert.Equal(t, want.TotalCount(), got.TotalCount())
		assert.Equal(t, want.Max(), got.Max())
	}
	assert.Equal(t, int64(len(hdr.New(1, highestMicros, Digits).Export().Counts)), countsLen)
	for _, i := range []int64{0, 1, 1023, 1024, 2047, 2048, 3071, 3072, countsLen - 1} {
		assert.Equal(t, i, countsIndex(valueAt(i)), i)
	}
	// Other geometries are left to the library.
	other := hdr.NewPacked(1000, 1<<40, 2)
	require.NoError(t, other.RecordValue(123456))
	text, _ := other.Encode()
	raw, _ := decodeHistogramBase64(text)
	_, ok, err := decodeOurs(raw)
	assert.False(t, ok)
	assert.NoError(t, err)
}
