package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// hdrJar is where Debian's libhdrhistogram-java keeps HdrHistogram, the
// Java reference implementation of the interval log format.
const hdrJar = "/usr/share/java/hdrhistogram.jar"

// requireJava returns java and javac, with HdrHistogram's jar installed,
// or skips (fails under TUNETIMEOUT_E2E=1).
func requireJava(t *testing.T) (java, javac string) {
	t.Helper()
	const install = "apt-get install -y default-jdk-headless libhdrhistogram-java"
	java = e2etest.RequireBinary(t, "java", install)
	javac = e2etest.RequireBinary(t, "javac", install)
	e2etest.RequireFile(t, hdrJar, install)
	return java, javac
}

func runAnalysis(t *testing.T, o analysis.Options) *report.Report {
	t.Helper()
	o.Recommend = recommend.DefaultOptions()
	r, err := analysis.Run(context.Background(), o, nil)
	require.NoError(t, err)
	return r
}

func quantile(g report.Group, q float64) float64 {
	for _, p := range g.Percentiles {
		if p.Quantile == q {
			return p.Seconds
		}
	}
	return -1
}

// TestJavaReadsOurSummary: HdrHistogram's own HistogramLogProcessor reads
// a summary tunetimeout wrote: it finds every group's tag, and its counts,
// p99.9 and max over the whole log are those of tunetimeout's report.
func TestJavaReadsOurSummary(t *testing.T) {
	java, _ := requireJava(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	data, err := io.ReadAll(mixture.Default().NewNginxLog(5, 60_000, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), 200))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(log, data, 0o644))
	var summary bytes.Buffer
	o := analysis.Options{Inputs: []string{log}}
	o.Ingest.By = []string{"method", "route"} // "GET /api/users/{id}": a space, escaped in Tag=
	_, err = analysis.Summarize(context.Background(), o, time.Minute, nil, &summary)
	require.NoError(t, err)
	hlog := filepath.Join(dir, "summary.hlog")
	require.NoError(t, os.WriteFile(hlog, summary.Bytes(), 0o644))

	r := runAnalysis(t, analysis.Options{Inputs: []string{hlog}})
	processor := func(args ...string) string {
		cmd := exec.Command(java, append([]string{"-cp", hdrJar, "org.HdrHistogram.HistogramLogProcessor", "-i", hlog}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	tags := strings.Fields(strings.TrimPrefix(processor("-listtags"), "Tags found in input file:"))
	var want []string
	for _, g := range r.Groups {
		want = append(want, strings.ReplaceAll(g.Name, " ", "%20"))
	}
	slices.Sort(tags)
	assert.Equal(t, want, tags)
	require.Len(t, r.Groups, 4)

	for _, g := range r.Groups {
		tag := strings.ReplaceAll(g.Name, " ", "%20")
		out := filepath.Join(dir, "java-"+strconv.Itoa(len(tag)))
		processor("-tag", tag, "-outputValueUnitRatio", "1", "-csv", "-o", out)
		rows := readJavaCSV(t, out)
		last := rows[len(rows)-1] // Total_* columns cover every interval so far
		count, err := strconv.ParseInt(last["Total_Count"], 10, 64)
		require.NoError(t, err)
		assert.Equal(t, g.Samples, count, g.Name)
		javaUS := func(col string) float64 {
			us, err := strconv.ParseFloat(last[col], 64)
			require.NoError(t, err)
			return us / 1e6
		}
		assert.InDelta(t, javaUS("Total_Max"), quantile(g, 1), 1e-9, "%s max", g.Name)
		// Java and tunetimeout both take the sample of rank ceil(0.999 N)
		// (quantileRank), as the highest value of its bucket.
		assert.InDelta(t, javaUS("Total_99.9%"), quantile(g, 0.999), 1e-9, "%s p99.9, N = %d", g.Name, count)
	}
}

// readJavaCSV reads HistogramLogProcessor's -csv output: comment lines,
// a header, a row per interval.
func readJavaCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(lines, "\n"))).ReadAll()
	require.NoError(t, err)
	require.Greater(t, len(recs), 1, "no interval rows in %s", path)
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// TestWeReadJavasLog: a log HdrHistogram's own HistogramLogWriter wrote
// (e2e/testdata/WriteHlog.java: nanoseconds, tags and none, times relative
// to a StartTime) is read with the counts Java computes, and p99.9 and max
// at most one of our buckets (and the nanoseconds cut to microseconds)
// above Java's values, which are the bottoms of theirs.
func TestWeReadJavasLog(t *testing.T) {
	java, javac := requireJava(t)
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/WriteHlog.java")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "WriteHlog.java"), src, 0o644))
	out, err := exec.Command(javac, "-cp", hdrJar, "-d", dir, filepath.Join(dir, "WriteHlog.java")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	hlog := filepath.Join(dir, "java.hlog")
	out, err = exec.Command(java, "-cp", hdrJar+":"+dir, "WriteHlog", hlog, "7").Output()
	require.NoError(t, err)

	type javaFigures struct{ count, p999, p999Rounded, max int64 }
	want := map[string]javaFigures{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var tag string
		var f javaFigures
		_, err := fmt.Sscan(line, &tag, &f.count, &f.p999, &f.p999Rounded, &f.max)
		require.NoError(t, err, line)
		if tag == "-" {
			tag = "all"
		}
		want[tag] = f
	}
	require.Len(t, want, 3)

	r := runAnalysis(t, analysis.Options{Inputs: []string{hlog}}) // nanoseconds: the default unit
	require.Len(t, r.Groups, 3)
	for _, g := range r.Groups {
		w, ok := want[g.Name]
		require.True(t, ok, g.Name)
		assert.Equal(t, w.count, g.Samples, g.Name)
		// p99.9 at the rank tunetimeout takes, ceil(0.999 N), as Java's own
		// getValueAtPercentile does (the sample of rank round(0.999 N),
		// which tunetimeout took before, is printed for the record).
		assert.LessOrEqual(t, w.p999Rounded, w.p999)
		for name, v := range map[string][2]float64{"p99.9": {quantile(g, 0.999), float64(w.p999) / 1e9}, "max": {quantile(g, 1), float64(w.max) / 1e9}} {
			got, javaS := v[0], v[1]
			assert.GreaterOrEqual(t, got, javaS-1e-6, "%s %s", g.Name, name)
			assert.LessOrEqual(t, got, javaS*(1+1.0/1024)+1e-6, "%s %s", g.Name, name)
		}
		// 90 one-second intervals: the rate is the calls over 90 s.
		assert.Equal(t, "interval counts", g.LittlesLaw.RateSource)
		assert.InDelta(t, float64(w.count)/90, *g.LittlesLaw.RatePerSecond, 1e-9, g.Name)
		// Its own intervals are the windows (TT-LOG-WINDOWS), each
		// window's rate its calls over its second.
		require.Len(t, g.Windows, 90, g.Name)
		var calls int64
		for _, win := range g.Windows {
			calls += win.Samples
			assert.Equal(t, time.Second, win.End.Sub(win.Start))
			assert.InDelta(t, float64(win.Samples), win.RatePerSecond, 1e-9)
		}
		assert.Equal(t, w.count, calls, g.Name)
	}
	codes := []string{}
	for _, f := range r.Input.Findings {
		codes = append(codes, string(f.Code))
	}
	assert.Contains(t, codes, "TT-LOG-WINDOWS")
	assert.NotContains(t, codes, "TT-STRADDLING-INTERVALS", "Java's intervals start on whole seconds")
}
