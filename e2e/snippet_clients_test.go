package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// --- gRPC: a real grpc-go client with the emitted service config.

// grpcMode is what the test gRPC server does with an attempt.
type grpcMode int32

const (
	grpcUnavailable grpcMode = iota // UNAVAILABLE at once, trailers-only (retryable)
	grpcHang                        // never answers (bounded at 10s)
	grpcSlowOK                      // answers OK after grpcSlow
)

// grpcSlow is how long grpcSlowOK waits: longer than the hedging delay of
// the report (52ms), so that a client that hedges sends a second attempt.
const grpcSlow = 300 * time.Millisecond

// grpcBackend is a grpc-go server on loopback whose one handler answers
// every method and counts the attempts that reach it, by method.
type grpcBackend struct {
	addr string
	mode atomic.Int32
	mu   sync.Mutex
	hits map[string]int // "/backend/Call" -> attempts
}

func startGRPCBackend(t *testing.T) *grpcBackend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &grpcBackend{addr: l.Addr().String(), hits: map[string]int{}}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		b.mu.Lock()
		b.hits[method]++
		b.mu.Unlock()
		ctx := stream.Context()
		switch grpcMode(b.mode.Load()) {
		case grpcUnavailable:
			// Before any header: the status goes out trailers-only, which
			// grpc-go may retry.
			return status.Error(codes.Unavailable, "backend unavailable")
		case grpcHang:
			select { // bounded: no test waits this long
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			case <-time.After(10 * time.Second):
				return status.Error(codes.Internal, "hang ended by the test's bound")
			}
		default:
			var in emptypb.Empty
			if err := stream.RecvMsg(&in); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			case <-time.After(grpcSlow):
			}
			return stream.SendMsg(&emptypb.Empty{})
		}
	}))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return b
}

func (b *grpcBackend) set(m grpcMode) {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.hits)
	b.mode.Store(int32(m))
}

func (b *grpcBackend) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits[method]
}

// grpcCall makes one call of method through a new channel (its own retry
// throttle) with config as the default service config, once the channel is
// connected, without a deadline of its own: the config's timeout applies.
// It returns how long the call took and its error.
func grpcCall(t *testing.T, addr, config, method string) (time.Duration, error) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(config))
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a bound: loopback connects at once
	defer cancel()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		require.True(t, cc.WaitForStateChange(ctx, s), "the channel to %s did not connect (%v)", addr, s)
	}
	start := time.Now()
	err = cc.Invoke(context.Background(), method, &emptypb.Empty{}, &emptypb.Empty{})
	return time.Since(start), err
}

// grpcServiceConfig is the part of the emitted service config the test
// reads.
type grpcServiceConfig struct {
	MethodConfig []struct {
		Name []struct {
			Service string `json:"service"`
			Method  string `json:"method"`
		} `json:"name"`
		Timeout     string `json:"timeout"`
		RetryPolicy *struct {
			MaxAttempts          int      `json:"maxAttempts"`
			RetryableStatusCodes []string `json:"retryableStatusCodes"`
		} `json:"retryPolicy"`
		HedgingPolicy *struct {
			MaxAttempts  int    `json:"maxAttempts"`
			HedgingDelay string `json:"hedgingDelay"`
		} `json:"hedgingPolicy"`
	} `json:"methodConfig"`
}

// protoSeconds reads a protobuf JSON duration ("1.000s").
func protoSeconds(t *testing.T, s string) time.Duration {
	t.Helper()
	require.True(t, strings.HasSuffix(s, "s"), "duration %q", s)
	d, err := time.ParseDuration(s)
	require.NoError(t, err, "duration %q", s)
	return d
}

// reportSeconds converts report seconds to a duration.
func reportSeconds(s float64) time.Duration { return time.Duration(s*1e6+0.5) * time.Microsecond }

