package ingest

import (
	"bufio"
	"bytes"
	"io"
)

// lineSource hands out the lines of one input, for CSV (csvRows) and the
// line formats (lineDecoder) alike: from a bufio.Reader, or from a chunk
// held in memory (a parallel read's), whose lines are sliced, not copied.
// A line longer than maxLine is read to its end and skipped, and its
// memory stays bounded: one line without a line break must not take the
// memory. It does not number lines; its users do, each its own way.
type lineSource struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer, assembled up to maxLine
	// mem is read instead of br when inMem, from pos on.
	mem   []byte
	pos   int
	inMem bool
	// limit is the longest line accepted; 0 = maxLine. OTLP/JSON sets it
	// higher: one line is one exported batch.
	limit int
}

// max is the longest line s accepts.
func (s *lineSource) max() int {
	if s.limit > 0 {
		return s.limit
	}
	return maxLine
}

// next returns the next line with its line ending ("\n", or none at the
// end of the input), valid until the next call; errLongLine for a line
// longer than maxLine, once skipped; io.EOF at the end; or br's error. An
// error of br after a long line is returned rather than errLongLine.
func (s *lineSource) next() ([]byte, error) {
	if s.inMem {
		if s.pos >= len(s.mem) {
			return nil, io.EOF
		}
		rest := s.mem[s.pos:]
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		s.pos += n
		if n > s.max() {
			return nil, errLongLine
		}
		return rest[:n], nil
	}
	line, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = s.br.ReadSlice('\n')
			if len(s.long) <= s.max() {
				s.long = append(s.long, line...)
			}
		}
		line = s.long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	if len(line) > s.max() {
		s.long = s.long[:0]
		return nil, errLongLine
	}
	return line, nil
}

// resetMem makes s read data, in memory.
func (s *lineSource) resetMem(data []byte) {
	s.mem, s.pos, s.inMem = data, 0, true
	s.long = s.long[:0]
}

// resetReader makes s read r through its buffer (r nil: br as it is).
func (s *lineSource) resetReader(r io.Reader) {
	if r != nil {
		s.br.Reset(r)
	}
	s.mem, s.pos, s.inMem = nil, 0, false
	s.long = s.long[:0]
}
