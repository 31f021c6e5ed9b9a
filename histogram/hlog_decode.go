package histogram

// Reading the histograms of HdrHistogram interval logs (.hlog) in every
// encoding HdrHistogram implementations have written, not only the V2 one
// hdrhistogram-go decodes.
//
// An encoded histogram starts with a big-endian 32-bit cookie. Its 0xf0 bits
// carry a word size; the rest, the cookie base, names the encoding:
//
//	base        encoding           header (big-endian)                           counts
//	0x1c849308  V0                 cookie, digits i32, lowest i64, highest i64,  fixed-width words
//	                               totalCount i64 (32 bytes)                     (2, 4 or 8 bytes)
//	0x1c849301  V1                 cookie, payloadLength i32, normalizing        fixed-width words
//	                               offset i32, digits i32, lowest i64, highest   (2, 4 or 8 bytes)
//	                               i64, conversion ratio f64 (40 bytes)
//	0x1c849303  V2                 as V1                                         ZigZag LEB128, a negative
//	                                                                             value is a run of zeros
//	base+1      compressed form    cookie, length i32, then that many bytes of zlib holding the
//	            of each of them    uncompressed form (for V0, base+1 is 0x1c849309)
//
// Among the writers: jHiccup 2.0.1 wrote V0, jHiccup 2.0.6 and YCSB wrote V1
// with 2- and 8-byte words, the C implementation (then in HdrHistogram's
// src/main/c, now HdrHistogram_c) wrote V1 with 8-byte words before it moved
// to V2, and Java's HdrHistogram has written V2 since (jHiccup 2.0.7). The layouts and the word-size rule are those of the reference
// decoder, AbstractHistogram.decodeFromByteBuffer and
// decodeFromCompressedByteBuffer in HdrHistogram/HdrHistogram (the V1-era
// version at commit 05ef3d7 and the V2-era one at ad76bb5), and of
// hdr_decode_compressed_v0 and _v1 in HdrHistogram_c.
//
// V0 and V1 payloads are transcoded to the V2 payload and handed to
// hdr.DecodePacked, so that every histogram comes out of the one decoder that
// also reads V2: it keeps the serialized geometry exactly, including zero
// significant digits, which hdr.NewPacked would raise to one and so remap
// every count, and it keeps V1's conversion ratio.

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Cookie bases (cookie &^ 0xf0) of the histogram encodings, and the two
// cookies of Java's DoubleHistogram, recognised only to say that they are not
// supported.
const (
	cookieV0           int32 = 0x1c849308
	cookieV0Compressed int32 = 0x1c849309
	cookieV1           int32 = 0x1c849301
	cookieV1Compressed int32 = 0x1c849302
	cookieV2           int32 = 0x1c849303
	cookieV2Compressed int32 = 0x1c849304

	cookieDoubleHistogram           int32 = 0x0c72124e
	cookieDoubleHistogramCompressed int32 = 0x0c72124f
)

// Header sizes of the uncompressed forms, and the 8-byte frame (cookie and
// length) in front of the zlib data of a compressed form.
const (
	headerSizeV0    = 32
	headerSizeV1    = 40
	compressedFrame = 8
)

// maxInflatedHistogram caps what one histogram may inflate to. A valid V0 or
// V1 histogram never comes near it, since its payload is also checked against
// the counts array its header implies (at most 6,160,384 eight-byte words, 49
// MB, for 1..MaxInt64 at 5 digits), so it only bounds the work a hostile
// zlib stream can cause.
const maxInflatedHistogram = 64 << 20

