package ingest

import (
	"bufio"
	"bytes"
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
// the one place that does it, before any decoder (STYLE.md practice 4).
//
// The error of a missing file is os.Open's *fs.PathError as is ("open
// missing.csv: no such file or directory"), so errors.Is(err,
// fs.ErrNotExist) holds.
func Open(name string, stdin io.Reader) (io.ReadCloser, error) {
	var rc io.ReadCloser = io.NopCloser(stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		rc = f
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
		return readCloser{Reader: zr, close: func() error { zr.Close(); return rc.Close() }}, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		// One goroutine and a low-memory decoder: several inputs may be open
		// at once, and decompression is rarely the bottleneck of parsing.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: zstd: %w", name, err)
		}
		return readCloser{Reader: zr, close: func() error { zr.Close(); return rc.Close() }}, nil
	}
	return readCloser{Reader: br, close: rc.Close}, nil
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
