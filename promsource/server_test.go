package promsource

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The buildinfo answers, as each server's source writes them (see
// DetectServer); the VictoriaMetrics 1.79.5 one is what Debian's
// victoria-metrics answers, header included.
func TestClassify(t *testing.T) {
	vm := http.Header{"X-Server-Hostname": {"vm"}}
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   ServerInfo
	}{
		{"Prometheus", 200, nil,
			`{"status":"success","data":{"version":"2.42.0+ds","revision":"2.42.0+ds-5+deb12u1","branch":"debian/sid","buildUser":"team+pkg-go@tracker.debian.org","buildDate":"20230509-19:16:29","goVersion":"go1.19.8"}}`,
			ServerInfo{ServerPrometheus, "2.42.0+ds"}},
		{"Prometheus 3", 200, nil, `{"status":"success","data":{"version":"3.1.0","revision":"7a0b","goVersion":"go1.23.4"}}`,
			ServerInfo{ServerPrometheus, "3.1.0"}},
		{"VictoriaMetrics 1.79.5", 200, vm, `{"status":"success","data":{}}`, ServerInfo{ServerVictoriaMetrics, ""}},
		{"VictoriaMetrics 1.96+, claiming Prometheus 2.24.0", 200, vm, `{"status":"success","data":{"version":"2.24.0"}}`,
			ServerInfo{ServerVictoriaMetrics, ""}},
		{"VictoriaMetrics without its header", 200, nil, `{"status":"success","data":{"version":"2.24.0"}}`, ServerInfo{ServerVictoriaMetrics, ""}},
		{"VictoriaMetrics 1.79.5 without its header", 200, nil, `{"status":"success","data":{}}`, ServerInfo{ServerVictoriaMetrics, ""}},
		{"vmauth in front of Prometheus", 200, vm, `{"status":"success","data":{"version":"2.53.1","revision":"14cfec3f","goVersion":"go1.22.5"}}`,
			ServerInfo{ServerPrometheus, "2.53.1"}},
		{"a VictoriaMetrics error", 400, vm, `unsupported path requested: "/api/v1/status/buildinfo"`, ServerInfo{ServerVictoriaMetrics, ""}},
		{"Thanos", 200, nil, `{"status":"success","data":{"version":"0.37.2","revision":"7bd8a1d","branch":"HEAD","buildUser":"root@a","buildDate":"20241218","goVersion":"go1.23.1"}}`,
			ServerInfo{ServerThanos, "0.37.2"}},
		{"Cortex", 200, nil, `{"status":"success","data":{"version":"1.18.1","revision":"a","branch":"b","buildUser":"","buildDate":"","goVersion":"go1.22.7"}}`,
			ServerInfo{ServerCortex, "1.18.1"}},
		{"Mimir", 200, nil, `{"status":"success","data":{"application":"Grafana Mimir","version":"2.14.1","revision":"5bedc7a1","branch":"release-2.14","goVersion":"go1.22.8","features":{"ruler_config_api":"true","alertmanager_config_api":"true","query_sharding":"false"}}}`,
			ServerInfo{ServerMimir, "2.14.1"}},
		{"Cortex without -api.build-info-enabled", 404, nil, "404 page not found", ServerInfo{ServerUnknown, ""}},
		{"a version that is no number", 200, nil, `{"status":"success","data":{"version":"main","goVersion":"go1.23"}}`, ServerInfo{ServerUnknown, "main"}},
		{"another stub", 200, nil, `{"status":"success","data":{"version":"2.45.0","revision":"x"}}`, ServerInfo{ServerUnknown, ""}},
		{"null data", 200, nil, `{"status":"success","data":null}`, ServerInfo{ServerUnknown, ""}},
		{"an error envelope", 200, nil, `{"status":"error","errorType":"bad_data","error":"x"}`, ServerInfo{ServerUnknown, ""}},
		{"HTML", 200, nil, `<html>Grafana</html>`, ServerInfo{ServerUnknown, ""}},
		{"no answer", 0, nil, "", ServerInfo{ServerUnknown, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			assert.Equal(t, tt.want, classify(tt.status, h, []byte(tt.body)))
		})
	}
}

