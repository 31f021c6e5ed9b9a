package analysis

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/report"
)

// nginxLog returns n generated nginx lines.
func nginxLog(t *testing.T, seed uint64, n int) []byte {
	t.Helper()
	b, err := io.ReadAll(mixture.Default().NewNginxLog(seed, n, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), 400))
	require.NoError(t, err)
	return b
}

// spoil replaces every k-th line of data with a bad one, a different
// mistake each time.
func spoil(data []byte, k int) []byte {
	bad := []string{"not a log line", "", `10.0.0.1 - - [02/Nov/2026:10:00:00 +0000] "GET /x HTTP/1.1" 200 5 "-" "-" abc 0.1`, "\t"}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := k - 1; i < len(lines); i += k {
		lines[i] = []byte(bad[(i/k)%len(bad)] + "\n")
	}
	return bytes.Join(lines, nil)
}

// manyGroups is a CSV whose group column takes groups distinct values,
// new ones turning up all through the input (and "other" itself now and
// then), every tenth row with a bad latency.
func manyGroups(rows, groups int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("timestamp,group,status,latency_ms\n")
	for i := range rows {
		g := fmt.Sprintf("g%d", r.IntN(1+i*groups/rows))
		if i%97 == 0 {
			g = "other"
		}
		lat := fmt.Sprintf("%d.%d", 1+r.IntN(500), r.IntN(10))
		if i%10 == 9 {
			lat = "n/a"
		}
		fmt.Fprintf(&b, "%d,%s,%d,%s\n", 1793613600+i/50, g, []int{200, 200, 200, 503, 404}[r.IntN(5)], lat)
	}
	return b.String()
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestParallelMatchesSingle is the acceptance test for parallel
// reading: on the same inputs, one goroutine and several (chunks small
// enough that every input is cut into many) give the same report, JSON and
// text byte for byte, or the same error. The inputs hold what could tell
// them apart: bad lines (counts, the first few quoted, line numbers), more
// groups than --max-groups (which are kept apart), --strict, gzip,
// standard input, several inputs, and CSV with a quoted line break.
func TestParallelMatchesSingle(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}
	nginx := spoil(nginxLog(t, 3, 60_000), 997)
	nginxFile := write("access.log", nginx)
	gzFile := write("access.log.1.gz", gzipped(t, spoil(nginxLog(t, 4, 40_000), 1201)))
	groupsFile := write("groups.csv", []byte(manyGroups(30_000, 400, 5)))
	// New groups turn up all through it; the 50th near the end.
	lateFile := write("late.csv", []byte(manyGroups(30_000, 60, 8)))
	quoted := manyGroups(20_000, 30, 6)
	quoted = strings.Replace(quoted, "\n1793613", "\n\"1793613\"", 3000)
	cut := strings.Index(quoted[len(quoted)/2:], "\n") + len(quoted)/2 + 1
	quoted = quoted[:cut] + "1793613700,\"two\nlines\",200,5\n" + quoted[cut:]
	quotedFile := write("quoted.csv", []byte(quoted))
	uniqueFile := write("unique.csv", []byte(strings.ReplaceAll(manyGroups(5_000, 5_000, 7), ",g", ",u")))

	tests := []struct {
		name  string
		stdin []byte
		o     func(o *Options)
	}{
		{"csv mixture by route", nil, func(o *Options) {
			o.Inputs = []string{"../testdata/mixture.csv"}
			o.Ingest.By = []string{"route"}
			o.Rate, o.Pool = 400, 200
		}},
		{"nginx with bad lines", nil, func(o *Options) {
			o.Inputs = []string{nginxFile}
			o.Ingest.By = []string{"route", "status_class"}
		}},
		{"nginx gzip, upstream latency", nil, func(o *Options) {
			o.Inputs = []string{gzFile}
			o.Ingest.By = []string{"route"}
			o.Ingest.Latency = "upstream"
		}},
		{"several inputs", nil, func(o *Options) {
			o.Inputs = []string{filepath.Join(dir, "access.log*")}
			o.Ingest.By = []string{"route"}
			o.MaxGroups = 2
			o.ShowErrors = 100
		}},
		{"stdin", nginx, func(o *Options) {
			o.Inputs = []string{"-"}
			o.Ingest.By = []string{"route"}
		}},
		{"more groups than --max-groups", nil, func(o *Options) {
			o.Inputs = []string{groupsFile}
			o.Ingest.By = []string{"group"}
			o.MaxGroups = 25
			o.ShowErrors = 30
		}},
		{"--max-groups reached late", nil, func(o *Options) {
			o.Inputs = []string{lateFile}
			o.Ingest.By = []string{"group"}
			o.MaxGroups = 50
		}},
		{"every row its own group", nil, func(o *Options) {
			o.Inputs = []string{uniqueFile}
			o.Ingest.By = []string{"group"}
			o.MaxGroups = 5
		}},
		{"no group limit", nil, func(o *Options) {
			o.Inputs = []string{groupsFile}
			o.Ingest.By = []string{"group"}
			o.MaxGroups = -1
		}},
		{"csv with a quoted line break", nil, func(o *Options) {
			o.Inputs = []string{quotedFile}
			o.Ingest.By = []string{"group"}
			o.MaxGroups = 12
		}},
		{"strict", nil, func(o *Options) {
			o.Inputs = []string{nginxFile}
			o.Strict = true
		}},
		{"strict, no bad line", nil, func(o *Options) {
			o.Inputs = []string{"../testdata/mixture.csv"}
			o.Strict = true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(workers, chunk int, handOver int64) (string, error) {
				defer func(b int64) { workerSetBytes = b }(workerSetBytes)
				workerSetBytes = handOver
				o := options()
				tt.o(&o)
				o.Workers, o.chunkSize = workers, chunk
				r, err := Run(context.Background(), o, bytes.NewReader(tt.stdin))
				if err != nil {
					return "", err
				}
				var out bytes.Buffer
				require.NoError(t, report.WriteJSON(&out, r))
				require.NoError(t, report.WriteText(&out, r))
				return out.String(), nil
			}
			want, wantErr := run(1, 0, workerSetBytes)
			// Workers that keep their sets to the end, and workers that hand
			// them over to the shared set after every chunk.
			for _, c := range []struct {
				workers, chunk int
				handOver       int64
			}{{4, 3000, workerSetBytes}, {2, 64 << 10, workerSetBytes}, {3, 0, workerSetBytes}, {3, 3000, 0}, {2, 64 << 10, 0}} {
				got, err := run(c.workers, c.chunk, c.handOver)
				if wantErr != nil {
					require.EqualError(t, err, wantErr.Error(), "%d workers", c.workers)
					continue
				}
				require.NoError(t, err)
				if got != want {
					require.Equal(t, want, got, "%d workers, chunks of %d bytes, hand-over at %d bytes", c.workers, c.chunk, c.handOver)
				}
			}
		})
	}
}

