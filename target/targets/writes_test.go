package targets

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// The tests of issue 29's "snippets that replay or hedge writes": what a
// snippet does with a request that writes.

// withMethods returns the deadline fixture (3 idempotent attempts, hedged)
// with its groups split by method: /api/orders/{id} PUT, /api/search GET,
// /api/users POST, each policy's method and idempotency as analyze --by
// route,method gives them.
func withMethods(t *testing.T) *report.Report {
	t.Helper()
	r := targettest.LoadReport(t, "deadline.json")
	for i, gm := range [][2]string{{"/api/orders/{id}", "PUT"}, {"/api/search", "GET"}, {"/api/users", "POST"}} {
		g := &r.Groups[i]
		m := gm[1]
		g.Name = gm[0] + " " + m
		g.Policy.Method = &m
		if m == "POST" {
			g.Policy.Idempotent = false
			g.Policy.RetryOn = []string{"connect-failure", "refused-stream"}
			g.Policy.Hedge = nil
		}
	}
	return r
}

// TestHedgeSafeOnly: a hedge runs a second request while the first is
// still running; only a safe method (RFC 9110 section 9.2.1) is hedged, so
// a report that hedges a PUT (written before the rule, or by hand) still
// gives no hedge on it in any target, nor on the catch-all, which takes the
// methods no group measured.
func TestHedgeSafeOnly(t *testing.T) {
	r := withMethods(t)
	require.NotNil(t, r.Groups[0].Policy.Hedge, "the report hedges the PUT")
	p, err := target.NewPlan(r, target.Options{})
	require.NoError(t, err)
	hedged := map[string]bool{}
	for _, rt := range p.Routes {
		hedged[rt.Group] = rt.Hedge != nil
	}
	assert.Equal(t, map[string]bool{"/api/orders/{id} PUT": false, "/api/search GET": true, "/api/users POST": false, "catch-all": false}, hedged)

	envoy, err := Render("envoy", r, target.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(envoy), "hedge_policy:"), "the GET route alone:\n%s", envoy)
	grpc, err := Render("grpc", r, target.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(grpc), `"hedgingPolicy"`), "the GET method alone:\n%s", grpc)
}
