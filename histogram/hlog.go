package histogram

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tunetimeout/tunetimeout/ingest"
)

// Interval logs: the HdrHistogram log format (.hlog), one base64 V2
// histogram per line. tunetimeout writes one line per group and interval,
// in microseconds, with the group in Tag=, and keeps what the format has
// no place for in comment lines other readers skip:
//
//	#[tunetimeout interval log 1: values in microseconds, Interval_Max in seconds, Tag= is the group (percent-encoded), interval 1m0s]
//	#[Histogram log format version 1.3]
//	#[StartTime: 1793613600 (seconds since epoch), 2026-11-02T10:00:00Z]
//	#[BaseTime: 0 (seconds since epoch)]
//	"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//	#[tunetimeout-cell {"tag":"/users/{id}","start":1793613600,"excluded":{"status 5xx":3},"censored":"HISTF...","arrivals":[0,12,1,9]}]
//	Tag=/users/{id},1793613600.000000,60.000000,0.812031,HISTFAAAA...
//	#[tunetimeout-input {...}]
//
// A cell line comes just before the histogram line it completes: the
// censored values and connect times (base64 V2, microseconds), the samples
// out of range ("below", "above"), the exclusions by reason and the
// arrivals as pairs of second (from the interval's start) and calls. The
// input line, last, is for the caller (WriteLog's trailer). Samples without
// a time are written last, at time 0 with length 0.

// logMarker starts the first line of an interval log tunetimeout wrote.
const logMarker = "#[tunetimeout interval log 1"

const (
	cellPrefix  = "#[tunetimeout-cell "
	inputPrefix = "#[tunetimeout-input "
)