// TestSnippetGRPC runs the emitted gRPC service config in a real grpc-go
// client against a real grpc-go server on loopback. The config's timeout
// is the deadline of the whole call: gRPC has no per-try timeout, so a hang
// is one attempt ended by the deadline (1s), never retried; UNAVAILABLE,
// which the server sends before the application did anything visible
// (trailers-only), is retried up to maxAttempts for an idempotent call and
// not at all for one that is not (no retryPolicy: RFC 9110 section 9.2.2,
// a call that is not idempotent may be repeated only when it was never
// sent, which gRPC does transparently by itself). The snippet's header says
// grpc-go ignores hedgingPolicy (and so neither hedges nor retries): the
// hedging case checks exactly that, against grpc-go's own behaviour.
func TestSnippetGRPC(t *testing.T) {
	require.True(t, strings.HasPrefix(grpc.Version, "1.85."),
		"grpc-go %s: the snippet's header speaks of grpc-go 1.85; check its hedging claim against this version and update both", grpc.Version)
	const method = "/backend/Call" // any method of service "backend"
	b := startGRPCBackend(t)
	const deadline = time.Second

	// readConfig renders the report's service config and checks what
	// every case relies on: one methodConfig for every method of
	// "backend" with the deadline as its timeout.
	readConfig := func(t *testing.T, r *report.Report) (string, grpcServiceConfig, time.Duration) {
		t.Helper()
		body := renderSnippet(t, "grpc", r, target.Options{})
		var cfg grpcServiceConfig
		require.NoError(t, json.Unmarshal(body, &cfg), "%s", body)
		require.Len(t, cfg.MethodConfig, 1, "%s", body)
		mc := cfg.MethodConfig[0]
		require.Len(t, mc.Name, 1, "%s", body)
		require.Equal(t, "backend", mc.Name[0].Service, "%s", body)
		require.Empty(t, mc.Name[0].Method, "one group: every method of the service\n%s", body)
		timeout := protoSeconds(t, mc.Timeout)
		require.Equal(t, deadline, timeout, "the config's timeout is the deadline\n%s", body)
		return string(body), cfg, timeout
	}
	// hang checks a call into a backend that never answers: one attempt,
	// DEADLINE_EXCEEDED at the config's timeout.
	hang := func(t *testing.T, config string, timeout time.Duration) {
		t.Helper()
		b.set(grpcHang)
		took, err := grpcCall(t, b.addr, config, method)
		t.Logf("hang: %v, %d attempts at the server, %v", status.Code(err), b.count(method), took.Round(time.Millisecond))
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
		assert.Equal(t, 1, b.count(method), "attempts at the server: gRPC has no per-try timeout to end one and retry")
		assert.GreaterOrEqual(t, took, timeout-50*time.Millisecond, "the config's timeout ends the call")
		assert.LessOrEqual(t, took, timeout+within, "the wait against the deadline of %v", timeout)
	}

	t.Run("idempotent", func(t *testing.T) {
		r := policyReport(t, deadline, 3, true, false)
		config, cfg, timeout := readConfig(t, r)
		rp := cfg.MethodConfig[0].RetryPolicy
		require.NotNil(t, rp, "an idempotent call has a retryPolicy\n%s", config)
		require.Nil(t, cfg.MethodConfig[0].HedgingPolicy, "%s", config)
		require.Equal(t, 3, rp.MaxAttempts, "maxAttempts: the call policy's 3 attempts\n%s", config)
		require.Equal(t, r.Groups[0].Policy.Attempts, rp.MaxAttempts)
		require.Contains(t, rp.RetryableStatusCodes, "UNAVAILABLE", "503 and connect failures are UNAVAILABLE\n%s", config)

		b.set(grpcUnavailable)
		took, err := grpcCall(t, b.addr, config, method)
		t.Logf("UNAVAILABLE: %v, %d attempts at the server, %v", status.Code(err), b.count(method), took.Round(time.Millisecond))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		assert.Equal(t, rp.MaxAttempts, b.count(method), "attempts at the server: maxAttempts")
		assert.Less(t, took, timeout/2, "fast failures and two backoffs of at most 30ms and 60ms")

		hang(t, config, timeout)
	})

	t.Run("not idempotent", func(t *testing.T) {
		r := policyReport(t, deadline, 3, false, false)
		config, cfg, timeout := readConfig(t, r)
		require.Nil(t, cfg.MethodConfig[0].RetryPolicy, "no retryPolicy for a call that is not idempotent\n%s", config)
		require.NotContains(t, config, "retryPolicy")
		require.Nil(t, cfg.MethodConfig[0].HedgingPolicy, "%s", config)

		b.set(grpcUnavailable)
		took, err := grpcCall(t, b.addr, config, method)
		t.Logf("UNAVAILABLE: %v, %d attempts at the server, %v", status.Code(err), b.count(method), took.Round(time.Millisecond))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		assert.Equal(t, 1, b.count(method), "attempts at the server: the server may have applied the call")
		assert.Less(t, took, timeout/2)

		hang(t, config, timeout)
	})

	t.Run("hedging", func(t *testing.T) {
		r := policyReport(t, deadline, 3, true, true)
		h := r.Groups[0].Policy.Hedge
		require.NotNil(t, h, "the report hedges")
		config, cfg, _ := readConfig(t, r)
		mc := cfg.MethodConfig[0]
		require.Nil(t, mc.RetryPolicy, "hedgingPolicy excludes retryPolicy\n%s", config)
		require.NotNil(t, mc.HedgingPolicy, "%s", config)
		require.Equal(t, 3, mc.HedgingPolicy.MaxAttempts, "%s", config)
		require.Equal(t, h.Attempts, mc.HedgingPolicy.MaxAttempts)
		delay := protoSeconds(t, mc.HedgingPolicy.HedgingDelay)
		require.Equal(t, reportSeconds(h.DelaySeconds), delay, "hedgingDelay is the report's policy.hedge.delay_seconds\n%s", config)
		require.Less(t, delay, grpcSlow, "precondition: a hedge would be sent before the slow answer")
		tg, err := targets.Lookup("grpc")
		require.NoError(t, err)
		notes, err := tg.Explain(r, target.Options{})
		require.NoError(t, err)
		require.Contains(t, strings.Join(notes, "\n"), "grpc-go (1.85) and gRPC C-core drop it without a word, so their clients neither hedge nor retry this method",
			"the header's claim that this test checks")

		b.set(grpcSlowOK)
		took, err := grpcCall(t, b.addr, config, method)
		t.Logf("slow OK: %v, %d attempts at the server, %v", status.Code(err), b.count(method), took.Round(time.Millisecond))
		assert.NoError(t, err)
		assert.Equal(t, 1, b.count(method), "attempts at the server: grpc-go does not hedge (a hedge would follow after %v)", delay)
		assert.GreaterOrEqual(t, took, grpcSlow)
		assert.LessOrEqual(t, took, grpcSlow+within)

		b.set(grpcUnavailable)
		took, err = grpcCall(t, b.addr, config, method)
		t.Logf("UNAVAILABLE: %v, %d attempts at the server, %v", status.Code(err), b.count(method), took.Round(time.Millisecond))
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		assert.Equal(t, 1, b.count(method), "attempts at the server: grpc-go drops the hedgingPolicy, so it does not retry either")
	})
}

