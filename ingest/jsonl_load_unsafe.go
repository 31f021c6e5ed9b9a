//go:build (amd64 || arm64) && !safeload

package ingest

import "unsafe"

// jsonlLoad64 is binary.LittleEndian.Uint64(data[i:]) without its bounds
// checks, on the little-endian processors that load a word from any
// address: 0.77 to 0.89 of the scanner's time with the checks
// (BenchmarkJSONLScan, BenchmarkJSONLDecode). The caller has checked that
// data holds the 8 bytes: 0 <= i && i+8 <= len(data). The tag safeload
// builds the checked load instead, which panics where a caller is wrong;
// CI runs the scanner's tests with it.
func jsonlLoad64(data []byte, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), i))
}