func TestMajor(t *testing.T) {
	for v, want := range map[string]int{"2.53.1": 2, "v0.37.2": 0, "3.0.0-rc.0": 3, "1": 1, "": -1, "main": -1, "2x.1": -1, "r249-5bedc7a1": -1} {
		assert.Equal(t, want, major(v), v)
	}
}

// vmMetrics is the part of VictoriaMetrics's /metrics around
// vm_app_version, as lib/httpserver/metrics.go writes it (1.79.5).
const vmMetrics = `vm_http_requests_total{path="/api/v1/query"} 3
flag{name="search.latencyOffset", value="30s", is_set="false"} 1
vm_app_version{version="victoria-metrics-20220808-113426-tags-v1.79.5-0-g7c2c1a6", short_version="v1.79.5"} 1
vm_allowed_memory_bytes 4966617088
`

// fakeVM answers as VictoriaMetrics does: every answer with its header,
// buildinfo's stub, /metrics at metricsPath, queries with answer.
type fakeVM struct {
	mu          sync.Mutex
	paths       []string
	metricsPath string
	metrics     string
	answer      func(q string) string
}

func (f *fakeVM) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("X-Server-Hostname", "vm")
		switch {
		case strings.HasSuffix(r.URL.Path, "/api/v1/status/buildinfo"):
			fmt.Fprint(w, `{"status":"success","data":{}}`)
		case r.URL.Path == f.metricsPath:
			fmt.Fprint(w, f.metrics)
		case strings.Contains(r.URL.Path, "/api/v1/query") && f.answer != nil:
			_ = r.ParseForm()
			fmt.Fprint(w, f.answer(r.Form.Get("query")))
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "unsupported path requested: %q", r.URL.Path)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakeVM) requested() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.paths...)
}

func TestDetectServer(t *testing.T) {
	t.Run("single node: /metrics beside the API", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/metrics", metrics: vmMetrics}
		srv := f.server(t)
		info, err := DetectServer(context.Background(), Connection{URL: srv.URL})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerVictoriaMetrics, "v1.79.5"}, info)
		assert.Equal(t, []string{"/api/v1/status/buildinfo", "/metrics"}, f.requested())
	})
	t.Run("cluster: the API under /select/0/prometheus, /metrics at the root", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/metrics", metrics: vmMetrics}
		srv := f.server(t)
		info, err := DetectServer(context.Background(), Connection{URL: srv.URL + "/select/0/prometheus"})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerVictoriaMetrics, "v1.79.5"}, info)
		assert.Equal(t, []string{"/select/0/prometheus/api/v1/status/buildinfo", "/select/0/prometheus/metrics", "/metrics"}, f.requested())
	})
	t.Run("a build without a version (Debian's)", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/metrics", metrics: "vm_app_version{version=\"\", short_version=\"\"} 1\n"}
		info, err := DetectServer(context.Background(), Connection{URL: f.server(t).URL})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerVictoriaMetrics, ""}, info)
	})
	t.Run("no short version: the whole one", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/metrics", metrics: "vm_app_version{version=\"victoria-metrics-20220808-113426-heads-master-0-gdeadbee\", short_version=\"\"} 1\n"}
		info, err := DetectServer(context.Background(), Connection{URL: f.server(t).URL})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerVictoriaMetrics, "victoria-metrics-20220808-113426-heads-master-0-gdeadbee"}, info)
	})
	t.Run("/metrics refused (-metricsAuthKey)", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/elsewhere"}
		info, err := DetectServer(context.Background(), Connection{URL: f.server(t).URL})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerVictoriaMetrics, ""}, info)
	})
	t.Run("a version is data: one printable line, cut", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, `{"status":"success","data":{"version":"2.53.1\n\u001b[31m%s","goVersion":"go1.22"}}`, strings.Repeat("x", 200))
		}))
		t.Cleanup(srv.Close)
		info, err := DetectServer(context.Background(), Connection{URL: srv.URL})
		require.NoError(t, err)
		assert.Equal(t, ServerPrometheus, info.Name)
		assert.Equal(t, "2.53.1 [31m"+strings.Repeat("x", 64-3-len("2.53.1 [31m"))+"...", info.Version)
		assert.LessOrEqual(t, len([]rune(info.Version)), maxVersionLen)
	})
	t.Run("nothing there: unknown, quickly, no error", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		info, err := DetectServer(context.Background(), Connection{URL: srv.URL})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerUnknown, ""}, info)
	})
	t.Run("unreachable: unknown within the detection's bound", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		start := time.Now()
		info, err := DetectServer(context.Background(), Connection{URL: url, sleep: (&noSleep{}).sleep})
		require.NoError(t, err)
		assert.Equal(t, ServerInfo{ServerUnknown, ""}, info)
		assert.Less(t, time.Since(start), detectTimeout)
	})
	t.Run("a Connection that cannot be used is an error", func(t *testing.T) {
		_, err := DetectServer(context.Background(), Connection{URL: "ftp://x"})
		assert.ErrorContains(t, err, "is not an http:// or https:// address")
	})
}

