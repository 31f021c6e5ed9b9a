package ingest

import (
	"io"
	"runtime"
	"testing"
)

// benchDecode decodes a whole input per iteration with a decoder from
// newDecoder, checks that it yields lines samples, and reports ns/line and
// allocs/line (the decoder's own buffers included) besides MB/s and
// allocs/op. Every decoder's benchmark goes through it.
func benchDecode(b *testing.B, size, lines int, newDecoder func() (Decoder, error)) {
	b.Helper()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		d, err := newDecoder()
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != lines {
			b.Fatalf("decoded %d samples, want %d", n, lines)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	total := float64(b.N) * float64(lines)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/line")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/line")
}
