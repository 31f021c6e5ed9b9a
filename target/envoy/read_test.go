package envoy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	// The types the fixtures' "@type"s name, for protojson to resolve
	// their Any fields.
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// envoyFixtureDir holds real Envoy configs (ORIGIN.md says whose).
var envoyFixtureDir = targettest.ConfigFixtureDir("envoy")

func TestReadEnvoyDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		bad  string // part of the error, "" when it parses
	}{
		{in: "0.25s", want: 0.25},
		{in: "1.5s", want: 1.5},
		{in: "15s", want: 15},
		{in: "0s", want: 0},
		{in: "0.000000001s", want: 1e-9},
		{in: ".01s", want: 0.01}, // grpc-go's retry example writes it so
		{in: "+2s", want: 2},
		{in: "1.s", want: 1},
		{in: "315576000000s", want: 315576000000},
		{in: "15", bad: "does not end in s"},
		{in: "250ms", bad: "not a number of seconds"},
		{in: "abc", bad: "does not end in s"},
		{in: "-1s", bad: "negative"},
		{in: "01s", bad: "leading zero"},
		{in: "1.0000000001s", bad: "nine decimals"},
		{in: "s", bad: "no digits"},
		{in: ".s", bad: "no digits"},
		{in: "1e3s", bad: "not a number of seconds"},
		{in: " 1s", bad: "not a number of seconds"},
		{in: "1,5s", bad: "not a number of seconds"},
		{in: "315576000001s", bad: "10,000 years"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := target.PbParseDuration(tc.in)
			if tc.bad != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.bad)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func TestReadEnvoyDurationForms(t *testing.T) {
	for _, tc := range []struct {
		yaml    string
		want    float64
		wantRaw string
		bad     string
	}{
		{yaml: `t: 5s`, want: 5, wantRaw: "5s"},
		{yaml: `t: "0.250s"`, want: 0.25, wantRaw: "0.250s"},
		{yaml: `t: {seconds: 2, nanos: 500000000}`, want: 2.5, wantRaw: "{seconds: 2, nanos: 500000000}"},
		{yaml: `t: {seconds: "5"}`, want: 5, wantRaw: "{seconds: 5}"},
		{yaml: `t: {nanos: 1000000}`, want: 0.001, wantRaw: "{nanos: 1000000}"},
		{yaml: `t: 15`, bad: `as "15s"`},
		{yaml: `t: 1.5`, bad: `as "1.5s"`},
		{yaml: `t: {seconds: -1}`, bad: "outside 0"},
		{yaml: `t: {nanos: 1000000000}`, bad: "outside 0 to 999999999"},
		{yaml: `t: {minutes: 1}`, bad: `field "minutes"`},
		{yaml: `t: [1s]`, bad: "not a duration"},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			docs, err := target.YAMLDocuments(budget.New(), "x.yaml", []byte(tc.yaml))
			require.NoError(t, err)
			got, raw, err := target.PbDuration(target.MapValue(docs[0], "t"))
			if tc.bad != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.bad)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got, 1e-12)
			assert.Equal(t, tc.wantRaw, raw)
		})
	}
}

// envoyTestRead reads a fixture, requiring no error.
func envoyTestRead(t *testing.T, name string) ([]byte, []target.Object) {
	targettest.RequireConfigFixtures(t, envoyFixtureDir)
	t.Helper()
	data, err := os.ReadFile(filepath.Join(envoyFixtureDir, name))
	require.NoError(t, err)
	objs, err := envoy.ReadConfig(name, data, nil, nil)
	require.NoError(t, err)
	targettest.PBLinesInside(t, name, data, objs)
	return data, objs
}

