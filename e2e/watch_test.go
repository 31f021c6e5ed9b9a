package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// TestWatchPrometheus runs `tunetimeout watch` against a real Prometheus
// holding the backfilled data of TestPrometheusClassic, and checks that
// what it serves is what `tunetimeout prometheus -o json` says of the same
// window (the same --at): the JSON report byte for byte, and in /metrics,
// parsed by Prometheus's own parser, each group's recommended timeout, its
// cut-off at the configured timeouts, Little's law and the pool.
func TestWatchPrometheus(t *testing.T) {
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

	src := []string{"--url", srv.url, "--metric", promMetric, "--window", "6h",
		"--at", at.Format(time.RFC3339), "--by", "route", "--pool", "20"}
	stdout, stderr, code := runTool(t, append(append([]string{"prometheus"}, src...), "--candidates", "250ms,1s", "-o", "json")...)
	require.Equal(t, 0, code, stderr)
	var want report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &want))
	require.Len(t, want.Groups, 2)

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// Ready once its first run succeeded (startServer polls, 30 s bound).
	log := startServer(t, "tunetimeout watch", tool(t),
		append(append([]string{"watch"}, src...), "--every", "1s", "--listen", addr, "--timeout", "250ms", "--timeout", "1s"),
		"http://"+addr+"/-/ready")
	base := "http://" + addr
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) []byte {
		t.Helper()
		resp, err := client.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s\n%s", path, b, log)
		return b
	}

	// The prometheus command's report, the configured timeouts joining
	// the ladder of candidates around each recommendation.
	plainOut, stderr, code := runTool(t, append(append([]string{"prometheus"}, src...), "-o", "json")...)
	require.Equal(t, 0, code, stderr)
	var plain, got report.Report
	require.NoError(t, json.Unmarshal([]byte(plainOut), &plain))
	require.NoError(t, json.Unmarshal(get("/report.json"), &got))
	require.Len(t, got.Groups, len(plain.Groups))
	for i := range got.Groups {
		joined := slices.Clone(plain.Groups[i].Candidates)
		for _, c := range want.Groups[i].Candidates {
			if !slices.ContainsFunc(joined, func(j report.Candidate) bool { return j.TimeoutSeconds == c.TimeoutSeconds }) {
				joined = append(joined, c)
			}
		}
		slices.SortFunc(joined, func(a, b report.Candidate) int { return cmp.Compare(a.TimeoutSeconds, b.TimeoutSeconds) })
		assert.Equal(t, joined, got.Groups[i].Candidates, got.Groups[i].Name)
		assert.Greater(t, len(joined), len(want.Groups[i].Candidates))
		got.Groups[i].Candidates = plain.Groups[i].Candidates
	}
	assert.Equal(t, plain, got, "the rest is the prometheus command's report")

	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(get("/metrics")))
	require.NoError(t, err)
	metric := func(name string, labels map[string]string) (float64, bool) {
		for _, m := range fams[name].GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if fmt.Sprint(have) == fmt.Sprint(labels) {
				return m.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	require.Len(t, fams["tunetimeout_recommended_timeout_seconds"].GetMetric(), 2, "one series a group")
	for _, g := range want.Groups {
		v, ok := metric("tunetimeout_recommended_timeout_seconds", map[string]string{"group": g.Name})
		require.True(t, ok, g.Name)
		assert.Equal(t, g.Recommendation.TimeoutSeconds, v, g.Name)
		if g.Name == "/api" {
			// TestPrometheusClassic: p99.9 lies in (0.5, 1], its bound is 1s.
			assert.Equal(t, 1.0, v)
		}
		v, ok = metric("tunetimeout_cut_off_ratio", map[string]string{"group": g.Name, "timeout": "recommended"})
		require.True(t, ok, g.Name)
		assert.Equal(t, g.Recommendation.CutOffFraction, v, g.Name)
		require.Len(t, g.Candidates, 2)
		for i, label := range []string{"0.25", "1"} {
			v, ok = metric("tunetimeout_cut_off_ratio", map[string]string{"group": g.Name, "timeout": label})
			require.True(t, ok, "%s at %s", g.Name, label)
			assert.Equal(t, g.Candidates[i].CutOffFraction, v, "%s at %s", g.Name, label)
		}
		require.NotNil(t, g.LittlesLaw.InFlightDuringHang, g.Name)
		v, ok = metric("tunetimeout_in_flight_during_hang", map[string]string{"group": g.Name})
		require.True(t, ok, g.Name)
		assert.Equal(t, *g.LittlesLaw.InFlightDuringHang, v, g.Name)
		require.NotNil(t, g.LittlesLaw.PoolExhausted, g.Name)
		v, ok = metric("tunetimeout_pool_exhausted", map[string]string{"group": g.Name})
		require.True(t, ok, g.Name)
		assert.Equal(t, map[bool]float64{true: 1, false: 0}[*g.LittlesLaw.PoolExhausted], v, g.Name)
	}
	// /api: 288,000 calls in 6 h, cut off above 250ms by its buckets: the
	// calls above 0.25 (the buckets of 0.5, 1, 2.5 and +Inf) are 5 h x
	// (2+1) + 1 h x (30+12+2) a minute.
	v, ok := metric("tunetimeout_cut_off_ratio", map[string]string{"group": "/api", "timeout": "0.25"})
	require.True(t, ok)
	assert.InDelta(t, 60*(5*3+44)/288000.0, v, 1e-12)
	v, ok = metric("tunetimeout_last_run_success", map[string]string{})
	require.True(t, ok)
	assert.Equal(t, 1.0, v)
}
