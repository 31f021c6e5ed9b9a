package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// TestRulesFireInPrometheus loads the rules tunetimeout rules writes into a
// real Prometheus over a client_golang histogram it scrapes every second:
// two routes, both fast while the rules are generated from the live data;
// then /slow moves (10 % of its calls take 2.4s, far above the timeout)
// and /fast stays. The burn-rate alert must fire for /slow and not for
// /fast, the hang alerts (--pool 5) for both and the pool they share, and the demand alert
// (--bulkhead 50) for /slow only. Short windows (--windows 20s/5s:2) and
// --for 0s make it take seconds, with bounded polling throughout.
func TestRulesFireInPrometheus(t *testing.T) {
	bin := requireBinary(t, "prometheus", "prometheus")
	promtool := requireBinary(t, "promtool", "prometheus")

	const metric = "tt_rules_duration_seconds"
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: metric, Help: "Latency by route.",
		Buckets: []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, []string{"route"})
	reg.MustRegister(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	exporter := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	var serving sync.WaitGroup
	serving.Go(func() { _ = exporter.Serve(ln) })
	t.Cleanup(func() { _ = exporter.Close(); serving.Wait() })

	// 50 calls per route every 100ms (500/s); slowed: one in ten of
	// /slow's takes 2.4s.
	var slowed atomic.Bool
	stop := make(chan struct{})
	var load sync.WaitGroup
	load.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for i := range 50 {
				h.WithLabelValues("/fast").Observe(0.02)
				if slowed.Load() && i%10 == 0 {
					h.WithLabelValues("/slow").Observe(2.4)
				} else {
					h.WithLabelValues("/slow").Observe(0.02)
				}
			}
		}
	})
	t.Cleanup(func() { close(stop); load.Wait() })

	rulesDir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: rules
    static_configs:
      - targets: [%q]
`, filepath.Join(rulesDir, "*.yaml"), ln.Addr().String())
	srv := startPrometheus(t, bin, t.TempDir(), config, "--web.enable-lifecycle")

	// Some seconds of fast data for the recommendation.
	var at time.Time
	enough := waitUntil(90*time.Second, 250*time.Millisecond, func() bool {
		var n float64
		var ok bool
		at, n, ok = srv.lastStored(t, `count_over_time(`+metric+`_count{route="/fast"}[15s])`)
		return ok && n >= 8
	})
	require.True(t, enough, "Prometheus stored too few scrapes within 90s: %s\n%s", srv.scrapeHealth(t), srv.log)

	rules := filepath.Join(rulesDir, "timeouts.yaml")
	test := filepath.Join(t.TempDir(), "timeouts.test.yaml")
	_, errOut, code := runTool(t, "rules", "--url", srv.url, "--metric", metric, "--selector", `{job="rules"}`, "--by", "route",
		"--window", "15s", "--at", strconv.FormatInt(at.Unix(), 10), "--peak-range", "5s",
		"--windows", "20s/5s:2:page", "--pool", "5", "--bulkhead", "50", "--demand-range", "10s", "--for", "0s",
		"--output", rules, "--test-out", test)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(rules)
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Record, Alert, Expr string
				Labels              map[string]string
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &f))
	require.Len(t, f.Groups, 3, "/fast, /slow and the pool they share: %s", b)
	timeout, err := time.ParseDuration(f.Groups[0].Rules[0].Labels["timeout"])
	require.NoError(t, err, "%s", b)
	require.Less(t, timeout, 2400*time.Millisecond, "the slow calls must lie above the timeout: %s", b)
	t.Logf("recommended from fast data: %v; %s", timeout, f.Groups[0].Rules[0].Expr)

	// Prometheus's own tools accept them.
	out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
	require.NoError(t, err, "%s\n%s", out, b)
	out, err = exec.Command(promtool, "test", "rules", test).CombinedOutput()
	require.NoError(t, err, "%s", out)
	ver, _ := exec.Command(promtool, "--version").CombinedOutput()
	t.Logf("promtool: %s", firstLine(string(ver)))

	// Load them, then move /slow.
	resp, err := http.Post(srv.url+"/-/reload", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	loaded := waitUntil(30*time.Second, 200*time.Millisecond, func() bool { return srv.ruleGroups(t) == 3 })
	require.True(t, loaded, "Prometheus did not load the rules: %s", srv.log)
	slowed.Store(true)

	firing := func(alerts []promAlert, name, route string) bool {
		for _, a := range alerts {
			if a.Labels["alertname"] == name && a.Labels["route"] == route && a.State == "firing" {
				return true
			}
		}
		return false
	}
	var alerts []promAlert
	fired := waitUntil(90*time.Second, 250*time.Millisecond, func() bool {
		alerts = srv.alerts(t)
		return firing(alerts, "TunetimeoutFalseTimeoutBudgetBurn", "/slow") &&
			firing(alerts, "TunetimeoutDemandNearBulkhead", "/slow") &&
			firing(alerts, "TunetimeoutHangExhaustsPool", "/fast") &&
			firing(alerts, "TunetimeoutHangExhaustsSharedPool", "")
	})
	require.True(t, fired, "alerts: %+v\n%s\n%s", alerts, srv.scrapeHealth(t), srv.log)
	// A few evaluations later, /fast still burns nothing and its demand
	// is normal.
	time.Sleep(3 * time.Second)
	alerts = srv.alerts(t)
	assert.True(t, firing(alerts, "TunetimeoutFalseTimeoutBudgetBurn", "/slow"))
	assert.False(t, firing(alerts, "TunetimeoutFalseTimeoutBudgetBurn", "/fast"), "%+v", alerts)
	assert.False(t, firing(alerts, "TunetimeoutDemandNearBulkhead", "/fast"), "%+v", alerts)
	for _, a := range alerts {
		if a.Labels["alertname"] == "TunetimeoutFalseTimeoutBudgetBurn" {
			assert.Equal(t, "page", a.Labels["severity"])
			assert.Equal(t, a.Labels["route"], a.Labels["group"])
			assert.Equal(t, timeout.String(), a.Labels["timeout"])
		}
	}
	// The recorded ratio: 1 in 10 of /slow's calls since it moved.
	r := srv.query(t, `tunetimeout:false_timeout:ratio_rate5s{route="/slow"}`, time.Now())
	require.Len(t, r, 1)
	assert.InDelta(t, 0.1, only(t, r), 0.05)
}

type promAlert struct {
	Labels      map[string]string
	Annotations map[string]string
	State       string
}

func (s *promServer) alerts(t *testing.T) []promAlert {
	t.Helper()
	resp, err := http.Get(s.url + "/api/v1/alerts")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data struct{ Alerts []promAlert }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.Data.Alerts
}

// ruleGroups is how many rule groups Prometheus has loaded.
func (s *promServer) ruleGroups(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(s.url + "/api/v1/rules")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data struct{ Groups []json.RawMessage }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return len(body.Data.Groups)
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
