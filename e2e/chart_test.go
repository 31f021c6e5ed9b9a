package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/report"
)

// TestChartWatch runs the Helm chart's defaults (deploy/helm/tunetimeout):
// helm renders the Deployment with only the values a user must give (the
// Prometheus URL, here the real Prometheus holding TestPrometheusClassic's
// backfilled data, and the metric) and a free port, and the binary run
// with the container's arguments as they are becomes ready on the chart's
// readiness path within its first run, is healthy on the liveness path,
// and serves the two routes' recommended timeouts on /metrics. deploy/helm
// checks the objects themselves; Helm is pinned in .ci/tools.sh.
func TestChartWatch(t *testing.T) {
	helm := e2etest.RequireBinary(t, "helm", "bash .ci/tools.sh installs the pinned Helm into $(go env GOPATH)/bin, which must be on PATH")
	bin := requireBinary(t, "prometheus", "prometheus")
	promtool := requireBinary(t, "promtool", "prometheus")

	t0 := time.Now().UTC().Truncate(time.Hour).Add(-(promHours + 2) * time.Hour)
	dir := t.TempDir()
	om := filepath.Join(dir, "data.om")
	writeClassicOpenMetrics(t, om, t0)
	storage := filepath.Join(dir, "tsdb")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, storage).CombinedOutput()
	require.NoError(t, err, string(out))
	srv := startPrometheus(t, bin, storage, "global:\n  scrape_interval: 15s\n")

	port := freePort(t)
	out, err = exec.Command(helm, "template", "tt", filepath.Join("..", "deploy", "helm", "tunetimeout"),
		"--show-only", "templates/deployment.yaml",
		"--set", "prometheus.url="+srv.url, "--set", "prometheus.metric="+promMetric,
		"--set", fmt.Sprintf("service.port=%d", port)).CombinedOutput()
	require.NoError(t, err, string(out))
	type probe struct {
		HTTPGet struct {
			Path string `json:"path"`
		} `json:"httpGet"`
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args           []string `json:"args"`
						LivenessProbe  probe    `json:"livenessProbe"`
						ReadinessProbe probe    `json:"readinessProbe"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(out, &d))
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	// The chart's defaults: every 5 minutes over 7 days, on all interfaces.
	assert.Equal(t, []string{"watch", "--url=" + srv.url, "--metric=" + promMetric,
		fmt.Sprintf("--listen=:%d", port), "--every=5m", "--window=7d"}, c.Args)

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	// Ready once its first run succeeded (startServer polls, 30 s bound).
	log := startServer(t, "tunetimeout watch (the chart's arguments)", tool(t), c.Args, base+c.ReadinessProbe.HTTPGet.Path)
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s\n%s", path, b, log)
		return b
	}
	assert.Equal(t, "/-/healthy", c.LivenessProbe.HTTPGet.Path)
	assert.Contains(t, string(get(c.LivenessProbe.HTTPGet.Path)), "healthy")

	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(get("/metrics")))
	require.NoError(t, err)
	got := map[string]float64{}
	for _, m := range fams["tunetimeout_recommended_timeout_seconds"].GetMetric() {
		var group []string
		for _, l := range m.GetLabel() {
			group = append(group, l.GetName()+"="+l.GetValue())
		}
		got[strings.Join(group, ",")] = m.GetGauge().GetValue()
	}
	// No --by: one group, all the calls, whose timeout is what the
	// prometheus command recommends on the same window.
	stdout, stderr, code := runTool(t, "prometheus", "--url", srv.url, "--metric", promMetric, "--window", "7d", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var want report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &want))
	require.Len(t, want.Groups, 1)
	assert.Equal(t, map[string]float64{"group=" + want.Groups[0].Name: want.Groups[0].Recommendation.TimeoutSeconds}, got)
	fam := fams["tunetimeout_last_run_success"]
	require.NotNil(t, fam)
	assert.Equal(t, 1.0, fam.GetMetric()[0].GetGauge().GetValue())
}