func TestReadEnvoyBootstraps(t *testing.T) {
	t.Run("envoy-demo", func(t *testing.T) {
		data, objs := envoyTestRead(t, "envoy-demo.yaml")
		// listener_1's route_config has no virtual hosts: no route.
		require.Len(t, objs, 2)
		rt := targettest.PBFind(t, objs, "proxy/app/route 1")
		assert.Equal(t, "route", rt.Kind)
		assert.Equal(t, "loopback", rt.Upstream)
		assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: "/"}}, rt.Matches, `domains "*" is no condition`)
		routeLine := targettest.PBLine(t, data, "- match:", 1)
		assert.Equal(t, &target.Setting[float64]{Value: 15, Pos: target.Pos{File: "envoy-demo.yaml", Line: routeLine}, Default: true}, rt.Timeout)
		assert.Equal(t, &target.Setting[int]{Value: 1, Pos: target.Pos{File: "envoy-demo.yaml", Line: routeLine}, Default: true}, rt.Attempts)
		assert.Nil(t, rt.PerTryTimeout)
		assert.Nil(t, rt.RetryOn)
		c := targettest.PBFind(t, objs, "loopback")
		assert.Equal(t, "cluster", c.Kind)
		assert.Equal(t, targettest.PBLine(t, data, "- name: loopback", 1), c.Pos.Line)
		assert.Equal(t, &target.Setting[float64]{Value: 5, Pos: c.Pos, Default: true}, c.ConnectTimeout)
		assert.Equal(t, &target.Setting[int]{Value: 1024, Pos: c.Pos, Default: true}, c.MaxInFlight)
		assert.Nil(t, c.RetryBudget)
	})
	t.Run("life-of-a-request", func(t *testing.T) {
		data, objs := envoyTestRead(t, "life-of-a-request.yaml")
		require.Len(t, objs, 3)
		rt := targettest.PBFind(t, objs, "local_route/local_service/route 1")
		assert.Equal(t, []target.Match{{Kind: target.MatchExact, Value: "/foo"}, {Kind: target.MatchHost, Value: "acme.com"}}, rt.Matches)
		assert.Equal(t, "some_service", rt.Upstream)
		assert.True(t, rt.Timeout.Default)
		c := targettest.PBFind(t, objs, "some_service")
		assert.Equal(t, &target.Setting[float64]{Value: 5, Pos: target.Pos{File: "life-of-a-request.yaml", Line: targettest.PBLine(t, data, "connect_timeout: 5s", 1)}, Raw: "5s"}, c.ConnectTimeout, "written, not the default though equal")
		assert.Equal(t, targettest.PBLine(t, data, "connect_timeout: 5s", 2), targettest.PBFind(t, objs, "some_statsd_sink").ConnectTimeout.Pos.Line)
	})
	t.Run("a grpc_service timeout is not a route timeout", func(t *testing.T) {
		_, objs := envoyTestRead(t, "examples-opentelemetry-envoy-1.yaml")
		require.Len(t, objs, 5)
		for _, name := range []string{"service1_route/service1/route 1", "envoy2_route/envoy2/route 1"} {
			rt := targettest.PBFind(t, objs, name)
			assert.Equal(t, 15.0, rt.Timeout.Value, "the tracer's timeout: 0.250s is no route's")
			assert.True(t, rt.Timeout.Default)
		}
		assert.Equal(t, "envoy_cluster2", targettest.PBFind(t, objs, "envoy2_route/envoy2/route 1").Upstream)
		for _, name := range []string{"service_cluster1", "envoy_cluster2", "opentelemetry_collector"} {
			assert.True(t, targettest.PBFind(t, objs, name).ConnectTimeout.Default, name)
		}
	})
}