// WriteLog writes s's cells (Set.Every) as an interval log, interval by
// interval and group by group in name order, then trailer (when not nil)
// as JSON in an input line.
func WriteLog(w io.Writer, s *Set, trailer any) error {
	every := s.every
	if every == 0 {
		return errors.New("interval log: the set keeps no intervals")
	}
	type entry struct {
		g     *Group
		start int64
	}
	var cells []entry
	for _, g := range s.Groups() {
		for _, start := range g.CellStarts() {
			cells = append(cells, entry{g, start})
		}
	}
	// In time order, the untimed cells (math.MinInt64) last.
	slices.SortFunc(cells, func(a, b entry) int {
		au, bu := a.start == Untimed, b.start == Untimed
		if au != bu {
			if au {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.start, b.start), strings.Compare(a.g.Name, b.g.Name))
	})
	bw := bufio.NewWriter(w)
	lw := hdr.NewHistogramLogWriter(bw)
	fmt.Fprintf(bw, "%s: values in microseconds, Interval_Max in seconds, Tag= is the group (percent-encoded), interval %s]\n",
		logMarker, time.Duration(every)*time.Second)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	if len(cells) > 0 && cells[0].start != Untimed {
		_ = lw.OutputStartTime(cells[0].start * 1000)
	}
	// Timestamps are absolute: saying so keeps readers from taking them
	// for offsets when the first one is the untimed cell's 0.
	_ = lw.OutputBaseTime(0)
	_ = lw.OutputLegend()
	// Cells are encoded on every core (deflating thousands of small
	// histograms is most of the work) a batch at a time, and written in
	// order.
	workers := runtime.GOMAXPROCS(0)
	const batch = 512
	texts := make([]bytes.Buffer, batch)
	errs := make([]error, batch)
	for lo := 0; lo < len(cells); lo += batch {
		part := cells[lo:min(lo+batch, len(cells))]
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < len(part); i += workers {
					texts[i].Reset()
					// Frozen cells are decoded here, a batch at a time.
					errs[i] = writeCell(&texts[i], part[i].g.Name, part[i].g.CellAt(part[i].start), every)
				}
			})
		}
		wg.Wait()
		for i := range part {
			if errs[i] != nil {
				return errs[i]
			}
			if _, err := bw.Write(texts[i].Bytes()); err != nil {
				return err
			}
		}
	}
	if trailer != nil {
		if err := writeComment(bw, inputPrefix, trailer); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// cellJSON is a cell line.
type cellJSON struct {
	Tag      string           `json:"tag"`
	Start    int64            `json:"start"`
	Below    int64            `json:"below,omitempty"`
	Above    int64            `json:"above,omitempty"`
	Excluded map[string]int64 `json:"excluded,omitempty"`
	Methods  map[string]int64 `json:"methods,omitempty"` // request method -> calls
	Censored string           `json:"censored,omitempty"`
	Connect  string           `json:"connect,omitempty"`
	Arrivals []int64          `json:"arrivals,omitempty"` // second, calls, second, calls...
}

func writeCell(w io.Writer, tag string, c *Cell, every int64) error {
	start := c.Start
	length := every
	if start == Untimed {
		start, length = 0, 0
	}
	j := cellJSON{Tag: escapeTag(tag), Start: start, Below: c.Below, Above: c.Above, Excluded: c.Excluded, Methods: c.Methods}
	var err error
	if j.Censored, err = encodePacked(c.Censored); err != nil {
		return err
	}
	if j.Connect, err = encodePacked(c.Connect); err != nil {
		return err
	}
	for i, off := range c.Seconds {
		j.Arrivals = append(j.Arrivals, int64(off), c.Calls[i])
	}
	if err := writeComment(w, cellPrefix, j); err != nil {
		return err
	}
	return writeHistogram(w, j.Tag, start, length, c.Latency)
}

// writeHistogram writes a histogram line as hdrhistogram-go's
// HistogramLogWriter does (TestHistogramLineIsTheLibrarys), with
// encodeV2's reused compressors: "Tag=t," when tagged, then start and
// length in seconds, the largest value divided by 10^6 (the writer's
// default ratio), and the histogram.
func writeHistogram(w io.Writer, tag string, start, length int64, h *hdr.PackedHistogram) error {
	payload, err := encodeV2(h)
	if err != nil {
		return err
	}
	if tag != "" {
		tag = "Tag=" + tag + ","
	}
	_, err = fmt.Fprintf(w, "%s%f,%f,%f,%s\n", tag, float64(start), float64(length), float64(h.Max())/hdr.MsToNsRatio, payload)
	return err
}

func encodePacked(p *hdr.PackedHistogram) (string, error) {
	if p == nil || p.TotalCount() == 0 {
		return "", nil
	}
	b, err := encodeV2(p)
	return string(b), err
}

// writeComment writes v as JSON in a comment line. '#' is written as
// \u0023, so that no text in it (a quoted bad line, say) can look like a
// "#[StartTime: " to readers that search lines for it.
func writeComment(w io.Writer, prefix string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = bytes.ReplaceAll(b, []byte("#"), []byte(`\u0023`))
	_, err = fmt.Fprintf(w, "%s%s]\n", prefix, b)
	return err
}

// escapeTag percent-encodes what a Tag= value cannot hold (commas,
// spaces, line breaks: the HdrHistogram writers refuse them) and what
// could be misread ('%', '#', '[', ']', quotes, control and non-ASCII
// bytes).
func escapeTag(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`,%#[]"\`, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unescapeTag undoes escapeTag; a malformed escape is kept as it stands.
func unescapeTag(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// LogEntry is one interval of one tag read from an interval log, or the
// input line of a log tunetimeout wrote (Input set, Cell nil).
type LogEntry struct {
	Line int    // where the histogram (or input) line is
	Tag  string // "" when the line has none
	// Start and Length are the interval's, in Unix seconds (BaseTime
	// applied); Untimed says the interval is tunetimeout's cell of samples
	// without a time.
	Start, Length float64
	Untimed       bool
	// Cell holds the interval's histograms in Latency's geometry and
	// microseconds, whatever the file's: values of other geometries are
	// moved to the highest value equivalent to theirs (see LogReader.Unit).
	// For logs tunetimeout wrote it has everything a cell holds; for
	// others, its histogram alone (no arrivals: rates come from Count and
	// Length).
	Cell *Cell
	// Digits is the precision of the file's histogram: fewer than Digits
	// means the values are coarser than Latency's.
	Digits int
	// OldGo is set on the first entry of a log written by hdrhistogram-go
	// before v1.3.0, whose times were in milliseconds, the end in place of
	// the length: they are read as such.
	OldGo bool
	Input json.RawMessage
}

// LogReader reads interval logs: tunetimeout's own and those of other
// HdrHistogram implementations (Java's HistogramLogWriter, jHiccup, YCSB,
// HdrHistogram_c...), histograms of every encoding (decodeHistogram). A line it cannot read is an *ingest.ParseError with
// the file and line; reading goes on after one.
type LogReader struct {
	// Unit is the duration of one histogram value in logs other tools
	// wrote (the format does not say; the HdrHistogram writers' default
	// Interval_Max ratio, ms:ns, hints at nanoseconds). tunetimeout's own
	// logs are in microseconds whatever Unit says.
	Unit time.Duration

	sc                *bufio.Scanner
	name              string
	line              int
	own               bool
	startTime         float64
	baseTime          float64
	sawStart, sawBase bool
	pending           *cellJSON // the cell line before the next histogram line
	pendingLine       int
	oldGo             bool // the log's times are those of hdrhistogram-go before v1.3.0
	interval          time.Duration
}

// oldGoMillis is where a StartTimestamp stops being seconds (the year
// 5138) and is taken for the milliseconds of hdrhistogram-go before v1.3.0.
const oldGoMillis = 1e11

// maxLogLine bounds a line: a V2 histogram of 28,000 populated buckets
// fits in less than 200 KB of base64.
const maxLogLine = 4 << 20

// NewLogReader returns a reader of the interval log r, named name in errors.
func NewLogReader(r io.Reader, name string) *LogReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLogLine)
	return &LogReader{Unit: time.Nanosecond, sc: sc, name: name}
}

// Own reports whether the log read so far says tunetimeout wrote it.
func (lr *LogReader) Own() bool { return lr.own }

// Interval is the length of the intervals the log says it holds, as
// tunetimeout's own logs do in their first line (summarize --interval); 0
// when it says none.
func (lr *LogReader) Interval() time.Duration { return lr.interval }

// Next returns the next entry; io.EOF at the end. After an
// *ingest.ParseError it may be called again.
func (lr *LogReader) Next() (LogEntry, error) {
	for lr.sc.Scan() {
		lr.line++
		line := bytes.TrimSpace(lr.sc.Bytes())
		if lr.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		switch {
		case len(line) == 0 || line[0] == '"':
			continue // blank, the legend
		case line[0] == '#':
			e, ok, err := lr.comment(line)
			if err != nil || ok {
				return e, err
			}
			continue
		}
		return lr.histogramLine(line)
	}
	if err := lr.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return LogEntry{}, fmt.Errorf("%s:%d: a line is longer than %d MiB", lr.name, lr.line+1, maxLogLine>>20)
		}
		return LogEntry{}, fmt.Errorf("%s: %w", lr.name, err)
	}
	if lr.pending != nil {
		lr.pending = nil
		return LogEntry{}, lr.errorf(lr.pendingLine, "", "", "cell line with no histogram line after it")
	}
	return LogEntry{}, io.EOF
}

func (lr *LogReader) errorf(line int, field, value, format string, args ...any) *ingest.ParseError {
	if len(value) > 64 {
		value = value[:64] + "..."
	}
	return &ingest.ParseError{File: lr.name, Line: line, Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// comment reads a comment line: the start and base times, tunetimeout's
// own lines; others are skipped.
func (lr *LogReader) comment(line []byte) (LogEntry, bool, error) {
	s := string(line)
	switch {
	case strings.HasPrefix(s, logMarker):
		lr.own = true
		// "..., interval 1m0s]": what WriteLog wrote, else nothing.
		if i := strings.LastIndex(s, ", interval "); i >= 0 {
			d, err := time.ParseDuration(strings.TrimSuffix(s[i+len(", interval "):], "]"))
			if err == nil && d >= time.Second && d%time.Second == 0 {
				lr.interval = d
			}
		}
	case strings.HasPrefix(s, "#[StartTime: "):
		v, err := leadingFloat(s[len("#[StartTime: "):])
		if err != nil {
			return LogEntry{}, false, lr.errorf(lr.line, "StartTime", s, "is not a time in seconds")
		}
		lr.startTime, lr.sawStart = v, true
	case len(s) >= len("#[BaseTime: ") && strings.EqualFold(s[:len("#[BaseTime: ")], "#[BaseTime: "):
		// hdrhistogram-go before v1.4.0 wrote "#[Basetime: ".
		v, err := leadingFloat(s[len("#[BaseTime: "):])
		if err != nil {
			return LogEntry{}, false, lr.errorf(lr.line, "BaseTime", s, "is not a time in seconds")
		}
		lr.baseTime, lr.sawBase = v, true
	case lr.own && strings.HasPrefix(s, cellPrefix):
		var dangling error
		if lr.pending != nil {
			dangling = lr.errorf(lr.pendingLine, "", "", "cell line with no histogram line after it")
			lr.pending = nil
		}
		var j cellJSON
		body := strings.TrimSuffix(s[len(cellPrefix):], "]")
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			return LogEntry{}, false, cmp.Or(dangling, error(lr.errorf(lr.line, "", "", "cell line is not valid: %v", err)))
		}
		if len(j.Arrivals)%2 != 0 {
			return LogEntry{}, false, cmp.Or(dangling, error(lr.errorf(lr.line, "", "", "cell line: arrivals are not pairs of second and calls")))
		}
		lr.pending, lr.pendingLine = &j, lr.line
		if dangling != nil {
			return LogEntry{}, false, dangling
		}
	case lr.own && strings.HasPrefix(s, inputPrefix):
		body := strings.TrimSuffix(s[len(inputPrefix):], "]")
		if !json.Valid([]byte(body)) {
			return LogEntry{}, false, lr.errorf(lr.line, "", "", "input line is not valid JSON")
		}
		return LogEntry{Line: lr.line, Input: json.RawMessage(body)}, true, nil
	}
	return LogEntry{}, false, nil
}

// leadingFloat parses the number at the start of s ("1441812279.474 (seconds...").
func leadingFloat(s string) (float64, error) {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(s)
	}
	return strconv.ParseFloat(s[:end], 64)
}

// histogramLine reads "[Tag=t,]start,length,max,BASE64".
func (lr *LogReader) histogramLine(line []byte) (LogEntry, error) {
	pending := lr.pending
	lr.pending = nil
	s := string(line)
	e := LogEntry{Line: lr.line}
	if rest, ok := strings.CutPrefix(s, "Tag="); ok {
		tag, after, found := strings.Cut(rest, ",")
		if !found {
			return e, lr.errorf(lr.line, "", "", "Tag= with no interval after it")
		}
		e.Tag, s = tag, after
	}
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return e, lr.errorf(lr.line, "", "", "want start,length,max,histogram; got %d fields", len(f))
	}
	var nums [3]float64
	for i, name := range []string{"StartTimestamp", "Interval_Length", "Interval_Max"} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return e, lr.errorf(lr.line, name, f[i], "is not a number of seconds")
		}
		nums[i] = v
	}
	p, err := decodeHistogram([]byte(f[3]))
	if err != nil {
		return e, lr.errorf(lr.line, "Interval_Compressed_Histogram", f[3], "is not a histogram: %v", err)
	}
	e.Digits = int(p.SignificantFigures())
	if !lr.own && nums[0] >= oldGoMillis && nums[1] >= nums[0] {
		// hdrhistogram-go before v1.3.0 wrote the start and the end in
		// milliseconds where the start and the length in seconds go: no
		// time in seconds is that large (it would be after the year
		// 5000), nor an interval longer than the time since 1970.
		nums[0], nums[1] = nums[0]/1000, (nums[1]-nums[0])/1000
		if !lr.oldGo {
			lr.oldGo = true
			e.OldGo = true
		}
	}
	// Timestamps: absolute, or offsets from BaseTime, or (no BaseTime)
	// offsets from StartTime when more than a year before it, as Java's
	// HistogramLogReader decides.
	if !lr.sawStart {
		lr.startTime, lr.sawStart = nums[0], true
	}
	if !lr.sawBase {
		if nums[0] < lr.startTime-365*24*3600 {
			lr.baseTime = lr.startTime
		}
		lr.sawBase = true
	}
	e.Start, e.Length = nums[0]+lr.baseTime, nums[1]
	if lr.own {
		e.Tag = unescapeTag(e.Tag)
		return lr.ownCell(e, p, pending)
	}
	e.Cell = &Cell{Start: int64(math.Floor(e.Start)), Latency: newPacked()}
	conv := converter(p, lr.Unit)
	for v, n := range p.ForEachBucket {
		ns := conv(v)
		if ns > int64(Highest) || e.Cell.Latency.RecordValues(ns/int64(time.Microsecond), n) != nil {
			e.Cell.Above += n
		}
	}
	return e, nil
}

// ownCell completes the entry of a histogram line of tunetimeout's own
// log with the cell line before it.
func (lr *LogReader) ownCell(e LogEntry, p *hdr.PackedHistogram, pending *cellJSON) (LogEntry, error) {
	if p.LowestTrackableValue() != 1 || p.HighestTrackableValue() != highestMicros || p.SignificantFigures() != Digits {
		return e, lr.errorf(lr.line, "Interval_Compressed_Histogram", "", "histogram range is %d-%d with %d digits, not tunetimeout's 1-%d with %d",
			p.LowestTrackableValue(), p.HighestTrackableValue(), p.SignificantFigures(), highestMicros, Digits)
	}
	c := &Cell{Start: int64(e.Start), Latency: p}
	if pending != nil {
		if unescapeTag(pending.Tag) != e.Tag || pending.Start != int64(e.Start) {
			return e, lr.errorf(lr.line, "", "", "histogram line is for tag %q at %g, its cell line (line %d) for %q at %d",
				e.Tag, e.Start, lr.pendingLine, unescapeTag(pending.Tag), pending.Start)
		}
		if pending.Below < 0 || pending.Above < 0 {
			return e, lr.errorf(lr.pendingLine, "", "", "cell line: negative out-of-range count")
		}
		c.Below, c.Above = pending.Below, pending.Above
		for reason, n := range pending.Excluded {
			if n < 0 {
				return e, lr.errorf(lr.pendingLine, "excluded", reason, "has a negative count")
			}
			if c.Excluded == nil {
				c.Excluded = make(map[string]int64)
			}
			c.Excluded[reason] = n
		}
		for m, n := range pending.Methods {
			if n < 0 {
				return e, lr.errorf(lr.pendingLine, "methods", m, "has a negative count")
			}
			// A name read from a file: one of ingest.Methods, or "other".
			if m = ingest.MethodName(m); m == "" {
				m = ingest.MethodOther
			}
			if c.Methods == nil {
				c.Methods = make(map[string]int64)
			}
			c.Methods[m] += n
		}
		for _, h := range []struct {
			name string
			text string
			into **hdr.PackedHistogram
		}{{"censored", pending.Censored, &c.Censored}, {"connect", pending.Connect, &c.Connect}} {
			if h.text == "" {
				continue
			}
			q, err := decodeHistogram([]byte(h.text))
			if err != nil {
				return e, lr.errorf(lr.pendingLine, h.name, h.text, "is not a histogram: %v", err)
			}
			*h.into = lr.ours(q)
		}
		last := int64(-1)
		for i := 0; i < len(pending.Arrivals); i += 2 {
			off, n := pending.Arrivals[i], pending.Arrivals[i+1]
			if off <= last || off < 0 || off >= max(int64(e.Length), 1) || n <= 0 || off > math.MaxInt32 {
				return e, lr.errorf(lr.pendingLine, "arrivals", strconv.FormatInt(off, 10), "is not a second of the interval after the one before, with calls")
			}
			c.Seconds = append(c.Seconds, int32(off))
			c.Calls = append(c.Calls, n)
			last = off
		}
	}
	if e.Start == 0 && e.Length == 0 {
		e.Untimed, c.Start = true, Untimed
	}
	e.Cell = c
	return e, nil
}

// ours returns p in Latency's geometry (it is, in logs tunetimeout wrote;
// other geometries are refused by ownCell for the main histogram).
func (lr *LogReader) ours(p *hdr.PackedHistogram) *hdr.PackedHistogram {
	if p.LowestTrackableValue() == 1 && p.HighestTrackableValue() == highestMicros && p.SignificantFigures() == Digits {
		return p
	}
	q := newPacked()
	conv := converter(p, time.Microsecond)
	for v, n := range p.ForEachBucket {
		if us := conv(v) / int64(time.Microsecond); us >= 0 && us <= highestMicros {
			_ = q.RecordValues(us, n)
		}
	}
	return q
}

// converter returns a function from the lowest value of one of p's buckets
// to the highest value equivalent to it in nanoseconds, for values in unit.
func converter(p *hdr.PackedHistogram, unit time.Duration) func(v int64) int64 {
	lowest, digits := p.LowestTrackableValue(), p.SignificantFigures()
	return func(v int64) int64 {
		hi := v + equivalentRange(v, lowest, int(digits)) - 1
		f := float64(hi) * float64(unit)
		if f >= math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(f)
	}
}

// equivalentRange is the width of the bucket holding v in an HDR histogram
// of lowest discernible value lowest and digits significant digits
// (HdrHistogram's sizeOfEquivalentValueRange).
func equivalentRange(v, lowest int64, digits int) int64 {
	unitMag := bits.Len64(uint64(max(lowest, 1))) - 1
	largest := 2 * int64(math.Pow10(digits))
	subCountMag := bits.Len64(uint64(largest - 1)) // ceil(log2(largest))
	subHalfMag := max(subCountMag, 1) - 1
	subMask := uint64(int64(1)<<(subHalfMag+1)-1) << unitMag
	bucket := 64 - bits.LeadingZeros64(uint64(v)|subMask) - unitMag - (subHalfMag + 1)
	return int64(1) << (unitMag + max(bucket, 0))
}
