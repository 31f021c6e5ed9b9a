package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"unsafe"
)

// csvRows reads the rows of a CSV input. A line without a double quote,
// the common case of latency exports, is split at its commas in place: the
// fields are views of the reader's buffer and reading them allocates
// nothing. A line with a quote is handed to encoding/csv, which reads the
// further lines of a quoted field if it must, so that quoting, and every
// error about it, follows encoding/csv to the letter. Either way the rows,
// their fields and their line numbers are those encoding/csv gives with
// FieldsPerRecord -1 and ReuseRecord.
type csvRows struct {
	src  lineSource
	line int // lines consumed so far

	fields []string // the current row; see next

	// The current row's position: all its fields are on line rowLine,
	// unless it came from cr, whose line numbers plus crBase are ours.
	rowLine int
	quoted  bool
	crBase  int

	cr   *csv.Reader // made on the first line with a quote
	feed csvFeed
	// header is set while NewCSV reads the first row, whose error is fatal.
	header bool
	// replay holds lines a row with an unterminated quote took from the
	// input and gave back (readQuoted): rawLine returns them first.
	replay [][]byte
}

// maxQuotedRow is the most bytes one row with quotes may span, line breaks
// inside quoted fields included: a stray quote must not make one field of
// the rest of the input.
const maxQuotedRow = maxLine

// errLongLine is rawLine's complaint about a line longer than maxLine,
// which it has skipped; errLongRow encoding/csv's, through csvFeed, about
// a row with quotes longer than maxQuotedRow.
var (
	errLongLine = errors.New("line is longer than 1 MiB")
	errLongRow  = errors.New("the row's quoted fields span more than 1 MiB")
	// errLongInRow is csvFeed's when a line it would hand over is longer
	// than maxLine: the quote before it did not close where a row ends.
	errLongInRow = errors.New("a line longer than 1 MiB follows")
)

// next reads the next row into r.fields. The fields are valid until the
// following call. It returns io.EOF at the end, a *csv.ParseError (line
// numbers already ours) for a row encoding/csv rejects, which is then
// skipped, or a read error.
func (r *csvRows) next() error {
	for {
		line, err := r.rawLine()
		if err != nil {
			return err
		}
		body := trimEOL(line)
		if len(body) == 0 {
			continue // encoding/csv skips empty lines
		}
		if !r.split(body) {
			return r.readQuoted(line)
		}
		r.quoted, r.rowLine = false, r.line
		return nil
	}
}

// split cuts body, a row without its line ending, into r.fields at its
// commas, in one pass eight bytes at a time; false when the row holds a
// quote, for encoding/csv to read (r.fields is then to be replaced).
func (r *csvRows) split(body []byte) bool {
	const (
		lows   = 0x7f7f7f7f7f7f7f7f
		ones   = 0x0101010101010101
		commas = ones * ','
		quotes = ones * '"'
	)
	// zeros has the high bit of each zero byte of x set, and no other bit.
	zeros := func(x uint64) uint64 { return ^((x&lows + lows) | x | lows) }
	r.fields = r.fields[:0]
	start, i := 0, 0
	for ; i+8 <= len(body); i += 8 {
		x := binary.LittleEndian.Uint64(body[i:])
		if zeros(x^quotes) != 0 {
			return false
		}
		for m := zeros(x ^ commas); m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)>>3
			r.fields = append(r.fields, view(body[start:j]))
			start = j + 1
		}
	}
	for ; i < len(body); i++ {
		switch body[i] {
		case '"':
			return false
		case ',':
			r.fields = append(r.fields, view(body[start:i]))
			start = i + 1
		}
	}
	r.fields = append(r.fields, view(body[start:]))
	return true
}

// fieldLine returns the line where field i of the current row starts.
func (r *csvRows) fieldLine(i int) int {
	if !r.quoted {
		return r.rowLine
	}
	line, _ := r.cr.FieldPos(i)
	return line + r.crBase
}

// readQuoted reads the row that starts with line (already consumed, the
// r.line-th) with encoding/csv. encoding/csv reads on into the next lines
// while a quoted field is open; when the row turns out bad (a quote never
// closed, a stray one, more than maxQuotedRow), only its first line is
// bad: the lines it took after that are given back, to be read as rows of
// their own, so that one stray quote does not swallow the rows after it.
func (r *csvRows) readQuoted(line []byte) error {
	if r.cr == nil {
		r.feed.rows = r
		r.cr = csv.NewReader(&r.feed)
		r.cr.ReuseRecord = true
		r.cr.FieldsPerRecord = -1
	}
	start := r.line
	r.feed.first, r.feed.kept = line, nil
	r.feed.rest = line
	r.feed.size = len(line)
	if len(r.feed.taken) > 0 {
		r.feed.taken = r.feed.taken[:0] // (a pointer written on every row would cost a write barrier)
	}
	r.feed.eof = false
	rec, err := r.cr.Read()
	r.feed.rest, r.feed.first = nil, nil
	if err == nil {
		first, _ := r.cr.FieldPos(0)
		r.quoted, r.crBase, r.fields = true, start-first, rec
		return nil
	}
	// encoding/csv keeps no state worth keeping after an error, and may
	// hold part of what it read: start afresh.
	r.cr = nil
	taken := r.feed.taken
	if len(taken) > 0 {
		r.replay = append(taken, r.replay...)
		r.feed.taken = nil
		r.line -= len(taken)
	}
	if errors.Is(err, errLongRow) {
		return &csv.ParseError{StartLine: start, Line: start, Column: 1, Err: errLongRow}
	}
	if errors.Is(err, errLongInRow) {
		err = &csv.ParseError{StartLine: start, Line: start + len(taken) - 1, Column: 1, Err: csv.ErrQuote}
	}
	e := quotedError(err, start)
	var pe *csv.ParseError
	// line's bytes may have been reused by the reads after it; the feed
	// kept a copy then.
	if r.feed.kept != nil {
		line = r.feed.kept
	}
	if errors.As(e, &pe) && (len(taken) > 0 || r.feed.eof && errors.Is(pe.Err, csv.ErrQuote) && pe.Column > len(trimEOL(line))) {
		// A quote this line opens and does not close: encoding/csv found
		// the error on a later line it read for it, or past this line's
		// end at the end of the input. It is this line's quote that is
		// wrong.
		pe.Line, pe.Column = start, openQuote(line)
		what := "this line is skipped and the next is read as a row"
		if r.header {
			what = "the first row must be whole" // NewCSV stops there
		}
		pe.Err = fmt.Errorf("%w: the quote opened on this line does not close where a row ends; %s", pe.Err, what)
	}
	return e
}

