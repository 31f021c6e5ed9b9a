package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Open returns the input named name: stdin for "-" (whose Close does
// nothing), else the file. gzip and zstd input (rotated logs:
// access.log.2.gz) is decompressed transparently, recognised by its magic
// bytes rather than its name, so stdin and misnamed files work too. This is
// the one place that does it, before any decoder.
//
// The error of a missing file is os.Open's *fs.PathError as is ("open
// missing.csv: no such file or directory"), so errors.Is(err,
// fs.ErrNotExist) holds.
//
// A directory is refused with "is a directory". A compressed stream that
// ends early (a file cut off while it was copied or written) reads as far as
// its last complete line and then ends: the partial line after it is never
// handed on, and Truncated tells what happened, for the caller to report.
// Corrupt data (a bad checksum, an invalid block) is an error naming the
// format and the offset in the decompressed stream; the caller adds the
// file's name, as it does to every read error.
func Open(name string, stdin io.Reader) (io.ReadCloser, error) {
	return OpenCounted(name, stdin, nil)
}

// OpenCounted is Open that, when count is not nil, tells count how many
// bytes were read from the file (or standard input) before any
// decompression: the figures add up to the file's size, for progress.
func OpenCounted(name string, stdin io.Reader, count func(int)) (io.ReadCloser, error) {
	return OpenAs(name, name, stdin, count)
}

// OpenAs is OpenCounted of the file at path, read under name: its errors
// and its cut-off report say name, never path (a spool file holding a
// remote source's answer is read as that source).
func OpenAs(path, name string, stdin io.Reader, count func(int)) (io.ReadCloser, error) {
	var rc io.ReadCloser = io.NopCloser(stdin)
	if path != "-" {
		f, err := os.Open(path)
		if pe, ok := err.(*os.PathError); ok && path != name {
			err = fmt.Errorf("%s: %w", name, pe.Err)
		}
		if err != nil {
			return nil, err
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s: is a directory (give its files, or a glob: %s)", name, filepath.Join(name, "*"))
		}
		rc = f
	}
	if count != nil {
		rc = readCloser{Reader: counter{rc, count}, close: rc.Close}
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: gzip: %w", name, err)
		}
		return &compressed{r: zr, name: name, format: "gzip", close: func() error { zr.Close(); return rc.Close() }}, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		// One goroutine and a low-memory decoder: several inputs may be open
		// at once, and decompression is rarely the bottleneck of parsing.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: zstd: %w", name, err)
		}
		return &compressed{r: zr, name: name, format: "zstd", close: func() error { zr.Close(); return rc.Close() }}, nil
	}
	return readCloser{Reader: br, close: rc.Close}, nil
}

// TruncatedError says that a compressed input ended before its stream did.
type TruncatedError struct {
	Name, Format string // "access.log.gz", "gzip"
	// Partial: the stream ended inside a line, which was dropped (its
	// record is to be counted bad); false when it ended after a line break.
	Partial bool
	// Offset is how many decompressed bytes were read before the end.
	Offset int64
}

func (e *TruncatedError) Error() string {
	s := fmt.Sprintf("%s: the %s stream ends early, after %d bytes of data (the file is cut off)", e.Name, e.Format, e.Offset)
	if e.Partial {
		s += "; its cut-off last line is dropped"
	}
	return s
}

// Truncated returns the *TruncatedError of an input Open returned once it
// has been read to its end, nil when it ended as it should (or is not
// compressed).
func Truncated(rc io.ReadCloser) *TruncatedError {
	if c, ok := rc.(*compressed); ok {
		return c.trunc
	}
	return nil
}

