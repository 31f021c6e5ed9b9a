package promsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// scanner reads JSON from a stream one token at a time, so that a decoder
// never holds more of an answer than the element it is decoding: it keeps a
// 64 KiB window of the input, and the strings and numbers it returns are
// bounded (maxString, maxNumber). It checks the JSON grammar as it goes.
type scanner struct {
	src      io.Reader
	buf      []byte
	pos, end int
	off      int64 // input offset of buf[0]
	err      error // what ended the input: io.EOF or a read error
	tmp      []byte
}

// Bounds of what the scanner keeps.
const (
	scanWindow = 64 << 10
	maxString  = 1 << 20 // the longest string kept: a label value, an error message
	maxNumber  = 64      // Prometheus writes timestamps of at most ~20 characters
	maxDepth   = 100     // nesting of values skipped over
)

func newScanner(r io.Reader) *scanner {
	return &scanner{src: r, buf: make([]byte, scanWindow)}
}

// syntaxError is an answer that is not JSON or not the Prometheus API's:
// what was wrong and at which byte of the body.
type syntaxError struct {
	offset int64
	msg    string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("byte %d: %s", e.offset, e.msg) }

func (s *scanner) fail(format string, args ...any) error {
	return &syntaxError{offset: s.off + int64(s.pos), msg: fmt.Sprintf(format, args...)}
}

// ended explains why no byte is left: a read error as it is (a cap, a
// timeout, a reset), or a truncated answer.
func (s *scanner) ended() error {
	if s.err != nil && s.err != io.EOF {
		return s.err
	}
	return s.fail("the answer ends in the middle of its JSON")
}

func (s *scanner) unexpected(c byte, want string) error {
	if c >= 0x20 && c < 0x7f {
		return s.fail("found %q, want %s", rune(c), want)
	}
	return s.fail("found byte 0x%02x, want %s", c, want)
}

// more makes at least one unread byte available; false at the end of the
// input or after a read error.
func (s *scanner) more() bool {
	for empty := 0; s.pos >= s.end; empty++ {
		if s.err != nil {
			return false
		}
		if empty > 100 {
			s.err = io.ErrNoProgress
			return false
		}
		s.off += int64(s.end)
		s.pos, s.end = 0, 0
		n, err := s.src.Read(s.buf)
		s.end = n
		if err != nil {
			s.err = err
		}
	}
	return true
}

// peek returns the next byte that is not white space, without consuming it.
func (s *scanner) peek() (byte, bool) {
	for {
		for s.pos < s.end {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return c, true
			}
		}
		if !s.more() {
			return 0, false
		}
	}
}

// expect consumes the byte want; what names it for the error.
func (s *scanner) expect(want byte, what string) error {
	c, ok := s.peek()
	if !ok {
		return s.ended()
	}
	if c != want {
		return s.unexpected(c, what)
	}
	s.pos++
	return nil
}

