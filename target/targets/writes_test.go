package targets

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
)

// The tests of issue 29's "snippets that replay or hedge writes": what a
// snippet does with a request that writes.

// withMethods returns the deadline fixture (3 idempotent attempts, hedged)
// with its groups split by method: /api/orders/{id} PUT, /api/search GET,
// /api/users POST, each policy's method and idempotency as analyze --by
// route,method gives them.
func withMethods(t *testing.T) *report.Report {
	t.Helper()
	r := loadReport(t, "deadline.json")
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
	r := loadReport(t, "deadline.json")
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

// ruleBlocks splits a Gateway API snippet into its rules, by name.
func ruleBlocks(t *testing.T, body []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, route := range strings.Split(string(body), "\n  rules:\n")[1:] {
		route, _, _ = strings.Cut(route, "\n---")
		for _, part := range strings.Split("\n"+route, "\n  - name: ")[1:] {
			name, rest, _ := strings.Cut(part, "\n")
			out[name] = rest + "\n"
		}
	}
	return out
}

// TestGatewayRetryExplicit: an HTTPRoute rule without retry is left to the
// implementation, whose default may retry (Istio's conversion: 2 retries on
// connect-failure, refused-stream, unavailable, cancelled, 503), so a POST
// that got a 503 would be sent 3 times. Every rule says what it retries:
// attempts 0 where the plan does not retry or retries only never-sent
// failures (HTTPRoute also retries a backendRequest timeout), the codes
// where it does; on the standard channel too, which has retry since
// Gateway API v1.7.0.
func TestGatewayRetryExplicit(t *testing.T) {
	for _, ch := range []string{target.GatewayStandard, target.GatewayExperimental} {
		body, err := Render("gateway-api", loadReport(t, "policy.json"), target.Options{GatewayAPIChannel: ch})
		require.NoError(t, err)
		rules := ruleBlocks(t, body)
		require.Len(t, rules, 4, ch)
		assert.Contains(t, rules["post-api-orders"], "    retry:\n      attempts: 0\n", ch)
		assert.Contains(t, rules["all"], "    retry:\n      attempts: 0\n", "%s: the catch-all is not known to be idempotent", ch)
		assert.Contains(t, rules["get-api-users-id"], "    retry:\n      attempts: 2\n      codes: [", ch)
		assert.Contains(t, rules["get-api-search"], "    retry:\n      attempts: 6\n      codes: [408, 503]\n", ch)
		assert.NotContains(t, string(body), "the standard channel has no retry field", ch)
		require.NoError(t, validate(t, "gateway-api", body))
	}
	body, err := Render("gateway-api", loadReport(t, "mixture.json"), target.Options{})
	require.NoError(t, err)
	for name, rule := range ruleBlocks(t, body) {
		assert.Contains(t, rule, "    retry:\n      attempts: 0\n", "no call policy, one attempt: rule %s", name)
	}
}

// TestResilience4jRetryInstanceAlways: a @Retry(name=...) whose instance
// is not configured gets resilience4j's defaults (3 attempts, 500ms wait,
// every exception retried, the TimeLimiter's TimeoutException included), so
// every group has a retry instance, with maxAttempts 1 where no retry fits.
func TestResilience4jRetryInstanceAlways(t *testing.T) {
	for _, fx := range []string{"mixture.json", "policy.json", "deadline.json"} {
		r := loadReport(t, fx)
		body, err := Render("resilience4j", r, target.Options{})
		require.NoError(t, err)
		var c r4jConfig
		require.NoError(t, yaml.Unmarshal(body, &c), fx)
		p, err := target.NewPlan(r, target.Options{})
		require.NoError(t, err)
		require.NotNil(t, c.Resilience4j.Retry, "%s: no retry instances:\n%s", fx, body)
		require.Len(t, c.Resilience4j.Retry.Instances, len(p.GroupRoutes()), "%s: one retry instance per group:\n%s", fx, body)
		for name, in := range c.Resilience4j.Retry.Instances {
			assert.GreaterOrEqual(t, in.MaxAttempts, 1, "%s %s", fx, name)
		}
		require.NoError(t, validate(t, "resilience4j", body))
	}
	body, err := Render("resilience4j", loadReport(t, "mixture.json"), target.Options{})
	require.NoError(t, err)
	assert.Contains(t, string(body), "  retry:\n    instances:\n      backend:\n        maxAttempts: 1\n")
}

// TestLinkerdHTTPStatuses: Linkerd's policy controller takes in
// retry.linkerd.io/http any status from 100 to 599, a range, 5xx or
// gateway-error (linkerd2 policy-controller/k8s/index/src/outbound/index/
// http.rs, parse_http_retry), so the call policy's 408 is written, not
// left out as "not expressible". (429 is not retried: Linkerd cannot wait
// for its Retry-After.)
func TestLinkerdHTTPStatuses(t *testing.T) {
	body, err := Render("linkerd", loadReport(t, "deadline.json"), target.Options{})
	require.NoError(t, err)
	s := string(body)
	assert.Contains(t, s, `retry.linkerd.io/http: "408,`)
	assert.NotContains(t, s, "left out: connect-failure, refused-stream, 408")
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "retry.linkerd.io/http: "); ok {
			for _, c := range strings.Split(strings.Trim(v, `"`), ",") {
				assert.True(t, linkerd.Condition(c, false), "%q is not a condition Linkerd takes", c)
			}
		}
	}
}

// TestEnvoyRetryAfter: a route that retries 429 or 503 waits for their
// Retry-After (RFC 9110 section 10.2.3) through rate_limited_retry_back_off
// (RetryPolicy.RateLimitedRetryBackOff): without it Envoy retries after
// its 25ms backoff whatever the server asked for. The reader reads it back.
func TestEnvoyRetryAfter(t *testing.T) {
	body, err := Render("envoy", loadReport(t, "policy.json"), target.Options{Service: "shop-api"})
	require.NoError(t, err)
	require.NoError(t, validate(t, "envoy", body))
	objs, err := envoy.ReadConfig("envoy.yaml", body, nil, nil)
	require.NoError(t, err)
	got := map[string]float64{}
	for _, o := range objs {
		if o.Kind == "route" {
			got[o.Name] = -1
			if o.RetryAfterMax != nil {
				got[o.Name] = o.RetryAfterMax.Value
			}
		}
	}
	assert.Equal(t, map[string]float64{
		"shop-api/shop-api/POST /api/orders":    -1, // never-sent failures only
		"shop-api/shop-api/GET /api/users/{id}": envoy.RetryAfterWait.Seconds(),
		"shop-api/shop-api/GET /api/search/*":   envoy.RetryAfterWait.Seconds(),
		"shop-api/shop-api/catch-all":           -1,
	}, got)
	assert.Contains(t, string(body), "        rate_limited_retry_back_off:\n          reset_headers:\n          - name: retry-after\n            format: SECONDS\n")
}

// TestNoRetryAfterNo429: a 429 asks the client to wait (RFC 6585 section
// 4, its Retry-After RFC 9110 section 10.2.3); a target that cannot wait
// for a Retry-After retries it at once, adding load to a server that asked
// for less, so it does not retry 429 at all, and its header says so.
func TestNoRetryAfterNo429(t *testing.T) {
	for _, fx := range []string{"deadline.json", "policy.json"} {
		r := loadReport(t, fx)
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
