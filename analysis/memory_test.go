package analysis

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// peakHeap runs f while sampling the heap in use, and returns its peak.
func peakHeap(t *testing.T, f func()) uint64 {
	t.Helper()
	runtime.GC()
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak
}

// TestMemoryStaysFlat: analysis streams its input and keeps state only per
// group, so five times the log costs no more memory.
func TestMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1.2 million generated log lines")
	}
	run := func(lines int) (uint64, int64) {
		var records int64
		peak := peakHeap(t, func() {
			log := mixture.Default().NewNginxLog(1, lines, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), 400)
			o := Options{Inputs: []string{"-"}, Format: "nginx", Recommend: recommend.DefaultOptions()}
			o.Ingest.By = []string{"route"}
			r, err := Run(context.Background(), o, log)
			require.NoError(t, err)
			records = r.Input.Records
		})
		return peak, records
	}
	small, n := run(200_000)
	require.EqualValues(t, 200_000, n)
	large, n := run(1_200_000)
	require.EqualValues(t, 1_200_000, n)
	t.Logf("peak heap: %.1f MB for 200,000 lines, %.1f MB for 1,200,000", float64(small)/1e6, float64(large)/1e6)
	assert.Less(t, float64(large), float64(small)*1.5+8e6, "memory grows with the input")
}
