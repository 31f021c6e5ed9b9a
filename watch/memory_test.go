package watch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestMemoryBounded runs 500 cycles, a day of --every 10s being 8,640,
// each a new report of 20 groups whose names move on every cycle (so that
// groups keep appearing and disappearing), with a failed run every 7th, a
// scrape of /metrics after each and the pages now and then. The heap in use
// at cycle 500 is within 2 MiB of that at cycle 50: nothing accumulates per
// cycle, nor per group ever seen.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("500 cycles")
	}
	base := mixtureReport(t).Groups[0]
	cycle := 0
	w, err := New(Options{
		Timeouts: []time.Duration{250 * time.Millisecond, time.Second},
		Log:      io.Discard,
		Run: func(context.Context) (*report.Report, error) {
			if cycle%7 == 6 {
				return nil, fmt.Errorf("run %d failed", cycle)
			}
			r := &report.Report{Input: report.Input{Files: []string{"fake"}, BadExamples: []string{}, Notes: []string{}, Findings: []report.Finding{}}}
			for i := range 20 {
				g := base
				g.Name = fmt.Sprintf("/route/%d", cycle*5+i) // 5 new, 5 gone a cycle
				r.Groups = append(r.Groups, g)
			}
			return r, nil
		},
	})
	require.NoError(t, err)
	h := w.Handler()
	ctx := context.Background()
	var at50 uint64
	series := 0
	for cycle = 1; cycle <= 500; cycle++ {
		_ = w.Cycle(ctx)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		if cycle%25 == 0 {
			for _, path := range []string{"/", "/report.json"} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				require.Equal(t, http.StatusOK, rec.Code, path)
			}
		}
		if cycle == 50 {
			at50 = heapInUse()
		}
		if cycle == 500 {
			series = len(scrape(t, h)["tunetimeout_recommended_timeout_seconds"])
		}
	}
	at500 := heapInUse()
	growth := int64(at500) - int64(at50)
	t.Logf("heap in use after GC: cycle 50 %.2f MiB, cycle 500 %.2f MiB, growth %+.1f KiB",
		float64(at50)/(1<<20), float64(at500)/(1<<20), float64(growth)/1024)
	assert.Less(t, growth, int64(2<<20), "the heap grew by %d bytes over 450 cycles", growth)
	assert.Equal(t, 20, series, "the last good report's groups only, of the %d seen", 500*5+15)
}
