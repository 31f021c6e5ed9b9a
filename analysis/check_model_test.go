package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// envoyRoutes writes an Envoy config of one route ("match" its match
// block) from the 3-attempts fixture, with the route's timeout and retry
// policy replaced.
func envoyRoutes(t *testing.T, routes string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "check", "envoy-3-attempts.yaml"))
	require.NoError(t, err)
	s := string(data)
	start := strings.Index(s, "              routes:\n")
	end := strings.Index(s, "          http_filters:")
	require.True(t, start > 0 && end > start)
	p := filepath.Join(t.TempDir(), "envoy.yaml")
	require.NoError(t, os.WriteFile(p, []byte(s[:start]+"              routes:\n"+routes+s[end:]), 0o644))
	return p
}

// TestCheckHangOncePerCall (issue: "a hang counted once per attempt where
// one timeout bounds all attempts"): Envoy's route timeout spans every
// attempt and the backoff, so at 400 calls/s a hang at timeout 1s with 2
// retries holds 400 calls, not 1,200; and the same route with
// per_try_timeout written out at the route timeout, what Envoy does when
// it is absent, gives the same findings.
func TestCheckHangOncePerCall(t *testing.T) {
	route := func(extra string) string {
		return `              - match: { prefix: "/" }
                route:
                  cluster: backend
                  timeout: 1s
                  retry_policy:
                    retry_on: connect-failure,refused-stream
                    num_retries: 2
` + extra
	}
	var got [][]string
	for _, extra := range []string{"", "                    per_try_timeout: 1s\n"} {
		o := checkOptions()
		o.Configs = []string{envoyRoutes(t, route(extra))}
		o.Rate, o.Pool = 400, 200
		c, err := Check(context.Background(), o, nil)
		require.NoError(t, err)
		hang := findingsOf(c, finding.CheckHangExhaustsPool)
		require.Len(t, hang, 1, "%+v", c.Findings)
		assert.InDelta(t, 400, hang[0].Measured["in_flight_during_hang"], 1e-6, "one timeout of 1s bounds all 3 attempts")
		var codes []string
		for _, f := range c.Findings {
			codes = append(codes, f.Code+" "+f.Severity)
		}
		got = append(got, codes)
	}
	assert.Equal(t, got[0], got[1], "a default written out and a default left implicit are one config")
}

// TestCheckFirstMatchWins: a catch-all after /api/search never sees
// /api/search in Envoy (the first route that matches is used), so it is
// not held against it; a route matching GET alone is not held against the
// POST calls of its path.
func TestCheckFirstMatchWins(t *testing.T) {
	o := checkOptions()
	o.Ingest.By = []string{"route"}
	o.Configs = []string{envoyRoutes(t, `              - match: { prefix: "/api/search" }
                route: { cluster: backend, timeout: 1s }
              - match: { prefix: "/" }
                route: { cluster: backend, timeout: 0.3s }
`)}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	for _, f := range c.Findings {
		if f.Object == "local_route/backend/route 2" {
			assert.NotContains(t, f.Group, "/api/search", f.Message)
			for _, g := range f.Groups {
				assert.NotContains(t, g, "/api/search")
			}
		}
	}
	cut := findingsOf(c, finding.CheckTimeoutCutsOff)
	require.Len(t, cut, 1, "one finding for the catch-all's value: %+v", c.Findings)
	assert.Len(t, cut[0].Groups, 2, "it names both groups it serves: /api/orders and /api/users")
	assert.Contains(t, cut[0].Message, "[2 groups:")
}

// TestCheckSeverities: no timeout at all is an error, as severe as a
// finite timeout that cuts off too much; a retried 500 is a finding.
func TestCheckSeverities(t *testing.T) {
	o := checkOptions()
	o.Configs = []string{envoyRoutes(t, `              - match: { prefix: "/" }
                route:
                  cluster: backend
                  timeout: 0s
                  retry_policy: { retry_on: 5xx, num_retries: 1 }
`)}
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	none := findingsOf(c, finding.CheckNoTimeout)
	require.Len(t, none, 1, "%+v", c.Findings)
	assert.Equal(t, "error", none[0].Severity)
	r500 := findingsOf(c, finding.CheckRetry500)
	require.Len(t, r500, 1, "%+v", c.Findings)
	assert.Equal(t, "5xx", r500[0].Measured["condition"])

	grpc := filepath.Join(t.TempDir(), "grpc.json")
	require.NoError(t, os.WriteFile(grpc, []byte(`{"methodConfig": [{"name": [{"service": "pkg.Svc"}]}]}`), 0o644))
	o.Configs, o.ConfigFormat = []string{grpc}, "grpc"
	c, err = Check(context.Background(), o, nil)
	require.NoError(t, err)
	none = findingsOf(c, finding.CheckNoTimeout)
	require.Len(t, none, 1, "a gRPC method without a timeout waits for ever: %+v", c.Findings)
	assert.Equal(t, "error", none[0].Severity)
}

