package analysis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
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

// routesCSV is a CSV of rows calls to each of routes routes, shuffled, with
// the worked example's latencies, timestamps at 400 calls a second and a
// few fast 500s.
func routesCSV(routes, rows int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	order := make([]int32, 0, routes*rows)
	for g := range routes {
		for range rows {
			order = append(order, int32(g))
		}
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	lat := mixture.Default().Generate(seed, len(order))
	var b bytes.Buffer
	b.WriteString("timestamp,route,status,latency_us\n")
	for i, g := range order {
		status := 200
		if i%199 == 0 {
			status = 500
		}
		fmt.Fprintf(&b, "%d,/api/r%d,%d,%d\n", 1793613600+i/400, g, status, lat[i].Microseconds())
	}
	return b.Bytes()
}

// TestTenThousandGroups is the budget: 10,000 routes of 50 calls
// each, all kept apart (--max-groups 20000), read by two workers and
// written as text, peak under 400 MB (a dense histogram of 230 KB per group
// and per worker took 2.9 GB of RSS), for the same report as one worker's.
func TestTenThousandGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 500,000 rows into 10,000 groups")
	}
	input := routesCSV(10_000, 50, 1)
	run := func(workers int) (string, uint64) {
		var out bytes.Buffer
		peak := peakHeap(t, func() {
			o := options("-")
			o.Ingest.By = []string{"route"}
			o.MaxGroups, o.Workers = 20_000, workers
			r, err := Run(context.Background(), o, bytes.NewReader(input))
			require.NoError(t, err)
			require.Len(t, r.Groups, 10_000)
			require.NoError(t, report.WriteText(&out, r))
		})
		return out.String(), peak
	}
	two, peak := run(2)
	t.Logf("peak heap: %.0f MB with 2 workers, the 16 MB input included", float64(peak)/1e6)
	assert.Less(t, peak, uint64(350e6))
	one, _ := run(1)
	assert.True(t, one == two, "the same report with one worker and with two")
}

// TestWorkersHandOverTheirSets: workers reading many groups do not each
// keep a copy of all of them. Kept to the end, 4 workers' sets add up to
// about 4 times the groups' memory; handed over once they pass
// workerSetBytes, what the workers hold is bounded by that (and a chunk's
// worth of new groups), whatever the number of groups, and the shared set
// holds the rest once. (TestParallelMatchesSingle checks the report is the
// same.)
func TestWorkersHandOverTheirSets(t *testing.T) {
	input := routesCSV(8_000, 12, 2)
	const chunk = 16 << 10 // 500 rows: at most 500 new groups a chunk
	read := func(workers int, handOver int64) (shared int64, held []int64) {
		defer func(b int64) { workerSetBytes = b }(workerSetBytes)
		workerSetBytes = handOver
		o := options("-")
		o.Format = "csv"
		o.Ingest.By = []string{"route"}
		o.MaxGroups, o.Workers, o.chunkSize = -1, workers, chunk
		o.defaults()
		p := newParallel(workers, o.MaxGroups, o.newSet)
		var in report.Input
		require.NoError(t, p.read(context.Background(), "-", bytes.NewReader(input), o, &in))
		require.EqualValues(t, 96_000, in.Records)
		for _, w := range p.workers {
			held = append(held, w.set.Bytes())
		}
		return p.shared.Bytes(), held
	}
	one, alone := read(1, 1<<62)
	one += sumBytes(alone)
	_, kept := read(4, 1<<62)
	const budget = 1 << 20
	shared, handed := read(4, budget)
	t.Logf("one set of 8,000 groups: %d KB; 4 workers keeping theirs: %d KB; handing over at %d KB: %d KB held, %d KB shared",
		one>>10, sumBytes(kept)>>10, budget>>10, sumBytes(handed)>>10, shared>>10)
	assert.Greater(t, sumBytes(kept), 5*one/2, "before: every worker holds most groups")
	for _, b := range handed {
		assert.Less(t, b, int64(2*budget), "a worker holds at most its budget and one chunk's groups")
	}
	assert.Greater(t, shared, one/2, "the shared set holds the groups once")
}

func sumBytes(b []int64) int64 {
	var s int64
	for _, v := range b {
		s += v
	}
	return s
}

// spanFile writes n OTLP/JSON CLIENT spans, 1,000 a line, one every 100ms
// from frontend to cart and catalog in turn, each its own trace and with no server span (a
// callee without tracing): every one waits for a child that never comes.
func spanFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w := bufio.NewWriter(f)
	lat := mixture.Default().Generate(5, n)
	start := int64(1_793_613_600_000_000_000)
	for i := 0; i < n; i += 1000 {
		w.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"frontend"}}]},"scopeSpans":[{"spans":[`)
		for j := i; j < min(i+1000, n); j++ {
			if j > i {
				w.WriteByte(',')
			}
			s := start + int64(j)*int64(100*time.Millisecond)
			fmt.Fprintf(w, `{"traceId":"%032x","spanId":"%016x","name":"GET","kind":3,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"peer.service","value":{"stringValue":"%s"}}]}`,
				j+1, j+1, s, s+int64(lat[j]), [2]string{"cart", "catalog"}[j%2])
		}
		w.WriteString("]}]}]}\n")
	}
	require.NoError(t, w.Flush())
	return path
}

// TestSpanMemoryStaysFlat: spans are streamed, and the links the call
// graph's second read keeps are given up once they can no longer
// complete (spanHorizon): four times the spans cost no more memory.
func TestSpanMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 500,000 generated spans twice")
	}
	run := func(n int) uint64 {
		path := spanFile(t, n)
		return peakHeap(t, func() {
			o := Options{Inputs: []string{path}, Recommend: recommend.DefaultOptions()}
			r, err := Run(context.Background(), o, nil)
			require.NoError(t, err)
			require.EqualValues(t, n, r.Input.Records)
			require.NotNil(t, r.CallGraph, "spans: a call graph, and its second read")
		})
	}
	small := run(100_000)
	large := run(400_000)
	t.Logf("peak heap: %.1f MB for 100,000 spans, %.1f MB for 400,000", float64(small)/1e6, float64(large)/1e6)
	assert.Less(t, float64(large), float64(small)*1.5+8e6, "memory grows with the spans")
}
