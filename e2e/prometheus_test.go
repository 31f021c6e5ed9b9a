package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The classic-histogram data backfilled into Prometheus: six hours of one
// counter sample every 15 s for two routes, known counts per minute in each
// bucket. /api takes 600 calls a minute (10/s), except in its peak hour, the
// fourth, with 1,800 a minute (30/s) and a slower tail; /slow takes 60 a
// minute, one of which lands in +Inf.
const (
	promMetric   = "tt_request_duration_seconds"
	promResolve  = 15 * time.Second
	promHours    = 6
	promPeakHour = 3 // 0-based: the hour ending at t0+4h
)

var promBounds = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}

// promPerMinute returns the calls per bucket (not cumulative) in one minute.
func promPerMinute(route string, hour int) []int64 {
	switch {
	case route == "/slow":
		return []int64{0, 0, 30, 20, 8, 1, 0, 1}
	case hour == promPeakHour:
		return []int64{706, 500, 400, 150, 30, 12, 2, 0}
	default:
		return []int64{300, 180, 90, 27, 2, 1, 0, 0}
	}
}

// promValue is the latency each call of a bucket adds to _sum.
func promValue(b int) float64 {
	if b == len(promBounds)-1 {
		return 5 // the +Inf bucket: beyond 2.5 s
	}
	lo := 0.0
	if b > 0 {
		lo = promBounds[b-1]
	}
	return (lo + promBounds[b]) / 2
}

// writeClassicOpenMetrics writes the data as OpenMetrics text with
// timestamps, from t0 (all counters 0) to t0 + promHours.
func writeClassicOpenMetrics(t *testing.T, path string, t0 time.Time) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	// Families must not interleave: each is written whole, one after the
	// other. Beside the histogram, a gauge (not a histogram) and a summary
	// whose p99 is 300ms except 900ms in the peak hour.
	fmt.Fprintf(w, "# HELP %s Request latency.\n# TYPE %s histogram\n", promMetric, promMetric)
	var gauge, summary bytes.Buffer
	fmt.Fprintf(&gauge, "# HELP tt_in_flight Calls in flight.\n# TYPE tt_in_flight gauge\n")
	fmt.Fprintf(&summary, "# HELP tt_rpc_seconds RPC latency.\n# TYPE tt_rpc_seconds summary\n")
	routes := []string{"/api", "/slow"}
	cum := map[string][]int64{}
	sum := map[string]float64{}
	for _, r := range routes {
		cum[r] = make([]int64, len(promBounds))
	}
	steps := int(promHours * time.Hour / promResolve)
	perMinute := int(time.Minute / promResolve)
	for i := 0; i <= steps; i++ {
		ts := t0.Add(time.Duration(i) * promResolve)
		if i > 0 {
			// Step i covers (ts-15s, ts]: spread each minute's counts over
			// its four steps so that every minute adds up exactly.
			minute, k := (i-1)/perMinute, int64((i-1)%perMinute)
			hour := minute / 60
			for _, r := range routes {
				for b, n := range promPerMinute(r, hour) {
					add := n*(k+1)/int64(perMinute) - n*k/int64(perMinute)
					for j := b; j < len(promBounds); j++ {
						cum[r][j] += add
					}
					sum[r] += float64(add) * promValue(b)
				}
			}
		}
		sec := strconv.FormatInt(ts.Unix(), 10)
		for _, r := range routes {
			for b, le := range promBounds {
				fmt.Fprintf(w, "%s_bucket{route=%q,le=%q} %d %s\n", promMetric, r, formatLE(le), cum[r][b], sec)
			}
			fmt.Fprintf(w, "%s_count{route=%q} %d %s\n", promMetric, r, cum[r][len(promBounds)-1], sec)
			fmt.Fprintf(w, "%s_sum{route=%q} %s %s\n", promMetric, r, strconv.FormatFloat(sum[r], 'g', -1, 64), sec)
		}
		fmt.Fprintf(&gauge, "tt_in_flight 3 %s\n", sec)
		p99 := 0.3
		if i > 0 && (i-1)/int(time.Hour/promResolve) == promPeakHour {
			p99 = 0.9
		}
		fmt.Fprintf(&summary, "tt_rpc_seconds{quantile=\"0.5\"} 0.02 %s\ntt_rpc_seconds{quantile=\"0.99\"} %g %s\n", sec, p99, sec)
		fmt.Fprintf(&summary, "tt_rpc_seconds_sum %d %s\ntt_rpc_seconds_count %d %s\n", i, sec, 10*i, sec)
	}
	_, _ = w.Write(gauge.Bytes())
	_, _ = w.Write(summary.Bytes())
	fmt.Fprintf(w, "# EOF\n")
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
}

