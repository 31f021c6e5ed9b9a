package histogram

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// hlogSampleDir holds the public interval logs that its README.md describes.
const hlogSampleDir = "../testdata/hlog"

// hlogLine is one histogram line of an interval log.
type hlogLine struct {
	number int     // 1-based line number in the file
	tag    string  // the Tag= prefix's value, "" without one
	max    float64 // the Interval_Max column
	text   string  // the base64 histogram, exactly as in the file
}

// readHlogLines returns the histogram lines of an interval log in
// hlogSampleDir. A histogram line is, after an optional "Tag=xxx," prefix,
// "start,length,max,BASE64". Lines starting with '#', the "StartTimestamp"
// legend and blank lines are skipped; any other line fails the test, so that
// nothing is skipped silently.
func readHlogLines(t testing.TB, name string) []hlogLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(hlogSampleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var lines []hlogLine
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, `"StartTimestamp"`) {
			continue
		}
		l := hlogLine{number: i + 1}
		if rest, ok := strings.CutPrefix(line, "Tag="); ok {
			tag, after, found := strings.Cut(rest, ",")
			if !found {
				t.Fatalf("%s:%d: Tag= prefix without a comma: %q", name, i+1, line)
			}
			l.tag, line = tag, after
		}
		fields := strings.Split(line, ",")
		if len(fields) != 4 {
			t.Fatalf("%s:%d: %d comma-separated fields, want start,length,max,histogram: %q", name, i+1, len(fields), line)
		}
		for j, f := range fields[:3] {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				t.Fatalf("%s:%d: field %d: %v", name, i+1, j+1, err)
			}
			l.max = v // the last of the three is Interval_Max
		}
		l.text = fields[3]
		lines = append(lines, l)
	}
	return lines
}

// decodeHlogLine decodes a line's histogram and fails the test on an error.
func decodeHlogLine(t testing.TB, name string, l hlogLine) *hdr.PackedHistogram {
	t.Helper()
	p, err := decodeHistogram([]byte(l.text))
	if err != nil {
		t.Fatalf("%s:%d: %v", name, l.number, err)
	}
	return p
}

// hlogBucket is one populated bucket: its lowest value and its count.
type hlogBucket struct{ value, count int64 }

// bucketsOf lists p's populated buckets in value order.
func bucketsOf(p *hdr.PackedHistogram) []hlogBucket {
	var out []hlogBucket
	for v, c := range p.ForEachBucket {
		out = append(out, hlogBucket{v, c})
	}
	return out
}

// newJavaAccumulator returns the histogram HdrHistogram's log tests add every
// interval into, "new Histogram(3)": lowest discernible value 1, 3 digits,
// auto-resizing (here: sized for every int64). PackedHistogram.Merge records
// each source bucket at its value, as Java's add does for histograms of
// another geometry (and adds counts index by index for the same geometry,
// which lands in the same buckets).
func newJavaAccumulator() *hdr.PackedHistogram {
	return hdr.NewPacked(1, math.MaxInt64, 3)
}

// javaValueAtPercentile is Java's AbstractHistogram.getValueAtPercentile
// (HdrHistogram/HdrHistogram, as at ad76bb5) for a percentile above zero,
// computed from p's buckets: the rank is ceil(percentile' * total / 100),
// at least 1, where percentile' is the percentile one ulp lower; the result
// is the highest value equivalent to the bucket where the running count first
// reaches the rank. It returns the value and the rank.
func javaValueAtPercentile(p *hdr.PackedHistogram, percentile float64) (value, rank int64) {
	requested := math.Min(math.Max(math.Nextafter(percentile, math.Inf(-1)), 0), 100)
	rank = max(int64(math.Ceil(requested*float64(p.TotalCount())/100)), 1)
	var running int64
	for v, c := range p.ForEachBucket {
		running += c
		if running >= rank {
			return highestEquivalentIn(p, v), rank
		}
	}
	return 0, rank
}

// goPercentileRank is the rank hdrhistogram-go's ValueAtPercentile uses
// (PACKED_COMPATIBILITY.md: the nearest rank, percentile/100*total + 0.5
// truncated, at least 1).
func goPercentileRank(percentile float64, total int64) int64 {
	return min(max(int64(percentile/100*float64(total)+0.5), 1), total)
}

// highestEquivalentIn returns the highest value equivalent to v in p's
// geometry, which is what Max reports for a histogram holding only v.
func highestEquivalentIn(p *hdr.PackedHistogram, v int64) int64 {
	q := p.Clone()
	q.Reset()
	if err := q.RecordValue(v); err != nil {
		panic(err)
	}
	return q.Max()
}

