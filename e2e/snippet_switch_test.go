package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/target"
)

// The switch that breaks a retry loop (issue 34, docs/policy.md): each
// snippet says how to turn its retries off during an incident without a
// deploy, and these tests flip it as the snippet's header says, on the real
// runtime, against the test upstream's /fail (503 at once, which the call
// policy retries for an idempotent GET).

// goSwitchMain makes one call of the Go snippet's Do with DefaultPolicy
// for every line it reads, in one process, and prints the status.
const goSwitchMain = `package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"snippetrun/backendclient"
)

func main() {
	client := backendclient.NewClient()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		req, err := http.NewRequest(http.MethodGet, in.Text(), nil)
		if err != nil {
			panic(err)
		}
		resp, err := backendclient.Do(context.Background(), client, req, backendclient.DefaultPolicy)
		if err != nil {
			fmt.Printf("{\"error\": %q}\n", err.Error())
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("{\"status\": %d}\n", resp.StatusCode)
	}
}
`

// httpxSwitchRunner does the same with the httpx snippet's send().
const httpxSwitchRunner = `import json
import sys

import snippet

client = snippet.client("all")
for line in sys.stdin:
    request = client.build_request("GET", line.strip())
    try:
        print(json.dumps({"status": snippet.send(client, request, "all").status_code}), flush=True)
    except Exception as e:
        print(json.dumps({"error": type(e).__name__}), flush=True)
`

// switchRunner is a running client process that makes a call for each URL
// written to it.
type switchRunner struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startSwitchRunner(t *testing.T, dir string, env []string, name string, args ...string) *switchRunner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound: each call ends within its deadline
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	return &switchRunner{in: in, out: bufio.NewScanner(out)}
}

// call makes one call to url and returns the status it returned.
func (r *switchRunner) call(t *testing.T, url string) int {
	t.Helper()
	_, err := io.WriteString(r.in, url+"\n")
	require.NoError(t, err)
	require.True(t, r.out.Scan(), "the runner printed nothing: %v", r.out.Err())
	var got struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.out.Bytes(), &got), "%s", r.out.Bytes())
	require.Empty(t, got.Error)
	return got.Status
}

// checkRetriesOffFile flips the file switch of a running client between
// calls, as the snippet's header says: without the file a failing GET
// reaches the upstream snippetAttempts times, with it once, and without it
// again snippetAttempts times: read per call, no restart.
func checkRetriesOffFile(t *testing.T, u *behaviourUpstream, file string, r *switchRunner) {
	t.Helper()
	url := "http://" + u.addr + "/fail"
	for _, step := range []struct {
		name string
		off  bool
		want int
	}{
		{"switch off", false, snippetAttempts},
		{"switch on (file created)", true, 1},
		{"switch off again (file removed)", false, snippetAttempts},
	} {
		if step.off {
			require.NoError(t, os.WriteFile(file, nil, 0o644))
		} else {
			require.NoError(t, os.RemoveAll(file))
		}
		u.reset()
		status := r.call(t, url)
		hits := u.count("GET", "/fail")
		t.Logf("%s: %d, %d attempts at the upstream", step.name, status, hits)
		if abandoned := u.abandonedConnects(t); abandoned > 0 {
			t.Logf("%s: %d connects abandoned (the machine is busy): at most %d attempts", step.name, abandoned, step.want)
			assert.LessOrEqual(t, hits, step.want, step.name)
			continue
		}
		assert.Equal(t, 503, status, step.name)
		assert.Equal(t, step.want, hits, "%s: attempts at the upstream", step.name)
	}
}

// TestSnippetGoRetriesOff runs the emitted Go snippet's Do in one process
// while the file its header names is created and removed.
func TestSnippetGoRetriesOff(t *testing.T) {
	goBin := e2etest.RequireBinary(t, "go", "install Go 1.26 (https://go.dev/dl/)")
	u := startBehaviourUpstream(t)
	r := policyReport(t, time.Second, snippetAttempts, true, false)
	src := string(renderSnippet(t, "go", r, target.Options{}))
	require.Contains(t, src, "create the file named by the environment variable TUNETIMEOUT_RETRIES_OFF_FILE", "the header says how")
	bin := buildGoSnippetMain(t, goBin, r, goSwitchMain)
	file := filepath.Join(t.TempDir(), "retries-off")
	run := startSwitchRunner(t, filepath.Dir(bin), clientEnv("TUNETIMEOUT_RETRIES_OFF_FILE="+file), bin)
	checkRetriesOffFile(t, u, file, run)
}

// TestSnippetHTTPXRetriesOff does the same with the httpx snippet's send()
// and Debian's httpx.
func TestSnippetHTTPXRetriesOff(t *testing.T) {
	py := requireHTTPX(t)
	u := startBehaviourUpstream(t)
	r := policyReport(t, time.Second, snippetAttempts, true, false)
	src := renderSnippet(t, "httpx", r, target.Options{})
	require.Contains(t, string(src), "create the file named by the environment variable TUNETIMEOUT_RETRIES_OFF_FILE", "the header says how")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.py"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte(httpxSwitchRunner), 0o644))
	file := filepath.Join(t.TempDir(), "retries-off")
	run := startSwitchRunner(t, dir, clientEnv("TUNETIMEOUT_RETRIES_OFF_FILE="+file), py, "-E", "-s", "-B", "run.py")
	checkRetriesOffFile(t, u, file, run)
}