func formatLE(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(le, 'g', -1, 64)
}

// promServer is a running Prometheus.
type promServer struct {
	url string
	log *promLog
}

type promLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *promLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *promLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startPrometheus runs prometheus on a free loopback port with the storage
// and config given, and waits until it is ready.
func startPrometheus(t *testing.T, bin, storage, config string, extra ...string) *promServer {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{
		"--storage.tsdb.path=" + storage,
		"--web.listen-address=" + addr,
		"--config.file=" + cfg,
		"--log.level=warn",
	}, extra...)
	log := startServer(t, "prometheus", bin, args, "http://"+addr+"/-/ready")
	return &promServer{url: "http://" + addr, log: log}
}

// startServer runs a server binary with args until the test ends (an
// interrupt, then a kill after 10 s) and waits, polling ready with a 30 s
// bound, until it answers 200. Its output is kept for failure messages.
func startServer(t *testing.T, name, bin string, args []string, ready string) *promLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	log := &promLog{}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cancel()
			<-exited
		}
		cancel()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it was ready: %v\n%s", name, err, log)
		default:
		}
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return log
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 30s\n%s", name, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// query asks Prometheus itself, for comparison with the tool.
func (s *promServer) query(t *testing.T, q string, at time.Time) []promSample {
	t.Helper()
	v := url.Values{"query": {q}, "time": {strconv.FormatInt(at.Unix(), 10)}}
	return s.get(t, "/api/v1/query?"+v.Encode())
}

