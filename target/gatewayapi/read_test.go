package gatewayapi_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gatewayapi"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

var gatewayFixtures = targettest.ConfigFixtureDir("gatewayapi")

// TestReadGatewayAPIFixtures reads the Gateway API's own examples
// (origins in each file).
func TestReadGatewayAPIFixtures(t *testing.T) {
	targettest.RequireConfigFixtures(t, gatewayFixtures)
	path := func(f string) string { return filepath.Join(gatewayFixtures, f) }

	t.Run("timeouts", func(t *testing.T) {
		p := path("timeout-example.yaml")
		objs := targettest.ReadConfig(t, gatewayapi.Target, p)
		require.Len(t, objs, 1)
		o := objs[0]
		assert.Equal(t, "HTTPRoute rule", o.Kind)
		assert.Equal(t, "timeout-example rule[0]", o.Name)
		assert.Equal(t, target.Pos{File: p, Line: 13}, o.Pos)
		assert.Equal(t, &target.Setting[float64]{Value: 10, Pos: target.Pos{File: p, Line: 18}, Raw: "10s"}, o.Timeout, "request: the whole request")
		assert.Equal(t, &target.Setting[float64]{Value: 2, Pos: target.Pos{File: p, Line: 19}, Raw: "2s"}, o.PerTryTimeout, "backendRequest: one request to the backend")
		assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: "/timeout"}}, o.Matches)
		assert.Equal(t, "timeout-svc", o.Upstream)
		assert.Nil(t, o.Attempts)
	})

	t.Run("GEP-1731 retry: attempts are retries", func(t *testing.T) {
		p := path("retry-example.yaml")
		objs := targettest.ReadConfig(t, gatewayapi.Target, p)
		require.Len(t, objs, 1)
		o := objs[0]
		assert.Equal(t, &target.Setting[int]{Value: 3, Pos: target.Pos{File: p, Line: 21}, Raw: "2"}, o.Attempts)
		assert.Equal(t, []string{"500", "502", "503", "504"}, o.RetryOn.Value)
		assert.Equal(t, &target.Setting[float64]{Value: 0.1, Pos: target.Pos{File: p, Line: 22}, Raw: "100ms"}, o.BackoffBase)
		assert.Nil(t, o.Timeout, "unspecified: the implementation's")
		assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: "/"}}, o.Matches, "a rule without matches matches PathPrefix /")
		assert.Equal(t, "", o.Jitter, "the implementation's")
		assert.True(t, targettest.HasNote(o, "standard-channel field since Gateway API v1.7.0"), targettest.DescribeObject(o))
	})

	t.Run("routing examples", func(t *testing.T) {
		objs := targettest.ByName(t, targettest.ReadConfig(t, gatewayapi.Target, path("http-routing.yaml")))
		require.Len(t, objs, 3)
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "foo.example.com"}, {Kind: target.MatchPrefix, Value: "/login"}}, objs["foo-route rule[0]"].Matches)
		canary := objs["bar-route rule[0]"]
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "bar.example.com"}, {Kind: target.MatchPrefix, Value: "/"}}, canary.Matches, "a match without a path is PathPrefix /")
		assert.True(t, targettest.HasNote(canary, "headers are not modeled"))
		assert.Equal(t, "bar-svc", objs["bar-route rule[1]"].Upstream)

		objs = targettest.ByName(t, targettest.ReadConfig(t, gatewayapi.Target, path("default-match-http.yaml")))
		require.Len(t, objs, 2, "the GatewayClass and Gateway are not routes")
		assert.Contains(t, objs["default-match-route rule[1]"].Matches, target.Match{Kind: target.MatchExact, Value: "/example/exact"})
		assert.Equal(t, "my-custom-resource", objs["default-match-route rule[0]"].Upstream)
	})

	t.Run("GRPCRoute", func(t *testing.T) {
		objs := targettest.ByName(t, targettest.ReadConfig(t, gatewayapi.Target, path("grpc-routing.yaml")))
		require.Len(t, objs, 3)
		login := objs["foo-route rule[0]"]
		assert.Equal(t, "GRPCRoute rule", login.Kind)
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "foo.example.com"}, {Kind: target.MatchMethod, Value: "com.example/Login"}}, login.Matches)
		assert.Nil(t, login.Timeout)
		assert.True(t, targettest.HasNote(login, "no timeouts or retry"))
	})
}