// member reports whether another member follows in the object or array
// whose opening byte was consumed, n members ago: it consumes the ','
// before it, or the closing byte after the last.
func (s *scanner) member(closing byte, n int) (bool, error) {
	c, ok := s.peek()
	if !ok {
		return false, s.ended()
	}
	if c == closing {
		s.pos++
		return false, nil
	}
	if n > 0 {
		if c != ',' {
			return false, s.unexpected(c, fmt.Sprintf("',' or '%c'", closing))
		}
		s.pos++
	}
	return true, nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() (bool, error) {
	c, ok := s.peek()
	if !ok {
		return false, s.ended()
	}
	if c != 'n' {
		return false, nil
	}
	return true, s.literal()
}

// literal consumes true, false or null.
func (s *scanner) literal() error {
	c, _ := s.peek()
	want := "null"
	switch c {
	case 't':
		want = "true"
	case 'f':
		want = "false"
	}
	for i := 0; i < len(want); i++ {
		if !s.more() {
			return s.ended()
		}
		if s.buf[s.pos] != want[i] {
			return s.unexpected(s.buf[s.pos], "the literal "+want)
		}
		s.pos++
	}
	return nil
}

// name reads an object member's name, decoded, and the ':' after it. The
// bytes are valid until the next call.
func (s *scanner) name() ([]byte, error) {
	b, escaped, err := s.stringBytes(true)
	if err != nil {
		return nil, err
	}
	if escaped || !utf8.Valid(b) {
		str, err := s.decodeString(b)
		if err != nil {
			return nil, err
		}
		b = append(s.tmp[:0], str...)
	} else {
		// Into tmp: reading the ':' may refill the window b is in.
		b = append(s.tmp[:0], b...)
	}
	return b, s.expect(':', "':' after a member name")
}

// key is name with ASCII letters lower-cased, for matching field names
// regardless of case as encoding/json does.
func (s *scanner) key() ([]byte, error) {
	b, err := s.name()
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b, err
}

// str reads a string.
func (s *scanner) str() (string, error) {
	b, escaped, err := s.stringBytes(true)
	if err != nil {
		return "", err
	}
	if escaped || !utf8.Valid(b) {
		return s.decodeString(b)
	}
	return string(b), nil
}

// decodeString decodes a string's escapes and replaces invalid UTF-8 the
// way encoding/json does.
func (s *scanner) decodeString(b []byte) (string, error) {
	q := make([]byte, 0, len(b)+2)
	q = append(append(append(q, '"'), b...), '"')
	var out string
	if err := json.Unmarshal(q, &out); err != nil {
		return "", s.fail("a string that is not JSON: %v", err)
	}
	return out, nil
}

// stringBytes reads a string's bytes between its quotes, escapes undecoded;
// with keep false it only checks and skips them. The bytes are valid until
// the next call. escaped reports a backslash.
func (s *scanner) stringBytes(keep bool) (b []byte, escaped bool, err error) {
	if err := s.expect('"', "a string"); err != nil {
		return nil, false, err
	}
	s.tmp = s.tmp[:0]
	spanned := false
	start := s.pos
	hex := -1 // hex digits left of a \u escape; -1 outside, 0 right after the backslash
	for {
		if s.pos >= s.end {
			if keep {
				s.tmp = append(s.tmp, s.buf[start:s.pos]...)
				if len(s.tmp) > maxString {
					return nil, false, s.fail("a string longer than %s", human.Bytes(maxString))
				}
			}
			spanned = true
			if !s.more() {
				return nil, false, s.ended()
			}
			start = s.pos
		}
		c := s.buf[s.pos]
		switch {
		case hex == 0: // the byte after a backslash
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				hex = -1
			case 'u':
				hex = 4
			default:
				return nil, false, s.unexpected(c, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)")
			}
		case hex > 0:
			if !isHex(c) {
				return nil, false, s.unexpected(c, "a hex digit of a \\u escape")
			}
			hex--
			if hex == 0 {
				hex = -1
			}
		case c == '"':
			if spanned {
				if keep {
					s.tmp = append(s.tmp, s.buf[start:s.pos]...)
				}
				b = s.tmp
			} else {
				b = s.buf[start:s.pos]
			}
			s.pos++
			if len(b) > maxString {
				return nil, false, s.fail("a string longer than %s", human.Bytes(maxString))
			}
			return b, escaped, nil
		case c == '\\':
			escaped = true
			hex = 0
		case c < 0x20:
			return nil, false, s.unexpected(c, "a character of a string (control characters must be escaped)")
		}
		s.pos++
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a number's text, checked against JSON's grammar. The bytes
// are valid until the next call.
func (s *scanner) number() ([]byte, error) {
	if _, ok := s.peek(); !ok {
		return nil, s.ended()
	}
	s.tmp = s.tmp[:0]
	for s.more() {
		c := s.buf[s.pos]
		if !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			break
		}
		if len(s.tmp) == maxNumber {
			return nil, s.fail("a number longer than %d characters", maxNumber)
		}
		s.tmp = append(s.tmp, c)
		s.pos++
	}
	if s.err != nil && s.err != io.EOF {
		return nil, s.err
	}
	if !validNumber(s.tmp) {
		if len(s.tmp) == 0 {
			c, _ := s.peek()
			return nil, s.unexpected(c, "a number")
		}
		return nil, s.fail("%q is not a JSON number", s.tmp)
	}
	return s.tmp, nil
}

// validNumber checks JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(b)
}

// skip consumes one value of any kind, checking its grammar, keeping
// nothing of it.
func (s *scanner) skip() error { return s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) error {
	c, ok := s.peek()
	if !ok {
		return s.ended()
	}
	switch {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return s.fail("values nested more than %d deep", maxDepth)
		}
		s.pos++
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		for n := 0; ; n++ {
			more, err := s.member(closing, n)
			if err != nil || !more {
				return err
			}
			if c == '{' {
				if _, _, err := s.stringBytes(false); err != nil {
					return err
				}
				if err := s.expect(':', "':' after a member name"); err != nil {
					return err
				}
			}
			if err := s.skipDepth(depth + 1); err != nil {
				return err
			}
		}
	case c == '"':
		_, _, err := s.stringBytes(false)
		return err
	case c == '-' || '0' <= c && c <= '9':
		_, err := s.number()
		return err
	case c == 't' || c == 'f' || c == 'n':
		return s.literal()
	}
	return s.unexpected(c, "a JSON value")
}

// finish checks that only white space follows the answer's value, reading the
// input to its end (and so to its cap).
func (s *scanner) finish() error {
	c, ok := s.peek()
	if ok {
		return s.unexpected(c, "the end of the answer after its JSON object")
	}
	if s.err != io.EOF {
		return s.err
	}
	return nil
}

// errIsSyntax tells a malformed answer from a failed read.
func errIsSyntax(err error) bool {
	var se *syntaxError
	return errors.As(err, &se)
}
