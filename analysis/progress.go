package analysis

import (
	"io"
	"os"
	"strings"

	"github.com/tunetimeout/tunetimeout/ingest"
)

// inputSize returns the size in bytes of the inputs, or -1 when one of
// them has no known size (standard input from a pipe).
func inputSize(inputs []string, stdin io.Reader) int64 {
	var total int64
	for _, name := range inputs {
		var fi os.FileInfo
		var err error
		if name == "-" {
			f, ok := stdin.(*os.File)
			if !ok {
				return -1
			}
			fi, err = f.Stat()
		} else {
			fi, err = os.Stat(name)
		}
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		total += fi.Size()
	}
	return total
}

// open opens one input like ingest.Open. With progress it opens the file
// itself and counts the bytes read from it before any decompression, so
// that they add up to the size inputSize measured.
func open(name string, stdin io.Reader, p Progress) (io.ReadCloser, error) {
	if p == nil {
		return ingest.Open(name, stdin)
	}
	src, closeSrc := stdin, func() error { return nil }
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		src, closeSrc = f, f.Close
	}
	rc, err := ingest.Open("-", counter{src, p})
	if err != nil {
		closeSrc()
		return nil, renamed{name, err}
	}
	return closer{rc, func() error {
		err := rc.Close()
		if err2 := closeSrc(); err == nil {
			err = err2
		}
		return err
	}}, nil
}

// counter tells p how many bytes were read through it.
type counter struct {
	r io.Reader
	p Progress
}

func (c counter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.Read(n)
	return n, err
}

type closer struct {
	io.Reader
	close func() error
}

func (c closer) Close() error { return c.close() }

// renamed is an error of ingest.Open on "-", told about the input's name:
// "-: gzip: ..." reads "access.log.gz: gzip: ...".
type renamed struct {
	name string
	err  error
}

func (e renamed) Error() string { return e.name + strings.TrimPrefix(e.err.Error(), "-") }
func (e renamed) Unwrap() error { return e.err }