// TestReadGatewayAPIFixturesValid decodes every fixture document strictly
// into sigs.k8s.io/gateway-api's types and checks their durations against
// the CRD's pattern.
func TestReadGatewayAPIFixturesValid(t *testing.T) {
	targettest.RequireConfigFixtures(t, gatewayFixtures)
	files, err := filepath.Glob(filepath.Join(gatewayFixtures, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		for _, doc := range targettest.FixtureDocs(t, f) {
			_, kind := targettest.KindOf(t, doc)
			switch kind {
			case "HTTPRoute":
				var hr gatewayv1.HTTPRoute
				require.NoError(t, targettest.StrictJSON(doc, &hr), f)
				for _, r := range hr.Spec.Rules {
					for _, m := range r.Matches {
						require.NoError(t, targettest.GatewayCheckPath(m.Path), f)
					}
					var durs []gatewayv1.Duration
					if r.Timeouts != nil {
						for _, d := range []*gatewayv1.Duration{r.Timeouts.Request, r.Timeouts.BackendRequest} {
							if d != nil {
								durs = append(durs, *d)
							}
						}
					}
					if r.Retry != nil && r.Retry.Backoff != nil {
						durs = append(durs, *r.Retry.Backoff)
					}
					for _, d := range durs {
						assert.True(t, targettest.GatewayDuration.MatchString(string(d)), "%s: %s", f, d)
					}
				}
			case "GRPCRoute":
				require.NoError(t, targettest.StrictJSON(doc, &gatewayv1.GRPCRoute{}), f)
			case "Gateway":
				require.NoError(t, targettest.StrictJSON(doc, &gatewayv1.Gateway{}), f)
			case "GatewayClass":
				require.NoError(t, targettest.StrictJSON(doc, &gatewayv1.GatewayClass{}), f)
			default:
				t.Fatalf("%s: kind %s", f, kind)
			}
		}
	}
}

// TestReadGatewayAPIRoundTrip reads back the HTTPRoutes tunetimeout
// writes, standard and experimental, and finds the plan's numbers.
func TestReadGatewayAPIRoundTrip(t *testing.T) {
	for _, fx := range []struct {
		report string
		opts   target.Options
	}{
		{"mixture.json", target.Options{}},
		{"policy.json", target.Options{Service: "shop-api", Namespace: "shop"}},
		{"policy.json", target.Options{Service: "shop-api", Namespace: "shop", GatewayAPIChannel: target.GatewayExperimental}},
		{"deadline.json", target.Options{GatewayAPIChannel: target.GatewayExperimental}},
	} {
		t.Run(fx.report+"/"+fx.opts.GatewayAPIChannel, func(t *testing.T) {
			r := targettest.LoadReport(t, fx.report)
			body, err := gatewayapi.Target.Render(r, fx.opts)
			require.NoError(t, err)
			require.NoError(t, validateGateway(body))
			objs, err := gatewayapi.ReadConfig("gw.yaml", body, nil, nil)
			require.NoError(t, err)
			targettest.RequireInside(t, "gw.yaml", body, objs)
			p, err := target.NewPlan(r, fx.opts)
			require.NoError(t, err)
			p.NoRetryAfter(&target.Doc{}, "") // as the writer: no 429
			routes := p.PathRoutes()
			require.Len(t, objs, len(routes))
			for i, rt := range routes {
				o := objs[i]
				assert.InDelta(t, rt.Timeout.Seconds(), o.Timeout.Value, 1e-9, o.Name)
				assert.InDelta(t, rt.PerTry.Seconds(), o.PerTryTimeout.Value, 1e-9, o.Name)
				if rt.Match.Method != "" {
					assert.Contains(t, o.Matches, target.Match{Kind: target.MatchMethod, Value: rt.Match.Method}, o.Name)
				}
				// Every rule says what it retries, on either channel:
				// attempts 0 where the plan does not retry after sending.
				require.NotNil(t, o.Attempts, o.Name)
				if rt.Attempts <= 1 || rt.NeverSentOnly() {
					assert.Equal(t, 1, o.Attempts.Value, o.Name)
					assert.Equal(t, "0", o.Attempts.Raw, o.Name)
					continue
				}
				assert.Equal(t, rt.Attempts, o.Attempts.Value, o.Name)
				assert.InDelta(t, rt.BackoffBase.Seconds(), o.BackoffBase.Value, 1e-9, o.Name)
				var codes []string
				for _, c := range rt.RetryOn {
					if n, err := strconv.Atoi(c); err == nil && n >= 400 && n <= 599 {
						codes = append(codes, c)
					}
				}
				if len(codes) > 0 {
					assert.Equal(t, codes, o.RetryOn.Value, o.Name)
				}
			}
		})
	}
}

// TestReadGatewayAPIRefuses checks that what the CRD refuses is refused
// with its line.
func TestReadGatewayAPIRefuses(t *testing.T) {
	head := "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec:\n  rules:\n  - "
	for _, c := range []struct{ body, want string }{
		{"timeouts: {request: 3x}\n", `gw.yaml:6: spec.rules[0].timeouts.request "3x": not a Gateway API duration`},
		{"timeouts: {request: 1.5s}\n", `gw.yaml:6: spec.rules[0].timeouts.request "1.5s": not a Gateway API duration`},
		{"timeouts: {request: 500}\n", `gw.yaml:6: spec.rules[0].timeouts.request "500": not a Gateway API duration`},
		{"timeouts:\n      request: 1s\n      backendRequest: 2s\n", `gw.yaml:8: spec.rules[0].timeouts.backendRequest 2s is longer than request 1s`},
		{"retry: {attempts: -1}\n", `gw.yaml:6: spec.rules[0].retry.attempts -1: the CRD's minimum is 0`},
		{"retry: {codes: [503, 302]}\n", `gw.yaml:6: spec.rules[0].retry.codes[1] 302: the CRD takes 400 to 599`},
		{"retry: {backoff: 1m30}\n", `gw.yaml:6: spec.rules[0].retry.backoff "1m30": not a Gateway API duration`},
		{"matches: [{path: {type: Glob, value: /x}}]\n", `gw.yaml:6: spec.rules[0].matches[0].path.type "Glob": want PathPrefix, Exact or RegularExpression`},
		{"matches: [{method: get}]\n", `gw.yaml:6: spec.rules[0].matches[0].method "get": not an HTTP method`},
	} {
		_, err := gatewayapi.ReadConfig("gw.yaml", []byte(head+c.body), nil, nil)
		if assert.Error(t, err, c.body) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
	// attempts 0 disables retries (v1.7.0): one attempt, written.
	objs := targettest.MustRead(t, gatewayapi.ReadConfig, "gw.yaml", head+"matches: [{method: POST}]\n    retry: {attempts: 0}\n")
	assert.Equal(t, &target.Setting[int]{Value: 1, Pos: target.Pos{File: "gw.yaml", Line: 7}, Raw: "0"}, objs[0].Attempts)
	assert.Nil(t, objs[0].RetryNonIdempotent, "nothing is retried")

	// A zero request timeout disables it, and then any backendRequest goes.
	objs = targettest.MustRead(t, gatewayapi.ReadConfig, "gw.yaml", head+"timeouts: {request: 0s, backendRequest: 1h}\n")
	assert.Equal(t, 0.0, objs[0].Timeout.Value)
	assert.Equal(t, 3600.0, objs[0].PerTryTimeout.Value)
}

func TestReadGatewayAPIGRPCMatches(t *testing.T) {
	const gr = `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: g, namespace: ns}
spec:
  rules:
  - name: svc
    matches:
    - method: {service: shop.Orders}
    - method: {method: Ping}
    - method: {type: RegularExpression, service: "shop\\..*"}
    backendRefs: [{name: orders, port: 50051}]
`
	objs := targettest.MustRead(t, gatewayapi.ReadConfig, "g.yaml", gr)
	require.Len(t, objs, 1)
	o := objs[0]
	assert.Equal(t, "ns/g svc", o.Name, "a named rule keeps its name")
	assert.Equal(t, []target.Match{{Kind: target.MatchMethod, Value: "shop.Orders"}}, o.Matches)
	assert.True(t, targettest.HasNote(o, "method Ping of any service"), targettest.DescribeObject(o))
	assert.True(t, targettest.HasNote(o, "method type RegularExpression"), targettest.DescribeObject(o))
	assert.Equal(t, "orders", o.Upstream)
}

// FuzzReadGatewayAPI: any bytes, no panic, positions inside the input.
func FuzzReadGatewayAPI(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(gatewayFixtures, "*.yaml"))
	for _, p := range files {
		f.Add(targettest.MustFile(f, p))
	}
	f.Add([]byte("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nspec: {rules: [{timeouts: {request: 99999h99999h99999h99999h}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := gatewayapi.ReadConfig("f.yaml", data, nil, nil)
		if err == nil {
			targettest.RequireInside(t, "f.yaml", data, objs)
		}
	})
}
