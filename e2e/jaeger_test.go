package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// A real Jaeger (Jaeger 2, github.com/jaegertracing/jaeger/cmd/jaeger
// with its memory storage) takes the SDK's spans over OTLP/HTTP, and
// tunetimeout jaeger reads them back through its query API, paging by
// time: the per-edge figures are those of the spans the SDK made. There
// is no Debian package of Jaeger; the test builds it from e2e/jaeger (a
// module of its own; moduleBinary) under TUNETIMEOUT_E2E=1, in about six
// minutes the first time on this machine, or takes TUNETIMEOUT_JAEGER.

// startJaeger runs Jaeger with memory storage, an OTLP/HTTP receiver and
// its query service on free loopback ports; it returns their base URLs.
func startJaeger(t *testing.T, bin string) (otlp, query string) {
	t.Helper()
	ports := [3]int{freePort(t), freePort(t), freePort(t)}
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 200000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, ports[0], ports[1], ports[2])
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	var out lockedBuffer
	cmd := exec.Command(bin, "--config", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a bound: it stops in milliseconds
			_ = cmd.Process.Kill()
		}
	})
	waitForPort(t, "127.0.0.1:"+strconv.Itoa(ports[0]), &out)
	waitForPort(t, "127.0.0.1:"+strconv.Itoa(ports[2]), &out)
	return "http://127.0.0.1:" + strconv.Itoa(ports[2]), "http://127.0.0.1:" + strconv.Itoa(ports[0])
}

// jaegerTraces asks Jaeger how many traces of service it holds in
// [start, end), at most limit.
func jaegerTraces(t *testing.T, query, service string, start, end time.Time, limit int) int {
	t.Helper()
	u := fmt.Sprintf("%s/api/traces?service=%s&start=%d&end=%d&limit=%d", query, service, start.UnixMicro(), end.UnixMicro(), limit)
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return len(body.Data)
}

func TestJaegerLive(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 spans through Jaeger: not in -short")
	}
	bin := jaegerBuild.binary(t)
	otlp, query := startJaeger(t, bin)
	want := otlpTraceSpans(t, otlp+"/v1/traces")

	// Each span is a trace of its own; frontend's are its edges to cart and
	// catalog. Jaeger stores asynchronously: wait until it holds them all.
	var frontend int64
	var first, last time.Time
	for name, w := range want {
		if name == "frontend cart" || name == "frontend catalog" {
			frontend += w.spans
			if first.IsZero() || w.first.Before(first) {
				first = w.first
			}
			if w.end.After(last) {
				last = w.end
			}
		}
	}
	from, to := first.Add(-time.Minute), last.Add(time.Hour)
	deadline := time.Now().Add(60 * time.Second) // a bound, not an expectation
	for {
		// A count over the whole window is capped by limit: ask for one more.
		if n := jaegerTraces(t, query, "frontend", from, to, int(frontend)+1); n >= int(frontend) {
			break
		}
		require.True(t, time.Now().Before(deadline), "Jaeger did not store the %d traces of frontend", frontend)
		time.Sleep(200 * time.Millisecond)
	}

	rep, err := analysis.RunJaeger(context.Background(), analysis.Options{Recommend: recommend.DefaultOptions()}, analysis.JaegerOptions{
		Source: jaegersource.Options{Connection: httpclient.Options{URL: query}, Service: "frontend", Start: from, End: to, Limit: 2000}})
	require.NoError(t, err)
	assert.EqualValues(t, frontend, rep.Input.Records, "every client span of frontend, read once across the pages")
	assert.Zero(t, rep.Input.BadRecords, "%v", rep.Input.BadExamples)
	require.Len(t, rep.Groups, 2)
	for _, g := range rep.Groups {
		w := want[g.Name]
		require.NotNil(t, w, "group %q", g.Name)
		// Jaeger keeps microseconds: the spans' nanoseconds are cut, which
		// the histogram (1 us and up, 3 digits) does not see.
		require.EqualValues(t, len(w.counted), g.Samples, "group %s: samples", g.Name)
		assert.Equal(t, w.censored, g.Censored, "group %s: the 504s are censored", g.Name)
		assert.Equal(t, map[string]int64{ingest.Excluded5xx: w.excluded}, g.Excluded, "group %s: the 500s are excluded", g.Name)
		for _, p := range g.Percentiles {
			exact, tool := orderStat(w.counted, p.Quantile), reportDuration(p.Seconds)
			assertHDR(t, exact.Truncate(time.Microsecond), tool, "group %s p%v", g.Name, p.Quantile*100)
		}
	}
	assert.Contains(t, rep.Input.Files, "service frontend at "+query)
}
