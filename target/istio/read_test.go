package istio_test

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // the decoder Istio's own types use
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/istio"
	networkingv1 "istio.io/api/networking/v1"
)

var istioFixtures = targettest.ConfigFixtureDir("istio")

// TestReadIstioFixtures reads Istio's own samples (origins in each file).
func TestReadIstioFixtures(t *testing.T) {
	targettest.RequireConfigFixtures(t, istioFixtures)
	path := func(f string) string { return filepath.Join(istioFixtures, f) }

	t.Run("HTTPRetry example: attempts are retries", func(t *testing.T) {
		p := path("ratings-retries.yaml")
		objs := targettest.ReadConfig(t, istio.Target, p)
		require.Len(t, objs, 1)
		o := objs[0]
		assert.Equal(t, "VirtualService route", o.Kind)
		assert.Equal(t, "ratings-route http[0]", o.Name)
		assert.Equal(t, "ratings.prod.svc.cluster.local", o.Upstream)
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "ratings.prod.svc.cluster.local"}}, o.Matches)
		assert.Equal(t, &target.Setting[int]{Value: 4, Pos: target.Pos{File: p, Line: 16}, Raw: "3"}, o.Attempts, "attempts: 3 is 3 retries after the first call")
		assert.Equal(t, &target.Setting[float64]{Value: 2, Pos: target.Pos{File: p, Line: 17}, Raw: "2s"}, o.PerTryTimeout)
		assert.Equal(t, []string{"gateway-error", "connect-failure", "refused-stream"}, o.RetryOn.Value)
		assert.Equal(t, 18, o.RetryOn.Pos.Line)
		// No timeout: Istio disables the route timeout.
		assert.Equal(t, target.Defaulted(0.0, target.Pos{File: p, Line: 11}), o.Timeout)
		assert.Equal(t, target.Defaulted(0.025, target.Pos{File: p, Line: 16}), o.BackoffBase, "at the retries block")
		assert.Equal(t, 0.25, o.BackoffMax.Value)
		assert.Equal(t, "full", o.Jitter)
		assert.True(t, o.RetryNonIdempotent.Value, "no method match: POSTs are retried too")
	})

	t.Run("request timeouts task", func(t *testing.T) {
		p := path("request-timeouts.yaml")
		objs := targettest.ByName(t, targettest.ReadConfig(t, istio.Target, p))
		require.Len(t, objs, 2)
		rv := objs["reviews http[0]"]
		assert.Equal(t, &target.Setting[float64]{Value: 0.5, Pos: target.Pos{File: p, Line: 35}, Raw: "0.5s"}, rv.Timeout)
		assert.Equal(t, "reviews", rv.Upstream)
		// No retries: Istio's default policy, at the route's line.
		assert.Equal(t, target.Defaulted(3, target.Pos{File: p, Line: 31}), rv.Attempts)
		assert.Equal(t, target.Defaulted([]string{"connect-failure", "refused-stream", "unavailable", "cancelled", "503"}, target.Pos{File: p, Line: 31}), rv.RetryOn)
		assert.Nil(t, rv.PerTryTimeout)
		rt := objs["ratings http[0]"]
		assert.True(t, rt.Timeout.Default)
		assert.True(t, targettest.HasNote(rt, "fault injection"), targettest.DescribeObject(rt))
	})

	t.Run("header matches are noted", func(t *testing.T) {
		objs := targettest.ReadConfig(t, istio.Target, path("virtual-service-reviews-jason-v2-v3.yaml"))
		require.Len(t, objs, 2)
		assert.Equal(t, "reviews http[0]", objs[0].Name)
		assert.True(t, targettest.HasNote(objs[0], "headers are not modeled"), targettest.DescribeObject(objs[0]))
		assert.False(t, targettest.HasNote(objs[1], "not modeled"))
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "reviews"}}, objs[1].Matches)
	})

	t.Run("destination rules", func(t *testing.T) {
		p := path("destination-rule-examples.yaml")
		objs := targettest.ByName(t, targettest.ReadConfig(t, istio.Target, p))
		cb := objs["reviews-cb-policy"]
		assert.Equal(t, &target.Setting[int]{Value: 1000, Pos: target.Pos{File: p, Line: 18}, Raw: "1000"}, cb.MaxInFlight)
		assert.Equal(t, target.Defaulted(10.0, target.Pos{File: p, Line: 7}), cb.ConnectTimeout, "Istio's connectTimeout default is 10s")
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "reviews.prod.svc.cluster.local"}}, cb.Matches)
		assert.Equal(t, "", cb.Upstream)
		assert.True(t, targettest.HasNote(cb, "consecutive5xxErrors 7"), targettest.DescribeObject(cb))
		redis := objs["bookinfo-redis"]
		assert.Equal(t, &target.Setting[float64]{Value: 0.03, Pos: target.Pos{File: p, Line: 35}, Raw: "30ms"}, redis.ConnectTimeout)
		assert.Equal(t, target.Defaulted(1<<32-1, target.Pos{File: p, Line: 25}), redis.MaxInFlight, "http2MaxRequests defaults to 2^32-1")
		hb := objs["httpbin"]
		assert.True(t, targettest.HasNote(hb, "http1MaxPendingRequests 1"), targettest.DescribeObject(hb))
		assert.Nil(t, hb.RetryBudget)

		all := targettest.ReadConfig(t, istio.Target, path("bookinfo-destination-rule-all.yaml"))
		var names []string
		for _, o := range all {
			names = append(names, o.Name)
			assert.True(t, o.ConnectTimeout.Default)
		}
		assert.Equal(t, []string{"productpage", "reviews", "ratings", "details"}, names, "subsets without a policy of their own are the rule's")
	})
}