// TestDecodeHistogramJavaLogTotals decodes whole sample logs and checks the
// numbers HdrHistogram's own test asserts for the same files, in
// src/test/java/org/HdrHistogram/HistogramLogReaderWriterTest.java at
// HdrHistogram/HdrHistogram commit ec0b873. Each of its tests reads every
// interval with HistogramLogReader.nextIntervalHistogram(), sums
// getTotalCount() and adds each histogram into "new Histogram(3)", then
// asserts (quoted from the file):
//
//	jHiccupV0Log ("jHiccup-2.0.1.logV0.hlog"):
//	    Assert.assertEquals(81, histogramCount);
//	    Assert.assertEquals(61256, totalCount);
//	    Assert.assertEquals(1510998015, accumulatedHistogram.getValueAtPercentile(99.9));
//	    Assert.assertEquals(1569718271, accumulatedHistogram.getMaxValue());
//	jHiccupV1Log ("jHiccup-2.0.6.logV1.hlog"):
//	    Assert.assertEquals(88, histogramCount);
//	    Assert.assertEquals(65964, totalCount);
//	    Assert.assertEquals(1829765119, accumulatedHistogram.getValueAtPercentile(99.9));
//	    Assert.assertEquals(1888485375, accumulatedHistogram.getMaxValue());
//	jHiccupV2Log ("jHiccup-2.0.7S.logV2.hlog"):
//	    Assert.assertEquals(62, histogramCount);
//	    Assert.assertEquals(48761, totalCount);
//	    Assert.assertEquals(1745879039, accumulatedHistogram.getValueAtPercentile(99.9));
//	    Assert.assertEquals(1796210687, accumulatedHistogram.getMaxValue());
//	ycsbV1Log ("ycsb.logV1.hlog"):
//	    Assert.assertEquals(602, histogramCount);
//	    Assert.assertEquals(300056, totalCount);
//	    Assert.assertEquals(1214463, accumulatedHistogram.getValueAtPercentile(99.9));
//	    Assert.assertEquals(1546239, accumulatedHistogram.getMaxValue());
//
// (The same tests also read time ranges of each log; those numbers depend on
// the log reader's range rules, not on decoding, and are not checked here.)
//
// The 99.9th percentile is computed with Java's rank rule. hdrhistogram-go's
// ValueAtPercentile rounds the rank to nearest instead of up, so for the V1
// and V2 jHiccup logs its rank is one lower than Java's; the rank still lands
// in the same bucket, so its value is Java's too. The table pins both ranks.
func TestDecodeHistogramJavaLogTotals(t *testing.T) {
	for _, tc := range []struct {
		file             string
		histograms       int
		total            int64
		p999, max        int64 // Java's numbers
		javaRank, goRank int64 // ranks of the 99.9th percentile under each rule
	}{
		{"jHiccup-2.0.1.logV0.hlog", 81, 61256, 1510998015, 1569718271, 61195, 61195},
		{"jHiccup-2.0.6.logV1.hlog", 88, 65964, 1829765119, 1888485375, 65899, 65898},
		{"jHiccup-2.0.7S.logV2.hlog", 62, 48761, 1745879039, 1796210687, 48713, 48712},
		{"ycsb.logV1.hlog", 602, 300056, 1214463, 1546239, 299756, 299756},
	} {
		t.Run(tc.file, func(t *testing.T) {
			acc := newJavaAccumulator()
			var histograms int
			var total int64
			for _, l := range readHlogLines(t, tc.file) {
				p := decodeHlogLine(t, tc.file, l)
				histograms++
				total += p.TotalCount()
				if dropped := acc.Merge(p); dropped != 0 {
					t.Fatalf("line %d: accumulating dropped %d counts", l.number, dropped)
				}
			}
			if histograms != tc.histograms || total != tc.total {
				t.Errorf("%d histograms with %d values in all, Java's test asserts %d and %d", histograms, total, tc.histograms, tc.total)
			}
			p999, rank := javaValueAtPercentile(acc, 99.9)
			if p999 != tc.p999 || rank != tc.javaRank {
				t.Errorf("99.9th percentile by Java's rule: %d at rank %d, Java's test asserts %d (rank %d)", p999, rank, tc.p999, tc.javaRank)
			}
			if r := goPercentileRank(99.9, total); r != tc.goRank {
				t.Errorf("hdrhistogram-go's rank for 99.9 of %d is %d, want %d", total, r, tc.goRank)
			}
			if got := acc.ValueAtPercentile(99.9); got != tc.p999 {
				t.Errorf("hdrhistogram-go's ValueAtPercentile(99.9) = %d, Java's is %d", got, tc.p999)
			}
			if got := acc.Max(); got != tc.max {
				t.Errorf("max %d, Java's test asserts %d", got, tc.max)
			}
		})
	}
}

// TestDecodeHistogramTaggedLog checks Java's taggedV2LogTest on
// tagged-Log.logV2.hlog, which is jHiccup-2.0.7S.logV2.hlog's first 21
// intervals with each line repeated under Tag=A (quoted from
// HistogramLogReaderWriterTest.java at ec0b873):
//
//	Assert.assertEquals(32290, totalCount);
//	Assert.assertEquals(accumulatedHistogramWithTagA, accumulatedHistogramWithNoTag);
//
// and HdrHistogramJS's src/HistogramLogReader.spec.ts ("should read first
// histogram starting from the beginning", "should return next histogram in
// the logs") on jHiccup-2.0.7S.logV2.hlog: the first interval's mean floors
// to 301998 and the second's to 293719.
func TestDecodeHistogramTaggedLog(t *testing.T) {
	const name = "tagged-Log.logV2.hlog"
	untagged, tagA := newJavaAccumulator(), newJavaAccumulator()
	var total int64
	lines := readHlogLines(t, name)
	for _, l := range lines {
		p := decodeHlogLine(t, name, l)
		total += p.TotalCount()
		switch l.tag {
		case "":
			untagged.Merge(p)
		case "A":
			tagA.Merge(p)
		default:
			t.Fatalf("line %d: tag %q", l.number, l.tag)
		}
	}
	if total != 32290 {
		t.Errorf("total %d, Java's test asserts 32290", total)
	}
	if a, u := bucketsOf(tagA), bucketsOf(untagged); fmt.Sprint(a) != fmt.Sprint(u) || len(lines) != 42 {
		t.Errorf("%d lines; Tag=A accumulates %d buckets, untagged %d, and they differ", len(lines), len(a), len(u))
	}

	v2 := readHlogLines(t, "jHiccup-2.0.7S.logV2.hlog")
	for i, want := range []float64{301998, 293719} {
		if got := math.Floor(decodeHlogLine(t, "jHiccup-2.0.7S.logV2.hlog", v2[i]).Mean()); got != want {
			t.Errorf("interval %d: mean floors to %v, HdrHistogramJS's test asserts %v", i+1, got, want)
		}
	}
}

