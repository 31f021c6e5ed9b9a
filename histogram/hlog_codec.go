package histogram

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/bits"
	"slices"
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
	return encodeBuckets(p.ForEachBucket, p.Max())
}

// encodeBuckets returns the V2 compressed base64 form of a histogram of
// Latency's geometry whose filled buckets are buckets (the lowest value of
// each and its count, lowest first) and whose largest value is maxValue.
func encodeBuckets(buckets iter.Seq2[int64, int64], maxValue int64) ([]byte, error) {
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
	for v, n := range buckets {
		if n == 0 {
			continue
		}
		i := countsIndex(v)
		zeros(i)
		e.payload = putZigZag(e.payload, n)
		next = i + 1
	}
	zeros(countsIndex(maxValue) + 1)

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

// decodeOurs decodes a compressed V2 histogram (the bytes, not base64) of
// Latency's geometry, as hdr.DecodePacked would, with a reused inflater
// (DecodePacked makes a new one, 40 KB, per histogram: most of the time
// spent reading a summary of many small intervals). ok is false, with no
// error, for any other geometry or encoding: DecodePacked's business.
func decodeOurs(raw []byte) (p *hdr.PackedHistogram, ok bool, err error) {
	if len(raw) < 8 || int32(binary.BigEndian.Uint32(raw))&^0xf0 != cookieV2Compressed {
		return nil, false, nil
	}
	n := int64(binary.BigEndian.Uint32(raw[4:]))
	if n > int64(len(raw)-8) {
		return nil, false, nil
	}
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	if err := d.zr.(zlib.Resetter).Reset(bytes.NewReader(raw[8:8+n]), nil); err != nil {
		return nil, false, nil
	}
	var head [40]byte
	if _, err := io.ReadFull(d.zr, head[:]); err != nil || int32(binary.BigEndian.Uint32(head[:]))&^0xf0 != cookieV2 {
		return nil, false, nil
	}
	// Any geometry: the counts as its header says they take, before they
	// are inflated, decoded and recorded, which costs in proportion.
	if length := int64(binary.BigEndian.Uint32(head[4:])); length > maxDecodedCounts {
		return nil, true, fmt.Errorf("histogram encoding V2: its counts take %d bytes, more than the %d one interval's histogram may (a histogram of %d significant digits; %d bytes hold every count of 3 digits up to a day)",
			length, maxDecodedCounts, binary.BigEndian.Uint32(head[12:]), 9*countsLen)
	}
	if binary.BigEndian.Uint32(head[12:]) != Digits || binary.BigEndian.Uint64(head[16:]) != 1 || binary.BigEndian.Uint64(head[24:]) != uint64(highestMicros) {
		// Another geometry, which hdr.DecodePacked reads at a cost that
		// grows with the counts set (a sparse insert each): refused above
		// maxForeignCounts of them.
		length := int64(binary.BigEndian.Uint32(head[4:]))
		d.buf = slices.Grow(d.buf[:0], int(length))[:length]
		if _, err := io.ReadFull(d.zr, d.buf); err != nil {
			return nil, true, fmt.Errorf("histogram encoding V2: counts: %w", err)
		}
		set := 0
		for payload := d.buf; len(payload) > 0; {
			v, size := getZigZag(payload)
			if size == 0 {
				break // DecodePacked says what is wrong
			}
			payload = payload[size:]
			if v > 0 {
				if set++; set > maxForeignCounts {
					return nil, true, fmt.Errorf("histogram encoding V2: more than %d of its counts are set, more than one interval's histogram may (a histogram of %d significant digits; one of 3 digits from 1µs to an hour has %d counts in all)",
						maxForeignCounts, binary.BigEndian.Uint32(head[12:]), countsLen)
				}
			}
		}
		return nil, false, nil
	}
	// Our geometry: at most countsLen counts of at most 9 bytes each.
	length := int64(binary.BigEndian.Uint32(head[4:]))
	if length > 9*countsLen {
		return nil, true, fmt.Errorf("histogram encoding V2: %d bytes of counts, more than %d counts can take", length, countsLen)
	}
	d.buf = slices.Grow(d.buf[:0], int(length))[:length]
	if _, err := io.ReadFull(d.zr, d.buf); err != nil {
		return nil, true, fmt.Errorf("histogram encoding V2: counts: %w", err)
	}
	// The end of the stream, where zlib checks its checksum.
	if n, err := d.zr.Read(head[:1]); n > 0 || err != io.EOF {
		return nil, true, fmt.Errorf("histogram encoding V2: zlib data does not end after the counts (%v)", err)
	}
	payload := d.buf
	p = newPacked()
	var idx, total int64
	for len(payload) > 0 {
		v, size := getZigZag(payload)
		if size == 0 {
			return nil, true, errors.New("histogram encoding V2: a count is cut short")
		}
		payload = payload[size:]
		if v < 0 {
			if -v > countsLen-idx || v == math.MinInt64 {
				return nil, true, fmt.Errorf("histogram encoding V2: a run of %d zeros goes past the %d counts", -v, countsLen)
			}
			idx += -v
			continue
		}
		if idx >= countsLen {
			return nil, true, fmt.Errorf("histogram encoding V2: more than the %d counts", countsLen)
		}
		if v > 0 {
			if v > math.MaxInt64-total {
				return nil, true, errors.New("histogram encoding V2: bucket counts sum past MaxInt64")
			}
			total += v
			if err := p.RecordValues(valueAt(idx), v); err != nil {
				return nil, true, fmt.Errorf("histogram encoding V2: %w", err)
			}
		}
		idx++
	}
	return p, true, nil
}

type decoder struct {
	zr  io.ReadCloser
	buf []byte
}

var decoders = sync.Pool{New: func() any {
	// A reader over an empty valid stream, to be Reset to each histogram.
	var empty bytes.Buffer
	zw := zlib.NewWriter(&empty)
	_ = zw.Close()
	zr, _ := zlib.NewReader(&empty) // valid: no error
	return &decoder{zr: zr}
}}

// maxDecodedCounts caps the counts of one histogram in the V2 encoding, in
// bytes, before they are inflated: 2,000 lines that each inflated to 6 MB
// of counts (a 16 MB log) took more than two minutes to read. Latency's own
// geometry takes at most 9 x countsLen (258 KB, every count of 3 digits up
// to a day at its longest); other tools' histograms of 3 digits up to
// MaxInt64 take at most 507 KB, and those of 4 or 5 digits far less than
// the cap unless nearly every one of their counts is set.
const maxDecodedCounts = 1 << 20

// maxForeignCounts caps the counts set in one histogram of another
// geometry than Latency's: 2,000 lines of a million counts set each took
// minutes, 65 ns a count in hdr.DecodePacked. A histogram of 3 digits
// that covers 1µs to an hour has fewer counts in all; interval logs of
// real tools set a few hundred to a few thousand a line.
const maxForeignCounts = 1 << 15

// countsLen is the length of the counts of Latency's geometry: 1,024
// sub-buckets for each bucket that 86,400,000,000 µs needs, plus one.
var countsLen = func() int64 {
	buckets := int64(1)
	for smallest := int64(2048); smallest <= highestMicros; smallest <<= 1 {
		buckets++
	}
	return (buckets + 1) * 1024
}()

// valueAt is the lowest value of the bucket at counts index i of
// Latency's geometry, the inverse of countsIndex.
func valueAt(i int64) int64 {
	bucket := i>>10 - 1
	sub := i&1023 + 1024
	if bucket < 0 {
		bucket, sub = 0, i
	}
	return sub << bucket
}

// getZigZag reads one of putZigZag's numbers; size 0 when b ends first.
func getZigZag(b []byte) (v int64, size int) {
	var u uint64
	for i := range 9 {
		if i >= len(b) {
			return 0, 0
		}
		if i == 8 {
			u |= uint64(b[i]) << 56
			size = 9
			break
		}
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			size = i + 1
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1), size
}