// TestCheckNginxTryWindow: nginx bounds no call, but starts no try after
// proxy_next_upstream_timeout, and each try runs its connect before its
// read: 3 tries of 1s after connects of up to 100ms take 3.3s, more than a
// deadline of 2.5s, unless the window (the deadline less one try) keeps
// the third from starting.
func TestCheckNginxTryWindow(t *testing.T) {
	conf := func(window string) string {
		p := filepath.Join(t.TempDir(), "nginx.conf")
		require.NoError(t, os.WriteFile(p, []byte(`http {
    upstream backend {
        server 10.0.0.1:80 max_fails=0;
        server 10.0.0.2:80 max_fails=0;
        server 10.0.0.3:80 max_fails=0;
    }
    server {
        listen 80;
        location / {
            proxy_pass http://backend;
            proxy_connect_timeout 100ms;
            proxy_read_timeout 1s;
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 3;
`+window+`        }
    }
}
`), 0o644))
		return p
	}
	run := func(window string) []report.CheckFinding {
		o := checkOptions()
		o.Configs = []string{conf(window)}
		o.Policy.Deadline = 2500 * time.Millisecond
		c, err := Check(context.Background(), o, nil)
		require.NoError(t, err)
		return findingsOf(c, finding.CheckAttemptsDontFit)
	}
	got := run("")
	require.Len(t, got, 1)
	assert.InDelta(t, 3.3, got[0].Measured["worst_case_seconds"], 1e-9, "3 x (100ms + 1s)")
	assert.InDelta(t, 0.1, got[0].Measured["before_request_seconds"], 1e-9)
	assert.EqualValues(t, 2, got[0].Measured["attempts_that_fit"])
	assert.Contains(t, got[0].Message, "after up to 100ms before the request is sent")

	// 2.5s less one try of 1.1s: the second starts at 1.1s, the third
	// would at 2.2s, past 1.4s.
	assert.Empty(t, run("            proxy_next_upstream_timeout 1400ms;\n"))
	// A window that lets the third start keeps the finding, and says so.
	got = run("            proxy_next_upstream_timeout 2300ms;\n")
	require.Len(t, got, 1)
	assert.Contains(t, got[0].Message, "3 attempts (the last starting before 2.3s)")
}

// TestSnippetReadNotShortenedForConnect: with a round trip of 40ms the
// connect timeout is 120ms, and a deadline of 130ms cannot hold it and a
// try of 130ms. The nginx and HAProxy snippets once shortened the read to
// the 10ms left, cutting off most calls; the read now keeps the per-try
// timeout the policy fitted (a try with a slow connect may outlast the
// deadline, which ends the caller's wait), and check of the snippet finds
// nothing.
func TestSnippetReadNotShortenedForConnect(t *testing.T) {
	p := filepath.Join(t.TempDir(), "calls.csv")
	var b strings.Builder
	b.WriteString("route,latency_ms\n")
	for i := range 4000 {
		fmt.Fprintf(&b, "/api/x,%d\n", 20+i%100)
	}
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	o := Options{Inputs: []string{p}, Recommend: recommend.DefaultOptions()}
	o.Ingest.By = []string{"route"}
	o.Recommend.RTT = 40 * time.Millisecond
	o.Policy.Deadline = 130 * time.Millisecond
	o.Policy.Attempts = 1
	rep, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	g := rep.Groups[0]
	require.NotNil(t, g.Recommendation.ConnectTimeoutSeconds)
	require.InDelta(t, 0.12, *g.Recommendation.ConnectTimeoutSeconds, 1e-9)
	perTry := time.Duration(g.Policy.PerTryTimeoutSeconds * float64(time.Second))
	require.Greater(t, perTry, 110*time.Millisecond)
	for _, name := range []string{"nginx", "haproxy"} {
		tg, err := targets.Lookup(name)
		require.NoError(t, err)
		body, err := tg.Render(rep, target.Options{})
		require.NoError(t, err)
		objs, err := tg.Read(tg.File, body, nil)
		require.NoError(t, err)
		read := 0.0
		for _, ob := range objs {
			if ob.Timeout != nil {
				read = max(read, ob.Timeout.Value)
			}
		}
		assert.InDelta(t, perTry.Seconds(), read, 0.0005, "%s:\n%s", name, body)
		assert.Contains(t, string(body), "is not shortened for them", name)
		f := filepath.Join(t.TempDir(), tg.File)
		require.NoError(t, os.WriteFile(f, body, 0o644))
		c, err := Check(context.Background(), CheckOptions{Options: o, Configs: []string{f}, ConfigFormat: name}, nil)
		require.NoError(t, err)
		for _, fd := range c.Findings {
			assert.Equal(t, "info", fd.Severity, "%s: %s %s", name, fd.Code, fd.Message)
		}
	}
}

// TestCheckRetryNonIdempotentFromTheData: a route that retries a 5xx and
// matches every method would replay a POST, but when the data show only
// GETs on it, analyze calls it idempotent (recommend.IdempotentFromMethods)
// and its snippets retry it: check holds the same model and finds nothing
// to say; with POSTs among its calls it warns.
func TestCheckRetryNonIdempotentFromTheData(t *testing.T) {
	route := `              - match: { prefix: "/" }
                route:
                  cluster: backend
                  timeout: 3s
                  retry_policy:
                    retry_on: 5xx
                    num_retries: 2
`
	for _, methods := range [][]string{{"GET"}, {"GET", "PUT", "DELETE"}, {"GET", "POST"}} {
		p := filepath.Join(t.TempDir(), "calls.csv")
		var b strings.Builder
		b.WriteString("route,method,latency_ms\n")
		for i := range 3000 {
			fmt.Fprintf(&b, "/api/x,%s,%d\n", methods[i%len(methods)], 20+i%100)
		}
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		o := checkOptions()
		o.Inputs = []string{p}
		o.Ingest.By = []string{"route"}
		o.Configs = []string{envoyRoutes(t, route)}
		c, err := Check(context.Background(), o, nil)
		require.NoError(t, err)
		got := findingsOf(c, finding.CheckRetryNonIdempotent)
		if methods[len(methods)-1] == "POST" {
			assert.Len(t, got, 1, "%v", methods)
		} else {
			assert.Empty(t, got, "%v: no call in the data is a write", methods)
		}
	}
}