// TestDecodeHistogramSampleLogs decodes every histogram of every sample log
// and checks it against what the log says about it independently of the
// encoding:
//   - the Interval_Max column, the interval's maximum divided by 1e6 (the
//     writers' default maxValueUnitRatio) and printed with three decimals,
//     lies in the highest populated bucket. The V1 and V2 writers here print
//     that bucket's highest value, the V0 ones a value inside it;
//   - a V0 header's totalCount, which decoders ignore, equals the decoded
//     total.
//
// For logs without published numbers it also pins the decoded histogram
// count, total and maximum; those numbers come from this decoder (and agree
// with the two checks above), not from another implementation.
func TestDecodeHistogramSampleLogs(t *testing.T) {
	pinned := map[string]struct {
		histograms int
		total, max int64
	}{
		"hiccup.140623.1028.10646.hlog": {11, 51715, 3115007},
		"raphael.hlog":                  {1, 140003, 188874751},
		"tagged-non-monotonic.hlog":     {6, 4490, 2754559},
		"bug-whitespace.hlog":           {1, 0, 0},
	}
	files, err := filepath.Glob(filepath.Join(hlogSampleDir, "*.hlog"))
	if err != nil || len(files) < 10 {
		t.Fatalf("sample logs: %v (%d files)", err, len(files))
	}
	var v0Checked int
	for _, path := range files {
		name := filepath.Base(path)
		if name == "regression-bucket-config-shift-overflow.hlog" {
			continue // deliberately corrupt; see TestDecodeHistogramCorruptSampleLog
		}
		acc := newJavaAccumulator()
		var histograms int
		var total int64
		for _, l := range readHlogLines(t, name) {
			p := decodeHlogLine(t, name, l)
			histograms++
			total += p.TotalCount()
			acc.Merge(p)

			var top int64 // lowest value of the highest populated bucket
			for v := range p.ForEachBucket {
				top = v
			}
			if m := l.max * 1e6; m < float64(top)-500 || m > float64(p.Max())+500 {
				t.Errorf("%s:%d: Interval_Max %.3f ms is outside the highest populated bucket [%d, %d] ns", name, l.number, l.max, top, p.Max())
			}
			if v0Total, ok := v0HeaderTotal(t, l.text); ok {
				v0Checked++
				if v0Total != p.TotalCount() {
					t.Errorf("%s:%d: decoded total %d, the V0 header says %d", name, l.number, p.TotalCount(), v0Total)
				}
			}
		}
		if want, ok := pinned[name]; ok && (histograms != want.histograms || total != want.total || acc.Max() != want.max) {
			t.Errorf("%s: %d histograms, total %d, max %d; pinned %d, %d, %d", name, histograms, total, acc.Max(), want.histograms, want.total, want.max)
		}
	}
	if v0Checked != 81+11 {
		t.Errorf("checked %d V0 totals, want the 92 of the two V0 logs", v0Checked)
	}
}

// v0HeaderTotal returns the totalCount field of a compressed V0 histogram's
// header, and false for any other encoding.
func v0HeaderTotal(t testing.TB, text string) (int64, bool) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(raw) < 8 || int32(binary.BigEndian.Uint32(raw))&^0xf0 != cookieV0Compressed {
		return 0, false
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		t.Fatal(err)
	}
	header := make([]byte, headerSizeV0)
	if _, err := io.ReadFull(z, header); err != nil {
		t.Fatal(err)
	}
	return int64(binary.BigEndian.Uint64(header[24:])), true
}

// TestDecodeHistogramCorruptSampleLog decodes HdrHistogram_c's regression
// log, a damaged copy of hiccup.140623.1028.10646.hlog: each histogram line
// must give an error, not a histogram or a panic.
func TestDecodeHistogramCorruptSampleLog(t *testing.T) {
	const name = "regression-bucket-config-shift-overflow.hlog"
	lines := readHlogLines(t, name)
	want := []string{
		"histogram encoding V0: header's lowest discernible value 118931973753274881 is too large for 2 significant digits",
		"histogram cookie 0x1c8486c1 names no HdrHistogram encoding",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d histogram lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		p, err := decodeHistogram([]byte(l.text))
		if p != nil || err == nil || !strings.Contains(err.Error(), want[i]) {
			t.Errorf("line %d: histogram %v, error %v; want an error containing %q", l.number, p != nil, err, want[i])
		}
	}
}

