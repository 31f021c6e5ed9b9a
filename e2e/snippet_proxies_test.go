package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/target"
)

// proxyCase is one request through a proxy running an emitted snippet: what
// reaches the upstream, and how long the client waits.
type proxyCase struct {
	method, path string
	refused      bool // the upstream address refuses connections
	// wantHits is how many requests reach the upstream (for refused: how
	// many tries the proxy logs); wantStatus what the client gets.
	wantHits   int
	wantStatus int
	// minWait and maxWait bound the client's wait.
	minWait, maxWait time.Duration
}

// proxyClient sends one request through the proxy and returns the status
// and the wait.
func proxyClient(t *testing.T, addr, method, path string) (int, time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"order": 1}`)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, body)
	require.NoError(t, err)
	start := time.Now()
	resp, err := c.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// proxy is a running proxy with a snippet.
type proxy interface {
	address() string
	// tries returns how many tries the proxy logged for the last request of
	// method to path.
	tries(t *testing.T, method, path string) int
	close()
}

// runProxyCases sends each case through a proxy started by start: one in
// front of the test upstream, one in front of an address that refuses
// connections (there the proxy's log counts the tries).
//
// The report's connect timeout is 6ms (3 x its RTT of 2ms): on a loaded
// machine a proxy starved of CPU for longer gives up a connect to the
// upstream that the kernel had completed, and tries again, at the cost of
// one of its tries; the case no longer runs as planned. The upstream counts
// those connects (abandonedConnects): when there were any, what still
// holds is checked: each try the proxy logged either reached the upstream
// or was such a connect, no more tries than the snippet's, no wait past the
// case's bound.
func runProxyCases(t *testing.T, up *behaviourUpstream, cases []proxyCase, deadline time.Duration, start func(target string) proxy) {
	t.Helper()
	for _, refused := range []bool{false, true} {
		target := up.addr
		if refused {
			target = refusedAddr(t)
		}
		p := start(target)
		for _, c := range cases {
			if c.refused != refused {
				continue
			}
			up.reset()
			status, wait := proxyClient(t, p.address(), c.method, c.path)
			hits := up.count(c.method, c.path)
			if refused {
				hits = p.tries(t, c.method, c.path)
			}
			t.Logf("%s %s (refused %v): %d, %d tries reached the upstream, waited %v", c.method, c.path, refused, status, hits, wait.Round(time.Millisecond))
			if abandoned := up.abandonedConnects(t); !refused && abandoned > 0 {
				tries := p.tries(t, c.method, c.path)
				t.Logf("%s %s: %d of %d tries gave up a connect (the machine is busy): the tries are checked, not the plan", c.method, c.path, abandoned, tries)
				assert.Equal(t, tries-abandoned, hits, "%s %s: every try that connected reached the upstream", c.method, c.path)
				assert.LessOrEqual(t, tries, snippetAttempts, "%s %s: tries", c.method, c.path)
				assert.LessOrEqual(t, wait, c.maxWait, "%s %s: the wait against the deadline of %v", c.method, c.path, deadline)
				continue
			}
			assert.Equal(t, c.wantStatus, status, "%s %s", c.method, c.path)
			assert.Equal(t, c.wantHits, hits, "%s %s: requests that reached the upstream", c.method, c.path)
			assert.GreaterOrEqual(t, wait, c.minWait, "%s %s", c.method, c.path)
			assert.LessOrEqual(t, wait, c.maxWait, "%s %s: the wait against the deadline of %v", c.method, c.path, deadline)
		}
		p.close()
	}
}

// snippetDirective returns the arguments of the first line of body that
// starts with directive (after spaces), "" when none does.
func snippetDirective(body []byte, directive string) string {
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(directive) + `\s+([^;\n]*)`).FindSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(string(m[1]))
}

// TestSnippetNginx runs the emitted nginx snippet in a real nginx in front
// of the test upstream. A POST of a call that is not idempotent reaches a
// failing upstream once (nginx passes a sent POST to no other try; RFC 9110
// section 9.2.2), and is retried only when its connection is refused; a GET
// of an idempotent call reaches it as often as the snippet's tries say; no
// client waits longer than the deadline, which nginx cannot bound itself:
// proxy_next_upstream_timeout stops tries that would end after it.
func TestSnippetNginx(t *testing.T) {
	bin := requireBinary(t, "nginx", "nginx")
	up := startBehaviourUpstream(t)
	for _, run := range []struct {
		name       string
		deadline   time.Duration
		idempotent bool
		cases      []proxyCase
	}{
		{"not idempotent, 1s", time.Second, false, []proxyCase{
			{method: "POST", path: "/fail", wantHits: 1, wantStatus: 503, maxWait: within},
			{method: "GET", path: "/fail", wantHits: 1, wantStatus: 503, maxWait: within},
			{method: "POST", path: "/hang", wantHits: 1, wantStatus: 504, minWait: 800 * time.Millisecond, maxWait: time.Second + within},
			{method: "POST", path: "/fail", refused: true, wantHits: 3, wantStatus: 502, maxWait: within},
		}},
		{"idempotent, 3s", 3 * time.Second, true, []proxyCase{
			{method: "GET", path: "/fail", wantHits: 3, wantStatus: 503, maxWait: within},
			// A 429 asks for a wait nginx cannot make: not retried.
			{method: "GET", path: "/busy", wantHits: 1, wantStatus: 429, maxWait: within},
			// 806ms a try; the third begins at 1.6s, before the
			// proxy_next_upstream_timeout of 2.194s, and ends at 2.4s.
			{method: "GET", path: "/hang", wantHits: 3, wantStatus: 504, minWait: 2400 * time.Millisecond, maxWait: 3*time.Second + within},
			{method: "GET", path: "/fail", refused: true, wantHits: 3, wantStatus: 502, maxWait: within},
		}},
		{"idempotent, 1s", time.Second, true, []proxyCase{
			{method: "GET", path: "/fail", wantHits: 3, wantStatus: 503, maxWait: within},
			// After one try of 806ms no second fits the deadline.
			{method: "GET", path: "/hang", wantHits: 1, wantStatus: 504, minWait: 800 * time.Millisecond, maxWait: time.Second + within},
		}},
	} {
		t.Run(run.name, func(t *testing.T) {
			r := policyReport(t, run.deadline, snippetAttempts, run.idempotent, false)
			body := renderSnippet(t, "nginx", r, target.Options{})
			tries, err := strconv.Atoi(snippetDirective(body, "proxy_next_upstream_tries"))
			require.NoError(t, err, "%s", body)
			require.Equal(t, 3, tries, "the snippet's tries")
			assert.Equal(t, run.idempotent, strings.Contains(snippetDirective(body, "proxy_next_upstream"), "non_idempotent"))
			runProxyCases(t, up, run.cases, run.deadline, func(target string) proxy {
				return startNginxSnippet(t, bin, body, target)
			})
		})
	}
}

// nginxSnippet is a running nginx with a snippet.
type nginxSnippet struct {
	addr, dir string
	stop      func()
	logged    int // access log lines already read
}

// startNginxSnippet starts nginx with the snippet, its server lines pointed
// at upstream and its server block listening on a free loopback port; each
// request's tries are logged ($upstream_addr lists them).
func startNginxSnippet(t *testing.T, bin string, body []byte, upstream string) *nginxSnippet {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	s := regexp.MustCompile(`(?m)^(\s*server\s+)\S+:80\b`).ReplaceAllString(string(body), "${1}"+upstream)
	s = strings.Replace(s, "listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", port), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.conf"), []byte(s), 0o644))
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log notice;  # notice: a reload's "gracefully shutting down"
worker_processes 1;
events { worker_connections 64; }
http {
    log_format tries '$request_method $uri $status "$upstream_addr"';
    access_log %[1]s/access.log tries;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/snippet.conf;
}
`, dir)
	confPath := filepath.Join(dir, "nginx.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	n := &nginxSnippet{addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir}
	stopped := false
	n.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(n.stop)
	nginxWaitPort(t, n.addr, exited, dir)
	return n
}

