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

// TestCatchAllOfMethodRoutes: when the groups match by method, the
// catch-all takes every method no group holds (a POST to /api/search when
// only its GETs were measured), so it neither hedges nor retries what may
// have been applied, even when every measured group is a GET.
func TestCatchAllOfMethodRoutes(t *testing.T) {
	r := targettest.LoadReport(t, "deadline.json")
	get := "GET"
	for i := range r.Groups {
		r.Groups[i].Name += " GET"
		r.Groups[i].Policy.Method = &get
	}
	p, err := target.NewPlan(r, target.Options{})
	require.NoError(t, err)
	c := p.Routes[len(p.Routes)-1]
	require.True(t, c.Synthetic)
	assert.False(t, c.Idempotent)
	assert.Nil(t, c.Hedge)
	assert.Equal(t, []string{"connect-failure", "refused-stream"}, c.RetryOn)
	assert.Contains(t, c.IdempotentWhy, "the methods no group measured")
	for _, rt := range p.Routes[:len(p.Routes)-1] {
		assert.NotNil(t, rt.Hedge, rt.Group)
	}
}

// TestNoRetryAfterNo429: a 429 asks the client to wait (RFC 6585 section
// 4, its Retry-After RFC 9110 section 10.2.3); a target that cannot wait
// for a Retry-After retries it at once, adding load to a server that asked
// for less, so it does not retry 429 at all, and its header says so.
func TestNoRetryAfterNo429(t *testing.T) {
	for _, fx := range []string{"deadline.json", "policy.json"} {
		r := targettest.LoadReport(t, fx)
		for _, name := range []string{"nginx", "haproxy", "istio", "gateway-api", "linkerd"} {
			tg, err := Lookup(name)
			require.NoError(t, err)
			body, err := tg.Render(r, target.Options{})
			require.NoError(t, err)
			var config []string
			for _, line := range strings.Split(string(body), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), tg.Comment) {
					config = append(config, line)
				}
			}
			assert.NotContains(t, strings.Join(config, "\n"), "429", "%s %s retries 429", fx, name)
			assert.Contains(t, string(body), "429 is not retried", "%s %s: the header says why", fx, name)
		}
	}
}
