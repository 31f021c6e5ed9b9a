package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The OpenTelemetry Collector itself: its OTLP receiver takes what the Go
// SDK exports, and its file exporter (opentelemetry-collector-contrib)
// writes the files tunetimeout reads, in every framing it has. The
// collector is built from its modules by the test (e2e/otelcol, a module
// of its own, as the Collector's builder would make it): there is no
// Debian package of it.

// moduleBinary is a server the tests build from a module of their own
// (e2e/otelcol, e2e/jaeger): built once per test binary, or skipped. The
// builds download their modules and take minutes, so plain go test ./...
// makes them only under TUNETIMEOUT_E2E=1 (where a failed build fails),
// or takes the binary that the environment variable env names.
type moduleBinary struct {
	name, dir, pkg, env, takes string
	once                       sync.Once
	path                       string
	err                        error
}

var (
	otelcolBuild = &moduleBinary{name: "otelcol", dir: "otelcol", pkg: ".", env: "TUNETIMEOUT_OTELCOL", takes: "about a minute"}
	jaegerBuild  = &moduleBinary{name: "jaeger", dir: "jaeger", pkg: "github.com/jaegertracing/jaeger/cmd/jaeger", env: "TUNETIMEOUT_JAEGER", takes: "minutes"}
)

func (b *moduleBinary) binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(b.env); p != "" {
		return p
	}
	if os.Getenv("TUNETIMEOUT_E2E") != "1" {
		t.Skipf("%s is built from e2e/%s only under TUNETIMEOUT_E2E=1 (%s; or set %s to a binary built there with go build -o %s %s)",
			b.name, b.dir, b.takes, b.env, b.name, b.pkg)
	}
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "tunetimeout-e2e-"+b.name+"-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, b.name)
		cmd := exec.Command("go", "build", "-o", b.path, b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build in e2e/%s: %v\n%s", b.dir, err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// removeBuilt removes the binaries the tests built (TestMain, at the end):
// the Collector and Jaeger are over 150 MB together.
func removeBuilt() {
	for _, b := range []*moduleBinary{otelcolBuild, jaegerBuild} {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
}

// collectorFiles are the files the test's collector writes, one per
// file exporter (each framing the exporter has), for traces and metrics.
var collectorFiles = []struct {
	name, format, compression string
}{
	{"json", "json", ""},      // one OTLP/JSON request per line
	{"proto", "proto", ""},    // each request after its length
	{"zstd", "proto", "zstd"}, // each framed request a zstd frame
	{"jzstd", "json", "zstd"}, // JSON requests, framed, each compressed
}

// startCollector runs the collector with an OTLP/HTTP receiver on a free
// loopback port and the file exporters, and returns its base URL and a
// stop that ends it (SIGTERM: the exporters flush and close their files).
func startCollector(t *testing.T, bin, dir string) (string, func()) {
	t.Helper()
	port := freePort(t)
	cfg := fmt.Sprintf("receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:%d\nexporters:\n", port)
	var traces, metrics string
	for _, f := range collectorFiles {
		for _, signal := range []string{"traces", "metrics"} {
			name := "file/" + signal + "-" + f.name
			cfg += fmt.Sprintf("  %s:\n    path: %s\n    format: %s\n", name, filepath.Join(dir, signal+"-"+f.name), f.format)
			if f.compression != "" {
				cfg += "    compression: " + f.compression + "\n"
			}
			if signal == "traces" {
				traces += name + ", "
			} else {
				metrics += name + ", "
			}
		}
	}
	cfg += "service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n" +
		"    traces:\n      receivers: [otlp]\n      exporters: [" + traces[:len(traces)-2] + "]\n" +
		"    metrics:\n      receivers: [otlp]\n      exporters: [" + metrics[:len(metrics)-2] + "]\n"
	path := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	var out lockedBuffer
	cmd := exec.Command(bin, "--config", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			require.NoError(t, err, "the collector said:\n%s", out.String())
		case <-time.After(60 * time.Second): // a bound: it stops in milliseconds
			_ = cmd.Process.Kill()
			t.Fatalf("the collector did not stop; it said:\n%s", out.String())
		}
	}
	t.Cleanup(stop)
	waitForPort(t, "127.0.0.1:"+strconv.Itoa(port), &out)
	return "http://127.0.0.1:" + strconv.Itoa(port), stop
}

// TestCollectorFileExporter: 100,000 SDK spans and the SDK's exponential
// histograms, through the real Collector into its file exporter in each
// of its framings, read back by analyze: the same exact percentiles and
// bounds as the spans and samples the SDK made.
func TestCollectorFileExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 spans through the Collector: not in -short")
	}
	bin := otelcolBuild.binary(t)
	dir := t.TempDir()
	base, stop := startCollector(t, bin, dir)
	want := otlpTraceSpans(t, base+"/v1/traces")
	edges := otlpMetricsExport(t, base+"/v1/metrics", true, metricdata.CumulativeTemporality, 3)
	stop()
	for _, f := range collectorFiles {
		t.Run("traces "+f.name, func(t *testing.T) {
			path := filepath.Join(dir, "traces-"+f.name)
			rep := analyseOTLP(t, path)
			assert.Equal(t, []string{"otlp"}, rep.Input.Formats, "detected")
			assertOTLPExact(t, rep, want)
		})
		t.Run("metrics "+f.name, func(t *testing.T) {
			path := filepath.Join(dir, "metrics-"+f.name)
			rep := analyseMetrics(t, path)
			assertExponentialBounds(t, rep, edges)
		})
	}
}
