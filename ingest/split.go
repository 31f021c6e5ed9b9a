package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// ChunkDecoder is a Decoder that can be moved to another part of its input,
// so that several decoders read the chunks of one input at once (Splitter).
type ChunkDecoder interface {
	Decoder
	// Reset makes the decoder read data next: whole lines of the same
	// input (a Chunk's Data), line being the 1-based number of the first,
	// so that errors name the lines of the whole input. The decoder keeps
	// what it learnt from the start of the input (a CSV header, a log
	// format recognised from the first line), and its tables. It parses
	// the lines where they are: data must not change until the decoder
	// has returned io.EOF or is Reset again.
	Reset(data []byte, line int)
}

// cutter is implemented by the decoders whose input may be cut into chunks.
type cutter interface {
	ChunkDecoder
	// resetReader is Reset over the rest of the input as a stream.
	resetReader(r io.Reader, line int)
	// cuttable reports whether block, a part of the input that starts
	// where a record starts, may be cut at any of its line boundaries:
	// whether each of its lines starts a record.
	cuttable(block []byte) bool
}

// DefaultChunkSize is the size of the chunks a Splitter cuts by default:
// large enough that handing one over costs nothing next to parsing it,
// small enough that a few in flight per core cost little memory.
const DefaultChunkSize = 1 << 20

// maxChunk is the largest chunk a Splitter makes to hold a long line; a
// line longer than that ends the cutting and the rest of the input is read
// whole, by one decoder.
const maxChunk = 16 << 20

// Chunk is a part of an input that a Splitter cut on line boundaries.
type Chunk struct {
	Seq  int // 0, 1, 2, ... in input order
	Line int // 1-based number of the chunk's first line in the input
	// Data holds whole lines (the last one without "\n" at the end of the
	// input). Decode it with a decoder from Fork, Reset to Data and Line.
	Data []byte
	// Decoder, when set, is the decoder to read the chunk with instead:
	// the first chunk's, which read the input's first line or header,
	// over Data; or, when Rest is true, one that reads the rest of the
	// input from the stream (Data is nil).
	Decoder Decoder
	// Rest marks the last chunk when it is the rest of the input, read
	// whole because it could not be cut: CSV with quotes, a line longer
	// than 16 MiB, or a read error (which its Decoder returns in turn).
	Rest bool

	buf []byte // Data's buffer, for Release
}

// Splitter cuts one input into chunks of whole lines, so that several
// decoders, one per core, parse it at once. It reads the input as a
// stream (standard input, a decompressing reader) and never holds more
// than the chunks not yet released and one more.
//
// Decoding the chunks in turn gives the samples and errors, line numbers
// included, that NewDecoder over the whole input gives: the first chunk
// is decoded by the decoder that read the input's start, the others by
// decoders made from the same start (Fork). An input that cannot be cut
// (see Chunk.Rest) is decoded whole, as NewDecoder would.
type Splitter struct {
	br   *bufio.Reader
	f    Format
	name string
	o    Options
	size int

	head  []byte // the first chunk's lines up to its first non-blank one: what Fork decodes first
	dec   cutter // the first decoder
	carry []byte // the part of a line read after the last chunk
	line  int    // number of the next chunk's first line
	seq   int
	done  bool // the last chunk has been handed out
	free  chan []byte
}

// NewSplitter returns a Splitter over r (named name in errors) in the
// given format ("auto" as for NewDecoder) that cuts chunks of about size
// bytes (DefaultChunkSize when size <= 0). The errors of NewDecoder are
// its errors.
func NewSplitter(format string, r io.Reader, name string, o Options, size int) (*Splitter, error) {
	if size <= 0 {
		size = DefaultChunkSize
	}
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	// Sniffing peeks at the first line only; the same errors as
	// NewDecoder come before any block is read.
	f, _, err := detect(format, br, name, o)
	if err != nil {
		return nil, err
	}
	if f.New == nil {
		return nil, fmt.Errorf("%s: format %s holds histograms, not samples: it has no decoder", name, f.Name)
	}
	return &Splitter{br: br, f: f, name: name, o: o, size: size, line: 1, free: make(chan []byte, 16)}, nil
}

// Next returns the next chunk, or io.EOF after the last. Chunks must be
// decoded in turn for their errors to come in the input's order; Next
// itself may run ahead of their decoding.
func (s *Splitter) Next() (Chunk, error) {
	if s.done {
		return Chunk{}, io.EOF
	}
	buf, n, err := s.block()
	block := buf[:n]
	if s.seq == 0 {
		return s.first(buf, block, err)
	}
	if err == io.EOF && len(block) == 0 {
		s.done = true
		s.Release(Chunk{buf: buf})
		return Chunk{}, io.EOF
	}
	cut := len(block)
	if err != io.EOF {
		cut = bytes.LastIndexByte(block, '\n') + 1
	}
	s.done = err != nil
	if err != nil && err != io.EOF || cut == 0 || !s.dec.cuttable(block) {
		return s.whole(buf, block, err)
	}
	return s.chunk(buf, block, cut), nil
}