// decodeHistogram decodes one base64 histogram text of an interval log line, in any
// encoding HdrHistogram implementations have written: V2 compressed (the current one),
// V1 and V0 compressed, and the uncompressed forms where they occur in logs.
//
// Surrounding whitespace is ignored and the base64 may be padded or not.
// Accepted are the compressed and the uncompressed forms of V0, V1 and V2:
// Java, C, Python and JavaScript write the compressed ones into logs, while
// Rust's interval log writer takes either serializer (its documentation's
// example uses the uncompressed V2Serializer).
// V2 goes to hdr.DecodePacked as it is. V0 and V1 are checked here and
// rejected with an error, never a panic, when
//   - the cookie's word size is not 2, 4 or 8 bytes, or the zlib data inside
//     holds another encoding than its frame names;
//   - the header asks for other than 0 to 5 significant digits, a lowest
//     value below 1, a highest value below twice the lowest, or a geometry
//     that does not fit 64 bits;
//   - the counts do not fill whole words, go past the counts array the header
//     implies, or (V1) differ in length from the header's payload length;
//   - a count is negative, or the counts sum past MaxInt64;
//   - the zlib data is corrupt, fails its checksum or inflates past
//     maxInflatedHistogram.
//
// Two fields are read the way the reference decoders read them. V0's
// totalCount is ignored, as Java and C ignore it: the total is the sum of the
// counts. V1's normalizingIndexOffset is ignored too: writers serialize the
// counts in logical index order (Java's encoder reads them through its
// rotation) and Java's decoder stores word i at logical index i whatever the
// offset, so the offset only described the writer's memory layout.
//
// One writer quirk is accepted: the C implementation's V1 encoder wrote the
// length of header and counts together into payloadLength
// (hdr_encode_compressed in HdrHistogram/HdrHistogram src/main/c at commit
// 0017aa8, and the C and wrk2 samples in HdrHistogram_py's tests), so its
// payloads are exactly 40 bytes shorter than announced. HdrHistogram_c's
// decoder reads those histograms; Java's rejects them. Any other difference
// between the payload and its announced length is an error.
//
// Java's DoubleHistogram encodings are rejected as unsupported. For V2, every
// input hdr.DecodePacked accepts is accepted (including the lowest values
// below 1 and the highest values below twice the lowest that hdrhistogram-go
// itself has written), except counts that sum past MaxInt64, which
// DecodePacked would keep under a saturated total.
func decodeHistogram(text []byte) (*hdr.PackedHistogram, error) {
	raw, err := decodeHistogramBase64(text)
	if err != nil {
		return nil, err
	}
	if len(raw) < 4 {
		return nil, fmt.Errorf("histogram text holds %d bytes, too few for the 4-byte encoding cookie", len(raw))
	}
	cookie := int32(binary.BigEndian.Uint32(raw))
	switch cookie {
	case cookieDoubleHistogram, cookieDoubleHistogramCompressed:
		return nil, fmt.Errorf("histogram cookie 0x%08x is Java's DoubleHistogram encoding, which is not supported", uint32(cookie))
	}
	switch base := cookie &^ 0xf0; base {
	case cookieV2Compressed:
		return decodeV2Histogram(raw)
	case cookieV2:
		// Wrap the uncompressed form in the compressed frame DecodePacked reads.
		return decodeV2Histogram(frameCompressedV2(raw))
	case cookieV0, cookieV1:
		return decodeFixedWidth(base, bytes.NewReader(raw), cookie)
	case cookieV0Compressed, cookieV1Compressed:
		version := base - 1 // the uncompressed base: 0x1c849309 -> 08, 02 -> 01
		if len(raw) < compressedFrame {
			return nil, fmt.Errorf("histogram encoding %s: %d bytes, too few for the %d-byte compressed frame", encodingName(version), len(raw), compressedFrame)
		}
		n := int32(binary.BigEndian.Uint32(raw[4:]))
		if n < 0 || int64(n) > int64(len(raw)-compressedFrame) {
			return nil, fmt.Errorf("histogram encoding %s: compressed length field says %d bytes, %d follow it", encodingName(version), n, len(raw)-compressedFrame)
		}
		z, err := zlib.NewReader(bytes.NewReader(raw[compressedFrame : compressedFrame+int(n)]))
		if err != nil {
			return nil, fmt.Errorf("histogram encoding %s: zlib data: %w", encodingName(version), err)
		}
		return decodeFixedWidth(version, &inflateReader{z: z, left: maxInflatedHistogram}, 0)
	default:
		return nil, fmt.Errorf("histogram cookie 0x%08x names no HdrHistogram encoding (want a base of 0x1c849308/09 for V0, 0x1c849301/02 for V1 or 0x1c849303/04 for V2)", uint32(cookie))
	}
}

// decodeHistogramBase64 decodes the base64 text of a histogram, padded or
// not, after trimming surrounding whitespace.
func decodeHistogramBase64(text []byte) ([]byte, error) {
	t := bytes.TrimSpace(text)
	if len(t) == 0 {
		return nil, errors.New("histogram text is empty")
	}
	enc := base64.StdEncoding
	if len(t)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	raw := make([]byte, enc.DecodedLen(len(t)))
	n, err := enc.Decode(raw, t)
	if err != nil {
		return nil, fmt.Errorf("histogram text of %d characters is not base64: %w", len(t), err)
	}
	return raw[:n], nil
}

// encodingName names an encoding by its uncompressed cookie base.
func encodingName(base int32) string {
	switch base {
	case cookieV0:
		return "V0"
	case cookieV1:
		return "V1"
	default:
		return "V2"
	}
}