func TestReadEnvoyResources(t *testing.T) {
	t.Run("CDS discovery response", func(t *testing.T) {
		data, objs := envoyTestRead(t, "envoy-dynamic-cds-demo.yaml")
		require.Len(t, objs, 1)
		c := objs[0]
		assert.Equal(t, "example_proxy_cluster", c.Name)
		assert.Equal(t, targettest.PBLine(t, data, `- "@type"`, 1), c.Pos.Line)
		assert.Equal(t, &target.Setting[float64]{Value: 1, Pos: target.Pos{File: "envoy-dynamic-cds-demo.yaml", Line: 4}, Raw: "1s"}, c.ConnectTimeout)
	})
	t.Run("route configurations in camelCase: retries", func(t *testing.T) {
		const file = "gateway-retry.routes.yaml"
		data, objs := envoyTestRead(t, file)
		require.Len(t, objs, 3)
		first := targettest.PBFind(t, objs, "first-listener/first-listener/*/first-route")
		assert.Equal(t, &target.Setting[int]{Value: 4, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, "numRetries: 3", 1)}, Raw: "3"}, first.Attempts, "numRetries 3 is 4 attempts")
		assert.Equal(t, []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "retriable-status-codes", "500"}, first.RetryOn.Value)
		assert.Equal(t, targettest.PBLine(t, data, "retryOn:", 1), first.RetryOn.Pos.Line)
		assert.Equal(t, &target.Setting[float64]{Value: 0.2, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, "baseInterval: 0.200s", 1)}, Raw: "0.200s"}, first.BackoffBase)
		assert.Equal(t, &target.Setting[float64]{Value: 2, Pos: first.Pos, Default: true}, first.BackoffMax, "10 x base_interval")
		assert.Equal(t, "full", first.Jitter)
		assert.True(t, first.RetryNonIdempotent.Value, "a POST may be retried after a 500")
		assert.Nil(t, first.PerTryTimeout)
		assert.True(t, first.Timeout.Default)

		second := targettest.PBFind(t, objs, "first-listener/first-listener/foo/second-route-defaults")
		assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: "/"}, {Kind: target.MatchHost, Value: "foo"}}, second.Matches)
		assert.Equal(t, 3, second.Attempts.Value)
		assert.Equal(t, &target.Setting[float64]{Value: 0.025, Pos: second.Pos, Default: true}, second.BackoffBase)
		assert.Equal(t, &target.Setting[float64]{Value: 0.25, Pos: second.Pos, Default: true}, second.BackoffMax)

		third := targettest.PBFind(t, objs, "first-listener/first-listener/foo/third-route-only-triggers")
		assert.Equal(t, 6, third.Attempts.Value)
		assert.Equal(t, []string{"reset", "reset-before-request", "connect-failure"}, third.RetryOn.Value)
		assert.True(t, third.RetryNonIdempotent.Value, "reset follows a request that was sent")
	})
	t.Run("timeouts, 0s disabled", func(t *testing.T) {
		const file = "gateway-http-route-timeout.routes.yaml"
		data, objs := envoyTestRead(t, file)
		require.Len(t, objs, 8)
		first := targettest.PBFind(t, objs, "first-listener/first-listener/*/first-route")
		assert.Equal(t, &target.Setting[float64]{Value: 5, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, "timeout: 5s", 1)}, Raw: "5s"}, first.Timeout)
		assert.Contains(t, strings.Join(first.Notes, "\n"), `header "user" matched`)
		assert.Contains(t, strings.Join(first.Notes, "\n"), "idle_timeout 20s")
		third := targettest.PBFind(t, objs, "first-listener/first-listener/*/third-route")
		assert.Equal(t, 0.0, third.Timeout.Value)
		assert.False(t, third.Timeout.Default, "0s is written: no timeout, not the default 15s")
		assert.Equal(t, 4000.0, targettest.PBFind(t, objs, "first-listener/first-listener/*/second-route").Timeout.Value)
		// The same route name in another route configuration is another object.
		other := targettest.PBFind(t, objs, "second-listener/second-listener/*/first-route")
		assert.Equal(t, targettest.PBLine(t, data, "timeout: 5s", 2), other.Timeout.Pos.Line)
	})
	t.Run("clusters: circuit breakers and retry budget", func(t *testing.T) {
		const file = "gateway-circuit-breaker.clusters.yaml"
		data, objs := envoyTestRead(t, file)
		require.Len(t, objs, 1)
		c := objs[0]
		assert.Equal(t, "first-route-dest", c.Name)
		assert.Equal(t, 1, c.Pos.Line)
		assert.Equal(t, &target.Setting[float64]{Value: 10, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, "connectTimeout: 10s", 1)}, Raw: "10s"}, c.ConnectTimeout)
		assert.Equal(t, &target.Setting[int]{Value: 1, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, "maxRequests: 1", 1)}, Raw: "1"}, c.MaxInFlight)
		assert.Equal(t, &target.Setting[float64]{Value: 0.1, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, "value: 10", 1)}, Raw: "10"}, c.RetryBudget)
		assert.Contains(t, strings.Join(c.Notes, "\n"), "min_retry_concurrency 1")
		assert.Contains(t, strings.Join(c.Notes, "\n"), "replaces max_retries")
	})
}