// TestReadIstioFixturesValid has Istio's API types read every fixture
// document, strictly, with the decoder Istio uses: the targettest.Fixtures are
// configurations Istio takes.
func TestReadIstioFixturesValid(t *testing.T) {
	targettest.RequireConfigFixtures(t, istioFixtures)
	files, err := filepath.Glob(filepath.Join(istioFixtures, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	strict := &jsonpb.Unmarshaler{}
	for _, f := range files {
		for _, doc := range targettest.FixtureDocs(t, f) {
			var o targettest.K8sObject
			require.NoError(t, targettest.StrictJSON(doc, &o), f)
			switch o.Kind {
			case "VirtualService":
				require.NoError(t, strict.Unmarshal(bytes.NewReader(o.Spec), &networkingv1.VirtualService{}), f)
			case "DestinationRule":
				require.NoError(t, strict.Unmarshal(bytes.NewReader(o.Spec), &networkingv1.DestinationRule{}), f)
			default:
				t.Fatalf("%s: kind %s", f, o.Kind)
			}
		}
	}
}

// TestReadIstioRoundTrip reads back the snippets tunetimeout writes and
// finds the report's numbers, as the plan rounded them.
func TestReadIstioRoundTrip(t *testing.T) {
	for _, fx := range []struct {
		report string
		opts   target.Options
	}{{"mixture.json", target.Options{}}, {"policy.json", target.Options{Service: "shop-api", Namespace: "shop"}}, {"deadline.json", target.Options{}}} {
		t.Run(fx.report, func(t *testing.T) {
			r := targettest.LoadReport(t, fx.report)
			body, err := istio.Target.Render(r, fx.opts)
			require.NoError(t, err)
			require.NoError(t, validateIstio(body))
			objs, err := istio.ReadConfig("istio.yaml", body, nil, nil)
			require.NoError(t, err)
			targettest.RequireInside(t, "istio.yaml", body, objs)
			p, err := target.NewPlan(r, fx.opts)
			require.NoError(t, err)
			p.NoRetryAfter(&target.Doc{}, "") // as the writer: no 429
			routes := p.PathRoutes()
			require.Len(t, objs, len(routes)+1, "a route per group and a DestinationRule")
			for i, rt := range routes {
				o := objs[i]
				assert.Equal(t, "VirtualService route", o.Kind)
				assert.InDelta(t, rt.Timeout.Seconds(), o.Timeout.Value, 1e-9, o.Name)
				assert.False(t, o.Timeout.Default)
				assert.Equal(t, max(rt.Attempts, 1), o.Attempts.Value, o.Name)
				assert.False(t, o.Attempts.Default, "the snippet always writes retries: %s", o.Name)
				if rt.Attempts > 1 {
					assert.InDelta(t, rt.PerTry.Seconds(), o.PerTryTimeout.Value, 1e-9, o.Name)
					assert.InDelta(t, rt.BackoffBase.Seconds(), o.BackoffBase.Value, 1e-9, o.Name)
					assert.Equal(t, strings.Split(istio.RetryOn(rt), ","), o.RetryOn.Value, o.Name)
				}
				if rt.Match.Method != "" {
					assert.Contains(t, o.Matches, target.Match{Kind: target.MatchMethod, Value: rt.Match.Method}, o.Name)
				}
				if rt.Match.Regex != "" {
					assert.Contains(t, o.Matches, target.Match{Kind: target.MatchRegex, Value: rt.Match.Regex}, o.Name)
				}
			}
			dr := objs[len(objs)-1]
			assert.Equal(t, "DestinationRule", dr.Kind)
			connect, _ := p.ClusterConnect()
			assert.InDelta(t, connect.Seconds(), dr.ConnectTimeout.Value, 1e-9)
			if p.Bulkhead != nil {
				assert.Equal(t, *p.Bulkhead, dr.MaxInFlight.Value)
			} else {
				assert.True(t, dr.MaxInFlight.Default)
			}
			if p.Budget != nil && target.MaxAttempts(p) > 1 {
				assert.InDelta(t, math.Min(1, *p.Budget), dr.RetryBudget.Value, 1e-5)
			}
		})
	}
}

// TestReadIstioSettings pins what Istio does with what a file leaves out
// or sets to zero.
func TestReadIstioSettings(t *testing.T) {
	const vs = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api, namespace: shop}
spec:
  hosts: [api.shop.svc.cluster.local]
  gateways: [mesh, shop/edge]
  http:
  - name: off
    match:
    - uri: {prefix: /Api}
      ignoreUriCase: true
      method: {exact: GET}
    route: [{destination: {host: api}}]
    retries:
      attempts: 0
  - name: no-attempts
    route: [{destination: {host: api}}]
    retries: {}
  - name: backoff
    route: [{destination: {host: api}}]
    retries:
      attempts: 1
      backoff: 100ms
      retryOn: "5xx,503"
`
	objs := targettest.ByName(t, targettest.MustRead(t, istio.ReadConfig, "vs.yaml", vs))
	off := objs["shop/api off"]
	assert.Equal(t, &target.Setting[int]{Value: 1, Pos: target.Pos{File: "vs.yaml", Line: 15}, Raw: "0"}, off.Attempts, "attempts 0 turns retries off")
	assert.Nil(t, off.RetryOn)
	assert.Contains(t, off.Matches, target.Match{Kind: target.MatchPrefix, Value: "/Api", CaseInsensitive: true})
	assert.Contains(t, off.Matches, target.Match{Kind: target.MatchMethod, Value: "GET"})
	assert.True(t, targettest.HasNote(off, "gateways mesh, shop/edge"), targettest.DescribeObject(off))
	none := objs["shop/api no-attempts"]
	assert.Equal(t, target.Defaulted(1, target.Pos{File: "vs.yaml", Line: 18}), none.Attempts, "retries without attempts are off: proto3's 0")
	bo := objs["shop/api backoff"]
	assert.Equal(t, 2, bo.Attempts.Value)
	assert.Equal(t, 0.1, bo.BackoffBase.Value)
	assert.Equal(t, target.Defaulted(1.0, target.Pos{File: "vs.yaml", Line: 23}), bo.BackoffMax, "Envoy caps the backoff at 10 times the base")
	assert.Equal(t, []string{"5xx", "503"}, bo.RetryOn.Value)

	const dr = `apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: api}
spec:
  host: api
  trafficPolicy:
    connectionPool:
      tcp: {connectTimeout: 250ms}
      http: {http2MaxRequests: 0}
    retryBudget: {minRetryConcurrency: 5}
  subsets:
  - name: v1
    labels: {version: v1}
  - name: v2
    labels: {version: v2}
    trafficPolicy:
      connectionPool:
        http: {http2MaxRequests: 64}
      retryBudget: {percent: 12.5}
`
	objs = targettest.ByName(t, targettest.MustRead(t, istio.ReadConfig, "dr.yaml", dr))
	require.Len(t, objs, 2)
	top := objs["api"]
	assert.Equal(t, 0.25, top.ConnectTimeout.Value)
	assert.Equal(t, &target.Setting[int]{Value: 1<<32 - 1, Pos: target.Pos{File: "dr.yaml", Line: 9}, Raw: "0"}, top.MaxInFlight, "0 is Istio's default: unlimited")
	assert.Equal(t, target.Defaulted(0.2, target.Pos{File: "dr.yaml", Line: 10}), top.RetryBudget, "percent defaults to 20")
	v2 := objs["api subset v2"]
	assert.Equal(t, target.Defaulted(10.0, target.Pos{File: "dr.yaml", Line: 14}), v2.ConnectTimeout, "the subset's connectionPool replaces the rule's whole")
	assert.Equal(t, 64, v2.MaxInFlight.Value)
	assert.Equal(t, &target.Setting[float64]{Value: 0.125, Pos: target.Pos{File: "dr.yaml", Line: 19}, Raw: "12.5"}, v2.RetryBudget)
}

// TestReadIstioRefuses checks that values Istio refuses are refused with
// the line that holds them.
func TestReadIstioRefuses(t *testing.T) {
	head := "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\nspec:\n  http:\n"
	for _, c := range []struct{ body, want string }{
		{"  - timeout: 3x\n", `vs.yaml:6: spec.http[0].timeout "3x": not a duration`},
		{"  - timeout: 0s\n", `vs.yaml:6: spec.http[0].timeout "0s": Istio refuses durations under 1ms`},
		{"  - timeout: 1500us\n", `vs.yaml:6: spec.http[0].timeout "1500us": Istio takes whole milliseconds`},
		{"  - timeout: -1s\n", `vs.yaml:6: spec.http[0].timeout "-1s": negative`},
		{"  - retries: {attempts: -1}\n", `vs.yaml:6: spec.http[0].retries.attempts -1: negative`},
		{"  - retries: {attempts: two}\n", `vs.yaml:6: spec.http[0].retries.attempts "two": not a whole number`},
		{"  - retries:\n      attempts: 2\n      retryOn: 5xx,bogus\n", `vs.yaml:8: spec.http[0].retries.retryOn: "bogus" is not a valid retryOn policy`},
		{"  - retries:\n      attempts: 2\n      retryOn: 5xx, 503\n", `vs.yaml:8: spec.http[0].retries.retryOn: " 503" is not a valid retryOn policy`},
		{"  - retries:\n      attempts: 2\n      perTryTimeout: 2\n", `vs.yaml:8: spec.http[0].retries.perTryTimeout "2": not a duration`},
		{"  - match:\n    - uri: {exact: /a, prefix: /b}\n", `vs.yaml:7: spec.http[0].match[0].uri: exact and prefix both set`},
		{"  - match: {uri: {exact: /a}}\n", `vs.yaml:6: spec.http[0].match: want a list, got a mapping`},
		{"  - 3\n", `vs.yaml:6: spec.http[0]: want a mapping, got "3"`},
	} {
		_, err := istio.ReadConfig("vs.yaml", []byte(head+c.body), nil, nil)
		if assert.Error(t, err, c.body) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
	_, err := istio.ReadConfig("dr.yaml", []byte("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a}\nspec:\n  host: a\n  trafficPolicy:\n    retryBudget: {percent: 150}\n"), nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dr.yaml:7: spec.trafficPolicy.retryBudget.percent 150: outside 0 to 100")
}

// FuzzReadIstio: any bytes, no panic, positions inside the input.
func FuzzReadIstio(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(istioFixtures, "*.yaml"))
	for _, p := range files {
		f.Add(targettest.MustFile(f, p))
	}
	f.Add([]byte("apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec: {http: [{retries: {attempts: 2147483647, backoff: 1ms}, timeout: 9223372036s}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := istio.ReadConfig("f.yaml", data, nil, nil)
		if err == nil {
			targettest.RequireInside(t, "f.yaml", data, objs)
		}
	})
}
