//go:build !(amd64 || arm64) || safeload

package ingest

import "encoding/binary"

// jsonlLoad64 is binary.LittleEndian.Uint64(data[i:]): the caller has
// checked that data holds the 8 bytes (0 <= i && i+8 <= len(data)); here a
// caller that did not panics (see jsonl_load_unsafe.go).
func jsonlLoad64(data []byte, i int) uint64 {
	return binary.LittleEndian.Uint64(data[i:])
}