// TestParallelNotesFolds checks what TestParallelMatchesSingle compares:
// that its --max-groups case does fold groups and quote bad lines, so the
// comparison covers them.
func TestParallelNotesFolds(t *testing.T) {
	o := options("-")
	o.Ingest.By = []string{"group"}
	o.MaxGroups, o.ShowErrors = 25, 30
	o.Workers, o.chunkSize = 4, 3000
	r, err := Run(context.Background(), o, strings.NewReader(manyGroups(30_000, 400, 5)))
	require.NoError(t, err)
	assert.Len(t, r.Groups, 26, "25 groups and other")
	assert.Len(t, r.Input.BadExamples, 30)
	assert.Equal(t, `-:11: column "latency_ms": "n/a" is not a number`, r.Input.BadExamples[0])
	assert.Contains(t, r.Input.Notes[0], `more groups are folded into "other": only 25 groups are kept apart`)
}

// TestSummaryHandedOver: workers that hand their sets (cells per interval)
// over to the shared set after every chunk write the summary one worker
// writes, byte for byte.
func TestSummaryHandedOver(t *testing.T) {
	data := spoil(nginxLog(t, 21, 30_000), 499)
	summarize := func(workers int, handOver int64) string {
		defer func(b int64) { workerSetBytes = b }(workerSetBytes)
		workerSetBytes = handOver
		o := options("-")
		o.Ingest.By = []string{"route", "status_class"}
		o.Workers, o.chunkSize = workers, 32<<10
		var b bytes.Buffer
		_, err := Summarize(context.Background(), o, 10*time.Second, bytes.NewReader(data), &b)
		require.NoError(t, err)
		return b.String()
	}
	want := summarize(1, workerSetBytes)
	require.Greater(t, strings.Count(want, "\nTag="), 20)
	assert.True(t, want == summarize(3, 0), "the same summary")
	assert.True(t, want == summarize(2, workerSetBytes), "the same summary")
}

// BenchmarkRun reads 200,000 generated nginx lines grouped by route, with
// one worker and with one per core.
func BenchmarkRun(b *testing.B) {
	log, err := io.ReadAll(mixture.Default().NewNginxLog(1, 200_000, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), 400))
	require.NoError(b, err)
	for _, workers := range []int{1, 0} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			for b.Loop() {
				o := options("-")
				o.Format, o.Workers = "nginx", workers
				o.Ingest.By = []string{"route"}
				if _, err := Run(context.Background(), o, bytes.NewReader(log)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200_000, "ns/line")
		})
	}
}
