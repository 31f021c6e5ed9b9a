package analysis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// envoyRoute writes an Envoy config of one route ("match" its match
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