// --- Go and httpx: the emitted client code, run by its own runtime.

// clientRun is what a client runner prints: the status the call returned
// or its error, the attempts its client made (counted around the client's
// transport, so refused connects count), those of them whose connect timed
// out, and the call's time.
type clientRun struct {
	Status    int     `json:"status"`
	Error     string  `json:"error"`
	Attempts  int     `json:"attempts"`
	ElapsedMs float64 `json:"elapsed_ms"`
	// ConnectTimeouts counts the attempts whose connect timed out: never
	// sent, so retried for any call (see checkClientCases).
	ConnectTimeouts int `json:"connect_timeouts"`
}

func (c clientRun) elapsed() time.Duration {
	return time.Duration(c.ElapsedMs * float64(time.Millisecond))
}

// clientCase is one call of an emitted client to the behaviour upstream,
// or to a refused address.
type clientCase struct {
	method, path string
	refused      bool
	wantHits     int    // requests at the upstream
	wantAttempts int    // attempts the client made
	wantStatus   int    // the status returned; 0: an error
	wantError    string // part of the error; "" with wantStatus 0: any error
	// minWait and maxWait bound the call's time.
	minWait, maxWait time.Duration
}

// snippetAttempts is the call policy's attempts in the client tests.
const snippetAttempts = 3

