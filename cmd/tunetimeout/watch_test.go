package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// The watch command against a real Prometheus is tested in e2e
// (e2e/watch_test.go); these pin its error paths: bad flags exit 2 before
// anything is sent or served, an address in use exits 1 before any query,
// and a Prometheus that fails keeps the command serving, not ready, one
// line logged per failed run, until a signal stops it (exit 130).
func TestWatchCommandLine(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer srv.Close()
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	src := []string{"watch", "--url", srv.URL, "--metric", "x_seconds", "--query-retries", "0"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"every below 1s", []string{"--every", "500ms"}, 2, "--every 500ms is below the minimum of 1s"},
		{"listen without port", []string{"--listen", "localhost"}, 2, `--listen "localhost" is not host:port`},
		{"zero timeout", []string{"--timeout", "1s", "--timeout", "0s"}, 2, "--timeout 0s is not a positive duration"},
		{"bad timeout", []string{"--timeout", "soon"}, 2, `invalid argument "soon" for "--timeout"`},
		{"output format", []string{"-o", "json"}, 2, "--format: watch writes no report; it serves it"},
		{"output file", []string{"--output", "r.html"}, 2, "--output: watch writes no report"},
		{"bad window", []string{"--window", "a week"}, 2, `--window "a week" is not a duration`},
		{"bad confidence", []string{"--confidence", "95"}, 2, "--confidence 95: "},
		{"arguments", []string{"file.csv"}, 2, "watch reads no files"},
		{"follow without files", []string{"--follow"}, 2, "--follow: name the files to follow"},
		{"follow and url", []string{"--follow", "file.csv"}, 2, "--url: watch --follow reads files, not Prometheus"},
		{"address in use", []string{"--listen", strings.TrimPrefix(busy.URL, "http://")}, 1, "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := execute(t, "", append(append([]string{}, src...), tt.args...)...)
			assert.Equal(t, tt.wantCode, code, errOut)
			assert.Contains(t, errOut, tt.wantErr)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
			assert.Empty(t, out)
		})
	}
	assert.Zero(t, asked.Load(), "nothing sent to Prometheus")
	_, errOut, code := execute(t, "", "watch", "--metric", "x_seconds")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--url is required")
}

// lockedBuffer is a buffer the command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var watchAddrRE = regexp.MustCompile(`serving on (http://127\.0\.0\.1:\d+/)`)

// failingPrometheus answers every query 503 and keeps the time each one
// asked about.
type failingPrometheus struct {
	*httptest.Server
	mu    sync.Mutex
	times []float64
}

func newFailingPrometheus(t *testing.T) *failingPrometheus {
	f := &failingPrometheus{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err == nil {
			if v, err := strconv.ParseFloat(r.Form.Get("time"), 64); err == nil {
				f.mu.Lock()
				f.times = append(f.times, v)
				f.mu.Unlock()
			}
		}
		http.Error(w, "overloaded "+r.Header.Get("Authorization"), http.StatusServiceUnavailable)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *failingPrometheus) asked() []float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.times)
}