func TestReadEnvoyConfigDump(t *testing.T) {
	const file = "gateway-config_dump.json"
	data, objs := envoyTestRead(t, file)
	// The listener takes its routes by RDS: the route is the
	// RoutesConfigDump's, once.
	require.Len(t, objs, 3)
	rt := targettest.PBFind(t, objs, "default-eg-http/default-eg-http/route 1")
	assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: "/"}, {Kind: target.MatchHost, Value: "www.example.com"}}, rt.Matches)
	assert.Equal(t, "default-backend-rule-0-match-0-www.example.com", rt.Upstream)
	assert.Equal(t, targettest.PBLine(t, data, `"routes": [`, 1)+1, rt.Pos.Line, "a JSON object stands at its {")
	assert.True(t, rt.Timeout.Default)
	xds := targettest.PBFind(t, objs, "xds_cluster")
	assert.Equal(t, &target.Setting[float64]{Value: 1, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"connect_timeout": "1s"`, 1)}, Raw: "1s"}, xds.ConnectTimeout)
	assert.Equal(t, 5.0, targettest.PBFind(t, objs, "default-backend-rule-0-match-0-www.example.com").ConnectTimeout.Value)
}

func TestReadEnvoySemantics(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(t *testing.T, objs []target.Object)
	}{
		{"a virtual host's retry policy serves the routes without one; a route's own replaces it whole", `
name: rc
virtual_hosts:
- name: vh
  domains: [api.example.com, "*"]
  retry_policy:
    retry_on: 5xx
    num_retries: 4
    per_try_timeout: 0.5s
  routes:
  - match: {prefix: /a}
    route: {cluster: a, timeout: 2s}
  - match: {prefix: /b}
    route:
      cluster: b
      retry_policy: {retry_on: connect-failure}
`, func(t *testing.T, objs []target.Object) {
			a := targettest.PBFind(t, objs, "rc/vh/route 1")
			assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: "/a"}, {Kind: target.MatchHost, Value: "api.example.com"}}, a.Matches)
			assert.Equal(t, 5, a.Attempts.Value)
			assert.Equal(t, 7, a.Attempts.Pos.Line, "the virtual host's num_retries")
			assert.Equal(t, 0.5, a.PerTryTimeout.Value)
			assert.Equal(t, []string{"5xx"}, a.RetryOn.Value)
			assert.Contains(t, a.Notes[0], `retry_policy of virtual host "vh" (line 6)`)
			b := targettest.PBFind(t, objs, "rc/vh/route 2")
			assert.Equal(t, &target.Setting[int]{Value: 2, Pos: b.Pos, Default: true}, b.Attempts, "num_retries defaults to 1")
			assert.Nil(t, b.PerTryTimeout, "nothing of the virtual host's policy is merged in")
			assert.False(t, b.RetryNonIdempotent.Value, "connect-failure repeats nothing")
			assert.Equal(t, &target.Setting[float64]{Value: 15, Pos: b.Pos, Default: true}, b.Timeout)
		}},
		{"rate_limited_retry_back_off honours Retry-After in SECONDS up to max_interval", `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - name: a
    match: {prefix: /a}
    route:
      cluster: a
      retry_policy:
        retry_on: retriable-status-codes
        retriable_status_codes: [429]
        rate_limited_retry_back_off:
          reset_headers: [{name: Retry-After, format: SECONDS}]
          max_interval: 60s
  - name: b
    match: {prefix: /b}
    route:
      cluster: b
      retry_policy:
        retry_on: retriable-status-codes
        retriable_status_codes: [429]
        rate_limited_retry_back_off:
          reset_headers: [{name: retry-after}]
  - name: c
    match: {prefix: /c}
    route:
      cluster: c
      retry_policy:
        retry_on: retriable-status-codes
        retriable_status_codes: [429]
        rate_limited_retry_back_off:
          reset_headers: [{name: X-RateLimit-Reset, format: UNIX_TIMESTAMP}]
`, func(t *testing.T, objs []target.Object) {
			a := targettest.PBFind(t, objs, "route_config/vh/a")
			assert.Equal(t, &target.Setting[float64]{Value: 60, Pos: target.Pos{File: "x.yaml", Line: 14}, Raw: "60s"}, a.RetryAfterMax)
			b := targettest.PBFind(t, objs, "route_config/vh/b")
			assert.Equal(t, &target.Setting[float64]{Value: 300, Pos: b.Pos, Default: true}, b.RetryAfterMax, "SECONDS and 300s are the defaults")
			c := targettest.PBFind(t, objs, "route_config/vh/c")
			assert.Nil(t, c.RetryAfterMax, "no Retry-After header: not honoured")
		}},
		{"hedging on per-try timeout: the per-try timeout is the hedge delay", `
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - name: search
    match:
      safe_regex: {regex: "^/search/.*$"}
      case_sensitive: false
      headers:
      - name: ":method"
        string_match: {exact: GET}
    route:
      cluster: s
      timeout: 1s
      retry_policy:
        retry_on: reset
        num_retries: 2
        per_try_timeout: 0.052s
      hedge_policy:
        hedge_on_per_try_timeout: true
`, func(t *testing.T, objs []target.Object) {
			o := targettest.PBFind(t, objs, "route_config/vh/search")
			assert.Equal(t, []target.Match{{Kind: target.MatchRegex, Value: "^/search/.*$", CaseInsensitive: true}, {Kind: target.MatchMethod, Value: "GET"}}, o.Matches)
			assert.Nil(t, o.PerTryTimeout, "with hedge_on_per_try_timeout it ends no attempt")
			assert.Equal(t, &target.Setting[float64]{Value: 0.052, Pos: target.Pos{File: "x.yaml", Line: 18}, Raw: "0.052s"}, o.HedgeDelay)
			assert.Equal(t, 3, o.HedgeAttempts.Value)
			assert.False(t, o.RetryNonIdempotent.Value, "GET only")
		}},
		{"weighted clusters, a POST retried on 503, a redirect", `
name: rc
virtual_hosts:
- name: vh
  domains: ["*"]
  routes:
  - match:
      path: /orders
      headers: [{name: ":method", exact_match: POST}]
    route:
      weighted_clusters:
        clusters: [{name: blue, weight: 90}, {name: green, weight: 10}]
      retry_policy:
        retry_on: retriable-status-codes
        retriable_status_codes: [503]
  - match: {prefix: /old}
    redirect: {path_redirect: /new}
`, func(t *testing.T, objs []target.Object) {
			o := targettest.PBFind(t, objs, "rc/vh/route 1")
			assert.Equal(t, "blue", o.Upstream)
			assert.Contains(t, strings.Join(o.Notes, "\n"), "blue (weight 90), green (weight 10)")
			assert.Equal(t, []string{"retriable-status-codes", "503"}, o.RetryOn.Value)
			assert.True(t, o.RetryNonIdempotent.Value)
			r := targettest.PBFind(t, objs, "rc/vh/route 2")
			assert.Empty(t, r.Upstream)
			assert.Nil(t, r.Timeout, "a redirect has no upstream to time")
		}},
		{"YAML anchors and merge keys", `
static_resources:
  clusters:
  - &base
    name: a
    connect_timeout: {seconds: 2, nanos: 500000000}
    circuit_breakers:
      thresholds:
      - {priority: HIGH, max_requests: 9}
      - {max_requests: 300, retry_budget: {}}
  - <<: *base
    name: b
`, func(t *testing.T, objs []target.Object) {
			a := targettest.PBFind(t, objs, "a")
			assert.Equal(t, 2.5, a.ConnectTimeout.Value)
			assert.Equal(t, &target.Setting[int]{Value: 300, Pos: target.Pos{File: "x.yaml", Line: 9}, Raw: "300"}, a.MaxInFlight, "the DEFAULT priority's, not HIGH's")
			assert.Equal(t, &target.Setting[float64]{Value: 0.2, Pos: a.Pos, Default: true}, a.RetryBudget, "budget_percent defaults to 20")
			b := targettest.PBFind(t, objs, "b")
			assert.Equal(t, 2.5, b.ConnectTimeout.Value, "merged from the anchor")
			assert.Equal(t, 10, b.Pos.Line)
		}},
		{"a jq'd list of a config dump's dynamic clusters", `[
  {"version_info": "1", "cluster": {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c", "connectTimeout": "0.25s",
   "circuitBreakers": {"thresholds": [{"maxRetries": 7}]}}}
]`, func(t *testing.T, objs []target.Object) {
			c := targettest.PBFind(t, objs, "c")
			assert.Equal(t, 0.25, c.ConnectTimeout.Value)
			assert.Equal(t, 2, c.Pos.Line)
			assert.Contains(t, c.Notes, "max_retries 7: at most that many retries outstanding at once to the cluster")
		}},
		{"a config dump's inline route config, repeated by its RoutesConfigDump, is read once", `{"configs": [
 {"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump", "bootstrap": {"static_resources": {"clusters": [{"name": "c"}]}}},
 {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump", "static_clusters": [{"cluster": {"name": "c"}}],
  "dynamic_warming_clusters": [{"cluster": {"name": "warming"}}]},
 {"@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump", "static_listeners": [{"listener": {"name": "l",
   "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
     "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
     "route_config": {"name": "local", "virtual_hosts": [{"name": "vh", "domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "c", "timeout": "3s"}}]}]}}}]}]}}]},
 {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump", "static_route_configs": [{"route_config": {
   "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
   "name": "local", "virtual_hosts": [{"name": "vh", "domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "c", "timeout": "3s"}}]}]}}]}
]}`, func(t *testing.T, objs []target.Object) {
			require.Len(t, objs, 2, "the bootstrap's cluster is the ClustersConfigDump's; a warming cluster serves nothing")
			assert.Equal(t, 3.0, targettest.PBFind(t, objs, "local/vh/route 1").Timeout.Value)
			assert.Equal(t, 11, targettest.PBFind(t, objs, "local/vh/route 1").Pos.Line)
		}},
		{"config_dump?resource= entries, v2alpha listeners", `configs:
- "@type": type.googleapis.com/envoy.admin.v3.RoutesConfigDump.DynamicRouteConfig
  route_config:
    name: r
    virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {path: /x}, route: {cluster: c, timeout: 0.1s}}]}]
- "@type": type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster
  cluster: {name: c, connect_timeout: 0.2s}
- "@type": type.googleapis.com/envoy.admin.v2alpha.ListenersConfigDump
  dynamic_active_listeners:
  - listener:
      name: old
      filter_chains:
      - filters:
        - name: envoy.http_connection_manager
          config:
            route_config: {virtual_hosts: [{name: v, routes: [{match: {prefix: /}, route: {cluster: c}}]}]}
`, func(t *testing.T, objs []target.Object) {
			assert.Equal(t, 0.1, targettest.PBFind(t, objs, "r/v/route 1").Timeout.Value)
			assert.Equal(t, 0.2, targettest.PBFind(t, objs, "c").ConnectTimeout.Value)
			assert.Equal(t, "c", targettest.PBFind(t, objs, "old/v/route 1").Upstream, "an unnamed route config takes its listener's name")
		}},
		{"a bare Listener, an api_listener", `
name: grpc-xds
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    route_config:
      name: rc
      virtual_hosts:
      - name: vh
        domains: [svc]
        routes:
        - match: {prefix: "", grpc: {}}
          route:
            cluster: svc
            max_stream_duration: {grpc_timeout_header_max: 0s}
`, func(t *testing.T, objs []target.Object) {
			o := targettest.PBFind(t, objs, "rc/vh/route 1")
			assert.Equal(t, []target.Match{{Kind: target.MatchPrefix, Value: ""}, {Kind: target.MatchHost, Value: "svc"}}, o.Matches)
			notes := strings.Join(o.Notes, "\n")
			assert.Contains(t, notes, "only gRPC requests")
			assert.Contains(t, notes, "grpc-timeout header sets the timeout")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(strings.TrimPrefix(tc.yaml, "\n"))
			objs, err := envoy.ReadConfig("x.yaml", data, nil, nil)
			require.NoError(t, err)
			targettest.PBLinesInside(t, "x.yaml", data, objs)
			tc.check(t, objs)
		})
	}
}

func TestReadEnvoyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a route timeout that is not a duration", `
virtual_hosts:
- name: vh
  routes:
  - match: {prefix: /}
    route:
      cluster: c
      timeout: abc
`, `x.yaml:7: field "timeout": "abc" is not a duration: it does not end in s (a proto JSON duration is seconds with an "s", as "1.5s")`},
		{"a number without its unit", `
name: c
connect_timeout: 5
`, `x.yaml:2: field "connect_timeout": 5 is not a duration: a proto JSON duration is a string of seconds with an "s", as "5s"`},
		{"connect_timeout 0", `
name: c
connect_timeout: 0s
`, `x.yaml:2: field "connect_timeout": "0s": Envoy needs a connect_timeout above 0`},
		{"max_interval below base_interval", `
virtual_hosts:
- routes:
  - match: {prefix: /}
    route:
      cluster: c
      retry_policy:
        retry_on: 5xx
        retry_back_off: {base_interval: 1s, max_interval: 0.5s}
`, `x.yaml:8: field "max_interval": "0.5s" is below base_interval "1s": Envoy refuses the route`},
		{"retry_back_off without base_interval", `
virtual_hosts:
- routes:
  - match: {prefix: /}
    route:
      cluster: c
      retry_policy:
        retry_back_off:
          max_interval: 1s
`, `x.yaml:8: retry_back_off has no base_interval: Envoy requires one`},
		{"negative num_retries", `
virtual_hosts:
- routes:
  - match: {prefix: /}
    route: {cluster: c, retry_policy: {num_retries: -1}}
`, `x.yaml:4: field "num_retries": "-1" is not a whole number`},
		{"a budget above 100 %", `
name: c
circuit_breakers:
  thresholds:
  - retry_budget:
      budget_percent: {value: 150}
`, `x.yaml:5: field "budget_percent": "150" is not a percentage from 0 to 100`},
		{"a negative per-try timeout", `
virtual_hosts:
- routes:
  - match: {prefix: /}
    route:
      cluster: c
      retry_policy:
        per_try_timeout: -1s
`, `x.yaml:7: field "per_try_timeout": "-1s" is not a duration: it is negative (a proto JSON duration is seconds with an "s", as "1.5s")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := envoy.ReadConfig("x.yaml", []byte(strings.TrimPrefix(tc.yaml, "\n")), nil, nil)
			require.Error(t, err)
			var re *target.ReadError
			require.True(t, errors.As(err, &re), "%T", err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	t.Run("every problem, each at its line", func(t *testing.T) {
		objs, err := envoy.ReadConfig("x.yaml", []byte("static_resources:\n  clusters:\n  - {name: a, connect_timeout: 1}\n  - {name: b, connect_timeout: 2s}\n  - {name: c, connect_timeout: 1h}\n"), nil, nil)
		require.Error(t, err)
		assert.Equal(t, "x.yaml:3: field \"connect_timeout\": 1 is not a duration: a proto JSON duration is a string of seconds with an \"s\", as \"1s\"\n"+
			"x.yaml:5: field \"connect_timeout\": \"1h\" is not a duration: it does not end in s (a proto JSON duration is seconds with an \"s\", as \"1.5s\")", err.Error())
		require.Len(t, objs, 3, "what could be read still is")
		assert.Equal(t, 2.0, targettest.PBFind(t, objs, "b").ConnectTimeout.Value)
		assert.Nil(t, targettest.PBFind(t, objs, "a").ConnectTimeout, "neither the default nor a guess")
	})
	t.Run("not YAML", func(t *testing.T) {
		_, err := envoy.ReadConfig("x.yaml", []byte("a: [b\n"), nil, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "x.yaml")
	})
}

func TestReadEnvoyDetect(t *testing.T) {
	targettest.RequireConfigFixtures(t, envoyFixtureDir)
	for _, tc := range []struct {
		file, content string
		want          bool
	}{
		{"envoy.yaml", "static_resources:\n  clusters: []\n", true},
		{"rds.yaml", "name: r\nvirtual_hosts: []\n", true},
		{"cds.json", `{"name": "c", "connect_timeout": "1s"}`, true},
		{"cds.yml", "resources:\n- \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n", true},
		{"dump.json", `{"configs": [{"@type": "type.googleapis.com/envoy.admin.v3.ServerInfo"}]}`, true},
		{"ENVOY.YAML", "virtualHosts: []\n", true},
		{"envoyfilter.yaml", "apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nspec:\n  configPatches:\n  - patch:\n      value:\n        connect_timeout: 1s\n", false},
		{"list.yaml", "- apiVersion: v1\n  kind: ConfigMap\n  data: {envoy.yaml: 'static_resources: {}'}\n", false},
		{"grpc.json", `{"methodConfig": [{"name": [{"service": "a"}], "timeout": "1s"}], "connect_timeout": 1}`, false},
		{"envoy.conf", "static_resources:\n", false},
		{"compose.yaml", "services:\n  envoy:\n    image: envoyproxy/envoy\n", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			assert.Equal(t, tc.want, envoy.Detect(tc.file, []byte(tc.content)))
		})
	}
	entries, err := os.ReadDir(envoyFixtureDir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "ORIGIN.md" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(envoyFixtureDir, e.Name()))
		require.NoError(t, err)
		assert.True(t, envoy.Detect(e.Name(), data), e.Name())
		assert.False(t, grpc.Detect(e.Name(), data), e.Name())
	}
	assert.True(t, envoy.Target.Reads())
}

// envoyTestValidate reads a fixture with go-control-plane's types, as
// Envoy would (protojson refuses unknown fields), and runs their
// protoc-gen-validate rules.
func envoyTestValidate(t *testing.T, name string, data []byte) {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	require.NoError(t, err)
	js = envoyTestUpperEnums(t, js)
	type validator interface {
		proto.Message
		ValidateAll() error
	}
	check := func(m validator, js []byte) {
		t.Helper()
		require.NoError(t, protojson.Unmarshal(js, m), name)
		require.NoError(t, m.ValidateAll(), name)
	}
	var probe any
	require.NoError(t, json.Unmarshal(js, &probe))
	switch v := probe.(type) {
	case []any: // a list of resources, as Envoy Gateway's translator writes them
		for _, item := range v {
			b, err := json.Marshal(item)
			require.NoError(t, err)
			if _, ok := item.(map[string]any)["virtualHosts"]; ok {
				check(&routev3.RouteConfiguration{}, b)
			} else {
				check(&clusterv3.Cluster{}, b)
			}
		}
	case map[string]any:
		switch {
		case v["static_resources"] != nil:
			check(&bootstrapv3.Bootstrap{}, js)
		case v["configs"] != nil:
			check(&adminv3.ConfigDump{}, js)
		case v["resources"] != nil:
			check(&discoveryv3.DiscoveryResponse{}, js)
		default:
			t.Fatalf("%s: what is it?", name)
		}
	}
}

// envoyTestUpperEnums writes the enum values of a config in capitals:
// Envoy reads them in any case (its quick start has type: strict_dns),
// protojson only as declared.
func envoyTestUpperEnums(t *testing.T, js []byte) []byte {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(js, &v))
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "type" || k == "lb_policy" || k == "dns_lookup_family" || k == "priority") {
					x[k] = strings.ToUpper(s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}

func TestReadEnvoyFixturesAreEnvoyConfigs(t *testing.T) {
	targettest.RequireConfigFixtures(t, envoyFixtureDir)
	entries, err := os.ReadDir(envoyFixtureDir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "ORIGIN.md" {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(envoyFixtureDir, e.Name()))
			require.NoError(t, err)
			lines := bytes.Count(data, []byte("\n"))
			assert.LessOrEqual(t, lines, 210, "keep targettest.Fixtures small")
			envoyTestValidate(t, e.Name(), data)
		})
	}
}

// TestReadEnvoyRoundTrip reads back the snippets tunetimeout writes: every
// route and the cluster with the numbers of the report.
func TestReadEnvoyRoundTrip(t *testing.T) {
	for _, f := range targettest.Fixtures {
		if !f.For(envoy.Target) {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			r := targettest.LoadReport(t, f.Report)
			body, err := envoy.Target.Render(r, f.Opts)
			require.NoError(t, err)
			objs, err := envoy.ReadConfig("envoy.yaml", body, nil, nil)
			require.NoError(t, err)
			targettest.PBLinesInside(t, "envoy.yaml", body, objs)
			p, err := target.NewPlan(r, f.Opts)
			require.NoError(t, err)
			names := target.NewUnique("-")
			routes := p.PathRoutes()
			require.Len(t, objs, len(routes)+1)
			secs := func(d interface{ Seconds() float64 }) float64 { return math.Round(d.Seconds()*1000) / 1000 }
			for _, rt := range routes {
				o := targettest.PBFind(t, objs, p.Service+"/"+p.Service+"/"+names.Name(target.RouteName(rt.Group)))
				assert.Equal(t, p.Service, o.Upstream)
				assert.Equal(t, secs(rt.Timeout), o.Timeout.Value, rt.Group)
				assert.False(t, o.Timeout.Default)
				switch {
				case rt.Match.Regex != "":
					assert.Equal(t, target.Match{Kind: target.MatchRegex, Value: rt.Match.Regex}, o.Matches[0])
				case rt.Match.Exact != "":
					assert.Equal(t, target.Match{Kind: target.MatchExact, Value: rt.Match.Exact}, o.Matches[0])
				default:
					assert.Equal(t, target.Match{Kind: target.MatchPrefix, Value: "/"}, o.Matches[0])
				}
				if rt.Match.Method != "" {
					assert.Contains(t, o.Matches, target.Match{Kind: target.MatchMethod, Value: rt.Match.Method})
				}
				switch {
				case rt.Hedge != nil:
					assert.Equal(t, max(rt.Attempts, rt.Hedge.Attempts), o.HedgeAttempts.Value, rt.Group)
					assert.Equal(t, secs(target.CeilMs(rt.Hedge.DelaySeconds)), o.HedgeDelay.Value, rt.Group)
					assert.Nil(t, o.PerTryTimeout)
				case rt.Attempts > 1:
					assert.Equal(t, rt.Attempts, o.Attempts.Value, rt.Group)
					assert.False(t, o.Attempts.Default)
					if rt.PerTry < rt.Timeout {
						assert.Equal(t, secs(rt.PerTry), o.PerTryTimeout.Value, rt.Group)
					}
					assert.Equal(t, secs(rt.BackoffBase), o.BackoffBase.Value, rt.Group)
					assert.Equal(t, secs(rt.BackoffCap), o.BackoffMax.Value, rt.Group)
					conds, codes, _ := envoy.RetryOn(rt)
					assert.Equal(t, append(strings.Split(conds, ","), codes...), o.RetryOn.Value, rt.Group)
					assert.Equal(t, !rt.NeverSentOnly() && rt.Match.Method != "GET", o.RetryNonIdempotent.Value, rt.Group)
				default:
					assert.Equal(t, &target.Setting[int]{Value: 1, Pos: o.Pos, Default: true}, o.Attempts, rt.Group)
				}
			}
			c := targettest.PBFind(t, objs, p.Service)
			connect, _ := p.ClusterConnect()
			assert.Equal(t, secs(connect), c.ConnectTimeout.Value)
			if p.Bulkhead != nil {
				assert.Equal(t, *p.Bulkhead, c.MaxInFlight.Value)
			} else {
				assert.True(t, c.MaxInFlight.Default)
			}
			if p.Budget != nil {
				assert.InDelta(t, *p.Budget, c.RetryBudget.Value, 1e-5)
			} else {
				assert.Nil(t, c.RetryBudget)
			}
		})
	}
}

func FuzzReadEnvoy(f *testing.F) {
	entries, _ := os.ReadDir(envoyFixtureDir) // seeds when the conformance configs are here
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(envoyFixtureDir, e.Name())); err == nil && e.Name() != "ORIGIN.md" {
			f.Add(data)
		}
	}
	for _, name := range []string{"mixture.json", "policy.json", "deadline.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", name))
		require.NoError(f, err)
		var r report.Report
		require.NoError(f, json.Unmarshal(b, &r))
		if body, err := envoy.Target.Render(&r, target.Options{}); err == nil {
			f.Add(body)
		}
	}
	f.Add([]byte("a: &a [*a]\nb: *a\n"))
	// Issue 30: an alias bomb of virtual hosts, and virtual hosts of one name.
	f.Add([]byte(targettest.AliasBomb("", 9, 9, "{name: v, domains: ['*'], routes: [{match: {prefix: /}, route: {cluster: c}}]}") + "name: rc\nvirtual_hosts: *a8\n"))
	f.Add([]byte("name: rc\nvirtual_hosts:\n" + strings.Repeat("- {name: v, routes: [{name: r (2), match: {prefix: /}, route: {cluster: c}}, {name: r, match: {prefix: /}, route: {cluster: c}}]}\n", 50)))
	f.Add([]byte("static_resources:\n  clusters:\n  - <<: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := envoy.ReadConfig("f.yaml", data, nil, nil)
		var re *target.ReadError
		if err != nil && errors.As(err, &re) {
			lines := 1 + bytes.Count(data, []byte("\n"))
			if re.Pos.File != "f.yaml" || re.Pos.Line < 0 || re.Pos.Line > lines {
				t.Fatalf("error at %s, outside the file", re.Pos)
			}
		}
		targettest.PBLinesInside(t, "f.yaml", data, objs)
		seen := map[string]bool{}
		for _, o := range objs {
			if seen[o.Name] {
				t.Fatalf("two objects named %q", o.Name)
			}
			seen[o.Name] = true
		}
	})
}
