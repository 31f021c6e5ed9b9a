package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// CSVOptions select the columns of a CSV input.
//
// A column is named case-insensitively, with spaces and hyphens read as
// underscores ("Latency-MS" finds "latency_ms"), or by its 1-based index
// ("2"). An input without a header row can only be addressed by index.
type CSVOptions struct {
	Column       string        // latency column; "" = the first well-known name found
	Unit         time.Duration // unit of the latency column; 0 = from the column name's suffix
	TimeColumn   string        // timestamp column; "" = detect ("timestamp", "time", "ts", "date", "datetime")
	StatusColumn string        // status column; "" = detect ("status", "status_code", "code")
	By           []string      // group-by columns, in order
	// Through the registry (NewDecoder, Format.New), Unit and By are
	// Options.Unit and Options.By, whatever they hold here: one --unit and
	// one --by for every format. NewCSV's own callers set them here.
}

// ErrEmptyInput is returned (wrapped, after the input's name) by NewCSV when
// the input holds no row at all.
var ErrEmptyInput = errors.New("empty input")

// Column names NewCSV looks for, in order of preference. A latency name may
// carry a unit suffix (see unitSuffixes); the first base name present wins,
// and among columns with the same base the leftmost one. cmd/tunetimeout's
// help text lists them too.
var (
	latencyColumns = []string{"latency", "duration", "elapsed", "response_time"}
	timeColumns    = []string{"timestamp", "time", "ts", "date", "datetime"}
	statusColumns  = []string{"status", "status_code", "code"}
	methodColumns  = []string{"method", "http_method", "request_method", "http_request_method"}
)

// unitSuffixes map a column name's suffix to the unit of its values.
var unitSuffixes = []struct {
	suffix string
	unit   time.Duration
}{
	{"_ns", time.Nanosecond}, {"_nanos", time.Nanosecond}, {"_nanoseconds", time.Nanosecond},
	{"_us", time.Microsecond}, {"_micros", time.Microsecond}, {"_microseconds", time.Microsecond},
	{"_ms", time.Millisecond}, {"_millis", time.Millisecond}, {"_milliseconds", time.Millisecond},
	{"_s", time.Second}, {"_sec", time.Second}, {"_secs", time.Second}, {"_seconds", time.Second},
}

// splitUnit splits a normalized column name into its stem and the unit its
// suffix names; unit is 0 when there is no unit suffix.
func splitUnit(name string) (stem string, unit time.Duration) {
	for _, s := range unitSuffixes {
		if len(name) > len(s.suffix) && strings.HasSuffix(name, s.suffix) {
			return name[:len(name)-len(s.suffix)], s.unit
		}
	}
	return name, 0
}

// normalize folds a column name for matching: trimmed, lower case, with
// spaces and hyphens read as underscores.
func normalize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, strings.ToLower(strings.TrimSpace(name)))
}

var utf8BOM = []byte("\xef\xbb\xbf")

// maxInternedGroups bounds the table of group names a CSV decoder reuses, so
// that grouping by a column with a distinct value on every row (a request
// id) costs one string per row rather than memory growing with the input.
const maxInternedGroups = 10_000

// csvDecoder is the Decoder NewCSV returns.
type csvDecoder struct {
	csvLayout
	rows  csvRows
	notes []string // Noter: what the decoder says about the input

	// pending is the first row of an input without a header, yielded
	// first, and the lines its fields start on.
	pending      []string
	pendingLines []int
	atPending    bool // the row being decoded is pending

	times  lastSecond
	groups map[string]string
	recent recentNames // the group names met last, before groups
	buf    []byte
}

// csvLayout is what NewCSV learns from the header and the options: where
// the columns are. Forks of a decoder share it, read-only.
type csvLayout struct {
	name string
	cols columns

	lat       int
	unit      time.Duration
	timeCol   int // -1: none
	statusCol int // -1: none
	methodCol int // -1: none; detected by name only
	by        []int
	need      int // fields a row must have to hold every column above
}

// columns describes the columns of a CSV input, from its header row or,
// without one, from the width of its first row.
type columns struct {
	names []string // as written; nil when the input has no header
	norm  []string // names normalized
	width int
}

// find returns the index of the column ref names, or -1.
func (c *columns) find(ref string) int {
	if c.names != nil {
		n := normalize(ref)
		if i := slices.Index(c.norm, n); i >= 0 {
			return i
		}
	}
	if k, err := strconv.Atoi(strings.TrimSpace(ref)); err == nil && k >= 1 && k <= c.width {
		return k - 1
	}
	return -1
}

// detect returns the first column with one of the given names, or -1.
func (c *columns) detect(names []string) int {
	for _, n := range names {
		if i := slices.Index(c.norm, n); i >= 0 {
			return i
		}
	}
	return -1
}