// decodeV2Histogram decodes a compressed V2 histogram (the bytes, not base64) with
// hdr.DecodePacked and rejects counts whose sum DecodePacked had to saturate.
func decodeV2Histogram(raw []byte) (*hdr.PackedHistogram, error) {
	if p, ok, err := decodeOurs(raw); ok {
		return p, err
	}
	p, err := hdr.DecodePacked([]byte(base64.StdEncoding.EncodeToString(raw)))
	if err != nil {
		return nil, fmt.Errorf("histogram encoding V2: %w", err)
	}
	if p.TotalCount() == math.MaxInt64 {
		// DecodePacked saturates the total of buckets summing past MaxInt64.
		var sum int64
		overflow := false
		p.ForEachBucket(func(_, count int64) bool {
			if count > math.MaxInt64-sum {
				overflow = true
				return false
			}
			sum += count
			return true
		})
		if overflow {
			return nil, errors.New("histogram encoding V2: bucket counts sum past MaxInt64")
		}
	}
	return p, nil
}

// storingZlibWriters holds zlib writers at zlib.NoCompression for
// frameCompressedV2, which needs one for every V0, V1 or uncompressed V2
// histogram of a log.
var storingZlibWriters = sync.Pool{New: func() any {
	// NewWriterLevel fails only for an invalid level.
	w, _ := zlib.NewWriterLevel(io.Discard, zlib.NoCompression)
	return w
}}

// frameCompressedV2 returns the compressed V2 form of an uncompressed V2
// histogram. zlib.NoCompression keeps it cheap: the data is only framed for
// DecodePacked, which inflates it right away.
func frameCompressedV2(uncompressed []byte) []byte {
	var z bytes.Buffer
	z.Grow(compressedFrame + len(uncompressed) + len(uncompressed)/16000*5 + 16)
	z.Write(make([]byte, compressedFrame)) // the frame, filled in below
	w := storingZlibWriters.Get().(*zlib.Writer)
	defer storingZlibWriters.Put(w)
	w.Reset(&z)
	// Writes to a bytes.Buffer do not fail.
	_, _ = w.Write(uncompressed)
	_ = w.Close()
	out := z.Bytes()
	binary.BigEndian.PutUint32(out, uint32(cookieV2Compressed|0x10))
	binary.BigEndian.PutUint32(out[4:], uint32(len(out)-compressedFrame))
	return out
}

// fixedWidthHeader is the header of a V0 or V1 histogram.
type fixedWidthHeader struct {
	wordSize        int   // bytes per count: 2, 4 or 8
	payloadLength   int64 // V1 only: the counts' length in bytes, as announced
	digits          int32
	lowest          int64
	highest         int64
	conversionRatio float64 // V1's integerToDoubleValueConversionRatio; 1 for V0
}