// Histograms written by the C implementation's V1 encoder, from
// HdrHistogram/HdrHistogram_py test/test_hdrhistogram.py (Apache License
// 2.0; see testdata/hlog/README.md). cEncoderV1Sample is the first of
// ENCODE_SAMPLES_HDRHISTOGRAM_C, "encoded from the standard Hdr test
// histograms (load_histogram())", whose load_histogram records 1000 with a
// count of 10000 and 100000000 once into (1, 3600000000, 3).
// wrk2EncoderV1Sample is ENCODE_SAMPLE_WRK2_C, "generated by wrk2 running
// HdrHistogram_c 0.0.1"; the Python test only decodes it.
const (
	cEncoderV1Sample = "HISTggAAAMx4nO3OMQ2AMBRF0V9qoALYGZFQbSQ4qAU0EWQggRC6oICEnDPct75xbUsM8xGP3Dfd2d" +
		"sW9QwAAAAAAAAA4GUqXz8AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" +
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" +
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAH4nXZWnBjY="
	wrk2EncoderV1Sample = "HISTggAAAL94nO3SywnCUBBA0clLYkS3LrUCi0grlqJgBxZnG5agYGZz5WGEgJt7QIb55P1wf71d" +
		"Io7neCtTbF6/3eF+ivERkiRJkiRJkiRJkiRJkiT9S1Opt1PskWfcTLHDXF+pb1Ev6GdcY44x+wUx" +
		"+y3qgXrGnG8QC+ZSh3xV2Y/n5f0S7zmgn/Pch+9XMMfv+G65zoA878/vAv0eOd+L6xXkrAdy1mv4" +
		"v/2Ws17rz8Vzzt1/qf1+tfR5ll7vY/0nEdkGJg=="
)

// TestDecodeHistogramCEncoderV1 decodes V1 histograms written by the C
// encoder, whose payloadLength counts the 40-byte header too.
func TestDecodeHistogramCEncoderV1(t *testing.T) {
	for _, text := range []string{cEncoderV1Sample, wrk2EncoderV1Sample} {
		declared, actual := v1PayloadLengths(t, text)
		if declared-actual != headerSizeV1 {
			t.Fatalf("sample's payloadLength %d, payload %d bytes: not the C encoder's quirk", declared, actual)
		}
	}
	p, err := decodeHistogram([]byte(cEncoderV1Sample))
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalCount() != 10001 || p.CountAtValue(1000) != 10000 || p.CountAtValue(100000000) != 1 ||
		p.LowestTrackableValue() != 1 || p.HighestTrackableValue() != 3600000000 || p.SignificantFigures() != 3 {
		t.Errorf("C sample: total %d, count at 1000 %d, at 1e8 %d, geometry (%d, %d, %d); want load_histogram's 10001, 10000, 1 in (1, 3600000000, 3)",
			p.TotalCount(), p.CountAtValue(1000), p.CountAtValue(100000000), p.LowestTrackableValue(), p.HighestTrackableValue(), p.SignificantFigures())
	}
	// The wrk2 sample has no published numbers; these are this decoder's.
	p, err = decodeHistogram([]byte(wrk2EncoderV1Sample))
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalCount() != 300 || p.HighestTrackableValue() != 86400000000 || p.SignificantFigures() != 2 {
		t.Errorf("wrk2 sample: total %d, highest %d, %d digits", p.TotalCount(), p.HighestTrackableValue(), p.SignificantFigures())
	}
}

// v1PayloadLengths returns a compressed V1 histogram's announced
// payloadLength and the length of the payload that follows its header.
func v1PayloadLengths(t testing.TB, text string) (declared, actual int64) {
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		t.Fatal(err)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return int64(int32(binary.BigEndian.Uint32(inner[4:]))), int64(len(inner) - headerSizeV1)
}

// fixedWidthSpec describes a V0 or V1 histogram for tests to build.
type fixedWidthSpec struct {
	version         int32 // cookieV0 or cookieV1
	wordSize        int   // goes into the cookie as is, so invalid sizes can be built
	digits          int32
	lowest, highest int64
	counts          []int64 // written as wordSize-byte words, in index order
	payloadLength   int64   // V1: announced length; 0 means the true one
	offset          int32   // V1's normalizingIndexOffset
	ratio           float64 // V1's conversion ratio; 0 means 1
	extra           []byte  // appended after the counts
}

// uncompressed returns the uncompressed form s describes.
func (s fixedWidthSpec) uncompressed() []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(s.version)|uint32(s.wordSize)<<4)
	payload := int64(len(s.counts) * s.wordSize)
	if s.version == cookieV0 {
		b = binary.BigEndian.AppendUint32(b, uint32(s.digits))
		b = binary.BigEndian.AppendUint64(b, uint64(s.lowest))
		b = binary.BigEndian.AppendUint64(b, uint64(s.highest))
		var total int64
		for _, c := range s.counts {
			total += c
		}
		b = binary.BigEndian.AppendUint64(b, uint64(total))
	} else {
		if s.payloadLength != 0 {
			payload = s.payloadLength
		}
		ratio := s.ratio
		if ratio == 0 {
			ratio = 1
		}
		b = binary.BigEndian.AppendUint32(b, uint32(payload))
		b = binary.BigEndian.AppendUint32(b, uint32(s.offset))
		b = binary.BigEndian.AppendUint32(b, uint32(s.digits))
		b = binary.BigEndian.AppendUint64(b, uint64(s.lowest))
		b = binary.BigEndian.AppendUint64(b, uint64(s.highest))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(ratio))
	}
	for _, c := range s.counts {
		switch s.wordSize {
		case 2:
			b = binary.BigEndian.AppendUint16(b, uint16(c))
		case 4:
			b = binary.BigEndian.AppendUint32(b, uint32(c))
		default:
			b = binary.BigEndian.AppendUint64(b, uint64(c))
		}
	}
	return append(b, s.extra...)
}