// detectLatency returns the first column named like a latency, or -1.
func (c *columns) detectLatency() int {
	for _, base := range latencyColumns {
		for i, n := range c.norm {
			if stem, _ := splitUnit(n); n == base || stem == base {
				return i
			}
		}
	}
	return -1
}

// name returns how errors name column i: its header, or its 1-based index.
func (c *columns) name(i int) string {
	if c.names != nil {
		return c.names[i]
	}
	return strconv.Itoa(i + 1)
}

// list returns the column names for an error message, at most 20.
func (c *columns) list() string {
	const maxShown = 20
	var b strings.Builder
	for i, n := range c.names {
		if i == maxShown {
			fmt.Fprintf(&b, ", and %d more", len(c.names)-maxShown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
}

// notFound is the error for a column named by an option but absent.
func (c *columns) notFound(input string, option usage.Option, ref string) error {
	if c.names == nil {
		return usage.About(option, usage.Errorf("%s: %s column %q not found: the input has no header row (its first row is all numbers), so name columns by 1-based index, 1 to %d",
			input, option, ref, c.width))
	}
	return usage.About(option, usage.Errorf("%s: %s column %q not found; the columns are %s", input, option, ref, c.list()))
}

// NewCSV reads the header of r (named name in errors; "-" for stdin) and
// returns a streaming decoder over the remaining rows.
//
// The first row is a header when any of its fields is not a number; a UTF-8
// byte order mark before it is ignored. Without a header, the latency is the
// only column, or the one o.Column gives by 1-based index, and o.Unit is
// required. The latency column is o.Column or the first of latency,
// duration, elapsed, response_time, each alone or with a unit suffix (_ns,
// _us, _ms, _s, _seconds, ...); its unit is o.Unit, else the suffix's. The
// timestamp (timestamp, time, ts, date, datetime) and status (status,
// status_code, code) columns are optional and detected by name unless given;
// the request method's (method, http_method, request_method,
// http_request_method) is detected by name, for Sample.Method.
//
// NewCSV fails when the input is empty (ErrEmptyInput), when no latency
// column or unit is found, or when a column named in o is absent. Row
// problems are reported by Next as *ParseError: a latency that is empty, not
// a number, negative, not finite or beyond time.Duration; a timestamp or
// status that does not parse; a row too short; a CSV syntax error.
//
// Values are read with surrounding spaces trimmed. An empty or "-" status
// reads as 0 (unknown) and an empty or "-" timestamp as the zero Time.
// Sample.Group is the o.By values joined by " ", each as names.Value
// writes it (empty: "-"; "-" or one with a space or a quote: quoted).
func NewCSV(r io.Reader, name string, o CSVOptions) (Decoder, error) {
	if o.Unit < 0 {
		return nil, fmt.Errorf("%s: unit %v is negative", name, o.Unit)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	d := &csvDecoder{csvLayout: csvLayout{name: name, timeCol: -1, statusCol: -1, methodCol: -1}, rows: csvRows{src: lineSource{br: br}, header: true}}
	header, err := d.readFirstRow()
	if err != nil {
		return nil, err
	}
	if err := d.findLatency(o, header); err != nil {
		return nil, err
	}
	if err := d.findColumns(o, header); err != nil {
		return nil, err
	}
	if len(d.by) > 0 {
		d.groups = make(map[string]string)
	}
	return d, nil
}

// readFirstRow reads the input's first row: its header, the columns'
// names, when any of its fields is not a number, else the first row of
// values, kept for Next to yield first.
func (d *csvDecoder) readFirstRow() (header bool, err error) {
	err = d.rows.next()
	d.rows.header = false
	if err == io.EOF {
		return false, fmt.Errorf("%s: %w", d.name, ErrEmptyInput)
	}
	if err != nil {
		return false, fmt.Errorf("%s: first row: %w", d.name, err)
	}
	first := d.rows.fields
	d.cols.width = len(first)
	header = slices.ContainsFunc(first, func(f string) bool { return !isNumber(strings.TrimSpace(f)) })
	if header {
		d.cols.names = make([]string, len(first))
		d.cols.norm = make([]string, len(first))
		for i, f := range first {
			f = strings.Clone(f) // first's fields point into the read buffer
			d.cols.names[i] = strings.TrimSpace(f)
			d.cols.norm[i] = normalize(f)
		}
	} else {
		d.pending = make([]string, len(first))
		d.pendingLines = make([]int, len(first))
		for i, f := range first {
			d.pending[i] = strings.Clone(f)
			d.pendingLines[i] = d.rows.fieldLine(i)
		}
	}
	return header, nil
}

// findLatency finds the latency column (o.Column, else detected by name
// in a header, else the only column) and its unit (o.Unit, else the
// column name's suffix).
func (l *csvLayout) findLatency(o CSVOptions, header bool) error {
	c, name := &l.cols, l.name
	switch {
	case o.Column != "":
		if l.lat = c.find(o.Column); l.lat < 0 {
			return c.notFound(name, usage.Column, o.Column)
		}
	case header:
		if l.lat = c.detectLatency(); l.lat < 0 {
			return fmt.Errorf("%s: no latency column among %s; looked for %s, each alone or with a unit suffix (_ms, _us, _s, _seconds, ...); name it with %s",
				name, c.list(), strings.Join(latencyColumns, ", "), usage.Column)
		}
	case c.width == 1:
		l.lat = 0
	default:
		return fmt.Errorf("%s: the input has no header row (its first row is all numbers) and %d columns; give the latency column's 1-based index with %s",
			name, c.width, usage.Column)
	}

	l.unit = o.Unit
	if l.unit == 0 {
		if header {
			_, l.unit = splitUnit(c.norm[l.lat])
		}
		if l.unit == 0 {
			what := fmt.Sprintf("column %q has no unit suffix (_ms, _us, _s, ...)", c.name(l.lat))
			if !header {
				what = "the input has no header row to name the unit"
			}
			return fmt.Errorf("%s: unknown unit of the latency: %s; pass %s (ns, us, ms or s)", name, what, usage.Unit)
		}
	}
	return nil
}

// findColumns finds the other columns: timestamp and status (given in o,
// else detected by name in a header), method (detected by name) and the
// group-by columns; and how many fields a row needs to hold them all.
func (l *csvLayout) findColumns(o CSVOptions, header bool) error {
	c, name := &l.cols, l.name
	if o.TimeColumn != "" {
		if l.timeCol = c.find(o.TimeColumn); l.timeCol < 0 {
			return c.notFound(name, usage.TimeColumn, o.TimeColumn)
		}
	} else if header {
		l.timeCol = c.detect(timeColumns)
	}
	if o.StatusColumn != "" {
		if l.statusCol = c.find(o.StatusColumn); l.statusCol < 0 {
			return c.notFound(name, usage.StatusColumn, o.StatusColumn)
		}
	} else if header {
		l.statusCol = c.detect(statusColumns)
	}
	if header {
		l.methodCol = c.detect(methodColumns)
	}
	for _, b := range o.By {
		i := c.find(b)
		if i < 0 {
			return c.notFound(name, usage.By, b)
		}
		l.by = append(l.by, i)
	}

	l.need = max(l.lat, l.timeCol, l.statusCol, l.methodCol) + 1
	for _, i := range l.by {
		l.need = max(l.need, i+1)
	}
	return nil
}

// Notes implements Noter.
func (d *csvDecoder) Notes() []string { return d.notes }

// Next returns the next row's sample; see Decoder.
func (d *csvDecoder) Next() (Sample, error) {
	rec := d.pending
	d.atPending = rec != nil
	if rec != nil {
		d.pending = nil
	} else {
		if err := d.rows.next(); err != nil {
			return Sample{}, d.readError(err)
		}
		rec = d.rows.fields
	}
	if len(rec) < d.need {
		return Sample{}, &ParseError{File: d.name, Line: d.fieldLine(0),
			Reason: fmt.Sprintf("has %d fields, want at least %d", len(rec), d.need)}
	}

	var s Sample
	v := strings.TrimSpace(rec[d.lat])
	lat, reason := parseLatency(v, d.unit)
	if reason != "" {
		return Sample{}, d.fieldError(d.lat, v, reason)
	}
	s.Latency = lat
	if d.timeCol >= 0 {
		v := strings.TrimSpace(rec[d.timeCol])
		if v != "" && v != "-" {
			t, ok := d.times.parse(v)
			if !ok {
				return Sample{}, d.fieldError(d.timeCol, v, reasonTime)
			}
			s.Time = t
		}
	}
	if d.statusCol >= 0 {
		v := strings.TrimSpace(rec[d.statusCol])
		st, ok := parseStatus(v)
		if !ok {
			return Sample{}, d.fieldError(d.statusCol, v, reasonStatus)
		}
		s.Status = st
	}
	if d.methodCol >= 0 {
		s.Method = MethodName(strings.TrimSpace(rec[d.methodCol]))
	}
	if len(d.by) > 0 {
		s.Group = d.group(rec)
	}
	return s, nil
}

// fieldLine returns the line where field i of the current row starts.
func (d *csvDecoder) fieldLine(i int) int {
	if d.atPending {
		return d.pendingLines[i]
	}
	return d.rows.fieldLine(i)
}

// readError turns an error of the row reader into Next's error: io.EOF as
// is, a syntax error as a *ParseError (encoding/csv has dropped the rest of
// the bad record and reads on from the next line), anything else fatal.
func (d *csvDecoder) readError(err error) error {
	if err == io.EOF {
		return err
	}
	if err == errLongLine {
		return &ParseError{File: d.name, Line: d.rows.line, Reason: err.Error()}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		reason := fmt.Sprintf("invalid CSV: %v (column %d)", pe.Err, pe.Column)
		if pe.Line != pe.StartLine {
			reason = fmt.Sprintf("invalid CSV: %v (line %d, column %d)", pe.Err, pe.Line, pe.Column)
		}
		return &ParseError{File: d.name, Line: pe.StartLine, Reason: reason}
	}
	return fmt.Errorf("%s: %w", d.name, err)
}

// fieldError is the *ParseError for column i of the current row holding v,
// at the line where that field starts (a quoted field may follow a line
// break inside the row).
func (d *csvDecoder) fieldError(i int, v, reason string) *ParseError {
	return &ParseError{File: d.name, Line: d.fieldLine(i), Field: d.cols.name(i), Value: displayValue(v), Reason: reason, Kind: "column"}
}

// group returns the row's group name, reusing one string per distinct group
// (up to maxInternedGroups) so that grouping does not allocate on each row.
func (d *csvDecoder) group(rec []string) string {
	b := d.buf[:0]
	for k, i := range d.by {
		if k > 0 {
			b = append(b, ' ')
		}
		start := len(b)
		b = append(b, strings.TrimSpace(rec[i])...)
		b = names.FinishValue(b, start)
	}
	b = names.CapBytes(b)
	d.buf = b
	if g, ok := d.recent.find(b); ok {
		return g
	}
	g, ok := d.groups[string(b)] // no allocation: the compiler reads b in place
	if !ok {
		g = string(b)
		if len(d.groups) < maxInternedGroups {
			d.groups[g] = g
		}
	}
	d.recent.add(g)
	return g
}

func init() {
	Register(Format{
		Name:     "csv",
		Priority: 70,
		Flags: []Flag{
			{Name: "column", Usage: "latency column (name, or 1-based index); default: a well-known name", Field: func(o *Options) *string { return &o.CSV.Column }},
			{Name: "time-column", Usage: "timestamp column (RFC 3339, Unix seconds or milliseconds); default: timestamp, time, ts, date", Field: func(o *Options) *string { return &o.CSV.TimeColumn }},
			{Name: "status-column", Usage: "status column; default: status, status_code, code", Field: func(o *Options) *string { return &o.CSV.StatusColumn }},
		},
		Summary: "CSV with a header: a latency column (latency_ms, duration_s, ...), optional timestamp, status and group columns",
		Sniff:   sniffCSV,
		New: func(r io.Reader, name string, o Options) (Decoder, error) {
			c := o.CSV
			c.By, c.Unit = o.By, o.Unit // one --by and one --unit for every format
			d, err := NewCSV(r, name, c)
			if cd, ok := d.(*csvDecoder); ok && o.Latency != "" && o.Latency != "request" {
				// Found by auto among logs (--input csv refuses it): said,
				// not ignored silently.
				cd.notes = append(cd.notes, fmt.Sprintf("%s %s does not apply to CSV: its latency column is read as it is", usage.Latency, o.Latency))
			}
			return d, err
		},
	})
}

// sniffCSV accepts a header naming a latency column, or a first row that is
// one number (a headerless column of latencies).
func sniffCSV(line []byte) bool {
	if isNumber(strings.TrimSpace(string(line))) {
		return true
	}
	if bytes.HasPrefix(line, utf8BOM) {
		line = line[len(utf8BOM):]
	}
	for _, f := range strings.Split(string(line), ",") {
		n := normalize(strings.Trim(f, `"`))
		if stem, _ := splitUnit(n); slices.Contains(latencyColumns, n) || slices.Contains(latencyColumns, stem) {
			return true
		}
	}
	return false
}

// Reset makes d read data, rows of the same input from line number line
// on, with the columns of its header; see ChunkDecoder.
func (d *csvDecoder) Reset(data []byte, line int) {
	if data == nil {
		data = []byte{}
	}
	d.rows.reset(data, line)
	d.pending, d.atPending = nil, false
}

// resetReader makes d read r, the rest of the same input from line number
// line on.
func (d *csvDecoder) resetReader(r io.Reader, line int) {
	d.rows.src.br.Reset(r)
	d.rows.reset(nil, line)
	d.pending, d.atPending = nil, false
}

// cuttable: a block without a quote holds no quoted line break, so each of
// its lines starts a row.
func (d *csvDecoder) cuttable(block []byte) bool { return bytes.IndexByte(block, '"') < 0 }
