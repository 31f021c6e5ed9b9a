package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/target"
)

// deadlineRun is what a deadline runner prints: the calls its loopback
// server received and, for each, the header and the time its handler had
// left by the snippet's own reader; the status or error of the call the
// snippet's client made, and its time.
type deadlineRun struct {
	Hits int `json:"hits"`
	Seen []struct {
		Path        string  `json:"path"`
		Header      string  `json:"header"`
		HasDeadline bool    `json:"has_deadline"`
		LeftMs      float64 `json:"left_ms"`
	} `json:"seen"`
	Status int    `json:"status"`
	Error  string `json:"error"`
	// Dropped: the error is the snippet's own for a call not sent
	// (errors.Is ErrNoUsefulTime, NoUsefulTime).
	Dropped   bool    `json:"dropped"`
	ElapsedMs float64 `json:"elapsed_ms"`
	// HopError, HopDropped: the call the middle hop made below (Go's
	// chain runs only).
	HopError   string `json:"hop_error"`
	HopDropped bool   `json:"hop_dropped"`
}

// goDeadlineMain serves on loopback with a handler that bounds its
// context by the snippet's DeadlineFromRequest and says what it saw, then
// makes one call to it: with -plain a bare http.Get (no header), else Do
// with DefaultPolicy within a context of -budget. With -spend the call
// goes to /hop, whose handler works that long and then calls /leaf
// through Do with its bounded context.
const goDeadlineMain = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"snippetrun/backendclient"
)