func (s *promServer) queryRange(t *testing.T, q string, start, end time.Time, step time.Duration) []promSample {
	t.Helper()
	v := url.Values{"query": {q}, "start": {strconv.FormatInt(start.Unix(), 10)},
		"end": {strconv.FormatInt(end.Unix(), 10)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	return s.get(t, "/api/v1/query_range?"+v.Encode())
}

// promSample is one result series: its labels and values by Unix second.
type promSample struct {
	Metric map[string]string
	Values map[int64]float64
}

func (s *promServer) get(t *testing.T, path string) []promSample {
	t.Helper()
	resp, err := http.Get(s.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  []any
				Values [][]any
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, body.Error)
	var out []promSample
	for _, r := range body.Data.Result {
		ps := promSample{Metric: r.Metric, Values: map[int64]float64{}}
		pairs := r.Values
		if r.Value != nil {
			pairs = [][]any{r.Value}
		}
		for _, p := range pairs {
			f, err := strconv.ParseFloat(p[1].(string), 64)
			require.NoError(t, err)
			ps.Values[int64(p[0].(float64))] = f
		}
		out = append(out, ps)
	}
	return out
}

// lastStored returns the time of the last scrape Prometheus has committed,
// in whole seconds, and the value of the instant query q there: a scrape
// of a target appends and commits before the next one starts, so no
// scrape in flight can add a sample at or before that time, and queries
// there see the same samples however late they run. ok is false when q
// has no single value there (nothing scraped yet, or the scrape failed).
func (s *promServer) lastStored(t *testing.T, q string) (at time.Time, v float64, ok bool) {
	t.Helper()
	up := s.query(t, "timestamp(up)", time.Now())
	if len(up) != 1 {
		return time.Time{}, 0, false
	}
	at = time.Unix(int64(math.Floor(only(t, up))), 0) // the scrape's time has ms
	r := s.query(t, q, at)
	if len(r) != 1 || len(r[0].Values) != 1 {
		return at, 0, false
	}
	return at, only(t, r), true
}

// scrapeHealth summarises Prometheus's scrapes of the last two minutes,
// for a failure message: how many it took, how many failed, the longest.
func (s *promServer) scrapeHealth(t *testing.T) string {
	t.Helper()
	now := time.Now()
	value := func(q string) string {
		r := s.query(t, q, now)
		if len(r) != 1 {
			return "none"
		}
		return strconv.FormatFloat(only(t, r), 'g', 4, 64)
	}
	return fmt.Sprintf("scrapes in the last 2m: %s, failed: %s, the longest: %ss",
		value("count_over_time(up[2m])"), value("count_over_time(up[2m]) - sum_over_time(up[2m])"), value("max_over_time(scrape_duration_seconds[2m])"))
}

// only returns the single value of a one-series, one-point result.
func only(t *testing.T, r []promSample) float64 {
	t.Helper()
	require.Len(t, r, 1)
	require.Len(t, r[0].Values, 1)
	for _, v := range r[0].Values {
		return v
	}
	return 0
}

var (
	toolOnce sync.Once
	toolPath string
	toolErr  error
)

// tool builds the tunetimeout binary once per test run.
func tool(t *testing.T) string {
	t.Helper()
	toolOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tunetimeout-e2e")
		if err != nil {
			toolErr = err
			return
		}
		toolPath = filepath.Join(dir, "tunetimeout")
		out, err := exec.Command("go", "build", "-o", toolPath, "../cmd/tunetimeout").CombinedOutput()
		if err != nil {
			toolErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, toolErr)
	return toolPath
}

// runTool runs tunetimeout and returns its output and exit code.
func runTool(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(tool(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// promReport is the part of the JSON report the tests read.
type promReport struct {
	Input struct {
		Records int64
		Notes   []string
	}
	Prometheus struct {
		URL, Metric, Kind, At, Aggregate string
		Queries                          []string
	}
	Groups []struct {
		Name           string
		Samples        int64
		Censored       int64
		MeanSeconds    float64 `json:"mean_seconds"`
		Recommendation struct {
			BaseSeconds    float64 `json:"base_seconds"`
			LowerBound     bool    `json:"lower_bound"`
			TimeoutSeconds float64 `json:"timeout_seconds"`
			Steps          []struct{ Rule, Reason string }
			Warnings       []string
		}
		LittlesLaw struct {
			Rate       *float64 `json:"rate_per_second"`
			PeakRate   *float64 `json:"peak_rate_per_second"`
			RateSource string   `json:"rate_source"`
		} `json:"littles_law"`
		Buckets *struct {
			Kind   string
			Calls  float64
			Bucket struct {
				Low  float64  `json:"low_seconds"`
				High *float64 `json:"high_seconds"`
			}
			HistogramQuantile float64 `json:"histogram_quantile_seconds"`
			Beyond            bool    `json:"beyond_largest_bound"`
			SuggestedLE       string  `json:"suggested_le"`
			Steps             []struct {
				End               string
				Calls             float64
				HistogramQuantile float64 `json:"histogram_quantile_seconds"`
				Bucket            struct {
					Low  float64  `json:"low_seconds"`
					High *float64 `json:"high_seconds"`
				}
			}
			WorstStep     *int `json:"worst_step"`
			UsesWorstStep bool `json:"uses_worst_step"`
		}
		// The steps in the shape of analyze --window's windows.
		Windows []struct {
			Start, End      time.Time
			Samples         int64
			QuantileSeconds float64 `json:"quantile_seconds"`
			TimeoutSeconds  float64 `json:"timeout_seconds"`
			Interval        struct {
				Low  float64  `json:"low_seconds"`
				High *float64 `json:"high_seconds"`
			}
		}
		WorstWindow *struct {
			Start, End          time.Time
			TimeoutSeconds      float64 `json:"timeout_seconds"`
			WholeTimeoutSeconds float64 `json:"whole_timeout_seconds"`
			Significant, Used   bool
			Reason              string
		} `json:"worst_window"`
	}
}

func runJSON(t *testing.T, args ...string) promReport {
	t.Helper()
	out, errOut, code := runTool(t, append(args, "-o", "json")...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var r promReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// TestPrometheusClassic backfills known classic-histogram data into a real
// Prometheus and checks what the tool reads against the plan and against
// Prometheus's own answers to the same queries.
func TestPrometheusClassic(t *testing.T) {
	bin := requireBinary(t, "prometheus", "prometheus")
	promtool := requireBinary(t, "promtool", "prometheus")

	t0 := time.Now().UTC().Truncate(time.Hour).Add(-(promHours + 2) * time.Hour)
	at := t0.Add(promHours * time.Hour)
	dir := t.TempDir()
	om := filepath.Join(dir, "data.om")
	writeClassicOpenMetrics(t, om, t0)
	storage := filepath.Join(dir, "tsdb")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, storage).CombinedOutput()
	require.NoError(t, err, string(out))
	srv := startPrometheus(t, bin, storage, "global:\n  scrape_interval: 15s\n")

	base := []string{"prometheus", "--url", srv.url, "--metric", promMetric, "--window", "6h",
		"--at", at.Format(time.RFC3339), "--pool", "200"}
	api := append(append([]string{}, base...), "--selector", `{route="/api"}`)
	const q = 0.999

	t.Run("bucket of p99.9, estimate, rates", func(t *testing.T) {
		r := runJSON(t, api...)
		assert.Equal(t, "classic", r.Prometheus.Kind)
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		assert.Equal(t, "all", g.Name)
		assert.Equal(t, int64(288000), g.Samples, "5 h x 600 + 1 h x 1,800 calls a minute")
		assert.Equal(t, int64(288000), r.Input.Records)
		require.NotNil(t, g.Buckets)
		b := g.Buckets
		// Cumulative counts at 0.5 and 1: 286,860 and 287,880; the rank
		// 0.999 x 288,000 = 287,712 lies between.
		assert.Equal(t, 0.5, b.Bucket.Low)
		require.NotNil(t, b.Bucket.High)
		assert.Equal(t, 1.0, *b.Bucket.High)
		assert.False(t, b.Beyond)
		assert.Equal(t, 1.0, g.Recommendation.BaseSeconds, "the bucket's upper bound")
		assert.Equal(t, 1.0, g.Recommendation.TimeoutSeconds)
		assert.False(t, g.Recommendation.LowerBound)
		assert.Contains(t, g.Recommendation.Steps[0].Reason, "lies in the bucket (500ms, 1s]")
		assert.Contains(t, g.Recommendation.Steps[0].Reason, "upper bound 1s is used (conservative")
		want := 0.5 + 0.5*(0.999*288000-286860)/1020
		assert.InDelta(t, want, b.HistogramQuantile, 1e-9)
		theirs := only(t, srv.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (le) (increase(%s_bucket{route="/api"}[6h])))`, q, promMetric), at))
		assert.InDelta(t, theirs, b.HistogramQuantile, 1e-12, "Prometheus's own histogram_quantile")
		t.Logf("p99.9 in (0.5, 1]: histogram_quantile %.6f (Prometheus %.6f); suggested le=%s", b.HistogramQuantile, theirs, b.SuggestedLE)
		assert.Equal(t, "0.95", b.SuggestedLE, "917.6ms rounded to a value people write, inside (0.5, 1]")
		for _, w := range g.Recommendation.Warnings {
			assert.NotContains(t, w, "existing timeout", "bucket bounds are no pile-up")
		}

		require.NotNil(t, g.LittlesLaw.Rate)
		assert.InDelta(t, 288000.0/(6*3600), *g.LittlesLaw.Rate, 1e-9, "mean rate from _count")
		require.NotNil(t, g.LittlesLaw.PeakRate)
		assert.InDelta(t, 30, *g.LittlesLaw.PeakRate, 1e-9, "the busiest minute: 1,800 calls")
		assert.Equal(t, "prometheus", g.LittlesLaw.RateSource)
		var sum float64
		for h := range promHours {
			for b, n := range promPerMinute("/api", h) {
				sum += 60 * float64(n) * promValue(b)
			}
		}
		assert.InDelta(t, sum/288000, g.MeanSeconds, 1e-9, "mean from _sum / _count")
	})

	t.Run("text report", func(t *testing.T) {
		out, errOut, code := runTool(t, api...)
		require.Equal(t, 0, code, errOut)
		t.Logf("tunetimeout %s\n%s", strings.Join(api, " "), out)
		for _, want := range []string{
			"p99.9 lies in the bucket (500ms, 1s]; the timeout builds on 1s, its upper bound (conservative).",
			"Prometheus's histogram_quantile (a linear estimate within the bucket): 918ms.",
			`Add a bucket bound le="0.95"`,
			"Recommended timeout: 1s",
			"busiest minute 30 calls/s",
		} {
			assert.Contains(t, out, want)
		}
	})

	t.Run("by route, +Inf", func(t *testing.T) {
		r := runJSON(t, append(append([]string{}, base...), "--by", "route")...)
		require.Len(t, r.Groups, 2)
		api, slow := r.Groups[0], r.Groups[1]
		assert.Equal(t, "/api", api.Name)
		assert.Equal(t, "/slow", slow.Name)
		assert.Equal(t, 1.0, api.Recommendation.TimeoutSeconds)
		assert.Equal(t, int64(21600), slow.Samples)
		assert.Equal(t, int64(360), slow.Censored, "one call a minute beyond 2.5s")
		require.NotNil(t, slow.Buckets)
		assert.True(t, slow.Buckets.Beyond)
		assert.Nil(t, slow.Buckets.Bucket.High, "+Inf")
		assert.True(t, slow.Recommendation.LowerBound)
		assert.Equal(t, 2.5, slow.Recommendation.BaseSeconds)
		assert.Equal(t, 2.5, slow.Recommendation.TimeoutSeconds, "at least the largest bound, no more can be said")
		assert.Contains(t, slow.Recommendation.Warnings[0], "the true p99.9 is at least 2.5s, not measured")
		assert.Equal(t, "5", slow.Buckets.SuggestedLE)
		theirs := srv.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (le, route) (increase(%s_bucket[6h])))`, q, promMetric), at)
		for _, s := range theirs {
			g := api
			if s.Metric["route"] == "/slow" {
				g = slow
			}
			assert.InDelta(t, only(t, []promSample{s}), g.Buckets.HistogramQuantile, 1e-12, s.Metric["route"])
		}
		require.NotNil(t, slow.LittlesLaw.Rate)
		assert.InDelta(t, 1, *slow.LittlesLaw.Rate, 1e-9)
		assert.InDelta(t, 1, *slow.LittlesLaw.PeakRate, 1e-9)
	})

	t.Run("step windows", func(t *testing.T) {
		r := runJSON(t, append(append([]string{}, api...), "--step", "1h")...)
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		require.NotNil(t, g.Buckets)
		b := g.Buckets
		require.Len(t, b.Steps, promHours)
		require.NotNil(t, b.WorstStep)
		worst := b.Steps[*b.WorstStep]
		assert.Equal(t, t0.Add((promPeakHour+1)*time.Hour).Format(time.RFC3339), worst.End)
		assert.Equal(t, 108000.0, worst.Calls)
		assert.Equal(t, 1.0, worst.Bucket.Low)
		assert.Equal(t, 2.5, *worst.Bucket.High)
		assert.InDelta(t, 1.15, worst.HistogramQuantile, 1e-9)
		assert.True(t, b.UsesWorstStep)
		assert.Equal(t, 2.5, g.Recommendation.TimeoutSeconds, "the worst hour needs 2.5s")
		assert.Equal(t, "worst-step", r.Prometheus.Aggregate)
		theirs := srv.queryRange(t, fmt.Sprintf(`histogram_quantile(%v, sum by (le) (increase(%s_bucket{route="/api"}[1h])))`, q, promMetric),
			t0.Add(time.Hour), at, time.Hour)
		require.Len(t, theirs, 1)
		for _, st := range b.Steps {
			end, err := time.Parse(time.RFC3339, st.End)
			require.NoError(t, err)
			assert.InDelta(t, theirs[0].Values[end.Unix()], st.HistogramQuantile, 1e-12, st.End)
			if st.End != worst.End {
				assert.InDelta(t, 0.7, st.HistogramQuantile, 1e-9, "an ordinary hour")
			}
		}

		// The same steps as windows, the shape analyze --window writes.
		require.Len(t, g.Windows, promHours)
		ww := g.WorstWindow
		require.NotNil(t, ww)
		assert.Equal(t, t0.Add(promPeakHour*time.Hour), ww.Start.UTC())
		assert.Equal(t, t0.Add((promPeakHour+1)*time.Hour), ww.End.UTC())
		assert.True(t, ww.Significant && ww.Used, ww.Reason)
		assert.Equal(t, 2.5, ww.TimeoutSeconds)
		assert.Equal(t, 1.0, ww.WholeTimeoutSeconds, "the whole window's, as --aggregate overall gives")
		assert.Contains(t, ww.Reason, "lies in (1s, 2.5s] over 108,000 calls")
		for _, w := range g.Windows {
			assert.Equal(t, time.Hour, w.End.Sub(w.Start))
			assert.LessOrEqual(t, w.Interval.Low, w.QuantileSeconds)
			if !w.Start.Equal(ww.Start) {
				assert.Equal(t, 1.0, w.TimeoutSeconds, "an ordinary hour's own timeout")
			}
		}

		overall := runJSON(t, append(append([]string{}, api...), "--step", "1h", "--aggregate", "overall")...)
		assert.Equal(t, 1.0, overall.Groups[0].Recommendation.TimeoutSeconds)
		assert.False(t, overall.Groups[0].Buckets.UsesWorstStep)
		require.NotNil(t, overall.Groups[0].WorstWindow)
		assert.False(t, overall.Groups[0].WorstWindow.Used)
		assert.Equal(t, 1.0, overall.Groups[0].WorstWindow.WholeTimeoutSeconds)
	})

	t.Run("call policy and snippets", func(t *testing.T) {
		out, errOut, code := runTool(t, append(append([]string{}, api...), "--deadline", "3s", "--attempts", "2", "--idempotent", "--emit", "envoy")...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "per_try_timeout")
	})

	t.Run("check: an Envoy config held against the buckets", func(t *testing.T) {
		// /slow's 250ms is a bucket bound: the share above it is exact,
		// and Prometheus's own buckets give it; /api's 800ms lies inside
		// (0.5, 1]: the buckets only bracket the share, which straddles
		// the 0.1 % asked for, so check can only say which bound to add.
		envoy := filepath.Join(t.TempDir(), "envoy.yaml")
		require.NoError(t, os.WriteFile(envoy, []byte(`name: local_route
virtual_hosts:
- name: shop
  domains: ["*"]
  routes:
  - match: { prefix: "/api" }
    route: { cluster: api, timeout: 0.8s }
  - match: { prefix: "/slow" }
    route: { cluster: slow, timeout: 0.25s }
`), 0o644))
		args := []string{"check", envoy, "--url", srv.url, "--metric", promMetric, "--window", "6h",
			"--at", at.Format(time.RFC3339), "--by", "route", "-o", "json"}
		out, errOut, code := runTool(t, args...)
		require.Equal(t, 1, code, "an error finding: %s", errOut)
		var c struct {
			Findings []struct {
				Code, Group string
				Line        int
				Measured    map[string]any
			}
			UnmatchedGroups []string `json:"unmatched_groups"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &c), out)
		assert.Empty(t, c.UnmatchedGroups)
		above := func(route string, le float64) float64 {
			total := only(t, srv.query(t, fmt.Sprintf(`sum(increase(%s_count{route=%q}[6h]))`, promMetric, route), at))
			below := only(t, srv.query(t, fmt.Sprintf(`sum(increase(%s_bucket{route=%q,le=%q}[6h]))`, promMetric, route, formatLE(le)), at))
			return (total - below) / total
		}
		codes := map[string][]string{}
		for _, f := range c.Findings {
			codes[f.Group] = append(codes[f.Group], f.Code)
			switch {
			case f.Group == "/slow" && f.Code == "TT-CHECK-TIMEOUT-CUTS-OFF":
				assert.Equal(t, 9, f.Line)
				assert.InDelta(t, above("/slow", 0.25), f.Measured["cut_off_fraction"], 1e-9, "Prometheus's own share above le=0.25")
				assert.InDelta(t, 10.0/60, f.Measured["cut_off_fraction"], 1e-9, "10 of the 60 calls a minute lie above 250ms")
			case f.Group == "/api" && f.Code == "TT-CHECK-NO-BUCKET-AT-TIMEOUT":
				assert.Equal(t, 7, f.Line)
				assert.InDelta(t, above("/api", 1), f.Measured["cut_off_low_fraction"], 1e-9, "surely: the buckets above 1s")
				assert.InDelta(t, above("/api", 0.5), f.Measured["cut_off_high_fraction"], 1e-9, "at most: those above 0.5s")
			}
		}
		assert.ElementsMatch(t, []string{"TT-CHECK-TIMEOUT-CUTS-OFF"}, codes["/slow"], "250ms is a bound: no bucket to add")
		assert.ElementsMatch(t, []string{"TT-CHECK-NO-BUCKET-AT-TIMEOUT"}, codes["/api"],
			"0.0417 %% to 0.396 %% straddles 0.1 %%: neither cuts off nor fits can be told")
	})

	// The rules for this backfilled histogram pass Prometheus's own
	// checks, and so does the unit test generated beside them: the
	// recording rule counts above le="1", the recommended 1s.
	t.Run("rules: promtool check and test", func(t *testing.T) {
		dir := t.TempDir()
		rules, test := filepath.Join(dir, "timeouts.rules.yaml"), filepath.Join(dir, "timeouts.test.yaml")
		_, errOut, code := runTool(t, append(append([]string{"rules"}, api[1:]...), "--output", rules, "--test-out", test)...)
		require.Equal(t, 0, code, errOut)
		b, err := os.ReadFile(rules)
		require.NoError(t, err)
		assert.Contains(t, string(b), promMetric+`_bucket{route="/api", le=~"1|1\\.0"}[5m]`, "the bucket bound of the recommended 1s")
		out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
		require.NoError(t, err, "%s\n%s", out, b)
		assert.Contains(t, string(out), "SUCCESS")
		out, err = exec.Command(promtool, "test", "rules", test).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "SUCCESS")
	})

	t.Run("all routes: the quantile beyond the largest bound", func(t *testing.T) {
		r := runJSON(t, base...)
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		assert.True(t, g.Buckets.Beyond, "720 + 360 calls above 1s of 309,600 put p99.9 into +Inf")
		assert.True(t, g.Recommendation.LowerBound)
		out, _, code := runTool(t, base...)
		require.Equal(t, 0, code)
		assert.Contains(t, out, ">= 2.5s")
		assert.Contains(t, unwrapped(out), "histogram_quantile would answer 2.5s, the largest finite bound: that is no measurement.")
	})

	t.Run("errors", func(t *testing.T) {
		_, errOut, code := runTool(t, "prometheus", "--url", srv.url, "--metric", "tt_request_duration_second", "--window", "6h", "--at", at.Format(time.RFC3339))
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "no series of tt_request_duration_second")
		assert.Contains(t, errOut, "similar metrics: "+promMetric)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line")

		_, errOut, code = runTool(t, "prometheus", "--url", srv.url, "--metric", promMetric, "--window", "1h",
			"--at", t0.Add(-3*time.Hour).Format(time.RFC3339))
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "no series of "+promMetric, "a window before the data")

		_, errOut, code = runTool(t, "prometheus", "--url", srv.url, "--metric", "tt_in_flight", "--unit", "s",
			"--window", "6h", "--at", at.Format(time.RFC3339))
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "tt_in_flight is not a histogram")
	})

	t.Run("max response bytes", func(t *testing.T) {
		// Every answer of this data is under 4 KiB but the range query's.
		_, errOut, code := runTool(t, append(append([]string{}, api...), "--step", "15m", "--max-response-bytes", "4KiB")...)
		assert.Equal(t, 1, code)
		assert.Equal(t, "tunetimeout: Prometheus at "+srv.url+` answered sum by (le) (increase(`+promMetric+`_bucket{route="/api"}[15m])) with more than 4 KiB, the --max-response-bytes cap; `+
			"a shorter --window, a coarser --step, a narrower --selector or a larger --max-response-bytes helps\n", errOut)
		r := runJSON(t, append(append([]string{}, api...), "--step", "15m", "--max-response-bytes", "64KiB")...)
		assert.Len(t, r.Groups[0].Buckets.Steps, 24, "the same query within a larger cap")
	})

	t.Run("summary", func(t *testing.T) {
		out, errOut, code := runTool(t, "prometheus", "--url", srv.url, "--metric", "tt_rpc_seconds",
			"--window", "6h", "--at", at.Format(time.RFC3339))
		assert.Equal(t, 1, code, "no recommendation from a summary")
		assert.Contains(t, errOut, "tt_rpc_seconds is a summary")
		assert.Contains(t, errOut, "cannot be averaged or added across instances")
		assert.Contains(t, out, "Summary quantiles of tt_rpc_seconds")
		assert.Regexp(t, `p99\s+300ms\s+900ms`, out, "the p99 at the end and its largest value in the window")
	})
}

// TestPrometheusNative serves a client_golang native histogram with known
// observations, has a real Prometheus with native histograms enabled scrape
// it every second, and checks the tool's bucket and estimate against
// Prometheus's own histogram_quantile.
func TestPrometheusNative(t *testing.T) {
	bin := requireBinary(t, "prometheus", "prometheus")

	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                        "tt_native_duration_seconds",
		Help:                        "Latency, native buckets.",
		NativeHistogramBucketFactor: 1.1, // schema 3: bounds 2^(k/8)
	})
	reg.MustRegister(h)
	// A second histogram with negative observations, an exporter's bug:
	// Prometheus's histogram_quantile reads them, tunetimeout leaves them
	// out and says so.
	neg := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                        "tt_native_negative_seconds",
		Help:                        "Latency with a clock that went backwards.",
		NativeHistogramBucketFactor: 1.1,
	})
	reg.MustRegister(neg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var serving sync.WaitGroup
	exporter := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	serving.Add(1)
	go func() { defer serving.Done(); _ = exporter.Serve(ln) }()
	t.Cleanup(func() { _ = exporter.Close(); serving.Wait() })

	config := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: native
    scrape_interval: 1s
    static_configs:
      - targets: [%q]
`, ln.Addr().String())
	srv := startPrometheus(t, bin, t.TempDir(), config, "--enable-feature=native-histograms")
	start := time.Now()
	// A stored sample of the empty histogram, then the observations: 998
	// at 20ms and 2 at 700ms, which lies in the schema-3 bucket
	// (2^(-5/8), 2^(-4/8)] = (648.4ms, 707.1ms]. The rank 0.999 x 1000 is
	// the 999th call: the first of the two at 700ms. Both waits poll
	// Prometheus for what it stored, as long as its scrapes take: on a
	// busy machine some time out (scrape_timeout is the 1s interval) and
	// are retried at the next interval.
	emptyStored := waitUntil(2*time.Minute, 100*time.Millisecond, func() bool {
		_, n, ok := srv.lastStored(t, "histogram_count(tt_native_duration_seconds)")
		return ok && n == 0
	})
	require.True(t, emptyStored, "Prometheus stored no sample of the empty histogram within 2 minutes: %s\n%s", srv.scrapeHealth(t), srv.log)
	emptyAfter := time.Since(start)
	// Before the first histogram's: stored once its count is.
	for range 400 {
		neg.Observe(-0.03)
	}
	for range 600 {
		neg.Observe(0.05)
	}
	for range 998 {
		h.Observe(0.020)
	}
	h.Observe(0.7)
	h.Observe(0.7)
	// The observations are stored and no scrape is in flight before at:
	// the tool and Prometheus below read the same samples.
	var at time.Time
	stored := waitUntil(2*time.Minute, 200*time.Millisecond, func() bool {
		var n float64
		var ok bool
		at, n, ok = srv.lastStored(t, "histogram_count(tt_native_duration_seconds)")
		return ok && n == 1000
	})
	require.True(t, stored, "Prometheus did not store the observations within 2 minutes: %s\n%s", srv.scrapeHealth(t), srv.log)
	t.Logf("Prometheus stored the empty histogram %v after it was ready, the observations %v later; %s",
		emptyAfter.Round(time.Millisecond), (time.Since(start) - emptyAfter).Round(time.Millisecond), srv.scrapeHealth(t))
	window := (at.Sub(start) + 2*time.Second).Truncate(time.Second)
	w := strconv.Itoa(int(window.Seconds())) + "s"

	r := runJSON(t, "prometheus", "--url", srv.url, "--metric", "tt_native_duration_seconds", "--window", w,
		"--at", strconv.FormatInt(at.Unix(), 10), "--peak-range", "5s")
	assert.Equal(t, "native", r.Prometheus.Kind)
	require.Len(t, r.Groups, 1)
	g := r.Groups[0]
	require.NotNil(t, g.Buckets)
	lo, hi := math.Pow(2, -5.0/8), math.Pow(2, -4.0/8)
	assert.InDelta(t, lo, g.Buckets.Bucket.Low, 1e-12)
	require.NotNil(t, g.Buckets.Bucket.High)
	assert.InDelta(t, hi, *g.Buckets.Bucket.High, 1e-12)
	assert.Equal(t, 0.75, g.Recommendation.TimeoutSeconds, "707.1ms rounded up")
	theirs := only(t, srv.query(t, fmt.Sprintf("histogram_quantile(0.999, sum(increase(tt_native_duration_seconds[%s])))", w), at))
	assert.InDelta(t, theirs, g.Buckets.HistogramQuantile, 1e-12, "Prometheus's own histogram_quantile")
	assert.Greater(t, g.Buckets.HistogramQuantile, lo)
	assert.Less(t, g.Buckets.HistogramQuantile, hi)
	// increase() extrapolates to the window's edges, so the count is the
	// 1,000 calls scaled up a little; Prometheus says by how much.
	count := only(t, srv.query(t, fmt.Sprintf("histogram_count(sum(increase(tt_native_duration_seconds[%s])))", w), at))
	assert.InDelta(t, count, g.Buckets.Calls, 1e-9)
	assert.GreaterOrEqual(t, g.Buckets.Calls, 1000.0)
	assert.InDelta(t, (998*0.020+2*0.7)/1000, g.MeanSeconds, 1e-9, "mean from the histogram's sum and count")
	require.NotNil(t, g.LittlesLaw.Rate)
	assert.Greater(t, *g.LittlesLaw.Rate, 0.0)
	t.Logf("native: bucket (%.4f, %.4f], histogram_quantile %.6f (Prometheus %.6f), calls %.1f, took %v",
		g.Buckets.Bucket.Low, *g.Buckets.Bucket.High, g.Buckets.HistogramQuantile, theirs, g.Buckets.Calls, time.Since(start).Round(time.Second))

	t.Run("negative buckets: left out, said, not Prometheus's", func(t *testing.T) {
		out, errOut, code := runTool(t, "prometheus", "--url", srv.url, "--metric", "tt_native_negative_seconds", "--window", w,
			"--at", strconv.FormatInt(at.Unix(), 10), "--peak-range", "5s", "--false-timeouts", "50%", "-o", "json")
		require.Equal(t, 0, code, errOut)
		var r edgeReport
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		// increase() scales the 400 and 600 calls up a little, alike.
		assert.InDelta(t, 400.0/600, float64(g.Excluded["negative"])/float64(g.Samples), 0.01)
		require.NotEmpty(t, g.Recommendation.Warnings)
		assert.Contains(t, g.Recommendation.Warnings[0], "were counted below zero latency")
		assert.Equal(t, "tunetimeout", g.Buckets.EstimateBy)
		assert.Contains(t, g.Buckets.EstimateNote, "histogram_quantile reads the negative buckets, which tunetimeout left out")
		assert.Nil(t, g.Buckets.HistogramQuantile, "not claimed as Prometheus's")
		require.NotNil(t, g.Buckets.Estimate)
		theirs := only(t, srv.query(t, fmt.Sprintf("histogram_quantile(0.5, sum(increase(tt_native_negative_seconds[%s])))", w), at))
		t.Logf("p50: Prometheus %.6f, tunetimeout over the positive buckets %.6f", theirs, *g.Buckets.Estimate)
		assert.Greater(t, math.Abs(theirs-*g.Buckets.Estimate), 1e-6, "they differ, which is why the label says whose")
		assert.Greater(t, g.Buckets.Bucket.Low, 0.0)
		require.NotNil(t, g.Buckets.Bucket.High)
		assert.GreaterOrEqual(t, *g.Buckets.Bucket.High, 0.05, "the bucket of 50ms")
	})
}

// unwrapped is a text report with its lines joined and its runs of blanks
// made one: sentences to look for, wherever the report wrapped them.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }
