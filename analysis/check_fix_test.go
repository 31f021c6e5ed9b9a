package analysis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/report"
)

// suggestAndPatch runs check on a copy of config in a temporary folder,
// writes its fixes as a diff, applies the diff with patch(1), and returns
// the diff and the patched file's path.
func suggestAndPatch(t *testing.T, config string, o CheckOptions) (string, string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "check", config))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, config), data, 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir)) // the diff names the file as check was given it
	t.Cleanup(func() { os.Chdir(wd) })
	o.Configs = []string{config}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	var diff bytes.Buffer
	skipped, err := report.WriteFixes(&diff, c, os.ReadFile)
	require.NoError(t, err)
	assert.Zero(t, skipped)
	patch := e2etest.RequireBinary(t, "patch", "apt-get install -y patch")
	cmd := exec.Command(patch, "-p0", "--batch", "--forward")
	cmd.Stdin = bytes.NewReader(diff.Bytes())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "patch: %s\n%s", out, diff.String())
	return diff.String(), filepath.Join(dir, config)
}

// TestSuggestEnvoy: the route's 0.25s becomes the recommended 0.800s, on
// its own line, everything else kept; the patched config passes.
func TestSuggestEnvoy(t *testing.T) {
	diff, patched := suggestAndPatch(t, "envoy-250ms.yaml", checkOptions())
	assert.Contains(t, diff, "--- envoy-250ms.yaml\n+++ envoy-250ms.yaml\n@@ -18,7 +18,7 @@\n")
	assert.Contains(t, diff, "\n-                  timeout: 0.25s\n+                  timeout: 0.800s\n")
	assert.Equal(t, 1, strings.Count(diff, "\n-"), "one line changed")
	o := checkOptions()
	o.Configs = []string{patched}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckTimeoutCutsOff))
	require.Len(t, findingsOf(c, finding.CheckTimeoutFits), 1)
	assert.Equal(t, 0.8, findingsOf(c, finding.CheckTimeoutFits)[0].Measured["configured_seconds"])
}

// TestSuggestNginx: a location on nginx's 60 s default gets its own
// proxy_read_timeout, indented inside the block; nginx -t passes the
// patched config, and check reads the new value there.
func TestSuggestNginx(t *testing.T) {
	o := checkOptions()
	o.Rate, o.Pool = 400, 200
	diff, patched := suggestAndPatch(t, "nginx-default.conf", o)
	assert.Contains(t, diff, "         location / {\n+            proxy_read_timeout 800ms;\n")
	nginx := e2etest.RequireBinary(t, "nginx", "apt-get install -y nginx")
	dir := filepath.Dir(patched)
	out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"),
		"-g", "pid "+filepath.Join(dir, "nginx.pid")+";", "-c", patched).CombinedOutput()
	require.NoError(t, err, "nginx -t: %s", out)

	o.Configs = []string{patched}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckDefaultTimeout))
	fits := findingsOf(c, finding.CheckTimeoutFits)
	require.Len(t, fits, 1)
	assert.Equal(t, 0.8, fits[0].Measured["configured_seconds"])
	assert.Equal(t, 7, fits[0].Line, "the added line")
}

// TestFixesThatNoLongerFit: a fix whose value is not on its line any more
// (the file changed since check read it) is left out and counted.
func TestFixesThatNoLongerFit(t *testing.T) {
	c := &report.Check{Findings: []report.CheckFinding{
		{Fix: &report.Fix{File: "a.conf", Line: 2, Old: "5s", New: "800ms"}},
		{Fix: &report.Fix{File: "a.conf", Line: 9, Old: "5s", New: "800ms"}},
	}}
	var b bytes.Buffer
	skipped, err := report.WriteFixes(&b, c, func(string) ([]byte, error) { return []byte("a 1s;\nb 5s;\n"), nil })
	require.NoError(t, err)
	assert.Equal(t, 1, skipped, "line 9 is past the end")
	assert.Equal(t, "--- a.conf\n+++ a.conf\n@@ -1,2 +1,2 @@\n a 1s;\n-b 5s;\n+b 800ms;\n", b.String())
}

// TestSuggestHAProxy: a backend whose timeout server comes from defaults
// gets its own line in the backend, so the other proxies keep theirs;
// haproxy -c passes the patched config.
func TestSuggestHAProxy(t *testing.T) {
	o := checkOptions()
	o.Rate, o.Pool = 400, 200
	diff, patched := suggestAndPatch(t, "haproxy-defaults.cfg", o)
	assert.Contains(t, diff, " backend app\n+    timeout server 800ms\n     server s1 127.0.0.1:8080 maxconn 500\n")
	assert.NotContains(t, diff, "-    timeout server 60s", "defaults stay as they are")
	haproxy := e2etest.RequireBinary(t, "haproxy", "apt-get install -y haproxy")
	out, err := exec.Command(haproxy, "-c", "-f", patched).CombinedOutput()
	require.NoError(t, err, "haproxy -c: %s", out)
	assert.NotContains(t, string(out), "[WARNING]", "%s", out)

	o.Configs = []string{patched}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	fits := findingsOf(c, finding.CheckTimeoutFits)
	require.Len(t, fits, 1, "%+v", c.Findings)
	assert.Equal(t, 0.8, fits[0].Measured["configured_seconds"])
	assert.Equal(t, 15, fits[0].Line, "the backend's own line")
}

// TestSuggestLargestNeed (issue: "--suggest writes a patch that check then
// fails"): nginx's location / serves every route; /api/search, twice as
// slow here, needs about 1.6s where the others need 800ms. The one
// finding of proxy_read_timeout names all three groups, its fix writes
// the largest need, and check of the patched config cuts off no group.
func TestSuggestLargestNeed(t *testing.T) {
	in, err := os.ReadFile(mixtureData)
	require.NoError(t, err)
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		f := strings.Split(line, ",")
		if i > 0 && f[1] == "/api/search" {
			var ms float64
			_, err := fmt.Sscan(f[3], &ms)
			require.NoError(t, err)
			f[3] = fmt.Sprintf("%.3f", 2*ms)
		}
		b.WriteString(strings.Join(f, ",") + "\n")
	}
	data := filepath.Join(t.TempDir(), "slow-search.csv")
	require.NoError(t, os.WriteFile(data, []byte(b.String()), 0o644))
	o := checkOptions()
	o.Inputs = []string{data}
	o.Ingest.By = []string{"route"}
	diff, patched := suggestAndPatch(t, "nginx-default.conf", o)
	assert.Contains(t, diff, "+            proxy_read_timeout 1600ms;\n", "the slowest group's need, not the first group's")

	o.Configs = []string{patched}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckTimeoutCutsOff), "%+v", c.Findings)
	fits := findingsOf(c, finding.CheckTimeoutFits)
	require.Len(t, fits, 1, "one finding for the one value")
	assert.Len(t, fits[0].Groups, 3, "naming every group it serves")
}
