package analysis

import (
	"io"
	"os"

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

// open opens one input like ingest.Open; with progress, p is told the bytes
// read from it before any decompression, so that they add up to the size
// inputSize measured.
func open(name string, stdin io.Reader, p Progress) (io.ReadCloser, error) {
	if p == nil {
		return ingest.Open(name, stdin)
	}
	return ingest.OpenCounted(name, stdin, p.Read)
}