// decodeFixedWidth decodes the uncompressed form of a V0 or V1 histogram read
// from r. version is the cookie base the caller found (directly, or as the
// compressed base minus one); outer is the full cookie when r is the
// uncompressed form itself, or 0 when r is inflated data whose own cookie is
// still to be checked.
func decodeFixedWidth(version int32, r io.Reader, outer int32) (*hdr.PackedHistogram, error) {
	name := encodingName(version)
	fail := func(format string, args ...any) (*hdr.PackedHistogram, error) {
		return nil, fmt.Errorf("histogram encoding "+name+": "+format, args...)
	}
	headerSize := headerSizeV1
	if version == cookieV0 {
		headerSize = headerSizeV0
	}
	buf := make([]byte, headerSize)
	if n, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fail("data ends after %d bytes, inside the %d-byte header", n, headerSize)
		}
		return fail("inflating the header: %v", err)
	}
	cookie := int32(binary.BigEndian.Uint32(buf))
	if outer == 0 && cookie&^0xf0 != version {
		return fail("the compressed frame holds cookie 0x%08x, not a %s cookie (base 0x%08x)", uint32(cookie), name, uint32(version))
	}
	h := fixedWidthHeader{wordSize: int(cookie&0xf0) >> 4, conversionRatio: 1}
	if h.wordSize != 2 && h.wordSize != 4 && h.wordSize != 8 {
		return fail("cookie 0x%08x gives a word size of %d bytes, want 2, 4 or 8", uint32(cookie), h.wordSize)
	}
	if version == cookieV0 {
		// cookie, digits, lowest, highest, totalCount (ignored, see decodeHistogram)
		h.digits = int32(binary.BigEndian.Uint32(buf[4:]))
		h.lowest = int64(binary.BigEndian.Uint64(buf[8:]))
		h.highest = int64(binary.BigEndian.Uint64(buf[16:]))
	} else {
		// cookie, payloadLength, normalizingIndexOffset (ignored), digits,
		// lowest, highest, conversion ratio
		h.payloadLength = int64(int32(binary.BigEndian.Uint32(buf[4:])))
		h.digits = int32(binary.BigEndian.Uint32(buf[12:]))
		h.lowest = int64(binary.BigEndian.Uint64(buf[16:]))
		h.highest = int64(binary.BigEndian.Uint64(buf[24:]))
		h.conversionRatio = math.Float64frombits(binary.BigEndian.Uint64(buf[32:]))
	}
	countsLen, err := hdrCountsLength(h.lowest, h.highest, h.digits)
	if err != nil {
		return fail("%v", err)
	}
	maxPayload := int64(countsLen) * int64(h.wordSize)

	// Read V1's announced length or V0's whole counts array, whichever
	// applies, and then see whether the data goes on.
	limit := maxPayload
	if version == cookieV1 {
		switch {
		case h.payloadLength < 0:
			return fail("header says the counts payload is %d bytes", h.payloadLength)
		case h.payloadLength%int64(h.wordSize) != 0:
			return fail("header says the counts payload is %d bytes, not a whole number of %d-byte words", h.payloadLength, h.wordSize)
		case h.payloadLength > maxPayload+headerSizeV1:
			return fail("header says the counts payload is %d bytes, but %d counts of %d bytes (lowest %d, highest %d, %d digits) take at most %d", h.payloadLength, countsLen, h.wordSize, h.lowest, h.highest, h.digits, maxPayload)
		}
		limit = h.payloadLength
	}
	w := v2PayloadWriter{}
	words, err := readFixedWidthCounts(bufio.NewReader(io.LimitReader(r, limit)), h.wordSize, countsLen, &w)
	if err != nil {
		return fail("%v", err)
	}
	var probe [1]byte
	if n, err := io.ReadFull(r, probe[:]); n == 1 {
		if version == cookieV0 {
			return fail("counts payload goes past the %d bytes of the %d counts the header's geometry holds", maxPayload, countsLen)
		}
		return fail("counts payload goes past the %d bytes the header says", h.payloadLength)
	} else if err != io.EOF {
		// Reaching the end of a zlib stream verifies its checksum.
		return fail("counts payload of %d bytes: %v", words*int64(h.wordSize), err)
	}
	if got := words * int64(h.wordSize); version == cookieV1 && got != h.payloadLength {
		if got != h.payloadLength-headerSizeV1 {
			return fail("counts payload is %d bytes, header says %d", got, h.payloadLength)
		}
		// HdrHistogram_c's V1 encoder counted its 40-byte header into
		// payloadLength: accepted, see decodeHistogram.
	}
	return decodeV2Histogram(frameCompressedV2(w.histogram(h)))
}

// readFixedWidthCounts reads big-endian signed count words of wordSize
// bytes from r until it ends, at most countsLen of them, adds each to w and
// returns how many it read. A partial word, a word past countsLen, a negative
// count, a sum past MaxInt64 and a failure of r (a truncated or corrupt zlib
// stream, a failed checksum) are errors.
func readFixedWidthCounts(r io.Reader, wordSize, countsLen int, w *v2PayloadWriter) (int64, error) {
	var word [8]byte
	var index int
	var sum int64
	for {
		n, err := io.ReadFull(r, word[:wordSize])
		if err == io.EOF {
			return int64(index), nil
		}
		if err == io.ErrUnexpectedEOF {
			return 0, fmt.Errorf("counts payload is %d bytes, not a whole number of %d-byte words", index*wordSize+n, wordSize)
		}
		if err != nil {
			return 0, fmt.Errorf("after %d bytes of counts: %v", index*wordSize+n, err)
		}
		if index >= countsLen {
			return 0, fmt.Errorf("counts payload goes past the %d counts the header's geometry holds", countsLen)
		}
		var count int64
		switch wordSize {
		case 2:
			count = int64(int16(binary.BigEndian.Uint16(word[:])))
		case 4:
			count = int64(int32(binary.BigEndian.Uint32(word[:])))
		default:
			count = int64(binary.BigEndian.Uint64(word[:]))
		}
		if count < 0 {
			return 0, fmt.Errorf("count at index %d is negative: %d", index, count)
		}
		if count > math.MaxInt64-sum {
			return 0, fmt.Errorf("counts sum past MaxInt64 at index %d", index)
		}
		sum += count
		w.add(count)
		index++
	}
}

// inflateReader reads inflated data for decodeFixedWidth. It reports every
// failure of the zlib reader as an inflateError, so that a truncated stream
// (which zlib reports as io.ErrUnexpectedEOF) is not taken for data that ends
// inside a word, and it fails once more than left bytes have come out.
type inflateReader struct {
	z    io.Reader
	left int64
}