// retriesOffSed returns the sed expression a proxy snippet's header gives
// to turn its retries off.
func retriesOffSed(t *testing.T, body []byte) string {
	t.Helper()
	m := regexp.MustCompile(`Retries off during an incident, without a deploy: .*?sed -i -E '([^']+)'`).FindSubmatch(body)
	require.NotNil(t, m, "the header gives no sed expression to turn retries off\n%s", body)
	return string(m[1])
}

// runSed runs sed -i -E expr on file, as the snippet's header says.
func runSed(t *testing.T, expr, file string) {
	t.Helper()
	sed := requireBinary(t, "sed", "sed")
	out, err := exec.Command(sed, "-i", "-E", expr, file).CombinedOutput()
	require.NoError(t, err, "sed -i -E %q: %s", expr, out)
}

// TestSnippetNginxRetriesOff runs the emitted nginx snippet, then turns
// its retries off as its header says (the sed expression on the file,
// nginx -t, nginx -s reload) in the running nginx: an idempotent GET of a
// failing upstream reaches it 3 times before, once after.
func TestSnippetNginxRetriesOff(t *testing.T) {
	bin := requireBinary(t, "nginx", "nginx")
	up := startBehaviourUpstream(t)
	r := policyReport(t, 3*time.Second, snippetAttempts, true, false)
	body := renderSnippet(t, "nginx", r, target.Options{})
	require.Contains(t, string(body), "nginx -s reload")
	expr := retriesOffSed(t, body)
	n := startNginxSnippet(t, bin, body, up.addr)
	get := func(want int) {
		t.Helper()
		up.reset()
		status, wait := proxyClient(t, n.addr, "GET", "/fail")
		hits := up.count("GET", "/fail")
		t.Logf("GET /fail: %d, %d tries reached the upstream, waited %v", status, hits, wait.Round(time.Millisecond))
		if abandoned := up.abandonedConnects(t); abandoned > 0 {
			t.Logf("%d connects abandoned (the machine is busy): at most %d tries", abandoned, want)
			assert.LessOrEqual(t, hits, want)
			return
		}
		assert.Equal(t, 503, status)
		assert.Equal(t, want, hits, "requests that reached the upstream")
	}
	get(snippetAttempts)

	conf := filepath.Join(n.dir, "snippet.conf")
	runSed(t, expr, conf)
	edited, err := os.ReadFile(conf)
	require.NoError(t, err)
	assert.NotEmpty(t, snippetDirective(edited, "proxy_next_upstream_timeout"), "the other directives stay")
	require.Equal(t, "off", snippetDirective(edited, "proxy_next_upstream"), "%s", edited)
	require.Equal(t, strings.Count(string(body), "\n"), strings.Count(string(edited), "\n"), "sed changes lines, adds none")
	nginx := func(args ...string) {
		t.Helper()
		full := append([]string{"-p", n.dir, "-c", filepath.Join(n.dir, "nginx.conf"), "-e", filepath.Join(n.dir, "error.log")}, args...)
		out, err := exec.Command(bin, full...).CombinedOutput()
		require.NoError(t, err, "nginx %v: %s", args, out)
	}
	shutdowns := func() int {
		b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
		return strings.Count(string(b), "gracefully shutting down")
	}
	before := shutdowns()
	nginx("-t")
	nginx("-s", "reload")
	// The old worker closes its listening sockets when it starts shutting
	// down: from then on the new one takes every connection.
	deadline := time.Now().Add(10 * time.Second)
	for shutdowns() == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.Greater(t, shutdowns(), before, "the old worker did not shut down after the reload")
	get(1)
}

// TestSnippetHAProxyRetriesOff runs the emitted HAProxy backend in
// master-worker mode, then turns its retries off as its header says (the
// sed expression on the file, haproxy -c, SIGUSR2 to the master): HAProxy
// retries only a refused connection (conn-failure), 3 tries before, 1
// after, as its log's retry count (%rc) says.
func TestSnippetHAProxyRetriesOff(t *testing.T) {
	bin := requireBinary(t, "haproxy", "haproxy")
	r := policyReport(t, time.Second, snippetAttempts, true, false)
	body := renderSnippet(t, "haproxy", r, target.Options{})
	require.Contains(t, string(body), "send SIGUSR2 to the master process")
	expr := retriesOffSed(t, body)
	h := startHAProxySnippetArgs(t, bin, body, refusedAddr(t), "-W")
	get := func(want int) {
		t.Helper()
		status, _ := proxyClient(t, h.addr, "GET", "/fail")
		tries := h.tries(t, "GET", "/fail")
		t.Logf("GET /fail (refused): %d, %d tries", status, tries)
		assert.Equal(t, 503, status)
		assert.Equal(t, want, tries, "tries HAProxy logged")
	}
	get(snippetAttempts)

	runSed(t, expr, h.path)
	edited, err := os.ReadFile(h.path)
	require.NoError(t, err)
	require.Equal(t, "0", snippetDirective(edited, "retries"), "%s", edited)
	out, err := exec.Command(bin, "-c", "-f", h.path).CombinedOutput()
	require.NoError(t, err, "haproxy -c: %s", out)
	loaded := func() int { return strings.Count(h.stderr.String(), "Loading success") }
	before := loaded()
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGUSR2))
	deadline := time.Now().Add(10 * time.Second)
	for loaded() == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.Greater(t, loaded(), before, "no reload: %s", h.stderr.String())
	h.sink.mu.Lock()
	h.sink.lines = nil
	h.sink.mu.Unlock()
	get(1)
}
