package histogram

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// foreignV2 is the compressed V2 encoding, in base64, of a histogram of 5
// significant digits over 1..2^62 (not Latency's geometry) whose first
// set counts are 1 each.
func foreignV2(t *testing.T, set int) []byte {
	t.Helper()
	payload := bytes.Repeat([]byte{2}, set) // ZigZag LEB128 of 1
	var in bytes.Buffer
	for _, v := range []any{int32(cookieV2), int32(len(payload)), int32(0), int32(5), int64(1), int64(1 << 62), math.Float64bits(1)} {
		require.NoError(t, binary.Write(&in, binary.BigEndian, v))
	}
	in.Write(payload)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, err := zw.Write(in.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	var out bytes.Buffer
	require.NoError(t, binary.Write(&out, binary.BigEndian, int32(cookieV2Compressed)))
	require.NoError(t, binary.Write(&out, binary.BigEndian, int32(z.Len())))
	out.Write(z.Bytes())
	return []byte(base64.StdEncoding.EncodeToString(out.Bytes()))
}

// TestHlogLineCaps (issue 30, item 7): 2,000 lines that each inflated to
// 6 MB of counts took more than two minutes; a line is now refused before
// its counts are inflated when they take more than maxDecodedCounts, and a
// histogram of another geometry when more than maxForeignCounts of its
// counts are set, each with a message that names the cap. Below them a
// line reads as before.
func TestHlogLineCaps(t *testing.T) {
	p, err := decodeHistogram(foreignV2(t, 1000))
	require.NoError(t, err)
	assert.EqualValues(t, 1000, p.TotalCount())

	_, err = decodeHistogram(foreignV2(t, maxForeignCounts+1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 32768 of its counts are set")

	_, err = decodeHistogram(foreignV2(t, 6<<20))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its counts take 6291456 bytes, more than the 1048576 one interval's histogram may")
}