// compressed is a decompressing reader that hands on whole lines only
// until it knows how the stream ends: the bytes after the last line break
// are held back, and dropped when the stream turns out cut off (a partial
// line read as a record would be a sample that was never measured). A
// binary stream is handed on as it comes (see binary).
type compressed struct {
	r            io.Reader
	name, format string
	close        func() error
	buf          []byte // read from r: buf[:ready] to hand on, buf[ready:] held back
	pos, ready   int
	offset       int64 // decompressed bytes read from r
	end          error // io.EOF or a corruption error, once r has ended
	trunc        *TruncatedError
	// binary: the stream's start is one a binary format's SniffBinary
	// takes (OTLP protobuf, sniffBinary), which has no lines to hold back;
	// its decoder finds a message the end cuts, and counts it. sniffed:
	// that is decided, on the first sniffBinaryBytes.
	binary, sniffed bool
}

// maxHeld is how much of a line without a line break compressed holds
// back; beyond it the bytes are handed on (the decoders refuse such a line
// anyway, at 1 MiB).
const maxHeld = 2 << 20

func (c *compressed) Read(p []byte) (int, error) {
	for c.pos == c.ready {
		if c.end != nil {
			return 0, c.end
		}
		c.fill()
	}
	n := copy(p, c.buf[c.pos:c.ready])
	c.pos += n
	return n, nil
}

// fill reads more of the stream and moves ready past its last line break.
func (c *compressed) fill() {
	if c.pos > 0 {
		n := copy(c.buf, c.buf[c.pos:])
		c.buf = c.buf[:n]
		c.ready -= c.pos
		c.pos = 0
	}
	if cap(c.buf)-len(c.buf) < 64<<10 {
		c.buf = append(c.buf, make([]byte, 64<<10)...)[:len(c.buf)]
	}
	n, err := c.r.Read(c.buf[len(c.buf):cap(c.buf)])
	start := len(c.buf)
	c.buf = c.buf[:start+n]
	c.offset += int64(n)
	if !c.sniffed && len(c.buf) > 0 && (len(c.buf) >= sniffBinaryBytes || err != nil) {
		// As sniffing tells: binary when a format's SniffBinary takes it
		// (text may start with a control byte too: a colored docker
		// compose log with ESC, a file truncated under its writer with NULs).
		c.sniffed = true
		_, c.binary = sniffBinary(c.buf[:min(len(c.buf), sniffBinaryBytes)])
		start = c.ready // the bytes held until now have no line break seen yet
	}
	switch {
	case !c.sniffed:
		// All held until the start tells binary from text (sniffBinaryBytes).
	case c.binary:
		c.ready = len(c.buf)
	default:
		if i := bytes.LastIndexByte(c.buf[start:], '\n'); i >= 0 {
			c.ready = start + i + 1
		} else if len(c.buf)-c.ready > maxHeld {
			c.ready = len(c.buf)
		}
	}
	switch {
	case err == nil:
	case err == io.EOF:
		c.ready, c.end = len(c.buf), io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.trunc = &TruncatedError{Name: c.name, Format: c.format, Partial: len(c.buf) > c.ready, Offset: c.offset}
		c.buf = c.buf[:c.ready]
		c.end = io.EOF
	default:
		// A bad checksum or block: the data read so far are handed on, then
		// the error.
		c.ready = len(c.buf)
		// (The caller names the file.)
		if !strings.HasPrefix(err.Error(), c.format+":") {
			err = fmt.Errorf("%s: %w", c.format, err)
		}
		c.end = fmt.Errorf("%w, after %d bytes of decompressed data (the file is corrupt)", err, c.offset)
	}
}

func (c *compressed) Close() error { return c.close() }

// counter tells count how many bytes were read through it.
type counter struct {
	r     io.Reader
	count func(int)
}

func (c counter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.count(n)
	return n, err
}

// readCloser pairs a reader with the function that closes what is under it.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// Expand turns the command line's inputs into file names: "-" stays, a name
// with glob characters (* ? [) becomes the files it matches, sorted, and a
// pattern that matches nothing is an error (a typo must not read as an empty
// input). Plain names are kept as they are; Open reports missing ones.
func Expand(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if a == "-" || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		matches, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no file matches", a)
		}
		slices.Sort(matches)
		out = append(out, matches...)
	}
	return out, nil
}
