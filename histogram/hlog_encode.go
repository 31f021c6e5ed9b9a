package histogram

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// encodeV2 returns p in the V2 compressed base64 form, byte for byte what
// p.Encode() returns, for histograms of Latency's geometry (others go to
// p.Encode). hdrhistogram-go makes a new zlib writer for every histogram,
// about 1 MB of compressor state: for a day of minutes of many groups
// that was most of summarize's time. This one reuses its writers.
func encodeV2(p *hdr.PackedHistogram) ([]byte, error) {
	if p.LowestTrackableValue() != 1 || p.SignificantFigures() != Digits || p.HighestTrackableValue() != highestMicros {
		return p.Encode()
	}
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)

	// The counts: ZigZag LEB128, a run of more than one zero as its
	// negated length, up to the bucket of the largest value.
	e.payload = e.payload[:0]
	next := int64(0) // the counts index to write next
	zeros := func(to int64) {
		switch n := to - next; {
		case n == 1:
			e.payload = putZigZag(e.payload, 0)
		case n > 1:
			e.payload = putZigZag(e.payload, -n)
		}
		next = to
	}
	for v, n := range p.ForEachBucket {
		if n == 0 {
			continue
		}
		i := countsIndex(v)
		zeros(i)
		e.payload = putZigZag(e.payload, n)
		next = i + 1
	}
	zeros(countsIndex(p.Max()) + 1)

	// The 40-byte header of the V2 encoding, then the counts, deflated.
	var head [40]byte
	binary.BigEndian.PutUint32(head[0:], 0x1c849303|0x10) // V2 encoding cookie
	binary.BigEndian.PutUint32(head[4:], uint32(len(e.payload)))
	binary.BigEndian.PutUint32(head[8:], 0) // normalizing index offset
	binary.BigEndian.PutUint32(head[12:], Digits)
	binary.BigEndian.PutUint64(head[16:], 1)
	binary.BigEndian.PutUint64(head[24:], uint64(highestMicros))
	binary.BigEndian.PutUint64(head[32:], math.Float64bits(1))
	e.zbuf.Reset()
	e.zbuf.Write(make([]byte, 8)) // cookie and length, filled in below
	e.zw.Reset(&e.zbuf)
	if _, err := e.zw.Write(head[:]); err != nil {
		return nil, err
	}
	if _, err := e.zw.Write(e.payload); err != nil {
		return nil, err
	}
	if err := e.zw.Close(); err != nil {
		return nil, err
	}
	out := e.zbuf.Bytes()
	binary.BigEndian.PutUint32(out[0:], 0x1c849304|0x10) // V2 compressed cookie
	binary.BigEndian.PutUint32(out[4:], uint32(len(out)-8))
	return base64.StdEncoding.AppendEncode(nil, out), nil
}

type encoder struct {
	zw      *zlib.Writer
	zbuf    bytes.Buffer
	payload []byte
}

var encoders = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestCompression) // a valid level: no error
	return &encoder{zw: zw}
}}

// countsIndex is the index of v's bucket in the counts of Latency's
// geometry (lowest 1, so unit magnitude 0; 3 digits, so 2,048 sub-buckets).
func countsIndex(v int64) int64 {
	const subHalfMag = 10 // log2(1024)
	bucket := int64(64-bits.LeadingZeros64(uint64(v)|(1<<(subHalfMag+1)-1))) - (subHalfMag + 1)
	sub := v >> bucket
	return (bucket+1)<<subHalfMag + sub - 1<<subHalfMag
}

// putZigZag appends v as HdrHistogram's ZigZag LEB128: seven bits a byte,
// the ninth byte, if any, with the last eight.
func putZigZag(b []byte, v int64) []byte {
	u := uint64((v << 1) ^ (v >> 63))
	for range 8 {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
}