// quotedError moves the line numbers of encoding/csv's error about a row
// that starts at line start to ours. (Apart from readQuoted: pe would go
// to the heap on every row.)
func quotedError(err error, start int) error {
	var pe *csv.ParseError
	switch {
	case errors.As(err, &pe):
		e := *pe
		base := start - e.StartLine
		e.StartLine += base
		e.Line += base
		return &e
	case err == io.EOF:
		return io.ErrUnexpectedEOF // not reached: cr was handed a line
	}
	return err
}

// rawLine returns the next line with its line ending, or io.EOF. The line
// is valid until the next call.
func (r *csvRows) rawLine() ([]byte, error) {
	if len(r.replay) > 0 {
		line := r.replay[0]
		r.replay = r.replay[1:]
		r.line++
		if line == nil {
			return nil, errLongLine // a marker (csvFeed)
		}
		return line, nil
	}
	line, err := r.src.next()
	if err == errLongLine {
		r.line++
		return nil, errLongLine
	}
	if err != nil {
		return nil, err
	}
	r.line++
	return line, nil
}

// reset makes r read data (in memory) or, when data is nil, br's new
// input, whose first line is number line.
func (r *csvRows) reset(data []byte, line int) {
	if data != nil {
		r.src.resetMem(data)
	} else {
		r.src.resetReader(nil)
	}
	r.line = line - 1
	r.fields = r.fields[:0]
	r.feed.rest = nil
	r.replay = nil
}

// trimEOL returns line without its line ending as encoding/csv reads it:
// "\n" or "\r\n", or at the end of the input (no "\n") one "\r".
func trimEOL(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	} else if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n]
}

// view returns b as a string without copying it. The string is only valid
// while b is: csvDecoder.Next parses it and copies what it keeps (group
// names are interned copies, error values go through displayValue).
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// csvFeed is the reader under encoding/csv: it hands over the line the row
// starts with, then further lines of the input one Read at a time, never
// more than one line, so that encoding/csv's buffer ends where its row
// ends and the rows after it are read by csvRows again.
type csvFeed struct {
	rows *csvRows
	rest []byte
	// taken are copies of the lines handed over after the row's first, for
	// readQuoted to give back when the row is bad; size is the row's bytes
	// so far, which may not pass maxQuotedRow.
	taken [][]byte
	size  int
	eof   bool // the input ended while encoding/csv read for the row
	// first is the row's first line, as rawLine gave it; kept a copy of
	// it, made before the next rawLine, which may reuse its bytes.
	first, kept []byte
}

func (f *csvFeed) Read(p []byte) (int, error) {
	if len(f.rest) == 0 {
		if f.first != nil && f.kept == nil {
			f.kept = bytes.Clone(f.first)
		}
		line, err := f.rows.rawLine()
		if err == errLongLine {
			// The long line, skipped, stands as a marker among the lines
			// given back, to be counted bad in its turn.
			f.taken = append(f.taken, nil)
			err = errLongInRow
		}
		if err != nil {
			f.eof = err == io.EOF
			return 0, err
		}
		f.size += len(line)
		if f.size > maxQuotedRow {
			// Give this line back too: it may be a row of its own.
			f.taken = append(f.taken, bytes.Clone(line))
			return 0, errLongRow
		}
		f.taken = append(f.taken, bytes.Clone(line))
		f.rest = line
	}
	n := copy(p, f.rest)
	f.rest = f.rest[n:]
	return n, nil
}

// openQuote returns the 1-based column of the quote that opens a quoted
// field of line without closing it, read as encoding/csv reads fields (a
// quote opens one only at a field's start; "" inside is a quote), or of the
// line's first quote when none is left open.
func openQuote(line []byte) int {
	line = trimEOL(line)
	open, atStart := -1, true
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case open >= 0 && c == '"' && i+1 < len(line) && line[i+1] == '"':
			i++
		case open >= 0 && c == '"':
			open, atStart = -1, false
		case open >= 0:
		case c == ',':
			atStart = true
		case c == '"' && atStart:
			open, atStart = i, false
		default:
			atStart = false
		}
	}
	if open < 0 {
		return bytes.IndexByte(line, '"') + 1
	}
	return open + 1
}