// vmEstimateAnswer is vmrangeAnswer with VictoriaMetrics's own
// histogram_quantile beside it.
func vmEstimateAnswer(q string) string {
	switch {
	case strings.HasPrefix(q, "histogram_quantile(0.99, sum by (vmrange, route)"):
		return vectorOf(`{"metric":{"route":"/a"},"value":[1800000000,"227.16"]}`, `{"metric":{"route":"/b"},"value":[1800000000,"1.1346"]}`)
	}
	return vmrangeAnswer(q)
}

// From VictoriaMetrics, with a quantile, its own histogram_quantile is read
// too, per group, in seconds.
func TestFetchServerEstimate(t *testing.T) {
	f := &fakeVM{metricsPath: "/metrics", metrics: vmMetrics, answer: vmEstimateAnswer}
	srv := f.server(t)
	o := options(srv.URL, &noSleep{})
	o.Metric = "rpc_duration_milliseconds"
	o.By = []string{"route"}
	o.Quantile = 0.99
	res, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, ServerVictoriaMetrics, res.Server)
	assert.Equal(t, "v1.79.5", res.ServerVersion)
	assert.Equal(t, VMRange, res.Kind)
	assert.Equal(t, "histogram_quantile(0.99, sum by (vmrange, route) (increase(rpc_duration_milliseconds_bucket[1h])))", res.Queries[len(res.Queries)-1])
	require.Len(t, res.Groups, 2)
	assert.InDelta(t, 0.22716, res.Groups[0].ServerEstimate, 1e-15)
	assert.InDelta(t, 0.22716, res.Groups[0].Overall.Locate(0.99).Estimate, 1e-12, "the same as ours: 215.4 + 29.4 x 0.8 / 2")
	assert.InDelta(t, 0.0011346, res.Groups[1].ServerEstimate, 1e-15)
	assert.Empty(t, res.Notes)

	t.Run("a failed estimate is a note, not a failure", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/metrics", metrics: vmMetrics, answer: vmrangeAnswer}
		o := o
		o.URL = f.server(t).URL
		res, err := Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.True(t, math.IsNaN(res.Groups[0].ServerEstimate))
		require.Len(t, res.Notes, 1)
		assert.Contains(t, res.Notes[0], "VictoriaMetrics's own histogram_quantile could not be read: ")
		assert.Contains(t, res.Notes[0], "unexpected query")
	})
	t.Run("Prometheus is not asked", func(t *testing.T) {
		rc := &recorder{}
		srv := rc.server(t, func(w http.ResponseWriter, r *http.Request, q string) {
			if r.URL.Path == "/api/v1/status/buildinfo" {
				fmt.Fprint(w, `{"status":"success","data":{"version":"2.53.1","revision":"1","goVersion":"go1.22"}}`)
				return
			}
			fmt.Fprint(w, classicAnswer(q))
		})
		o := options(srv.URL, &noSleep{})
		o.Quantile = 0.99
		res, err := Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, ServerPrometheus, res.Server)
		assert.Equal(t, "2.53.1", res.ServerVersion)
		assert.True(t, math.IsNaN(res.Groups[0].ServerEstimate))
		for _, q := range res.Queries {
			assert.NotContains(t, q, "histogram_quantile")
		}
		assert.Equal(t, "POST GET POST POST POST POST POST POST", rc.methods(), "count, buildinfo, then the six queries")
	})
	t.Run("no quantile: no detection", func(t *testing.T) {
		f := &fakeVM{metricsPath: "/metrics", metrics: vmMetrics, answer: vmEstimateAnswer}
		o := o
		o.URL = f.server(t).URL
		o.Quantile = 0
		res, err := Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, "", res.Server)
		assert.True(t, math.IsNaN(res.Groups[0].ServerEstimate))
		for _, p := range f.requested() {
			assert.Equal(t, "/api/v1/query", p)
		}
		o.DetectServer = true
		res, err = Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, ServerVictoriaMetrics, res.Server)
		assert.True(t, math.IsNaN(res.Groups[0].ServerEstimate), "detection alone asks no estimate")
	})
}

