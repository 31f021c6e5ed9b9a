package analysis

import (
	"io"
	"os"

	"github.com/tunetimeout/tunetimeout/ingest"
)

// inputSize returns the size in bytes of the inputs, or -1 when one of
// them has no known size (standard input from a pipe).
func inputSize(inputs []input, stdin io.Reader) int64 {
	var total int64
	for _, in := range inputs {
		name := in.path
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
func open(in input, stdin io.Reader, p Progress) (io.ReadCloser, error) {
	if p == nil {
		return ingest.OpenAs(in.path, in.name, stdin, nil)
	}
	return ingest.OpenAs(in.path, in.name, stdin, p.Read)
}

// input is one input to read: the name the report and its errors give it
// and the file its bytes are read from, the same for a file the user
// named; a spool file holding a remote source's answer (RunJaeger,
// RunClickHouse) is read under the source's name from the start, so its
// path never reaches the report.
type input struct{ name, path string }

// inputs are the inputs of o: its spools, or else its files and globs
// expanded.
func (o Options) inputs() ([]input, error) {
	if o.spools != nil {
		return o.spools, nil
	}
	names, err := ingest.Expand(o.Inputs)
	if err != nil {
		return nil, err
	}
	ins := make([]input, len(names))
	for i, n := range names {
		ins[i] = input{name: n, path: n}
	}
	return ins, nil
}
