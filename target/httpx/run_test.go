package httpx_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/httpx"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// httpxBudgetRun runs in the directory of an emitted httpx snippet: 100
// calls of a group through send() against a local server that always
// answers 503, with the group's budget and without; it prints the hits.
const httpxBudgetRun = `import http.server
import json
import sys
import threading

import httpx
import snippet

hits = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global hits
        hits += 1
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d/" % server.server_address[1]
group = sys.argv[1]
policy = snippet.GROUPS[group]
policy["backoff_base"] = policy["backoff_cap"] = 0.0
policy["timeout"] = httpx.Timeout(2.0)
policy["deadline"] = None
out = {}
for name, budget in (("budget", snippet.Budget(policy["retry_budget"].ratio)), ("none", None)):
    policy["retry_budget"] = budget
    hits = 0
    with httpx.Client(timeout=policy["timeout"]) as client:
        for _ in range(100):
            snippet.send(client, client.build_request("GET", url), group)
    out[name] = hits
server.shutdown()
print(json.dumps(out))
`

// TestHTTPXSnippetBudget runs the emitted httpx snippet's send() with its
// retry budget (Debian's python3 and httpx): the same 119 requests for
// 100 calls as the Go snippet's, instead of 300.
func TestHTTPXSnippetBudget(t *testing.T) {
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-E", "-s", "-c", "import httpx").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import httpx (%v: %s): apt-get install -y python3-httpx", py, err, out)
	}
	body, err := httpx.Target.Render(targettest.LoadReport(t, "policy.json"), target.Options{Service: "shop-api", Namespace: "shop"})
	require.NoError(t, err)
	require.Contains(t, string(body), `"retry_budget": Budget(0.1),`)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.py"), body, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte(httpxBudgetRun), 0o644))
	cmd := exec.Command(py, "-E", "-s", "run.py", "GET /api/users/{id}")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var hits map[string]int
	require.NoError(t, json.Unmarshal(out, &hits), "%s", out)
	assert.Equal(t, map[string]int{"budget": 119, "none": 300}, hits)
}

// httpxTimeLeftRun prints what the emitted httpx snippet's time_left
// reads from header mappings.
const httpxTimeLeftRun = `import email.message
import json

import snippet

cases = [{}, {"X-Envoy-Expected-Rq-Timeout-Ms": "250"}, {"x-envoy-expected-rq-timeout-ms": "0"},
         {"x-envoy-expected-rq-timeout-ms": "1.5"}, {"x-envoy-expected-rq-timeout-ms": "-5"}]
m = email.message.Message()  # http.server's headers
m["X-Envoy-Expected-Rq-Timeout-Ms"] = "40"
print(json.dumps([snippet.time_left(c) for c in cases] + [snippet.time_left(m)]))
`

// TestHTTPXSnippetTimeLeft runs the emitted httpx snippet's time_left
// (Debian's python3 and httpx) on header mappings: names in any case,
// whole milliseconds, 0 and anything else as None.
func TestHTTPXSnippetTimeLeft(t *testing.T) {
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-E", "-s", "-c", "import httpx").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import httpx (%v: %s): apt-get install -y python3-httpx", py, err, out)
	}
	body, err := httpx.Target.Render(targettest.LoadReport(t, "policy.json"), target.Options{Service: "shop-api", Namespace: "shop"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.py"), body, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte(httpxTimeLeftRun), 0o644))
	cmd := exec.Command(py, "-E", "-s", "-B", "run.py")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []*float64
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	want := []*float64{nil, floatPtr(0.25), nil, nil, nil, floatPtr(0.04)}
	assert.Equal(t, want, got)
}

func floatPtr(f float64) *float64 { return &f }