// first makes the first chunk and the decoder that reads it. The decoder
// reads the start of the input (sniffing, a CSV header) from the chunk; an
// input whose first block cannot be cut is read whole by a decoder over
// the stream.
func (s *Splitter) first(buf, block []byte, rerr error) (Chunk, error) {
	cut := len(block)
	if rerr != io.EOF {
		cut = bytes.LastIndexByte(block, '\n') + 1
	}
	if rerr == nil || rerr == io.EOF {
		if head := firstLines(block[:cut]); head != nil {
			dec, err := s.f.New(bytes.NewReader(block[:cut]), s.name, s.o)
			if c, ok := dec.(cutter); err == nil && ok && c.cuttable(block) {
				s.dec = c
				s.head = head
				ch := s.chunk(buf, block, cut)
				ch.Decoder = dec
				s.done = rerr == io.EOF
				return ch, nil
			}
		}
	}
	s.done = true
	dec, err := s.f.New(io.MultiReader(bytes.NewReader(block), s.stream(rerr)), s.name, s.o)
	if err != nil {
		return Chunk{}, err
	}
	return Chunk{Seq: 0, Line: 1, Decoder: dec, Rest: true}, nil
}

// firstLines returns a copy of data up to the end of its first non-blank
// line, or nil when it has none.
func firstLines(data []byte) []byte {
	for i := 0; i < len(data); {
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += i + 1
		}
		if len(bytes.TrimSpace(data[i:end])) > 0 {
			return bytes.Clone(data[:end])
		}
		i = end
	}
	return nil
}

// chunk hands out block[:cut] and keeps the rest for the next block.
func (s *Splitter) chunk(buf, block []byte, cut int) Chunk {
	s.carry = append(s.carry[:0], block[cut:]...)
	c := Chunk{Seq: s.seq, Line: s.line, Data: block[:cut], buf: buf}
	s.seq++
	s.line += bytes.Count(c.Data, []byte("\n"))
	return c
}

// whole hands out the rest of the input, block and what follows it, to be
// read by one decoder.
func (s *Splitter) whole(buf, block []byte, rerr error) (Chunk, error) {
	s.done = true
	dec, err := s.fork()
	if err != nil {
		return Chunk{}, err
	}
	// The block is the decoder's now: its buffer is not reused.
	dec.resetReader(io.MultiReader(bytes.NewReader(block), s.stream(rerr)), s.line)
	c := Chunk{Seq: s.seq, Line: s.line, Decoder: dec, Rest: true}
	s.seq++
	return c, nil
}

// stream returns what follows the last block: the input, or the error
// reading it stopped at.
func (s *Splitter) stream(rerr error) io.Reader {
	switch rerr {
	case nil:
		return s.br
	case io.EOF:
		return bytes.NewReader(nil)
	}
	return readErr{rerr}
}

type readErr struct{ err error }

func (e readErr) Read([]byte) (int, error) { return 0, e.err }

// block reads the carry and up to s.size more bytes, more if that holds no
// line break, up to maxChunk. It returns io.EOF when the input ended.
func (s *Splitter) block() ([]byte, int, error) {
	want := len(s.carry) + s.size
	var buf []byte
	select {
	case buf = <-s.free:
	default:
	}
	if cap(buf) < want {
		buf = make([]byte, want)
	}
	buf = buf[:cap(buf)]
	n := copy(buf, s.carry)
	s.carry = s.carry[:0]
	for {
		m, err := fill(s.br, buf[n:want])
		scanned := n
		n += m
		if err != nil || bytes.IndexByte(buf[scanned:n], '\n') >= 0 || n >= maxChunk {
			return buf, n, err
		}
		// No line break yet: read on into a larger buffer.
		want = min(2*want, maxChunk)
		if want > len(buf) {
			buf = append(buf[:n], make([]byte, want-n)...)
			buf = buf[:cap(buf)]
		}
	}
}

// Release gives back the buffer of a chunk once it has been decoded, for
// Next to reuse.
func (s *Splitter) Release(c Chunk) {
	if c.buf == nil {
		return
	}
	select {
	case s.free <- c.buf:
	default:
	}
}

// Fork returns a new decoder for the chunks after the first, with its own
// state. It learns the input's start (the first line, a CSV header) from
// the first chunk as the first decoder did, so both read the same way.
// Call it after Next has returned the first chunk; it is safe to call
// while other goroutines decode chunks.
func (s *Splitter) Fork() (ChunkDecoder, error) { return s.fork() }

func (s *Splitter) fork() (cutter, error) {
	dec, err := s.f.New(bytes.NewReader(s.head), s.name, s.o)
	if err != nil {
		return nil, err
	}
	return dec.(cutter), nil
}

// fill reads into b until it is full or the reader fails, and returns the
// reader's own error: io.EOF for an input that ends, and anything else (a
// decompressor's io.ErrUnexpectedEOF) as it is, never taken for an end.
func fill(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
