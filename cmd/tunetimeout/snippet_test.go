package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/target/targets"
)

// savedReport is the JSON report of the README's worked example with a 2ms
// RTT, the fixture of package target's golden files.
const savedReport = "../../target/testdata/mixture.json"

func TestSnippetFromReport(t *testing.T) {
	t.Run("one target prints bare", func(t *testing.T) {
		out, errOut, code := execute(t, "", "snippet", "--report", savedReport, "--emit", "envoy")
		require.Equal(t, 0, code, errOut)
		want, err := os.ReadFile("../../testdata/golden/snippets/mixture/envoy.yaml")
		require.NoError(t, err)
		assert.Equal(t, string(want), out)
	})
	t.Run("grpc explains on stderr", func(t *testing.T) {
		in, err := os.ReadFile(savedReport)
		require.NoError(t, err)
		out, errOut, code := execute(t, string(in), "snippet", "--report", "-", "--emit", "grpc", "--service", "pkg.Users")
		require.Equal(t, 0, code, errOut)
		assert.True(t, strings.HasPrefix(out, "{"), "bare JSON on stdout: %s", out)
		assert.Contains(t, out, `"service": "pkg.Users"`)
		assert.Contains(t, errOut, "#   timeout 0.800s: 800ms = p99.9 of 200,000 calls (792ms), rounded up")
	})
	t.Run("several under headers", func(t *testing.T) {
		out, errOut, code := execute(t, "", "snippet", "--report", savedReport, "--emit", "haproxy,grpc")
		require.Equal(t, 0, code, errOut)
		g := strings.Index(out, "# --- grpc.json (grpc) ---\n# gRPC service config")
		h := strings.Index(out, "# --- haproxy.cfg (haproxy) ---")
		assert.True(t, g >= 0 && h > g, "registry order, grpc with its notes first:\n%s", out)
	})
	t.Run("unknown target", func(t *testing.T) {
		_, errOut, code := execute(t, "", "snippet", "--report", savedReport, "--emit", "envoy,kong")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, `unknown snippet target "kong" (known: `+strings.Join(targets.Names(), ", ")+", or all)")
	})
	t.Run("--from, the old name of --report", func(t *testing.T) {
		out, errOut, code := execute(t, "", "snippet", "--from", savedReport, "--emit", "envoy")
		require.Equal(t, 0, code, errOut)
		want, err := os.ReadFile("../../testdata/golden/snippets/mixture/envoy.yaml")
		require.NoError(t, err)
		assert.Equal(t, string(want), out)
		assert.Equal(t, "Flag --from has been deprecated, use --report\n", errOut)
	})
	t.Run("no --report", func(t *testing.T) {
		_, _, code := execute(t, "", "snippet", "--emit", "envoy")
		assert.Equal(t, 2, code)
	})
	t.Run("not a report", func(t *testing.T) {
		_, errOut, code := execute(t, "latency_ms\n1\n", "snippet", "--report", "-", "--emit", "envoy")
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, "not a JSON report")
	})
}

func TestAnalyzeEmit(t *testing.T) {
	t.Run("after the report", func(t *testing.T) {
		out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "--emit", "linkerd", "--service", "users")
		require.Equal(t, 0, code, errOut)
		report := strings.Index(out, "Recommended timeout: 800ms")
		snip := strings.Index(out, "# --- linkerd.yaml (linkerd) ---\n")
		require.True(t, report >= 0 && snip > report, out)
		assert.Contains(t, out[snip:], "name: users-all")
		assert.Contains(t, out[snip:], `timeout.linkerd.io/request: "800ms"`)
	})
	t.Run("unknown target before reading", func(t *testing.T) {
		_, errOut, code := execute(t, "", "analyze", "does-not-exist.csv", "--emit", "nginx,apache")
		assert.Equal(t, 2, code, "a usage error, not the missing file")
		assert.Contains(t, errOut, `unknown snippet target "apache"`)
	})
	t.Run("emit-dir writes every target", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "config")
		out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "-o", "json", "--emit-dir", dir)
		require.Equal(t, 0, code, errOut)
		assert.True(t, strings.HasPrefix(out, "{"), "the report alone on stdout")
		for _, tg := range targets.All {
			b, err := os.ReadFile(filepath.Join(dir, tg.File))
			require.NoError(t, err, tg.File)
			assert.Contains(t, string(b), "800", tg.File)
		}
		assert.Contains(t, errOut, "Wrote envoy.yaml, grpc.json")
	})
}

// TestEmitJSONOnStdoutRefused: snippets printed after a JSON report on
// standard output would make it unreadable by any JSON parser; the command
// line is refused before the input is read, and the two ways out work.
func TestEmitJSONOnStdoutRefused(t *testing.T) {
	_, errOut, code := execute(t, "", "analyze", "does-not-exist.csv", "-o", "json", "--emit", "envoy")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--emit with -o json would print the snippets after the JSON document")
	assert.NotContains(t, errOut, "does-not-exist", "refused before the input is read")

	dir := t.TempDir()
	out, errOut, code := execute(t, "", "analyze", mixture, "-o", "json", "--emit", "envoy", "--emit-dir", dir)
	require.Equal(t, 0, code, errOut)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &r), "standard output is the JSON document alone")
	assert.FileExists(t, filepath.Join(dir, "envoy.yaml"))

	out, errOut, code = execute(t, "", "analyze", mixture, "-o", "json", "--emit", "envoy", "--output", filepath.Join(dir, "r.json"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "envoy.yaml", "the snippets on standard output, the report in its file")
}