// retryAfterDeadline is the deadline of the Retry-After cases: room for
// two waits of 1s and three attempts.
const retryAfterDeadline = 3 * time.Second

// retryAfterCases are the calls of an idempotent GET to responses with a
// Retry-After (RFC 9110 section 10.2.3): the client waits at least that
// long before a retry, and when the wait does not fit what is left of the
// deadline it returns the response at once rather than retry early or
// wait for nothing.
var retryAfterCases = []clientCase{
	{method: "GET", path: "/busy", wantHits: 3, wantAttempts: 3, wantStatus: 429, minWait: 2 * time.Second, maxWait: retryAfterDeadline + within},
	{method: "GET", path: "/later", wantHits: 1, wantAttempts: 1, wantStatus: 503, maxWait: within},
}

// checkClientCases runs the cases with run(method, url) and checks each.
//
// The report's connect timeout is 6ms (3 x its RTT of 2ms): on a loaded
// machine a client starved of CPU for longer sees its connect to loopback
// time out (Go's runtime may run the dial's timer before it polls the
// socket). Such an attempt was never sent, so the snippet retries it like
// any unsent request, at the cost of one of its attempts, and the case no
// longer runs as planned. The upstream counts those attempts itself
// (abandonedConnects), and the client says how many connects timed out:
// when there were any, what still holds is checked: no more abandoned at
// the upstream than timed out at the client,
// each attempt that connected reached the upstream, no more attempts than
// the policy's, no wait past the case's bound.
func checkClientCases(t *testing.T, u *behaviourUpstream, refused string, deadline time.Duration, cases []clientCase, run func(method, url string) clientRun) {
	t.Helper()
	for _, c := range cases {
		target := u.addr
		if c.refused {
			target = refused
		}
		name := fmt.Sprintf("%s %s (refused %v)", c.method, c.path, c.refused)
		u.reset()
		got := run(c.method, "http://"+target+c.path)
		hits := u.count(c.method, c.path)
		t.Logf("%s: status %d, error %q, %d attempts (%d connects timed out), %d at the upstream, %v", name, got.Status, got.Error,
			got.Attempts, got.ConnectTimeouts, hits, got.elapsed().Round(time.Millisecond))
		if abandoned := u.abandonedConnects(t); !c.refused && (abandoned > 0 || got.ConnectTimeouts > 0) {
			t.Logf("%s: %d connects timed out, %d connections abandoned at the upstream (the machine is busy): the attempts are checked, not the plan",
				name, got.ConnectTimeouts, abandoned)
			// A connect the client gave up on reaches the upstream as a
			// connection closed without a request, unless the client gave
			// up before its handshake was done: never more abandoned than
			// timed out (a CI run under load saw 1 and 0).
			assert.LessOrEqual(t, abandoned, got.ConnectTimeouts, "%s: connects that timed out, by the client and by the upstream", name)
			assert.Equal(t, got.Attempts-got.ConnectTimeouts, hits, "%s: every attempt that connected reached the upstream", name)
			assert.LessOrEqual(t, got.Attempts, snippetAttempts, "%s: attempts the client made", name)
			assert.LessOrEqual(t, got.elapsed(), c.maxWait, "%s: the wait against the deadline of %v", name, deadline)
			continue
		}
		assert.Equal(t, c.wantHits, hits, "%s: requests at the upstream", name)
		assert.Equal(t, c.wantAttempts, got.Attempts, "%s: attempts the client made", name)
		assert.Equal(t, c.wantStatus, got.Status, "%s: status", name)
		if c.wantStatus == 0 {
			assert.NotEmpty(t, got.Error, "%s: an error", name)
			assert.Contains(t, got.Error, c.wantError, "%s: the error", name)
		} else {
			assert.Empty(t, got.Error, "%s", name)
		}
		assert.GreaterOrEqual(t, got.elapsed(), c.minWait, "%s", name)
		assert.LessOrEqual(t, got.elapsed(), c.maxWait, "%s: the wait against the deadline of %v", name, deadline)
	}
}

