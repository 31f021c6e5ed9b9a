package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// The behaviour tests of the snippets (docs/method.md#9-config-targets): a snippet of a
// real analysis is run by its real runtime in front of behaviourUpstream,
// which answers 503 at once (/fail), never answers (/hang) or answers 200
// (/ok), and counts the requests that reach it by path and method; a port
// with no listener stands for a refused connection.

// behaviourUpstream is the test upstream of the snippet behaviour tests.
type behaviourUpstream struct {
	srv  *http.Server
	addr string // 127.0.0.1:port
	mu   sync.Mutex
	hits map[string]int // "POST /fail" -> requests that reached the upstream
	// fresh holds the connections accepted that have not sent a byte yet;
	// abandoned counts those closed so, since the last reset: connects a
	// client gave up on (see abandonedConnects).
	fresh     map[net.Conn]bool
	abandoned int
}

func startBehaviourUpstream(t *testing.T) *behaviourUpstream {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &behaviourUpstream{addr: l.Addr().String(), hits: map[string]int{}, fresh: map[net.Conn]bool{}}
	u.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, ConnState: u.connState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.hits[r.Method+" "+r.URL.Path]++
		u.mu.Unlock()
		// Read the body first: net/http cancels r.Context() when the client
		// goes only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/fail":
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		case "/busy": // asks for a retry no sooner than 1s (RFC 9110 section 10.2.3)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests", http.StatusTooManyRequests)
		case "/busy-date": // the same as an HTTP-date, 2s ahead (1 to 2s at second resolution)
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			http.Error(w, "too many requests", http.StatusTooManyRequests)
		case "/later": // asks for a retry no sooner than 5s
			w.Header().Set("Retry-After", "5")
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		case "/hang":
			select { // bounded: no test waits this long
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			_, _ = w.Write([]byte("ok"))
		}
	})}
	go func() { _ = u.srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = u.srv.Shutdown(ctx)
		_ = u.srv.Close()
	})
	return u
}

// count returns how many requests of method to path reached the upstream.
func (u *behaviourUpstream) count(method, path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits[method+" "+path]
}

// reset forgets the counts.
func (u *behaviourUpstream) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	clear(u.hits)
	u.abandoned = 0
}

// connState follows each connection from its accept to its first byte.
func (u *behaviourUpstream) connState(c net.Conn, s http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch s {
	case http.StateNew:
		u.fresh[c] = true
	case http.StateClosed, http.StateHijacked:
		if u.fresh[c] {
			u.abandoned++
		}
		delete(u.fresh, c)
	default: // active: a request came
		delete(u.fresh, c)
	}
}

// abandonedConnects returns how many connections were closed without a
// request since the last reset, once none is left waiting for its first
// byte. On loopback the kernel completes a connect at once, so a client
// (or proxy) whose connect timed out, starved of CPU past a timeout of a
// few ms on a busy machine, leaves one such connection per attempt: the
// upstream's own count of the attempts that were never sent.
func (u *behaviourUpstream) abandonedConnects(t *testing.T) int {
	t.Helper()
	settled := waitUntil(time.Minute, 10*time.Millisecond, func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return len(u.fresh) == 0
	})
	require.True(t, settled, "a connection to the upstream neither sent a request nor closed within a minute")
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.abandoned
}

// refusedAddr is a loopback address where nothing listens: a connect to
// it is refused at once.
func refusedAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(freePort(t))
}

// policyReport analyses testdata/mixture.csv (the README's example: 800ms
// at p99.9, a 2ms RTT) with a call policy of attempts within deadline,
// idempotent or not: the report the snippets under test come from.
func policyReport(t *testing.T, deadline time.Duration, attempts int, idempotent, hedge bool) *report.Report {
	t.Helper()
	o := analysis.Options{
		Inputs:    []string{filepath.Join("..", "testdata", "mixture.csv")},
		Recommend: recommend.DefaultOptions(),
		Rate:      400,
		Pool:      200,
		Policy:    recommend.PolicyOptions{Deadline: deadline, Attempts: attempts, Idempotent: idempotent, Hedge: hedge, RetryBudget: 0.1},
	}
	o.Recommend.RTT = 2 * time.Millisecond
	r, err := analysis.Run(context.Background(), o, nil)
	require.NoError(t, err)
	require.Len(t, r.Groups, 1)
	p := r.Groups[0].Policy
	require.Equal(t, 0.8, p.PerTryTimeoutSeconds, "precondition: the README's 800ms")
	require.Equal(t, idempotent, p.Idempotent)
	return r
}

// renderSnippet renders one target of a report.
func renderSnippet(t *testing.T, name string, r *report.Report, o target.Options) []byte {
	t.Helper()
	body, err := targets.Render(name, r, o)
	require.NoError(t, err)
	return body
}

// within is the slack a loaded machine adds to a measured wait: a process
// start, a scheduler tick, a proxy's timer wheel.
const within = 300 * time.Millisecond