// With --step, the estimates per step from the range query's twin.
func TestFetchServerEstimateSteps(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	point := func(v string) string { return fmt.Sprintf(`[%d,"%s"],[%d,"%s"]`, at.Unix()-1800, v, at.Unix(), v) }
	f := &fakeVM{metricsPath: "/metrics", metrics: vmMetrics, answer: func(q string) string {
		switch {
		case strings.HasPrefix(q, "histogram_quantile(0.99, sum by (vmrange) (increase(x_seconds_bucket[30m])))"):
			return `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[` + point("0.0113") + `]}]}}`
		case strings.HasPrefix(q, "histogram_quantile("):
			return vectorOf(`{"metric":{},"value":[1800000000,"0.0112"]}`)
		case strings.HasPrefix(q, "sum by (vmrange) (increase(x_seconds_bucket[30m]))"):
			return `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"vmrange":"1.000e-02...1.136e-02"},"values":[` + point("100") + `]}]}}`
		case strings.HasPrefix(q, "sum by (le)"):
			return vectorOf(`{"metric":{},"value":[1800000000,"200"]}`)
		case strings.HasPrefix(q, "sum by (vmrange)"):
			return vectorOf(`{"metric":{"vmrange":"1.000e-02...1.136e-02"},"value":[1800000000,"200"]}`)
		case strings.HasPrefix(q, "count("):
			return vectorOf(`{"metric":{},"value":[1800000000,"1"]}`)
		}
		return vectorOf(`{"metric":{},"value":[1800000000,"200"]}`)
	}}
	o := options(f.server(t).URL, &noSleep{})
	o.Metric = "x_seconds"
	o.Step = 30 * time.Minute
	o.Quantile = 0.99
	res, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	require.Len(t, res.Groups, 1)
	g := res.Groups[0]
	assert.InDelta(t, 0.0112, g.ServerEstimate, 1e-15)
	require.Len(t, g.Steps, 2)
	for _, st := range g.Steps {
		assert.InDelta(t, 0.0113, st.ServerEstimate, 1e-15, st.End)
		assert.Equal(t, 100.0, st.Hist.Count)
		assert.Equal(t, VMRange, st.Hist.Kind)
	}
}