// clientEnv is the environment of a runner: this process's, without
// proxies (every call goes to loopback) and without the Go settings the
// runner sets itself, plus extra.
func clientEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy", "gowork", "goflags", "gotoolchain", "goproxy":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runClient runs a client runner once and reads the line it prints.
func runClient(t *testing.T, dir string, env []string, name string, args ...string) clientRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %v: %s", name, args, stderr.String())
	var run clientRun
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out), &run), "%s %v printed %q (stderr %s)", name, args, out, stderr.String())
	return run
}

// goSnippetMain runs the Go snippet's Do once with DefaultPolicy, counting
// the attempts in a RoundTripper around the snippet client's Transport.
const goSnippetMain = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"snippetrun/backendclient"
)

type counting struct {
	next            http.RoundTripper
	n               atomic.Int64
	connectTimeouts atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	resp, err := c.next.RoundTrip(r)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && op.Timeout() {
		c.connectTimeouts.Add(1)
	}
	return resp, err
}

func main() {
	method := flag.String("method", "GET", "")
	url := flag.String("url", "", "")
	flag.Parse()
	var body io.Reader
	if *method == http.MethodPost {
		body = strings.NewReader("x")
	}
	req, err := http.NewRequest(*method, *url, body)
	if err != nil {
		panic(err)
	}
	client := backendclient.NewClient()
	rt := &counting{next: client.Transport}
	client.Transport = rt
	var out struct {
		Status    int     ` + "`json:\"status\"`" + `
		Error     string  ` + "`json:\"error\"`" + `
		Attempts        int64   ` + "`json:\"attempts\"`" + `
		ElapsedMs       float64 ` + "`json:\"elapsed_ms\"`" + `
		ConnectTimeouts int64   ` + "`json:\"connect_timeouts\"`" + `
	}
	start := time.Now()
	resp, err := backendclient.Do(context.Background(), client, req, backendclient.DefaultPolicy)
	out.ElapsedMs = float64(time.Since(start)) / float64(time.Millisecond)
	if err != nil {
		out.Error = err.Error()
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out.Status = resp.StatusCode
	}
	out.Attempts = rt.n.Load()
	out.ConnectTimeouts = rt.connectTimeouts.Load()
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// buildGoSnippet writes the Go snippet of r into a module of its own with
// goSnippetMain and builds it (no dependencies: no network), returning the
// binary.
func buildGoSnippet(t *testing.T, goBin string, r *report.Report) string {
	t.Helper()
	return buildGoSnippetMain(t, goBin, r, goSnippetMain)
}

// buildGoSnippetMain is buildGoSnippet with a main of its own.
func buildGoSnippetMain(t *testing.T, goBin string, r *report.Report, main string) string {
	t.Helper()
	dir := t.TempDir()
	src := renderSnippet(t, "go", r, target.Options{})
	require.Contains(t, string(src), "package backendclient\n", "the default service's package")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "backendclient"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module snippetrun\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "backendclient", "client.go"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644))
	bin := filepath.Join(dir, "snippetrun")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = clientEnv("GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the snippet: %s\n%s", out, src)
	return bin
}

// TestSnippetGo builds the emitted Go snippet (net/http) and runs its Do
// against the test upstream. Do bounds the whole call by the deadline
// (1s): every attempt gets the smaller of the per-try timeout (800ms) and
// what is left, so an idempotent GET into a hang sends 2 requests, the
// second with only the ~188ms left, and returns at the deadline, while fast
// failures get all 3 attempts. A call that is not idempotent (RFC 9110
// section 9.2.2: a POST the server may have applied must not be repeated)
// reaches a failing or hanging upstream once; only a request that was never
// sent (refused connection) is retried, for every call.
func TestSnippetGo(t *testing.T) {
	goBin := e2etest.RequireBinary(t, "go", "install Go 1.26 (https://go.dev/dl/)")
	u := startBehaviourUpstream(t)
	refused := refusedAddr(t)
	const deadline = time.Second
	for _, run := range []struct {
		name       string
		idempotent bool
		cases      []clientCase
	}{
		{"idempotent", true, []clientCase{
			{method: "GET", path: "/fail", wantHits: 3, wantAttempts: 3, wantStatus: 503, maxWait: deadline / 2},
			// Attempt 1 times out at 800ms; attempt 2 gets what is left
			// and the deadline ends the call.
			{method: "GET", path: "/hang", wantHits: 2, wantAttempts: 2, wantError: "context deadline exceeded", minWait: deadline - 50*time.Millisecond, maxWait: deadline + within},
			{method: "GET", path: "/fail", refused: true, wantAttempts: 3, wantError: "connection refused", maxWait: deadline / 2},
		}},
		{"not idempotent", false, []clientCase{
			{method: "POST", path: "/fail", wantHits: 1, wantAttempts: 1, wantStatus: 503, maxWait: deadline / 2},
			{method: "POST", path: "/hang", wantHits: 1, wantAttempts: 1, minWait: 750 * time.Millisecond, maxWait: deadline + within},
			// Never sent: safe to retry for any call.
			{method: "POST", path: "/fail", refused: true, wantAttempts: 3, wantError: "connection refused", maxWait: deadline / 2},
		}},
		// Retry-After (RFC 9110 section 10.2.3), with a deadline of 3s: a
		// 429 asking for 1s is retried no sooner, twice (the third attempt
		// at 2s); one asking for 5s, more than is left, fails at once.
		{"retry-after", true, retryAfterCases},
	} {
		t.Run(run.name, func(t *testing.T) {
			dl := deadline
			if run.name == "retry-after" {
				dl = retryAfterDeadline
			}
			r := policyReport(t, dl, snippetAttempts, run.idempotent, false)
			bin := buildGoSnippet(t, goBin, r)
			checkClientCases(t, u, refused, deadline, run.cases, func(method, url string) clientRun {
				return runClient(t, filepath.Dir(bin), clientEnv(), bin, "-method", method, "-url", url)
			})
		})
	}
}

// httpxRunner runs the httpx snippet's send once, counting the attempts
// in a wrapper around client.send.
const httpxRunner = `import json
import sys
import time

import httpx
import snippet

method, url = sys.argv[1], sys.argv[2]
client = snippet.client("all")
attempts = 0
connect_timeouts = 0
plain_send = client.send


def counting_send(request, **kwargs):
    global attempts, connect_timeouts
    attempts += 1
    try:
        return plain_send(request, **kwargs)
    except httpx.ConnectTimeout:
        connect_timeouts += 1
        raise


client.send = counting_send
request = client.build_request(method, url, content=b"x" if method == "POST" else None)
out = {}
start = time.monotonic()
try:
    response = snippet.send(client, request, "all")
    out["status"] = response.status_code
except Exception as e:
    out["error"] = type(e).__name__
out["elapsed_ms"] = (time.monotonic() - start) * 1000
out["attempts"] = attempts
out["connect_timeouts"] = connect_timeouts
print(json.dumps(out))
`

// requireHTTPX returns Debian's python3 with its httpx, or skips the test
// (fails it under TUNETIMEOUT_E2E=1). The pyenv python3 on PATH is not
// used: it has no httpx, and it starts slower.
func requireHTTPX(t *testing.T) string {
	t.Helper()
	const py, install = "/usr/bin/python3", "apt-get install -y python3-httpx"
	e2etest.RequireFile(t, py, install)
	out, err := exec.Command(py, "-E", "-s", "-c", "import httpx; print(httpx.__version__)").CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("%s cannot import httpx (%v: %s): %s", py, err, bytes.TrimSpace(out), install)
		if os.Getenv("TUNETIMEOUT_E2E") == "1" {
			t.Fatal(msg + " (TUNETIMEOUT_E2E=1 requires it)")
		}
		t.Skip(msg + " (or set TUNETIMEOUT_E2E=1 to make this a failure)")
	}
	t.Logf("httpx %s", bytes.TrimSpace(out))
	return py
}

// TestSnippetHTTPX runs the emitted httpx snippet's send() with Debian's
// httpx against the test upstream. httpx bounds only the phases of one
// attempt, so send() sends an attempt only while a whole one (pool +
// connect + write + read, 818ms) fits in what is left of the deadline (1s):
// an idempotent GET into a hang sends 1 request and fails at the read
// timeout of 800ms, within the deadline, while fast failures get all 3
// attempts. A call that is not idempotent (RFC 9110 section 9.2.2) reaches
// a failing or hanging upstream once; a refused connect, never sent, is
// retried for every call.
func TestSnippetHTTPX(t *testing.T) {
	py := requireHTTPX(t)
	u := startBehaviourUpstream(t)
	refused := refusedAddr(t)
	const deadline = time.Second
	for _, run := range []struct {
		name       string
		idempotent bool
		cases      []clientCase
	}{
		{"idempotent", true, []clientCase{
			{method: "GET", path: "/fail", wantHits: 3, wantAttempts: 3, wantStatus: 503, maxWait: deadline / 2},
			// After one attempt of up to 818ms the 182ms left hold no
			// other.
			{method: "GET", path: "/hang", wantHits: 1, wantAttempts: 1, wantError: "ReadTimeout", minWait: 750 * time.Millisecond, maxWait: deadline + within},
			{method: "GET", path: "/fail", refused: true, wantAttempts: 3, wantError: "ConnectError", maxWait: deadline / 2},
		}},
		{"not idempotent", false, []clientCase{
			{method: "POST", path: "/fail", wantHits: 1, wantAttempts: 1, wantStatus: 503, maxWait: deadline / 2},
			{method: "POST", path: "/hang", wantHits: 1, wantAttempts: 1, wantError: "ReadTimeout", minWait: 750 * time.Millisecond, maxWait: deadline + within},
			{method: "POST", path: "/fail", refused: true, wantAttempts: 3, wantError: "ConnectError", maxWait: deadline / 2},
		}},
		{"retry-after", true, retryAfterCases},
	} {
		t.Run(run.name, func(t *testing.T) {
			dl := deadline
			if run.name == "retry-after" {
				dl = retryAfterDeadline
			}
			r := policyReport(t, dl, snippetAttempts, run.idempotent, false)
			dir := t.TempDir()
			src := renderSnippet(t, "httpx", r, target.Options{})
			require.NoError(t, os.WriteFile(filepath.Join(dir, "snippet.py"), src, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.py"), []byte(httpxRunner), 0o644))
			checkClientCases(t, u, refused, deadline, run.cases, func(method, url string) clientRun {
				return runClient(t, dir, clientEnv(), py, "-E", "-s", "-B", "run.py", method, url)
			})
		})
	}
}