// startWatch runs the watch command in process until the test stops it
// with stop, and returns the address it serves.
func startWatch(t *testing.T, args ...string) (base string, stderr *lockedBuffer, stop func(cause error) int) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	stderr = &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"watch", "--listen", "127.0.0.1:0"}, args...), nil, io.Discard, stderr)
	}()
	stopped := false
	stop = func(cause error) int {
		t.Helper()
		stopped = true
		cancel(cause)
		select {
		case c := <-code:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not stop within 10s")
			return -1
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop(nil)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case c := <-code:
			t.Fatalf("watch exited %d: %s", c, stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "no address logged: %s", stderr)
		if m := watchAddrRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr, stop
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFailures waits, with a generous bound, until n runs have failed.
func waitFailures(t *testing.T, stderr *lockedBuffer, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(stderr.String(), "run failed") < n {
		require.True(t, time.Now().Before(deadline), "fewer than %d failed runs: %s", n, stderr)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWatchPrometheusFails: a Prometheus that fails leaves the command
// serving, healthy, not ready, with last_run_success 0 and one line per
// failed run, each run asking about the window ending at its own now;
// SIGTERM stops it with 130 and closes the port.
func TestWatchPrometheusFails(t *testing.T) {
	const token = "very-secret-bearer-token"
	t.Setenv("TT_WATCH_TOKEN", token)
	prom := newFailingPrometheus(t)
	base, stderr, stop := startWatch(t, "--url", prom.URL, "--metric", "x_seconds", "--query-retries", "0",
		"--bearer-token-env", "TT_WATCH_TOKEN", "--every", "1s")
	client := &http.Client{Timeout: 10 * time.Second}
	getBody := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	waitFailures(t, stderr, 2)
	c, _ := getBody("-/healthy")
	assert.Equal(t, 200, c)
	c, _ = getBody("-/ready")
	assert.Equal(t, 503, c)
	c, _ = getBody("report.json")
	assert.Equal(t, 503, c)
	c, metrics := getBody("metrics")
	assert.Equal(t, 200, c)
	assert.Contains(t, metrics, "\ntunetimeout_last_run_success 0\n")
	assert.NotContains(t, metrics, "tunetimeout_recommended_timeout_seconds{")

	assert.Equal(t, 130, stop(interrupted{syscall.SIGTERM}))
	_, err := client.Get(base + "-/healthy")
	assert.Error(t, err, "the port is closed")

	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	assert.Contains(t, lines[0], "serving on http://127.0.0.1:")
	assert.Equal(t, "tunetimeout: interrupted (SIGTERM)", lines[len(lines)-1])
	for _, l := range lines[1 : len(lines)-1] {
		assert.Contains(t, l, "tunetimeout: watch: run failed (no report yet): ")
		assert.Contains(t, l, "503")
	}
	assert.NotContains(t, stderr.String(), token)
	// --at now is read at each run, not once at the start: a second
	// apart (--every 1s), never the same window twice.
	times := prom.asked()
	require.GreaterOrEqual(t, len(times), 2)
	assert.GreaterOrEqual(t, times[1]-times[0], 0.5, "%v", times)
}

// TestWatchFixedAt: an absolute --at reads the same window at every run.
func TestWatchFixedAt(t *testing.T) {
	prom := newFailingPrometheus(t)
	_, stderr, stop := startWatch(t, "--url", prom.URL, "--metric", "x_seconds", "--query-retries", "0",
		"--every", "1s", "--at", "2026-11-02T12:00:00Z")
	waitFailures(t, stderr, 2)
	stop(nil)
	times := prom.asked()
	require.GreaterOrEqual(t, len(times), 2)
	for _, v := range times {
		assert.Equal(t, float64(time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC).Unix()), v)
	}
}

// TestWatchFollow: with --follow the command serves the report of the
// lines appended to a file since it started, the same report analyze
// gives of those lines (the interval logs merge exactly), and not the
// lines the file held before.
func TestWatchFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "latency.csv")
	require.NoError(t, os.WriteFile(path, []byte("route,latency_ms\n/old,5000\n"), 0o644))
	base, stderr, stop := startWatch(t, "--follow", "--input", "csv", "--by", "route", "--every", "1s",
		"--rate", "100", "--pool", "10", "--timeout", "100ms", path)
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "/r%d,%d\n", i%2, 5+i*7919%300)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(b.String())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	appended := filepath.Join(dir, "appended.csv")
	require.NoError(t, os.WriteFile(appended, []byte("route,latency_ms\n"+b.String()), 0o644))

	client := &http.Client{Timeout: 10 * time.Second}
	var got report.Report
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "the 2,000 lines not served within 60s: %s", stderr)
		resp, err := client.Get(base + "report.json")
		require.NoError(t, err)
		if resp.StatusCode == 200 {
			got = report.Report{}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		}
		resp.Body.Close()
		if got.Input.Records == 2000 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errOut, code := execute(t, "", "analyze", "--input", "csv", "--by", "route", "--rate", "100", "--pool", "10",
		"-o", "json", appended)
	require.Equal(t, 0, code, errOut)
	var want report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &want))
	require.Len(t, got.Groups, 2, "/old was there before: not read")
	require.Len(t, want.Groups, 2)
	cutOff := map[string]float64{} // at the configured 100ms
	for i, g := range got.Groups {
		w := want.Groups[i]
		assert.Equal(t, w.Name, g.Name)
		assert.Equal(t, int64(1000), g.Samples)
		assert.Equal(t, w.Recommendation.TimeoutSeconds, g.Recommendation.TimeoutSeconds, g.Name)
		assert.Equal(t, w.Percentiles, g.Percentiles, g.Name)
		// The configured timeout joins the ladder analyze shows.
		var configured []report.Candidate
		ladder := slices.DeleteFunc(slices.Clone(g.Candidates), func(c report.Candidate) bool {
			if c.TimeoutSeconds == 0.1 {
				configured = append(configured, c)
				return !slices.ContainsFunc(w.Candidates, func(wc report.Candidate) bool { return wc.TimeoutSeconds == 0.1 })
			}
			return false
		})
		assert.Equal(t, w.Candidates, ladder, g.Name)
		require.Len(t, configured, 1, g.Name)
		assert.Greater(t, len(g.Candidates), 1, g.Name)
		cutOff[g.Name] = configured[0].CutOffFraction
	}
	resp, err := client.Get(base + "metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), fmt.Sprintf("tunetimeout_recommended_timeout_seconds{group=\"/r0\"} %v\n", want.Groups[0].Recommendation.TimeoutSeconds))
	assert.Contains(t, string(body), fmt.Sprintf("tunetimeout_cut_off_ratio{group=\"/r1\",timeout=\"0.1\"} %v\n", cutOff["/r1"]))
	assert.Positive(t, cutOff["/r1"])
	stop(nil)
}
