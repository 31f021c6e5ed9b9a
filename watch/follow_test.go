package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// csvOptions read CSV files of one latency_ms column.
func csvOptions() analysis.Options {
	return analysis.Options{Format: "csv", Recommend: recommend.DefaultOptions()}
}

// write appends s to the file at path, creating it.
func write(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// rows is n CSV rows of ms milliseconds each.
func rows(n, ms int) string { return strings.Repeat(fmt.Sprintf("%d\n", ms), n) }

// steppingClock moves by step at each reading.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

// calls runs f and returns the calls of its one group and the maximum.
func calls(t *testing.T, f *Follow) (int64, float64) {
	t.Helper()
	r, err := f.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, r.Groups, 1)
	g := r.Groups[0]
	return g.Samples, g.Percentiles[len(g.Percentiles)-1].Seconds
}

// TestFollowAppends: what a file held before is not read; lines appended
// are, each once, a line still being written only once it is whole; the
// CSV header is read before each part.
func TestFollowAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "latency.csv")
	write(t, path, "latency_ms\n"+rows(5, 900)+"900") // an unfinished line too
	f, err := NewFollow([]string{path}, csvOptions(), time.Hour, steppingClock(time.Second))
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Run(context.Background())
	require.ErrorIs(t, err, analysis.ErrNothingToAnalyse, "nothing appended yet")

	write(t, path, "\n"+rows(10, 20))
	n, maxSeconds := calls(t, f)
	assert.Equal(t, int64(11), n, "the line unfinished at the start and 10 new")
	assert.InDelta(t, 0.9, maxSeconds, 0.001)

	write(t, path, "30\n4")
	n, _ = calls(t, f)
	assert.Equal(t, int64(12), n, "4 is being written")
	write(t, path, "0\n")
	n, maxSeconds = calls(t, f)
	assert.Equal(t, int64(13), n)
	assert.InDelta(t, 0.9, maxSeconds, 0.001)
	n, _ = calls(t, f)
	assert.Equal(t, int64(13), n, "nothing new, nothing read twice")
	r, err := f.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{path}, r.Input.Files, "the report names the file followed, not the summaries in memory")
}

// TestFollowRotation: as tail -F, through a rename (with late writes to
// the old file), a copytruncate, a replacement, and a file that appears
// only later.
func TestFollowRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latency.csv")
	later := filepath.Join(dir, "later.csv")
	write(t, path, "latency_ms\n")
	f, err := NewFollow([]string{path, later}, csvOptions(), time.Hour, steppingClock(time.Second))
	require.NoError(t, err)
	defer f.Close()
	write(t, path, rows(3, 10))
	n, _ := calls(t, f)
	require.Equal(t, int64(3), n)

	// logrotate's default: the old file renamed, still written a moment
	// by its writer, a new one created.
	old, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, os.Rename(path, path+".1"))
	_, err = old.WriteString(rows(2, 10))
	require.NoError(t, err)
	require.NoError(t, old.Close())
	write(t, path, "latency_ms\n"+rows(4, 10))
	n, _ = calls(t, f)
	assert.Equal(t, int64(3+2+4), n, "renamed")

	// copytruncate: the same file, emptied, written again.
	// Written again past the old end between two runs: the bytes before
	// the old offset differ (in logs, their times do).
	require.NoError(t, os.Truncate(path, 0))
	write(t, path, "latency_ms\n"+rows(5, 11))
	n, _ = calls(t, f)
	assert.Equal(t, int64(9+5), n, "truncated")
	require.NoError(t, os.Truncate(path, 0))
	write(t, path, "latency_ms\n")
	n, _ = calls(t, f)
	assert.Equal(t, int64(14), n, "truncated, shorter: the header alone")
	write(t, path, rows(1, 12))
	n, _ = calls(t, f)
	assert.Equal(t, int64(14+1), n, "truncated, then appended")

	// Replaced: removed and created anew.
	require.NoError(t, os.Remove(path))
	n, _ = calls(t, f)
	assert.Equal(t, int64(15), n, "removed: waiting for it")
	write(t, path, "latency_ms\n"+rows(6, 10))
	n, _ = calls(t, f)
	assert.Equal(t, int64(15+6), n, "created again")

	// A file that did not exist at the start is read from its start.
	write(t, later, "latency_ms\n"+rows(7, 10))
	n, _ = calls(t, f)
	assert.Equal(t, int64(21+7), n, "appeared")
}

// TestFollowWindow: the window holds the lines of the runs within it, no
// older ones.
func TestFollowWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "latency.csv")
	write(t, path, "latency_ms\n")
	f, err := NewFollow([]string{path}, csvOptions(), 3*time.Minute, steppingClock(time.Minute))
	require.NoError(t, err)
	defer f.Close()
	for i := 1; i <= 6; i++ {
		// Run i adds i calls of i x 100 ms.
		write(t, path, rows(i, 100*i))
		n, maxSeconds := calls(t, f)
		want := int64(i)
		for j := i - 1; j >= 1 && j > i-3; j-- {
			want += int64(j)
		}
		assert.Equal(t, want, n, "run %d: the last 3 runs' calls", i)
		assert.InDelta(t, 0.1*float64(i), maxSeconds, 0.001, "run %d", i)
	}
	runs, _ := f.Window()
	assert.Equal(t, 3, runs)
	// Nothing appended for 3 minutes: nothing left to analyse.
	for range 3 {
		_, err = f.Run(context.Background())
	}
	require.ErrorIs(t, err, analysis.ErrNothingToAnalyse)
}

// TestFollowMemoryBounded: 500 runs of 200 new lines each in 4 groups
// through a window of 10 runs: the window holds 10 runs' interval logs,
// and the heap after cycle 500 is within 2 MiB of that after cycle 50.
func TestFollowMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("500 runs")
	}
	path := filepath.Join(t.TempDir(), "latency.csv")
	write(t, path, "route,latency_ms\n")
	o := csvOptions()
	o.Ingest.By = []string{"route"}
	f, err := NewFollow([]string{path}, o, 100*time.Second, steppingClock(10*time.Second))
	require.NoError(t, err)
	defer f.Close()
	w, err := New(Options{Run: f.Run})
	require.NoError(t, err)
	var b strings.Builder
	var at50 uint64
	for cycle := 1; cycle <= 500; cycle++ {
		b.Reset()
		for i := range 200 {
			fmt.Fprintf(&b, "/r%d,%d\n", i%4, 5+(cycle*7+i*13)%400)
		}
		write(t, path, b.String())
		require.NoError(t, w.Cycle(context.Background()), "cycle %d", cycle)
		scrape(t, w.Handler())
		if cycle == 50 {
			at50 = heapInUse()
		}
	}
	at500 := heapInUse()
	runs, size := f.Window()
	growth := int64(at500) - int64(at50)
	t.Logf("--follow: heap in use after GC: cycle 50 %.2f MiB, cycle 500 %.2f MiB, growth %+.1f KiB; window %d runs, %d bytes of interval logs",
		float64(at50)/(1<<20), float64(at500)/(1<<20), float64(growth)/1024, runs, size)
	assert.Equal(t, 10, runs)
	assert.Less(t, growth, int64(2<<20))
	r := w.Report()
	require.Len(t, r.Groups, 4)
	assert.Equal(t, int64(10*50), r.Groups[0].Samples, "10 runs of 50 calls a route")
}
