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
	//
	// A line that is one of the server's own messages rather than a
	// request ("Proxy fe started.") is returned as a notRequest error: the
	// decoder reports it as a *NotRequestError, not as a bad line.
	Parse(line []byte, s *Sample, f *Fields) error
}

// notRequest is the error a LineParser returns for a line that is not a
// request; its text is the reason, a key to count such lines by ("haproxy
// proxy started"). Parsers return the constants they declare, so that such a
// line costs no allocation in the parser.
type notRequest string

func (e notRequest) Error() string { return "is not a request (" + string(e) + ")" }

// NotRequestError reports an input line that is not a request but one of
// the server's own messages (HAProxy's "Proxy fe started.", a Caddy log
// entry that is not an access log entry): the line was skipped, and is no
// call. Reason says what the line is, a key to count such lines by. Like a
// *ParseError it is not fatal; it unwraps to one, so that a caller that
// knows only *ParseError counts the line as a bad one rather than stopping.
type NotRequestError struct {
	File   string // name of the input, "-" for stdin
	Line   int    // 1-based line number
	Reason string // "haproxy proxy started", "caddy log message"
}

func (e *NotRequestError) Error() string {
	return fmt.Sprintf("%s:%d: is not a request (%s)", e.File, e.Line, e.Reason)
}

// Unwrap returns the line as a *ParseError.
func (e *NotRequestError) Unwrap() error {
	return &ParseError{File: e.File, Line: e.Line, Reason: "is not a request (" + e.Reason + ")"}
}

// Noter is implemented by decoders that have something to say about their
// input as a whole, once ("the time in %{%d/%b/%Y:%H:%M:%S}t is not read:
// ..."), for the report's notes. Notes returns the same notes whatever has
// been read.
type Noter interface {
	Notes() []string
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
// no grouping). Lines are read behind the prefixes of log pipelines
// (prefix.go), except those p reads itself (prefixOwner).
//
// A line may start with what looks like a prefix and is the line itself (an
// nginx log_format that begins with $time_iso8601): each line is parsed
// without its prefixes and, when that fails, as it stands, or the other way
// round. Which comes first is settled once, from the input's first
// non-blank line (stripFirst), so that the decoders of one input's chunks
// (ChunkDecoder), made from that line, all read alike.
func NewLineDecoder(r io.Reader, name string, p LineParser, g *Grouper) Decoder {
	d := &lineDecoder{src: lineSource{br: bufio.NewReaderSize(r, 64<<10)}, name: name, p: p, g: g, rules: allPrefixes}
	if o, ok := p.(prefixOwner); ok {
		d.rules &^= o.ownPrefixes()
	}
	if line, err := peekFirstLine(d.src.br); err == nil {
		d.stripFirst = d.prefersStripped(line)
	}
	return d
}

// prefersStripped reports whether line, an input's first line, reads
// without its prefixes: true when it has some and parses without them, or
// parses neither way; false when it has none or parses only as it stands.
func (d *lineDecoder) prefersStripped(line []byte) bool {
	rest := stripPrefixes(line, d.rules)
	if len(rest) == len(line) {
		return false
	}
	if d.try(rest) == nil {
		return true
	}
	return d.try(line) != nil
}

type lineDecoder struct {
	src    lineSource
	name   string
	p      LineParser
	g      *Grouper
	line   int
	s      Sample
	fields Fields
	// rules are the prefixes stripped; stripFirst: a line is parsed
	// without them first, then as it stands (see NewLineDecoder).
	rules      prefixRules
	stripFirst bool
	notes      []string
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
		// In the order the first line settled: without the prefixes, then
		// as it stands; or as it stands and, only when that fails, without
		// them (so an input without prefixes costs nothing more). The error
		// is the first try's, unless the second finds the line good or not
		// a request.
		var second []byte
		if d.stripFirst {
			if rest := stripPrefixes(line, d.rules); len(rest) != len(line) {
				if len(bytes.TrimSpace(rest)) == 0 {
					continue // a blank line behind its prefixes
				}
				line, second = rest, line
			}
		}
		err = d.try(line)
		if _, skip := err.(notRequest); err != nil && !skip {
			if second == nil && !d.stripFirst {
				if rest := stripPrefixes(line, d.rules); len(rest) != len(line) {
					second = rest
				}
			}
			if second != nil && len(bytes.TrimSpace(second)) == 0 {
				continue // a blank line behind its prefixes
			}
			if second != nil {
				switch err2 := d.try(second); err2.(type) {
				case nil, notRequest:
					err = err2
				}
			}
		}
		if err != nil {
			if nr, ok := err.(notRequest); ok {
				return Sample{}, &NotRequestError{File: d.name, Line: d.line, Reason: string(nr)}
			}
			var fe *FieldError
			if errors.As(err, &fe) {
				return Sample{}, &ParseError{File: d.name, Line: d.line, Field: fe.Field, Value: displayValue(fe.Value), Reason: fe.Reason}
			}
			return Sample{}, &ParseError{File: d.name, Line: d.line, Reason: err.Error()}
		}
		s := &d.s
		s.Method = MethodName(d.fields.Method)
		if d.g != nil {
			s.Group = d.g.Key(s, &d.fields)
		}
		return *s, nil
	}
}

// try parses line into d.s and d.fields, reset first. s lives in the
// decoder: a local passed to Parse through the interface would escape to
// the heap, one allocation per line.
func (d *lineDecoder) try(line []byte) error {
	d.s = Sample{}
	d.fields = Fields{}
	return d.p.Parse(line, &d.s, &d.fields)
}

// Notes implements Noter: what the format said about the input when the
// decoder was made (newLogDecoder's notes).
func (d *lineDecoder) Notes() []string { return d.notes }

// readLine returns the next line without its line ending, or io.EOF. A line
// longer than maxLine is returned as a *ParseError after it is skipped.
func (d *lineDecoder) readLine() ([]byte, error) {
	d.line++
	line, err := d.src.next()
	if err == errLongLine {
		return nil, &ParseError{File: d.name, Line: d.line, Reason: "line is longer than 1 MiB"}
	}
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// Reset makes d read data, lines of the same input from line number line
// on; see ChunkDecoder. The lines are parsed where they are.
func (d *lineDecoder) Reset(data []byte, line int) {
	d.src.resetMem(data)
	d.line = line - 1
}

// resetReader makes d read r, the rest of the same input from line number
// line on.
func (d *lineDecoder) resetReader(r io.Reader, line int) {
	d.src.resetReader(r)
	d.line = line - 1
}

// cuttable: every line is a record.
func (d *lineDecoder) cuttable([]byte) bool { return true }

// newLogDecoder ends every log format's constructor: the grouper from o,
// then the line decoder over p. A bad --by or --route-pattern names the input.
// notes are what the format has to say about the input as a whole (see
// Noter).
func newLogDecoder(r io.Reader, name string, o Options, p LineParser, notes ...string) (Decoder, error) {
	g, err := NewGrouper(o.By, o.RoutePatterns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := NewLineDecoder(r, name, p, g).(*lineDecoder)
	d.notes = notes
	return d, nil
}
