package ingest

import (
	"io"
	"os"
)

// Open returns the input named name: stdin for "-" (whose Close does
// nothing), else the file. The error of a missing file is os.Open's
// *fs.PathError as is ("open missing.csv: no such file or directory"), so
// errors.Is(err, fs.ErrNotExist) holds; it already names the file, so
// wrapping it again would only repeat the name.
//
// Decompression of .gz and .zst inputs belongs here, once, before any
// decoder (STYLE.md practice 4); it is not implemented yet.
func Open(name string, stdin io.Reader) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}