func (n *nginxSnippet) address() string { return n.addr }
func (n *nginxSnippet) close()          { n.stop() }

// tries returns how many tries nginx logged for the last request of
// method to path: one upstream address per try.
func (n *nginxSnippet) tries(t *testing.T, method, path string) int {
	t.Helper()
	var line string
	deadline := time.Now().Add(2 * time.Second)
	for line == "" && time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(n.dir, "access.log"))
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.HasPrefix(l, method+" "+path+" ") {
				line = l
			}
		}
		if line == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	require.NotEmpty(t, line, "no log line for %s %s", method, path)
	addrs := line[strings.Index(line, `"`)+1 : strings.LastIndex(line, `"`)]
	return len(strings.Split(addrs, ", "))
}

// TestSnippetHAProxy runs the emitted HAProxy backend in a real HAProxy
// 2.6. HAProxy has no bound over the whole call, so the snippet keeps as
// many attempts as fit the deadline with every one running into its
// timers. HAProxy has no backoff, so a retry of a failure the upstream
// answered, or of a timeout, would go at once: whatever the call, only a
// refused connection is retried, and a failing upstream sees each request
// once, idempotent or not, within a deadline of 1s or 3s.
func TestSnippetHAProxy(t *testing.T) {
	bin := requireBinary(t, "haproxy", "haproxy")
	up := startBehaviourUpstream(t)
	for _, run := range []struct {
		name       string
		deadline   time.Duration
		idempotent bool
		retryOn    string
		cases      []proxyCase
	}{
		{"not idempotent, 1s", time.Second, false, "conn-failure", []proxyCase{
			{method: "POST", path: "/fail", wantHits: 1, wantStatus: 503, maxWait: within},
			{method: "POST", path: "/hang", wantHits: 1, wantStatus: 504, minWait: 800 * time.Millisecond, maxWait: time.Second + within},
			// A refused connect waits min(timeout connect, 1s) before the
			// next try: 3 tries in a few milliseconds.
			{method: "POST", path: "/fail", refused: true, wantHits: 3, wantStatus: 503, maxWait: within},
		}},
		{"idempotent, 3s", 3 * time.Second, true, "conn-failure", []proxyCase{
			{method: "GET", path: "/fail", wantHits: 1, wantStatus: 503, maxWait: within},
			{method: "GET", path: "/busy", wantHits: 1, wantStatus: 429, maxWait: within},
			{method: "GET", path: "/hang", wantHits: 1, wantStatus: 504, minWait: 800 * time.Millisecond, maxWait: time.Second + within},
			{method: "GET", path: "/fail", refused: true, wantHits: 3, wantStatus: 503, maxWait: within},
		}},
		{"idempotent, 1s", time.Second, true, "conn-failure", []proxyCase{
			{method: "GET", path: "/fail", wantHits: 1, wantStatus: 503, maxWait: within},
			{method: "GET", path: "/hang", wantHits: 1, wantStatus: 504, minWait: 800 * time.Millisecond, maxWait: time.Second + within},
			{method: "GET", path: "/fail", refused: true, wantHits: 3, wantStatus: 503, maxWait: within},
		}},
	} {
		t.Run(run.name, func(t *testing.T) {
			r := policyReport(t, run.deadline, snippetAttempts, run.idempotent, false)
			body := renderSnippet(t, "haproxy", r, target.Options{})
			assert.Equal(t, "2", snippetDirective(body, "retries"), "%s", body)
			assert.Equal(t, run.retryOn, snippetDirective(body, "retry-on"), "%s", body)
			runProxyCases(t, up, run.cases, run.deadline, func(target string) proxy {
				return startHAProxySnippet(t, bin, body, target)
			})
		})
	}
}