// inflateError is a failure of the zlib data under an inflateReader.
type inflateError struct{ err error }

// Error says that the zlib data failed, and how.
func (e *inflateError) Error() string { return "zlib data: " + e.err.Error() }

// Unwrap returns the zlib reader's error.
func (e *inflateError) Unwrap() error { return e.err }

// Read reads inflated bytes, at most left of them in all.
func (r *inflateReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, &inflateError{fmt.Errorf("inflates to more than %d bytes", maxInflatedHistogram)}
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.z.Read(p)
	r.left -= int64(n)
	if err != nil && err != io.EOF {
		err = &inflateError{err}
	}
	return n, err
}

// hdrCountsLength returns the length of the counts array of a histogram of the
// given geometry, after checking the geometry as Java's constructor does:
// 0 to 5 digits, lowest at least 1, highest at least twice the lowest, and a
// smallest untrackable value that fits 64 bits. The arithmetic mirrors
// hdrhistogram-go's, so the length is the one hdr.DecodePacked allocates.
func hdrCountsLength(lowest, highest int64, digits int32) (int, error) {
	if digits < 0 || digits > 5 {
		return 0, fmt.Errorf("header asks for %d significant digits, want 0 to 5", digits)
	}
	if lowest < 1 {
		return 0, fmt.Errorf("header's lowest discernible value is %d, want at least 1", lowest)
	}
	if lowest > math.MaxInt64/2 || highest < 2*lowest {
		return 0, fmt.Errorf("header's highest trackable value %d is below twice its lowest discernible value %d", highest, lowest)
	}
	largestSingleUnit := 2 * math.Pow10(int(digits))
	subBucketCountMagnitude := int(math.Ceil(math.Log2(largestSingleUnit)))
	subBucketHalfCountMagnitude := max(subBucketCountMagnitude, 1) - 1
	unitMagnitude := int(math.Floor(math.Log2(float64(lowest))))
	if unitMagnitude+subBucketHalfCountMagnitude > 61 {
		return 0, fmt.Errorf("header's lowest discernible value %d is too large for %d significant digits", lowest, digits)
	}
	subBucketCount := int64(1) << (subBucketHalfCountMagnitude + 1)
	smallestUntrackable := subBucketCount << unitMagnitude
	buckets := 1
	for smallestUntrackable <= highest {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		smallestUntrackable <<= 1
		buckets++
	}
	return (buckets + 1) * int(subBucketCount/2), nil
}

// v2PayloadWriter builds a V2 counts payload from counts given in index
// order: ZigZag LEB128 for a count, a negative value for a run of zeros.
// Trailing zeros are left out, as they are in the payloads Java writes.
type v2PayloadWriter struct {
	payload []byte
	zeros   int64 // zero counts seen since the last non-zero one
}

// add appends the count at the next index.
func (w *v2PayloadWriter) add(count int64) {
	if count == 0 {
		w.zeros++
		return
	}
	switch {
	case w.zeros == 1:
		w.payload = appendZigZagLEB128(w.payload, 0)
	case w.zeros > 1:
		w.payload = appendZigZagLEB128(w.payload, -w.zeros)
	}
	w.zeros = 0
	w.payload = appendZigZagLEB128(w.payload, count)
}

// histogram returns the uncompressed V2 form of the counts added so far with
// the geometry and conversion ratio of h.
func (w *v2PayloadWriter) histogram(h fixedWidthHeader) []byte {
	out := make([]byte, headerSizeV1, headerSizeV1+len(w.payload))
	binary.BigEndian.PutUint32(out[0:], uint32(cookieV2|0x10))
	binary.BigEndian.PutUint32(out[4:], uint32(len(w.payload)))
	binary.BigEndian.PutUint32(out[8:], 0) // normalizingIndexOffset
	binary.BigEndian.PutUint32(out[12:], uint32(h.digits))
	binary.BigEndian.PutUint64(out[16:], uint64(h.lowest))
	binary.BigEndian.PutUint64(out[24:], uint64(h.highest))
	binary.BigEndian.PutUint64(out[32:], math.Float64bits(h.conversionRatio))
	return append(out, w.payload...)
}

// appendZigZagLEB128 appends v in HdrHistogram's LEB128-64b9B ZigZag form: seven
// bits a byte, low bits first, with the high bit set while more follow, and
// the ninth byte, if reached, carrying the last eight bits whole.
func appendZigZagLEB128(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for range 8 {
		if u < 0x80 {
			return append(b, byte(u))
		}
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}
