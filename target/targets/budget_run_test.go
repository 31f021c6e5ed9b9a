package targets

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gonethttp"
	"github.com/tunetimeout/tunetimeout/target/httpx"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// goBudgetTest runs in the package of an emitted Go snippet: 100 calls of
// the first group through Do against a server that always answers 503.
// With the group's budget (Ratio 0.1, 3 attempts) the retries are the 10
// tokens the bucket starts with and the 0.1 each later call earns (the
// first call's is lost at the cap): 19, not the 200 of 3 attempts each;
// without it, all 200.
const goBudgetTest = `package PKG

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestBudget(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, budget := range []bool{true, false} {
		hits.Store(0)
		p := POLICY
		p.Base, p.Cap = 1, 1 // no waits: the test counts, it does not time
		if budget {
			p.Budget = &Budget{Ratio: p.Budget.Ratio}
		} else {
			p.Budget = nil
		}
		for range 100 {
			req, _ := http.NewRequest("GET", srv.URL, nil)
			resp, err := Do(context.Background(), srv.Client(), req, p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		t.Logf("budget %v: %d hits", budget, hits.Load())
		if budget && hits.Load() != 100+19 {
			t.Errorf("with the budget: %d hits, want 119 (100 calls, 10 tokens to start, 99 x 0.1 earned: the first call's is lost at the cap of 10)", hits.Load())
		}
		if !budget && hits.Load() != 300 {
			t.Errorf("without: %d hits, want 300", hits.Load())
		}
	}
}
`

// TestGoSnippetBudget runs the emitted Go snippet's Do with its retry
// budget against a server that only fails (go test in a module of its
// own, the standard library only).
func TestGoSnippetBudget(t *testing.T) {
	goTool := targettest.RequireTool(t, "go", "the Go toolchain")
	r := targettest.LoadReport(t, "policy.json")
	body, err := gonethttp.Target.Render(r, target.Options{Service: "shop-api", Namespace: "shop"})
	require.NoError(t, err)
	src := string(body)
	require.Contains(t, src, "Budget:      &Budget{Ratio: 0.1},")
	pkg := strings.TrimPrefix(strings.SplitN(src[strings.Index(src, "\npackage ")+1:], "\n", 2)[0], "package ")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module budgetcheck\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.go"), body, 0o644))
	test := strings.NewReplacer("PKG", pkg, "POLICY", "GETAPIUsersIDPolicy").Replace(goBudgetTest)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client_test.go"), []byte(test), 0o644))
	err = targettest.RunTool(dir, goTool, "test", "-count=1", "-v", ".")
	assert.NoError(t, err)
}

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