// haproxySnippet is a running HAProxy with a snippet's backend.
type haproxySnippet struct {
	addr   string
	path   string // its configuration file
	sink   *logSink
	cmd    *exec.Cmd
	stderr *lockedBuffer
	stop   func()
}

// startHAProxySnippet starts HAProxy with the snippet's backends, their
// server lines pointed at upstream, behind a frontend on a free loopback
// port that logs each request's retries (%rc) to a UDP sink.
func startHAProxySnippet(t *testing.T, bin string, body []byte, upstream string) *haproxySnippet {
	t.Helper()
	return startHAProxySnippetArgs(t, bin, body, upstream)
}

// startHAProxySnippetArgs is startHAProxySnippet with more arguments for
// haproxy (-W: master-worker mode, which reloads on SIGUSR2).
func startHAProxySnippetArgs(t *testing.T, bin string, body []byte, upstream string, args ...string) *haproxySnippet {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	sink := listenLog(t)
	be := regexp.MustCompile(`(?m)^backend (\S+)`).FindSubmatch(body)
	require.NotNil(t, be, "no backend in\n%s", body)
	s := regexp.MustCompile(`(?m)^(\s*server\s+\S+\s+)\S+:80\b`).ReplaceAllString(string(body), "${1}"+upstream)
	cfg := fmt.Sprintf(`global
    log %s local0

frontend fe
    mode http
    bind 127.0.0.1:%d
    timeout client 10s
    log global
    log-format "%%HM %%HP %%ST rc=%%rc"
    default_backend %s

%s`, sink.conn.LocalAddr(), port, be[1], s)
	path := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	cmd := exec.Command(bin, append(args, "-db", "-f", path)...)
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	require.NoError(t, cmd.Start())
	h := &haproxySnippet{addr: fmt.Sprintf("127.0.0.1:%d", port), path: path, sink: sink, cmd: cmd, stderr: stderr}
	stopped := false
	h.stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(h.stop)
	waitForPort(t, h.addr, stderr)
	return h
}

func (h *haproxySnippet) address() string { return h.addr }
func (h *haproxySnippet) close()          { h.stop() }

// tries returns how many tries HAProxy logged for the last request of
// method to path: its retries plus one.
func (h *haproxySnippet) tries(t *testing.T, method, path string) int {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(method+" "+path) + ` \d+ rc=\+?(\d+)`)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		h.sink.mu.Lock()
		var m []string
		for _, l := range h.sink.lines {
			if x := re.FindStringSubmatch(l); x != nil {
				m = x
			}
		}
		h.sink.mu.Unlock()
		if m != nil {
			n, _ := strconv.Atoi(m[1])
			return n + 1
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log line for %s %s", method, path)
	return 0
}
