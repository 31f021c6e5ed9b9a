package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// LineParser parses one line of a line-oriented format (access logs, JSON
// lines). It is the part each such format writes; NewLineDecoder does the
// reading, line numbers, errors and grouping for all of them.
type LineParser interface {
	// Parse reads line into s (reset to the zero Sample before the call)
	// and the raw request fields into f (reset too). A problem with the line
	// is returned as a *FieldError. line, and the slices Parse stores in f,
	// are only valid until Parse returns to the decoder's next line: Parse
	// must not keep them, and must copy what it keeps in s (strings).
	Parse(line []byte, s *Sample, f *Fields) error
}

// Fields are the raw request fields of one line that grouping may use. The
// slices point into the line being parsed.
type Fields struct {
	Method   []byte // "GET"
	Path     []byte // the request target as logged, query string included: "/users/42?x=1"
	Host     []byte // the Host header or virtual server
	Upstream []byte // the upstream, backend or cluster that served the call
}

// FieldError is a LineParser's complaint about one field of a line; the
// decoder adds the input's name and the line number.
type FieldError struct {
	Field  string // "" when the whole line is bad
	Value  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Value + " " + e.Reason
}

// maxLine is the longest line a line decoder accepts; a longer one is a
// *ParseError (and skipped), so one corrupt line cannot take the memory.
const maxLine = 1 << 20

// NewLineDecoder returns a Decoder that reads r line by line (LF or CRLF),
// skips blank lines, parses each with p and groups the samples with g (nil:
// no grouping).
func NewLineDecoder(r io.Reader, name string, p LineParser, g *Grouper) Decoder {
	return &lineDecoder{br: bufio.NewReaderSize(r, 64<<10), name: name, p: p, g: g}
}

type lineDecoder struct {
	br   *bufio.Reader
	name string
	p    LineParser
	g    *Grouper
	line int
	long []byte // a line longer than the reader's buffer, assembled
	// mem is a chunk of the input held in memory (Reset), read instead of
	// br when inMem, from pos on: its lines are sliced, not copied.
	mem    []byte
	pos    int
	inMem  bool
	s      Sample
	fields Fields
}

func (d *lineDecoder) Next() (Sample, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return Sample{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		// s lives in the decoder: a local passed to Parse through the
		// interface would escape to the heap, one allocation per line.
		d.s = Sample{}
		d.fields = Fields{}
		s := &d.s
		if err := d.p.Parse(line, s, &d.fields); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return Sample{}, &ParseError{File: d.name, Line: d.line, Field: fe.Field, Value: displayValue(fe.Value), Reason: fe.Reason}
			}
			return Sample{}, &ParseError{File: d.name, Line: d.line, Reason: err.Error()}
		}
		if d.g != nil {
			s.Group = d.g.Key(s, &d.fields)
		}
		return *s, nil
	}
}

// readLine returns the next line without its line ending, or io.EOF. A line
// longer than maxLine is returned as a *ParseError after it is skipped.
func (d *lineDecoder) readLine() ([]byte, error) {
	d.line++
	if d.inMem {
		if d.pos >= len(d.mem) {
			return nil, io.EOF
		}
		rest := d.mem[d.pos:]
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		d.pos += n
		if n > maxLine {
			return nil, &ParseError{File: d.name, Line: d.line, Reason: "line is longer than 1 MiB"}
		}
		line := bytes.TrimSuffix(rest[:n], []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), nil
	}
	line, err := d.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		d.long = append(d.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = d.br.ReadSlice('\n')
			if len(d.long) <= maxLine {
				d.long = append(d.long, line...)
			}
		}
		if len(d.long) > maxLine {
			d.long = d.long[:0]
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, &ParseError{File: d.name, Line: d.line, Reason: "line is longer than 1 MiB"}
		}
		line = d.long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// Reset makes d read data, lines of the same input from line number line
// on; see ChunkDecoder. The lines are parsed where they are.
func (d *lineDecoder) Reset(data []byte, line int) {
	d.mem, d.pos, d.inMem = data, 0, true
	d.line = line - 1
}

// resetReader makes d read r, the rest of the same input from line number
// line on.
func (d *lineDecoder) resetReader(r io.Reader, line int) {
	d.br.Reset(r)
	d.mem, d.pos, d.inMem = nil, 0, false
	d.line = line - 1
	d.long = d.long[:0]
}

// cuttable: every line is a record.
func (d *lineDecoder) cuttable([]byte) bool { return true }

// newLogDecoder ends every log format's constructor: the grouper from o,
// then the line decoder over p. A bad --by or --route-pattern names the input.
func newLogDecoder(r io.Reader, name string, o Options, p LineParser) (Decoder, error) {
	g, err := NewGrouper(o.By, o.RoutePatterns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return NewLineDecoder(r, name, p, g), nil
}
