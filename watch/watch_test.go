package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// series is one parsed sample of /metrics: its labels and value.
type series struct {
	labels map[string]string
	value  float64
}

// scrape gets /metrics from h and parses it with Prometheus's own parser:
// what does not parse fails the test.
func scrape(t *testing.T, h http.Handler) map[string][]series {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err, rec.Body.String())
	out := map[string][]series{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			s := series{labels: map[string]string{}, value: m.GetGauge().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

// value returns the value of the series of name with exactly labels
// (given as name, value pairs), failing the test when there is none.
func value(t *testing.T, m map[string][]series, name string, labels ...string) float64 {
	t.Helper()
	v, ok := lookup(m, name, labels...)
	require.True(t, ok, "no %s%v in %v", name, labels, m[name])
	return v
}

func lookup(m map[string][]series, name string, labels ...string) (float64, bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, s := range m[name] {
		if fmt.Sprint(s.labels) == fmt.Sprint(want) {
			return s.value, true
		}
	}
	return 0, false
}

// get requests path from h.
func get(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// mixtureReport is the README's worked example: 400 calls/s, a pool of
// 200, and two configured timeouts among the candidates.
func mixtureReport(t *testing.T) *report.Report {
	t.Helper()
	o := analysis.Options{
		Inputs:     []string{"../testdata/mixture.csv"},
		Recommend:  recommend.DefaultOptions(),
		Rate:       400,
		Pool:       200,
		Candidates: []time.Duration{250 * time.Millisecond, time.Second},
	}
	var err error
	o.Recommend.NetworkAllowance, err = recommend.ParseNetworkAllowance("datacenter")
	require.NoError(t, err)
	r, err := analysis.Run(context.Background(), o, nil)
	require.NoError(t, err)
	require.Len(t, r.Groups, 1)
	return r
}

// fixed returns a Run that answers r, and a clock that moves 1.5 s a call.
func clock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(1500 * time.Millisecond)
		return now
	}
}

// TestMetricsEqualTheReport: every metric is the report's number, the
// README's worked example's.
func TestMetricsEqualTheReport(t *testing.T) {
	r := mixtureReport(t)
	w, err := New(Options{
		Run:      func(context.Context) (*report.Report, error) { return r, nil },
		Timeouts: []time.Duration{250 * time.Millisecond, time.Second, 3 * time.Second},
		Now:      clock(),
	})
	require.NoError(t, err)
	require.NoError(t, w.Cycle(context.Background()))
	m := scrape(t, w.Handler())
	g := r.Groups[0]

	// The README: 800ms, cutting off at most 0.069 %; 400 calls/s x 800ms = 320
	// calls in flight during a hang, more than the pool of 200.
	assert.Equal(t, 0.8, value(t, m, "tunetimeout_recommended_timeout_seconds", "group", "all"))
	cut := value(t, m, "tunetimeout_cut_off_ratio", "group", "all", "timeout", "recommended")
	assert.Equal(t, g.Recommendation.CutOffFraction, cut)
	assert.InDelta(t, 0.00069, cut, 0.000005)
	assert.InDelta(t, 320, value(t, m, "tunetimeout_in_flight_during_hang", "group", "all"), 1e-9)
	assert.Equal(t, 1.0, value(t, m, "tunetimeout_pool_exhausted", "group", "all"))

	// The configured timeouts: 250ms cuts off 1.74 %, 1s none; 3s is no
	// candidate of the report, so it has no series rather than a 0.
	assert.InDelta(t, 0.0174, value(t, m, "tunetimeout_cut_off_ratio", "group", "all", "timeout", "0.25"), 0.00005)
	assert.Equal(t, g.Candidates[0].CutOffFraction, value(t, m, "tunetimeout_cut_off_ratio", "group", "all", "timeout", "0.25"))
	assert.Equal(t, 0.0, value(t, m, "tunetimeout_cut_off_ratio", "group", "all", "timeout", "1"))
	_, ok := lookup(m, "tunetimeout_cut_off_ratio", "group", "all", "timeout", "3")
	assert.False(t, ok)
	assert.Len(t, m["tunetimeout_cut_off_ratio"], 3)

	// Every percentile, and the interval of p99.9 (788ms to 796ms).
	require.Len(t, m["tunetimeout_quantile_seconds"], len(g.Percentiles))
	for _, p := range g.Percentiles {
		assert.Equal(t, p.Seconds, value(t, m, "tunetimeout_quantile_seconds", "group", "all", "quantile", quantileLabel(p.Quantile)))
	}
	assert.InDelta(t, 0.792, value(t, m, "tunetimeout_quantile_seconds", "group", "all", "quantile", "0.999"), 0.0005)
	lo := value(t, m, "tunetimeout_quantile_lower_seconds", "group", "all", "quantile", "0.999")
	hi := value(t, m, "tunetimeout_quantile_upper_seconds", "group", "all", "quantile", "0.999")
	assert.Equal(t, g.Recommendation.Interval.LowSeconds, lo)
	require.NotNil(t, g.Recommendation.Interval.HighSeconds)
	assert.Equal(t, *g.Recommendation.Interval.HighSeconds, hi)
	assert.InDelta(t, 0.788, lo, 0.0005)
	assert.InDelta(t, 0.796, hi, 0.0005)

	// The run: ended at the clock's second reading, 1.5 s after it began.
	assert.Equal(t, 1.0, value(t, m, "tunetimeout_last_run_success"))
	assert.Equal(t, 1.5, value(t, m, "tunetimeout_last_run_duration_seconds"))
	assert.Equal(t, float64(time.Date(2026, 11, 2, 10, 0, 3, 0, time.UTC).Unix()), value(t, m, "tunetimeout_last_run_timestamp_seconds"))
}

// TestLabelsEscaped: group names with quotes, backslashes, line breaks,
// terminal controls (ESC, BEL, a bidi override) and invalid UTF-8 come out
// as valid exposition text with every control written as a visible escape
// (client_golang passes ESC and BEL raw), which parses back to the names
// so escaped.
func TestLabelsEscaped(t *testing.T) {
	names := []string{`say "hi"`, "two\nlines", `back\slash`, "bad \xff byte", "}{,=\t", "\x1b]0;owned\x07title", "rtl\u202egpj.exe"}
	r := &report.Report{}
	for i, n := range names {
		r.Groups = append(r.Groups, report.Group{Name: n, Recommendation: report.Recommendation{TimeoutSeconds: float64(i + 1)}})
	}
	// A second group that reads alike once made visible: one series.
	r.Groups = append(r.Groups, report.Group{Name: `bad \xff byte`, Recommendation: report.Recommendation{TimeoutSeconds: 99}})
	w, err := New(Options{Run: func(context.Context) (*report.Report, error) { return r, nil }})
	require.NoError(t, err)
	require.NoError(t, w.Cycle(context.Background()))
	m := scrape(t, w.Handler())
	require.Len(t, m["tunetimeout_recommended_timeout_seconds"], len(names))
	for i, n := range names {
		want := escape.Visible(n)
		for _, r := range want {
			require.False(t, escape.Unsafe(r), "%q", want)
		}
		assert.Equal(t, float64(i+1), value(t, m, "tunetimeout_recommended_timeout_seconds", "group", want), "%q", n)
	}
}

// TestReadiness: before a run has succeeded the process is healthy but not
// ready and has no report; after, it serves the report as HTML and JSON.
func TestReadiness(t *testing.T) {
	r := mixtureReport(t)
	fail := true
	w, err := New(Options{Run: func(context.Context) (*report.Report, error) {
		if fail {
			return nil, errors.New("prometheus is down")
		}
		return r, nil
	}})
	require.NoError(t, err)
	h := w.Handler()
	check := func(path string, code int) *httptest.ResponseRecorder {
		t.Helper()
		rec := get(h, path)
		assert.Equal(t, code, rec.Code, "%s: %s", path, rec.Body.String())
		return rec
	}
	check("/-/healthy", 200)
	check("/-/ready", 503)
	check("/", 503)
	check("/report.json", 503)
	check("/nothing", 404)
	m := scrape(t, h)
	assert.Empty(t, m, "no run has ended: no metric")

	require.Error(t, w.Cycle(context.Background()))
	check("/-/ready", 503)
	m = scrape(t, h)
	assert.Equal(t, 0.0, value(t, m, "tunetimeout_last_run_success"))
	assert.Empty(t, m["tunetimeout_recommended_timeout_seconds"])

	fail = false
	require.NoError(t, w.Cycle(context.Background()))
	check("/-/healthy", 200)
	check("/-/ready", 200)
	page := check("/", 200)
	assert.Equal(t, "text/html; charset=utf-8", page.Header().Get("Content-Type"))
	assert.Contains(t, page.Body.String(), "<html")
	assert.Contains(t, page.Body.String(), "800ms")
	doc := check("/report.json", 200)
	assert.Equal(t, "application/json", doc.Header().Get("Content-Type"))
	var got report.Report
	require.NoError(t, json.Unmarshal(doc.Body.Bytes(), &got))
	require.Len(t, got.Groups, 1)
	assert.Equal(t, 0.8, got.Groups[0].Recommendation.TimeoutSeconds)
	var want bytes.Buffer
	require.NoError(t, report.WriteJSON(&want, r))
	assert.Equal(t, want.String(), doc.Body.String(), "report.WriteJSON's document")
}

// group is a report group with a timeout and its cut-off.
func group(name string, timeout float64) report.Group {
	return report.Group{Name: name, Recommendation: report.Recommendation{TimeoutSeconds: timeout, CutOffFraction: timeout / 1000}}
}

// TestFailedRunKeepsTheLastReport: a failed run leaves the last good
// report's metrics and pages, sets last_run_success 0 and logs one line;
// the next good run replaces everything, and a group it no longer has is
// gone from /metrics.
func TestFailedRunKeepsTheLastReport(t *testing.T) {
	runs := []struct {
		r   *report.Report
		err error
	}{
		{r: &report.Report{Groups: []report.Group{group("/a", 1), group("/b", 2)}}},
		{err: errors.New("cannot reach Prometheus:\nconnection refused")},
		{r: &report.Report{Groups: []report.Group{group("/b", 3)}}},
	}
	i := 0
	var log bytes.Buffer
	w, err := New(Options{Log: &log, Now: clock(), Run: func(context.Context) (*report.Report, error) {
		defer func() { i++ }()
		return runs[i].r, runs[i].err
	}})
	require.NoError(t, err)
	h := w.Handler()

	require.NoError(t, w.Cycle(context.Background()))
	m := scrape(t, h)
	assert.Equal(t, 1.0, value(t, m, "tunetimeout_recommended_timeout_seconds", "group", "/a"))
	assert.Equal(t, 2.0, value(t, m, "tunetimeout_recommended_timeout_seconds", "group", "/b"))
	assert.Equal(t, 1.0, value(t, m, "tunetimeout_last_run_success"))
	first := value(t, m, "tunetimeout_last_run_timestamp_seconds")

	require.Error(t, w.Cycle(context.Background()))
	m = scrape(t, h)
	assert.Equal(t, 1.0, value(t, m, "tunetimeout_recommended_timeout_seconds", "group", "/a"), "kept")
	assert.Equal(t, 2.0, value(t, m, "tunetimeout_recommended_timeout_seconds", "group", "/b"), "kept")
	assert.Equal(t, 0.002, value(t, m, "tunetimeout_cut_off_ratio", "group", "/b", "timeout", "recommended"))
	assert.Equal(t, 0.0, value(t, m, "tunetimeout_last_run_success"))
	assert.Equal(t, first+3, value(t, m, "tunetimeout_last_run_timestamp_seconds"), "the failed run's end")
	assert.Equal(t, 200, get(h, "/-/ready").Code, "a good report is still served")
	assert.Contains(t, get(h, "/report.json").Body.String(), `"/a"`)
	assert.Equal(t, "tunetimeout: watch: run failed (serving the last good report): cannot reach Prometheus:; connection refused\n", log.String(),
		"one line")

	require.NoError(t, w.Cycle(context.Background()))
	m = scrape(t, h)
	_, ok := lookup(m, "tunetimeout_recommended_timeout_seconds", "group", "/a")
	assert.False(t, ok, "/a is gone")
	_, ok = lookup(m, "tunetimeout_cut_off_ratio", "group", "/a", "timeout", "recommended")
	assert.False(t, ok, "/a is gone")
	assert.Equal(t, 3.0, value(t, m, "tunetimeout_recommended_timeout_seconds", "group", "/b"))
	assert.Equal(t, 1.0, value(t, m, "tunetimeout_last_run_success"))
	assert.NotContains(t, get(h, "/report.json").Body.String(), `"/a"`)
	assert.Equal(t, 1, strings.Count(log.String(), "\n"), "nothing logged for good runs")
}

// TestStoppedRunChangesNothing: a run cut short by its context is not a
// failed run.
func TestStoppedRunChangesNothing(t *testing.T) {
	var log bytes.Buffer
	w, err := New(Options{Log: &log, Run: func(ctx context.Context) (*report.Report, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, w.Cycle(ctx), context.Canceled)
	assert.Empty(t, scrape(t, w.Handler()))
	assert.Empty(t, log.String())
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingRE = regexp.MustCompile(`serving on (http://127\.0\.0\.1:\d+/)`)

// TestServe: Serve runs the job at once and then on its timer, serves on
// the address it logs, and stops, port closed, when its context ends.
func TestServe(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	log := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Listen: "127.0.0.1:0", Every: 20 * time.Millisecond, Log: log,
			Run: func(context.Context) (*report.Report, error) {
				mu.Lock()
				defer mu.Unlock()
				runs++
				return &report.Report{Groups: []report.Group{group("/a", float64(runs))}}, nil
			}})
	}()
	var base string
	deadline := time.Now().Add(30 * time.Second)
	for base == "" {
		require.True(t, time.Now().Before(deadline), "no address logged: %s", log)
		if m := servingRE.FindStringSubmatch(log.String()); m != nil {
			base = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	// Bounded: a few runs of 20 ms each, on a loaded machine.
	var timeout float64
	for timeout < 3 {
		require.True(t, time.Now().Before(deadline), "fewer than 3 runs in 30s")
		resp, err := client.Get(base + "report.json")
		require.NoError(t, err)
		var r report.Report
		if resp.StatusCode == 200 {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
			timeout = r.Groups[0].Recommendation.TimeoutSeconds
		}
		resp.Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop within 10s of its context")
	}
	_, err := client.Get(base + "-/healthy")
	require.Error(t, err, "the port is closed")
}

// TestServeCannotListen: an address in use is an error at once, before
// any run.
func TestServeCannotListen(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ran := false
	err := Serve(context.Background(), Options{Listen: strings.TrimPrefix(srv.URL, "http://"), Every: time.Second,
		Run: func(context.Context) (*report.Report, error) { ran = true; return &report.Report{}, nil }})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	assert.False(t, ran)
}

// TestBusyTurnsAwayNotHealth: with every slot for reports and metrics
// taken, a request for one is turned away at once with a Retry-After,
// while the health endpoints still answer; the report is rendered once
// per run and served from it.
func TestBusyTurnsAwayNotHealth(t *testing.T) {
	r := mixtureReport(t)
	w, err := New(Options{Run: func(context.Context) (*report.Report, error) { return r, nil }})
	require.NoError(t, err)
	require.NoError(t, w.Cycle(context.Background()))
	h := w.Handler()
	first := get(h, "/report.json")
	require.Equal(t, 200, first.Code)
	w.mu.RLock()
	p := w.pages["application/json"]
	w.mu.RUnlock()
	require.NotNil(t, p)
	again := get(h, "/report.json")
	assert.Equal(t, first.Body.String(), again.Body.String())
	w.mu.RLock()
	assert.Same(t, p, w.pages["application/json"], "served from the one rendering")
	w.mu.RUnlock()

	for range maxHeavy {
		w.heavy <- struct{}{}
	}
	for _, path := range []string{"/", "/report.json", "/metrics"} {
		rec := get(h, path)
		assert.Equal(t, 503, rec.Code, path)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"), path)
	}
	assert.Equal(t, 200, get(h, "/-/healthy").Code)
	assert.Equal(t, 200, get(h, "/-/ready").Code)

	// A new run: a new rendering.
	for range maxHeavy {
		<-w.heavy
	}
	require.NoError(t, w.Cycle(context.Background()))
	w.mu.RLock()
	assert.Nil(t, w.pages["application/json"])
	w.mu.RUnlock()
}

// TestMetricHelpNamesOptions: a metric's help names options as the CLI
// writes them when the Watcher is made, not as a package variable froze
// them before the CLI set usage.Render.
func TestMetricHelpNamesOptions(t *testing.T) {
	assert.Contains(t, newMetricDescs().quantileLower.String(), `help: "Lower end of the confidence interval (--confidence) of`)
	saved := usage.Render
	t.Cleanup(func() { usage.Render = saved })
	usage.Render = func(o usage.Option) string { return "<" + string(o) + ">" }
	d := newMetricDescs()
	assert.Contains(t, d.poolExhausted.String(), "exhausts the <pool>, else 0; absent without <pool> or")
	assert.Contains(t, d.cutOff.String(), `or a <timeout> in seconds`)
}