type seen struct {
	Path        string  ` + "`json:\"path\"`" + `
	Header      string  ` + "`json:\"header\"`" + `
	HasDeadline bool    ` + "`json:\"has_deadline\"`" + `
	LeftMs      float64 ` + "`json:\"left_ms\"`" + `
}

func main() {
	budget := flag.Duration("budget", 0, "")
	plain := flag.Bool("plain", false, "")
	spend := flag.Duration("spend", -1, "")
	flag.Parse()
	var mu sync.Mutex
	var got []seen
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	url := "http://" + l.Addr().String() + "/"
	var chainErr error
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := backendclient.DeadlineFromRequest(r)
		defer cancel()
		s := seen{Path: r.URL.Path, Header: r.Header.Get(backendclient.DeadlineHeader)}
		if dl, ok := ctx.Deadline(); ok {
			s.HasDeadline, s.LeftMs = true, float64(time.Until(dl))/float64(time.Millisecond)
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		if r.URL.Path == "/hop" { // a hop in the middle: its own work, then its call below
			time.Sleep(*spend)
			req, _ := http.NewRequest("GET", url+"leaf", nil)
			resp, err := backendclient.Do(ctx, backendclient.NewClient(), req, backendclient.DefaultPolicy)
			if err != nil {
				mu.Lock()
				chainErr = err
				mu.Unlock()
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			resp.Body.Close()
		}
		w.Write([]byte("ok"))
	})}
	go srv.Serve(l)
	var out struct {
		Hits      int     ` + "`json:\"hits\"`" + `
		Seen      []seen  ` + "`json:\"seen\"`" + `
		Status    int     ` + "`json:\"status\"`" + `
		Error     string  ` + "`json:\"error\"`" + `
		Dropped   bool    ` + "`json:\"dropped\"`" + `
		ElapsedMs float64 ` + "`json:\"elapsed_ms\"`" + `
		HopError  string  ` + "`json:\"hop_error\"`" + `
		HopDropped bool   ` + "`json:\"hop_dropped\"`" + `
	}
	target := url
	if *spend >= 0 {
		target = url + "hop"
	}
	var resp *http.Response
	start := time.Now()
	if *plain {
		resp, err = http.Get(url)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), *budget)
		defer cancel()
		req, _ := http.NewRequest("GET", target, nil)
		resp, err = backendclient.Do(ctx, backendclient.NewClient(), req, backendclient.DefaultPolicy)
	}
	out.ElapsedMs = float64(time.Since(start)) / float64(time.Millisecond)
	if err != nil {
		out.Error = err.Error()
		out.Dropped = errors.Is(err, backendclient.ErrNoUsefulTime)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out.Status = resp.StatusCode
	}
	mu.Lock()
	out.Hits, out.Seen = len(got), got
	if chainErr != nil {
		out.HopError, out.HopDropped = chainErr.Error(), errors.Is(chainErr, backendclient.ErrNoUsefulTime)
	}
	mu.Unlock()
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// httpxDeadlineRunner is goDeadlineMain for the httpx snippet: an
// http.server on loopback whose handler reads the snippet's time_left,
// and one call to it: "plain" with a bare httpx.get, else send() with
// time_left set to the argument (seconds).
const httpxDeadlineRunner = `import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import snippet

seen = []


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        left = snippet.time_left(self.headers)
        seen.append({
            "header": self.headers.get(snippet.DEADLINE_HEADER) or "",
            "has_deadline": left is not None,
            "left_ms": 0.0 if left is None else left * 1000,
        })
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d/" % server.server_address[1]
out = {}
client = snippet.client("all")
request = client.build_request("GET", url)
start = time.monotonic()
try:
    if sys.argv[1] == "plain":
        response = httpx.get(url)
    else:
        response = snippet.send(client, request, "all", time_left=float(sys.argv[1]))
    out["status"] = response.status_code
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["dropped"] = isinstance(e, snippet.NoUsefulTime)
out["elapsed_ms"] = (time.monotonic() - start) * 1000
out["hits"] = len(seen)
out["seen"] = seen
print(json.dumps(out))
server.shutdown()
`

// deadlineBudget is the time the caller has left in the deadline tests.
const deadlineBudget = 300 * time.Millisecond

// checkDeadlineRuns runs a runner with no header, with deadlineBudget
// left and with half the policy's least useful time left, and checks what
// its server saw: the header the snippet set is the time the call had
// left, in whole milliseconds, and bounds the handler by it (between
// 250ms and 300ms: a process's start is not in it, loopback takes well
// under 50ms); a request without it is not bounded; a call with less than
// the least useful time left is never sent, and fails at once with the
// snippet's own error.
func checkDeadlineRuns(t *testing.T, minUseful time.Duration, run func(budget string) deadlineRun) {
	t.Helper()
	plain := run("plain")
	t.Logf("plain: %+v", plain)
	require.Equal(t, 1, plain.Hits, "precondition: the server answers (%s)", plain.Error)
	assert.Empty(t, plain.Seen[0].Header)
	assert.False(t, plain.Seen[0].HasDeadline, "a request without the header: the handler's context has no deadline of the caller's")

	got := run(strconv.FormatFloat(deadlineBudget.Seconds(), 'f', -1, 64))
	t.Logf("%v left: %+v", deadlineBudget, got)
	require.Empty(t, got.Error)
	assert.Equal(t, 200, got.Status)
	require.GreaterOrEqual(t, got.Hits, 1, "the call reached the server")
	first := got.Seen[0]
	header, err := strconv.Atoi(first.Header)
	require.NoError(t, err, "the header %s: %q", "x-envoy-expected-rq-timeout-ms", first.Header)
	assert.LessOrEqual(t, header, int(deadlineBudget/time.Millisecond), "the header: the time the call had left, never more")
	assert.GreaterOrEqual(t, header, 250, "the header: the time the call had left when sent")
	assert.True(t, first.HasDeadline, "the handler's context is bounded by the header")
	assert.LessOrEqual(t, first.LeftMs, float64(deadlineBudget/time.Millisecond), "the handler's time left")
	assert.GreaterOrEqual(t, first.LeftMs, 250.0, "the handler's time left")

	short := minUseful / 2
	got = run(strconv.FormatFloat(short.Seconds(), 'f', -1, 64))
	t.Logf("%v left (the policy's least useful try %v): %+v", short, minUseful, got)
	assert.Equal(t, 0, got.Hits, "a call with less than a useful try left is never sent")
	assert.True(t, got.Dropped, "the snippet's own error for a dropped call: %q", got.Error)
	assert.Contains(t, got.Error, "dropped")
	assert.Less(t, got.ElapsedMs, float64(short/time.Millisecond), "dropped at once, not timed out at the deadline")
}

// TestSnippetGoDeadline builds the Go snippet with a main that serves on
// loopback, its handler bounded by the snippet's DeadlineFromRequest, and
// calls it through Do: the time the call has left reaches the handler as
// x-envoy-expected-rq-timeout-ms, and a call with less than MinUseful
// left is dropped before it is sent. Down a chain (client -> hop -> leaf,
// the hop's handler calling the leaf through Do with its bounded
// context) the leaf is told what the hop had left after its own work, and
// a hop left with less than a useful try drops its call.
func TestSnippetGoDeadline(t *testing.T) {
	goBin := e2etest.RequireBinary(t, "go", "install Go 1.26 (https://go.dev/dl/)")
	r := policyReport(t, time.Second, snippetAttempts, true, false)
	minUseful := time.Duration(r.Groups[0].Policy.MinUsefulTrySeconds*1e3) * time.Millisecond // the snippet's, whole milliseconds
	require.Greater(t, minUseful, 10*time.Millisecond, "precondition: a least useful try worth halving")
	require.Less(t, minUseful, deadlineBudget, "precondition: the budget holds a useful try")
	bin := buildGoSnippetMain(t, goBin, r, goDeadlineMain)
	checkDeadlineRuns(t, minUseful, func(budget string) deadlineRun {
		args := []string{"-plain"}
		if budget != "plain" {
			args = []string{"-budget", budget + "s"}
		}
		return runDeadline(t, filepath.Dir(bin), clientEnv(), bin, args...)
	})

	// Down a chain: the client calls a hop with 300ms left; the hop
	// bounds its context by the header, works 100ms, then calls the leaf
	// through Do, which passes down what is left (at most 200ms). After
	// 270ms of work the 30ms left are less than the 40ms useful try: the
	// hop drops the call, and the leaf receives nothing.
	for _, c := range []struct {
		spend    time.Duration
		leafHits int
	}{{100 * time.Millisecond, 1}, {deadlineBudget - minUseful + 10*time.Millisecond, 0}} {
		got := runDeadline(t, filepath.Dir(bin), clientEnv(), bin, "-budget", deadlineBudget.String(), "-spend", c.spend.String())
		t.Logf("chain, the hop working %v: %+v", c.spend, got)
		var leaf []int
		for _, s := range got.Seen {
			if s.Path == "/leaf" {
				ms, err := strconv.Atoi(s.Header)
				require.NoError(t, err, "the leaf's header %q", s.Header)
				leaf = append(leaf, ms)
			}
		}
		require.Len(t, leaf, c.leafHits, "calls at the leaf, the hop working %v (hop error %q)", c.spend, got.HopError)
		if c.leafHits == 0 {
			assert.True(t, got.HopDropped, "the hop's own call fails with ErrNoUsefulTime: %q", got.HopError)
			assert.Equal(t, 503, got.Status, "the hop answers its error")
			continue
		}
		assert.Empty(t, got.HopError)
		assert.Equal(t, 200, got.Status)
		left := int((deadlineBudget - c.spend) / time.Millisecond)
		assert.LessOrEqual(t, leaf[0], left, "the leaf is told what the hop had left after its work, never more")
		assert.GreaterOrEqual(t, leaf[0], left-50, "the leaf is told what the hop had left after its work")
	}
}

// TestSnippetHTTPXDeadline is TestSnippetGoDeadline for the httpx
// snippet, with Debian's httpx and Python's http.server: send() sets the
// header from time_left, time_left() reads it, and a call with less than
// min_useful left raises NoUsefulTime without being sent.
func TestSnippetHTTPXDeadline(t *testing.T) {
	py := requireHTTPX(t)
	r := policyReport(t, time.Second, snippetAttempts, true, false)
	minUseful := time.Duration(r.Groups[0].Policy.MinUsefulTrySeconds*1e3) * time.Millisecond
	require.Greater(t, minUseful, 10*time.Millisecond, "precondition: a least useful try worth halving")
	dir := t.TempDir()
	src := renderSnippet(t, "httpx", r, target.Options{})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.py"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte(httpxDeadlineRunner), 0o644))
	checkDeadlineRuns(t, minUseful, func(budget string) deadlineRun {
		return runDeadline(t, dir, clientEnv(), py, "-E", "-s", "-B", "run.py", budget)
	})
}

// runDeadline runs a deadline runner once and reads the line it prints.
func runDeadline(t *testing.T, dir string, env []string, name string, args ...string) deadlineRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v: %s", name, args, stderr.String())
	var run deadlineRun
	require.NoError(t, json.Unmarshal(out, &run), "%s %v printed %q", name, args, out)
	return run
}