// compressed returns the compressed form s describes.
func (s fixedWidthSpec) compressed() []byte {
	return compressedForm(s.version+1, s.uncompressed())
}

// compressedForm frames zlib-compressed data under the compressed cookie
// base (with a word size of 8 in its 0xf0 bits, as Java and C write it).
func compressedForm(base int32, uncompressed []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(uncompressed)
	w.Close()
	out := binary.BigEndian.AppendUint32(nil, uint32(base)|0x80)
	out = binary.BigEndian.AppendUint32(out, uint32(z.Len()))
	return append(out, z.Bytes()...)
}

// b64 returns raw as padded standard base64.
func b64(raw []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

// javaValueFromIndex is Java's AbstractHistogram.valueFromIndex for a
// geometry, re-derived here so that the tests check where each count lands
// independently of the code under test.
func javaValueFromIndex(index int, lowest int64, digits int32) int64 {
	subBucketCountMagnitude := int(math.Ceil(math.Log2(2 * math.Pow10(int(digits)))))
	halfMagnitude := max(subBucketCountMagnitude, 1) - 1
	half := 1 << halfMagnitude
	unit := int(math.Floor(math.Log2(float64(lowest))))
	bucket := (index >> halfMagnitude) - 1
	sub := (index & (half - 1)) + half
	if bucket < 0 {
		sub -= half
		bucket = 0
	}
	return int64(sub) << (bucket + unit)
}

// TestDecodeHistogramFixedWidthExact builds V0 and V1 histograms of several
// geometries (zero digits included) and word sizes, compressed and not, and
// checks that count word i lands in the bucket of Java's valueFromIndex(i),
// that the geometry is kept exactly, that normalizingIndexOffset does not
// move counts, that V1's conversion ratio survives, and that a payload 40
// bytes shorter than announced (the C encoder's V1 quirk) is read.
func TestDecodeHistogramFixedWidthExact(t *testing.T) {
	geometries := []struct {
		lowest, highest int64
		digits          int32
	}{
		{1, 3600000000, 3},
		{20000, 3600000000000, 2},
		{1000, 1000000000, 2},
		{1, 1 << 40, 0},
		{1, math.MaxInt64, 5},
	}
	for _, g := range geometries {
		countsLen, err := hdrCountsLength(g.lowest, g.highest, g.digits)
		if err != nil {
			t.Fatal(err)
		}
		for _, wordSize := range []int{2, 4, 8} {
			var counts []int64
			indexes := []int{0, 2, 3, 17, 39} // with zero runs of 1 and longer between
			for i, idx := range indexes {
				for len(counts) < idx {
					counts = append(counts, 0)
				}
				counts = append(counts, int64(100*i+7))
			}
			want := make([]hlogBucket, len(indexes))
			for i, idx := range indexes {
				want[i] = hlogBucket{javaValueFromIndex(idx, g.lowest, g.digits), int64(100*i + 7)}
			}
			// V0 writers wrote up to the whole counts array: fill it, with a
			// count at its last index (skipped for the 6 million words of
			// 1..MaxInt64 at 5 digits).
			var last []int64
			if countsLen <= 1<<20 {
				last = append(append(last, counts...), make([]int64, countsLen-len(counts)-1)...)
				last = append(last, 5)
			}
			for _, tc := range []struct {
				name string
				spec fixedWidthSpec
				want []hlogBucket
			}{
				{"V0", fixedWidthSpec{version: cookieV0, counts: counts}, want},
				{"V1", fixedWidthSpec{version: cookieV1, counts: counts}, want},
				{"V1 offset", fixedWidthSpec{version: cookieV1, counts: counts, offset: 7}, want},
				{"V1 C quirk", fixedWidthSpec{version: cookieV1, counts: counts, payloadLength: int64(len(counts)*wordSize + headerSizeV1)}, want},
				{"V1 trailing zeros", fixedWidthSpec{version: cookieV1, counts: append(counts, 0, 0)}, want},
				{"V0 full array", fixedWidthSpec{version: cookieV0, counts: last}, append(want, hlogBucket{javaValueFromIndex(countsLen-1, g.lowest, g.digits), 5})},
			} {
				if tc.spec.counts == nil {
					continue
				}
				s := tc.spec
				s.wordSize, s.lowest, s.highest, s.digits = wordSize, g.lowest, g.highest, g.digits
				for form, raw := range map[string][]byte{"compressed": s.compressed(), "uncompressed": s.uncompressed()} {
					label := fmt.Sprintf("%s (%d, %d, %d) %d-byte %s", tc.name, g.lowest, g.highest, g.digits, wordSize, form)
					p, err := decodeHistogram(b64(raw))
					if err != nil {
						t.Errorf("%s: %v", label, err)
						continue
					}
					if got := bucketsOf(p); fmt.Sprint(got) != fmt.Sprint(tc.want) {
						t.Errorf("%s: buckets %v, want %v", label, got, tc.want)
					}
					if p.LowestTrackableValue() != g.lowest || p.HighestTrackableValue() != g.highest || p.SignificantFigures() != int64(g.digits) {
						t.Errorf("%s: geometry (%d, %d, %d)", label, p.LowestTrackableValue(), p.HighestTrackableValue(), p.SignificantFigures())
					}
				}
			}
		}
	}

	// The conversion ratio is metadata: Encode writes it back.
	s := fixedWidthSpec{version: cookieV1, wordSize: 8, lowest: 1, highest: 1000, digits: 2, counts: []int64{0, 1}, ratio: 2.5}
	p, err := decodeHistogram(b64(s.compressed()))
	if err != nil {
		t.Fatal(err)
	}
	if got := v2RatioOf(t, p); got != 2.5 {
		t.Errorf("conversion ratio %v after decoding, want 2.5", got)
	}
}

// v2RatioOf returns the conversion ratio p's V2 encoding carries.
func v2RatioOf(t testing.TB, p *hdr.PackedHistogram) float64 {
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	inner := inflateCompressed(t, enc)
	return math.Float64frombits(binary.BigEndian.Uint64(inner[32:40]))
}

// inflateCompressed returns the uncompressed form inside a compressed
// histogram's base64 text.
func inflateCompressed(t testing.TB, text []byte) []byte {
	raw, err := base64.StdEncoding.DecodeString(string(text))
	if err != nil {
		t.Fatal(err)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return inner
}

// TestDecodeHistogramTextForms checks the forms of one histogram that are
// all accepted: V2 compressed as written, V2 uncompressed (as Rust's
// V2Serializer writes it), unpadded base64 and surrounding whitespace.
func TestDecodeHistogramTextForms(t *testing.T) {
	line := readHlogLines(t, "jHiccup-2.0.7S.logV2.hlog")[0].text
	want, err := hdr.DecodePacked([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(line)
	for name, text := range map[string][]byte{
		"as written":      []byte(line),
		"V2 uncompressed": b64(inflateCompressed(t, []byte(line))),
		"unpadded":        []byte(base64.RawStdEncoding.EncodeToString(raw)),
		"whitespace":      []byte(" \t" + line + " \r\n"),
	} {
		p, err := decodeHistogram(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fmt.Sprint(bucketsOf(p)) != fmt.Sprint(bucketsOf(want)) {
			t.Errorf("%s: decodes to other buckets than hdr.DecodePacked", name)
		}
	}
}

// TestDecodeHistogramRejects feeds hostile and malformed histograms; each
// must give an error that says what was wrong, and no histogram.
func TestDecodeHistogramRejects(t *testing.T) {
	v1 := func(mod func(*fixedWidthSpec)) fixedWidthSpec {
		s := fixedWidthSpec{version: cookieV1, wordSize: 8, lowest: 1, highest: 3600000000, digits: 3, counts: []int64{0, 3, 0, 0, 9}}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	v0 := v1(func(s *fixedWidthSpec) { s.version = cookieV0 })
	good := v1(nil).compressed()
	withCookie := func(raw []byte, cookie uint32) []byte {
		out := append([]byte(nil), raw...)
		binary.BigEndian.PutUint32(out, cookie)
		return out
	}
	withLength := func(raw []byte, n int32) []byte {
		out := append([]byte(nil), raw...)
		binary.BigEndian.PutUint32(out[4:], uint32(n))
		return out
	}
	badChecksum := append([]byte(nil), good...)
	badChecksum[len(badChecksum)-1] ^= 0xff
	v2Line := readHlogLines(t, "jHiccup-2.0.7S.logV2.hlog")[0].text
	v2Inner := inflateCompressed(t, []byte(v2Line))
	v2Digits9 := append([]byte(nil), v2Inner...)
	binary.BigEndian.PutUint32(v2Digits9[12:], 9)
	// Two counts of MaxInt64 at indexes 0 and 1: their sum overflows.
	v2Overflow := append([]byte(nil), v2Inner[:headerSizeV1]...)
	payload := appendZigZagLEB128(appendZigZagLEB128(nil, math.MaxInt64), math.MaxInt64)
	binary.BigEndian.PutUint32(v2Overflow[4:], uint32(len(payload)))
	v2Overflow = append(v2Overflow, payload...)

	for _, tc := range []struct {
		name string
		text []byte
		want string
	}{
		{"empty", nil, "histogram text is empty"},
		{"blank", []byte(" \n"), "histogram text is empty"},
		{"bad base64", []byte("HIST!!!!"), "is not base64"},
		{"bad base64 padding", []byte("HISTFA=A"), "is not base64"},
		{"too short for a cookie", b64([]byte{0x1c, 0x84, 0x93}), "too few for the 4-byte encoding cookie"},
		{"wrong cookie", b64(withCookie(good, 0x12345678)), "histogram cookie 0x12345678 names no HdrHistogram encoding"},
		{"DoubleHistogram", b64(withCookie(good, 0x0c72124f)), "DoubleHistogram encoding, which is not supported"},
		{"compressed frame cut", b64(good[:6]), "histogram encoding V1: 6 bytes, too few for the 8-byte compressed frame"},
		{"negative compressed length", b64(withLength(good, -1)), "compressed length field says -1 bytes"},
		{"compressed length past the data", b64(withLength(good, int32(len(good)))), fmt.Sprintf("compressed length field says %d bytes, %d follow it", len(good), len(good)-8)},
		{"not zlib", b64(withLength(append(good[:8:8], "not zlib at all"...), 15)), "histogram encoding V1: zlib data: zlib: invalid header"},
		{"zlib checksum", b64(badChecksum), "zlib: invalid checksum"},
		{"frame of V1 holding V0", b64(compressedForm(cookieV1Compressed, v0.uncompressed())), "the compressed frame holds cookie 0x1c849388, not a V1 cookie"},
		{"word size 3", b64(v1(func(s *fixedWidthSpec) { s.wordSize = 3 }).compressed()), "gives a word size of 3 bytes, want 2, 4 or 8"},
		{"word size 0", b64(v0.uncompressedWith(func(s *fixedWidthSpec) { s.wordSize = 0 })), "gives a word size of 0 bytes"},
		{"digits 9", b64(v1(func(s *fixedWidthSpec) { s.digits = 9 }).compressed()), "histogram encoding V1: header asks for 9 significant digits, want 0 to 5"},
		{"V0 digits 9", b64(v0.uncompressedWith(func(s *fixedWidthSpec) { s.digits = 9 })), "histogram encoding V0: header asks for 9 significant digits"},
		{"digits -1", b64(v1(func(s *fixedWidthSpec) { s.digits = -1 }).compressed()), "header asks for -1 significant digits"},
		{"lowest 0", b64(v1(func(s *fixedWidthSpec) { s.lowest = 0 }).compressed()), "lowest discernible value is 0, want at least 1"},
		{"highest below twice lowest", b64(v1(func(s *fixedWidthSpec) { s.lowest, s.highest = 1000, 1999 }).compressed()), "highest trackable value 1999 is below twice its lowest discernible value 1000"},
		{"lowest too large", b64(v1(func(s *fixedWidthSpec) { s.lowest, s.highest = 1<<60, math.MaxInt64 }).compressed()), "is too large for 3 significant digits"},
		{"payload shorter than announced", b64(v1(func(s *fixedWidthSpec) { s.counts, s.payloadLength = []int64{1, 2}, 40 }).compressed()), "histogram encoding V1: counts payload is 16 bytes, header says 40"},
		{"payload longer than announced", b64(v1(func(s *fixedWidthSpec) { s.payloadLength = 8 }).compressed()), "counts payload goes past the 8 bytes the header says"},
		{"announced length not whole words", b64(v1(func(s *fixedWidthSpec) { s.payloadLength = 12 }).compressed()), "header says the counts payload is 12 bytes, not a whole number of 8-byte words"},
		{"announced length negative", b64(v1(func(s *fixedWidthSpec) { s.payloadLength = -8 }).compressed()), "header says the counts payload is -8 bytes"},
		{"announced length past the geometry", b64(v1(func(s *fixedWidthSpec) { s.payloadLength = 1 << 30 }).compressed()), "but 23552 counts of 8 bytes (lowest 1, highest 3600000000, 3 digits) take at most 188416"},
		{"partial word", b64(v0.uncompressedWith(func(s *fixedWidthSpec) { s.extra = []byte{1, 2, 3} })), "histogram encoding V0: counts payload is 43 bytes, not a whole number of 8-byte words"},
		{"header cut", b64(v1(nil).uncompressed()[:20]), "histogram encoding V1: data ends after 20 bytes, inside the 40-byte header"},
		{"negative count", b64(v1(func(s *fixedWidthSpec) { s.counts = []int64{0, 4, -2} }).compressed()), "count at index 2 is negative: -2"},
		{"negative short count", b64(v1(func(s *fixedWidthSpec) { s.wordSize, s.counts = 2, []int64{0x8000} }).compressed()), "count at index 0 is negative: -32768"},
		{"counts sum past MaxInt64", b64(v1(func(s *fixedWidthSpec) { s.counts = []int64{math.MaxInt64, 1} }).compressed()), "counts sum past MaxInt64 at index 1"},
		{"V0 past the counts array", b64(v0.uncompressedWith(func(s *fixedWidthSpec) { s.lowest, s.highest, s.digits = 1, 2, 0 })), "counts payload goes past"},
		{"V1 past the counts array by up to 40 bytes", b64(v1(func(s *fixedWidthSpec) { s.lowest, s.highest, s.digits, s.counts = 1, 2, 0, make([]int64, 5) }).compressed()), "counts payload goes past the 3 counts the header's geometry holds"},
		{"V2 digits 9", b64(compressedV2Text(v2Digits9)), "histogram encoding V2: corrupt histogram header: significant digits must be between 0 and 5, got 9"},
		{"V2 uncompressed digits 9", b64(v2Digits9), "significant digits must be between 0 and 5, got 9"},
		{"V2 uncompressed cut", b64(v2Inner[:30]), "histogram encoding V2: decompressed histogram truncated"},
		{"V2 counts sum past MaxInt64", b64(v2Overflow), "histogram encoding V2: bucket counts sum past MaxInt64"},
	} {
		p, err := decodeHistogram(tc.text)
		if p != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: histogram %v, error %v; want an error containing %q", tc.name, p != nil, err, tc.want)
		}
	}
}

// uncompressedWith returns the uncompressed form of s changed by mod.
func (s fixedWidthSpec) uncompressedWith(mod func(*fixedWidthSpec)) []byte {
	mod(&s)
	return s.uncompressed()
}

// compressedV2Text returns the compressed form of an uncompressed V2
// histogram, compressed as Java compresses it.
func compressedV2Text(uncompressed []byte) []byte {
	return compressedForm(cookieV2Compressed, uncompressed)
}

// TestDecodeHistogramTruncated cuts real histograms of each encoding at
// every length, both the whole encoding (so the compressed length field
// overshoots) and the zlib data alone under a frame that matches it (so the
// stream itself is cut): every cut must give an error.
func TestDecodeHistogramTruncated(t *testing.T) {
	for _, name := range []string{"jHiccup-2.0.1.logV0.hlog", "jHiccup-2.0.6.logV1.hlog", "jHiccup-2.0.7S.logV2.hlog", "raphael.hlog"} {
		raw, err := base64.StdEncoding.DecodeString(readHlogLines(t, name)[0].text)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(raw) {
			if p, err := decodeHistogram(b64(raw[:n])); err == nil || p != nil {
				t.Errorf("%s cut to %d of %d bytes: no error", name, n, len(raw))
			}
			if n < 8 {
				continue
			}
			framed := binary.BigEndian.AppendUint32(append([]byte(nil), raw[:4]...), uint32(n-8))
			framed = append(framed, raw[8:n]...)
			if p, err := decodeHistogram(b64(framed)); err == nil || p != nil {
				t.Errorf("%s with its zlib data cut to %d of %d bytes: no error", name, n-8, len(raw)-8)
			}
		}
	}
}

// TestDecodeHistogramZlibBomb feeds histograms whose zlib data inflates to
// 80 MiB, past maxInflatedHistogram: V0 (no announced length), V1 announcing
// a short payload, and V2. Each must fail after inflating no more than its
// header's geometry allows, without allocating anything near 80 MiB.
func TestDecodeHistogramZlibBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 240 MiB")
	}
	const bombSize = 80 << 20
	zeros := make([]byte, 1<<20)
	bomb := func(base int32, header []byte) []byte {
		var z bytes.Buffer
		w, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
		w.Write(header)
		for range bombSize / len(zeros) {
			w.Write(zeros)
		}
		w.Close()
		out := binary.BigEndian.AppendUint32(nil, uint32(base)|0x80)
		out = binary.BigEndian.AppendUint32(out, uint32(z.Len()))
		return b64(append(out, z.Bytes()...))
	}
	v1Header := fixedWidthSpec{version: cookieV1, wordSize: 8, lowest: 1, highest: 3600000000, digits: 3, payloadLength: 16}.uncompressed()
	v0Header := fixedWidthSpec{version: cookieV0, wordSize: 8, lowest: 1, highest: 3600000000, digits: 3}.uncompressed()
	v2Header := append([]byte(nil), v1Header...)
	binary.BigEndian.PutUint32(v2Header, uint32(cookieV2|0x10))
	binary.BigEndian.PutUint32(v2Header[4:], 23552*9) // the most DecodePacked allows for this geometry
	for _, tc := range []struct {
		name, want string
		text       []byte
	}{
		{"V0", "histogram encoding V0: counts payload goes past the 188416 bytes of the 23552 counts", bomb(cookieV0Compressed, v0Header)},
		{"V1", "histogram encoding V1: counts payload goes past the 16 bytes the header says", bomb(cookieV1Compressed, v1Header)},
		{"V2", "histogram encoding V2:", bomb(cookieV2Compressed, v2Header)},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := decodeHistogram(tc.text)
		runtime.ReadMemStats(&after)
		if p != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s bomb: histogram %v, error %v; want an error containing %q", tc.name, p != nil, err, tc.want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20+uint64(len(tc.text))*2 {
			t.Errorf("%s bomb: decoding allocated %d bytes", tc.name, alloc)
		}
	}
}

// FuzzDecodeHistogram feeds arbitrary histogram texts. decodeHistogram must
// not panic, and a histogram it returns must survive a V2 round trip: encoded
// and decoded again, by hdr.DecodePacked and by decodeHistogram, it has the
// same geometry and counts.
func FuzzDecodeHistogram(f *testing.F) {
	for _, name := range []string{"jHiccup-2.0.1.logV0.hlog", "jHiccup-2.0.6.logV1.hlog", "jHiccup-2.0.7S.logV2.hlog", "raphael.hlog", "bug-whitespace.hlog"} {
		f.Add([]byte(readHlogLines(f, name)[0].text))
	}
	f.Add([]byte(cEncoderV1Sample))
	s := fixedWidthSpec{version: cookieV1, wordSize: 4, lowest: 1, highest: 1000, digits: 0, counts: []int64{3, 0, 1, 0, 0, 2}}
	f.Add(b64(s.uncompressed()))
	s.version = cookieV0
	f.Add(b64(s.compressed()))
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := decodeHistogram(text)
		if err != nil {
			if p != nil {
				t.Fatalf("histogram returned with error %v", err)
			}
			return
		}
		enc, err := p.Encode()
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		want := bucketsOf(p)
		for name, decode := range map[string]func([]byte) (*hdr.PackedHistogram, error){
			"hdr.DecodePacked": hdr.DecodePacked, "decodeHistogram": decodeHistogram,
		} {
			q, err := decode(enc)
			if err != nil {
				t.Fatalf("%s of the re-encoding: %v", name, err)
			}
			if q.TotalCount() != p.TotalCount() || q.LowestTrackableValue() != p.LowestTrackableValue() ||
				q.HighestTrackableValue() != p.HighestTrackableValue() || q.SignificantFigures() != p.SignificantFigures() {
				t.Fatalf("%s of the re-encoding: total %d, geometry (%d, %d, %d); was %d, (%d, %d, %d)", name,
					q.TotalCount(), q.LowestTrackableValue(), q.HighestTrackableValue(), q.SignificantFigures(),
					p.TotalCount(), p.LowestTrackableValue(), p.HighestTrackableValue(), p.SignificantFigures())
			}
			if got := bucketsOf(q); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s of the re-encoding: buckets %v, was %v", name, got, want)
			}
		}
	})
}
