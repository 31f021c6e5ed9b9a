package linkerd_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/linkerd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

var linkerdFixtures = targettest.ConfigFixtureDir("linkerd")

// TestReadLinkerdFixtures reads Linkerd's books demo and reference
// examples (origins in each file).
func TestReadLinkerdFixtures(t *testing.T) {
	targettest.RequireConfigFixtures(t, linkerdFixtures)
	path := func(f string) string { return filepath.Join(linkerdFixtures, f) }

	t.Run("books demo HTTPRoutes, annotated by the task", func(t *testing.T) {
		p := path("booksapp-httproutes.yaml")
		objs := targettest.ReadConfig(t, linkerd.Target, p)
		require.Len(t, objs, 1, "only books-create carries Linkerd annotations")
		o := objs[0]
		assert.Equal(t, "HTTPRoute (Linkerd annotations)", o.Kind)
		assert.Equal(t, "booksapp/books-create rule[0]", o.Name)
		assert.Equal(t, "books", o.Upstream, "no backendRefs: the parent Service")
		assert.Equal(t, []target.Match{{Kind: target.MatchExact, Value: "/books.json"}, {Kind: target.MatchMethod, Value: "POST"}}, o.Matches)
		assert.Equal(t, &target.Setting[float64]{Value: 0.015, Pos: target.Pos{File: p, Line: 33}, Raw: "15ms"}, o.Timeout)
		assert.Equal(t, &target.Setting[int]{Value: 4, Pos: target.Pos{File: p, Line: 32}, Raw: "3"}, o.Attempts, "limit 3 is 3 retries after the first")
		assert.Equal(t, &target.Setting[[]string]{Value: []string{"5xx"}, Pos: target.Pos{File: p, Line: 31}, Raw: "5xx"}, o.RetryOn)
		assert.Nil(t, o.PerTryTimeout, "no retry.linkerd.io/timeout")
		assert.Equal(t, target.Defaulted(0.025, target.Pos{File: p, Line: 32}), o.BackoffBase)
		assert.Equal(t, 0.25, o.BackoffMax.Value)
		assert.Equal(t, "full", o.Jitter)
		assert.True(t, o.RetryNonIdempotent.Value, "POST is retried")
	})

	t.Run("reference examples", func(t *testing.T) {
		p := path("reference-examples.yaml")
		objs := targettest.ByName(t, targettest.ReadConfig(t, linkerd.Target, p))
		require.Len(t, objs, 3)
		h := objs["schlep/schlep-default rule[0]"]
		assert.Equal(t, 3, h.Attempts.Value)
		assert.Equal(t, &target.Setting[float64]{Value: 0.3, Pos: target.Pos{File: p, Line: 14}, Raw: "300ms"}, h.PerTryTimeout)
		assert.Equal(t, []string{"5xx", "timeout"}, h.RetryOn.Value, "an attempt that reaches retry.linkerd.io/timeout is retried")
		assert.Nil(t, h.Timeout)
		g := objs["schlep/schlep-default rule[0] #2"]
		assert.Equal(t, "GRPCRoute (Linkerd annotations)", g.Kind)
		assert.Equal(t, []string{"internal", "timeout"}, g.RetryOn.Value)
		assert.Equal(t, []target.Match{{Kind: target.MatchMethod, Value: "schlep.Schlep/Get"}}, g.Matches)
		to := objs["schlep/schlep-timeouts rule[0]"]
		assert.Equal(t, &target.Setting[float64]{Value: 2, Pos: target.Pos{File: p, Line: 55}, Raw: "2s"}, to.Timeout)
		assert.Equal(t, &target.Setting[float64]{Value: 1, Pos: target.Pos{File: p, Line: 56}, Raw: "1s"}, to.PerTryTimeout, "the response timeout bounds each backend response")
		assert.Nil(t, to.Attempts, "no retry annotations: the Service's, if any")
	})

	t.Run("generated ServiceProfile: Linkerd's defaults", func(t *testing.T) {
		p := path("booksapp-webapp-serviceprofile.yaml")
		objs := targettest.ReadConfig(t, linkerd.Target, p)
		require.Len(t, objs, 9)
		o := objs[0]
		assert.Equal(t, "ServiceProfile route", o.Kind)
		assert.Equal(t, "booksapp/webapp.booksapp.svc.cluster.local GET /", o.Name)
		assert.Equal(t, target.Defaulted(10.0, target.Pos{File: p, Line: 13}), o.Timeout, "a route's timeout defaults to 10s")
		assert.Equal(t, target.Defaulted(1, target.Pos{File: p, Line: 13}), o.Attempts, "not retryable")
		assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "webapp.booksapp.svc.cluster.local"}, {Kind: target.MatchMethod, Value: "GET"}, {Kind: target.MatchRegex, Value: "/"}}, o.Matches)
		assert.Equal(t, "webapp.booksapp.svc.cluster.local", o.Upstream)
		assert.Nil(t, o.RetryBudget)
	})

	t.Run("ServiceProfile retries and timeouts", func(t *testing.T) {
		p := path("booksapp-retries-timeouts-serviceprofile.yaml")
		objs := targettest.ByName(t, targettest.ReadConfig(t, linkerd.Target, p))
		head := objs["booksapp/authors.booksapp.svc.cluster.local HEAD /authors/{id}.json"]
		assert.Equal(t, &target.Setting[[]string]{Value: []string{"5xx"}, Pos: target.Pos{File: p, Line: 18}, Raw: "true"}, head.RetryOn)
		assert.Nil(t, head.Attempts, "a retryable route has no count: the budget bounds it")
		assert.Equal(t, &target.Setting[float64]{Value: 0.2, Pos: target.Pos{File: p, Line: 20}, Raw: "0.2"}, head.RetryBudget)
		assert.False(t, head.RetryNonIdempotent.Value, "HEAD is idempotent")
		put := objs["booksapp/books.booksapp.svc.cluster.local PUT /books/{id}.json"]
		assert.Equal(t, &target.Setting[float64]{Value: 0.015, Pos: target.Pos{File: p, Line: 35}, Raw: "15ms"}, put.Timeout)
	})
}

// TestReadLinkerdFixturesValid decodes the targettest.Fixtures strictly: the
// ServiceProfiles into the structs that mirror Linkerd's CRD, the routes
// into the Gateway API's types, and checks the annotations' durations.
func TestReadLinkerdFixturesValid(t *testing.T) {
	targettest.RequireConfigFixtures(t, linkerdFixtures)
	files, err := filepath.Glob(filepath.Join(linkerdFixtures, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		for _, doc := range targettest.FixtureDocs(t, f) {
			_, kind := targettest.KindOf(t, doc)
			var ann map[string]string
			switch kind {
			case "ServiceProfile":
				var sp lkServiceProfile
				require.NoError(t, yaml.UnmarshalStrict(doc, &sp), f)
				for _, r := range sp.Spec.Routes {
					if r.Timeout != "" {
						d, err := time.ParseDuration(r.Timeout)
						require.NoError(t, err)
						assert.Positive(t, d)
					}
				}
			case "HTTPRoute":
				var hr gatewayv1.HTTPRoute
				require.NoError(t, targettest.StrictJSON(doc, &hr), f)
				ann = hr.Annotations
			case "GRPCRoute":
				var gr gatewayv1.GRPCRoute
				require.NoError(t, targettest.StrictJSON(doc, &gr), f)
				ann = gr.Annotations
			default:
				t.Fatalf("%s: kind %s", f, kind)
			}
			for _, k := range []string{linkerd.LkRequestTimeout, linkerd.LkResponseTimeout, linkerd.LkRetryTimeout} {
				if v, ok := ann[k]; ok {
					assert.True(t, linkerdDuration.MatchString(v), "%s: %s %q", f, k, v)
				}
			}
		}
	}
}

// TestReadLinkerdRoundTrip reads back what tunetimeout writes for Linkerd
// (annotated HTTPRoutes, GRPCRoutes, ServiceProfiles) and finds the
// plan's numbers.
func TestReadLinkerdRoundTrip(t *testing.T) {
	for _, fx := range []struct {
		report string
		opts   target.Options
	}{
		{"mixture.json", target.Options{}},
		{"policy.json", target.Options{Service: "shop-api", Namespace: "shop"}},
		{"deadline.json", target.Options{}},
		{"policy.json", target.Options{Service: "shop-api", Namespace: "shop", LinkerdResource: target.LinkerdServiceProfile}},
		{"deadline.json", target.Options{LinkerdResource: target.LinkerdServiceProfile}},
	} {
		t.Run(fx.report+"/"+fx.opts.LinkerdResource, func(t *testing.T) {
			r := targettest.LoadReport(t, fx.report)
			body, err := linkerd.Target.Render(r, fx.opts)
			require.NoError(t, err)
			require.NoError(t, validateLinkerd(body))
			objs, err := linkerd.ReadConfig("lk.yaml", body, nil, nil)
			require.NoError(t, err)
			targettest.RequireInside(t, "lk.yaml", body, objs)
			p, err := target.NewPlan(r, fx.opts)
			require.NoError(t, err)
			p.NoRetryAfter(&target.Doc{}, "") // as the writer: no 429
			routes := p.PathRoutes()
			require.Len(t, objs, len(routes))
			profile := fx.opts.LinkerdResource == target.LinkerdServiceProfile
			for i, rt := range routes {
				o := objs[i]
				assert.InDelta(t, rt.Timeout.Seconds(), o.Timeout.Value, 1e-9, o.Name)
				retried := rt.Attempts > 1 && !rt.NeverSentOnly()
				switch {
				case profile && retried:
					assert.Equal(t, "ServiceProfile route", o.Kind)
					assert.Equal(t, []string{"5xx"}, o.RetryOn.Value, o.Name)
					require.NotNil(t, o.RetryBudget, o.Name)
					if p.Budget != nil {
						assert.InDelta(t, *p.Budget, o.RetryBudget.Value, 1e-3, o.Name)
					}
				case profile:
					assert.Equal(t, 1, o.Attempts.Value, o.Name)
				case o.Attempts != nil:
					assert.Equal(t, rt.Attempts, o.Attempts.Value, o.Name)
					if rt.RetriesOn("timeout") {
						assert.InDelta(t, rt.PerTry.Seconds(), o.PerTryTimeout.Value, 1e-9, o.Name)
					} else {
						assert.Nil(t, o.PerTryTimeout, o.Name)
					}
				default:
					assert.False(t, retried && len(rt.Statuses()) > 0, "%s: retries on statuses were written: %s", o.Name, targettest.DescribeObject(o))
				}
			}
		})
	}
}

// TestReadLinkerdAnnotations pins how the policy controller reads the
// annotations (parse_http_retry, parse_duration).
func TestReadLinkerdAnnotations(t *testing.T) {
	route := func(kind, api, ann string) string {
		return "apiVersion: " + api + "\nkind: " + kind + "\nmetadata:\n  name: r\n  annotations:\n" + ann +
			"spec:\n  parentRefs: [{group: core, kind: Service, name: svc, port: 80}]\n  rules:\n  - timeouts: {request: 5s}\n"
	}
	t.Run("limit 0 counts as unset", func(t *testing.T) {
		objs := targettest.MustRead(t, linkerd.ReadConfig, "r.yaml", route("HTTPRoute", "gateway.networking.k8s.io/v1", "    retry.linkerd.io/http: \"502-504,429\"\n    retry.linkerd.io/limit: \"0\"\n"))
		o := objs[0]
		assert.Equal(t, &target.Setting[int]{Value: 2, Pos: target.Pos{File: "r.yaml", Line: 7}, Raw: "0"}, o.Attempts)
		assert.Equal(t, []string{"502-504", "429"}, o.RetryOn.Value)
		assert.Nil(t, o.Timeout, "Linkerd reads no timeouts of a gateway.networking.k8s.io rule")
	})
	t.Run("a policy.linkerd.io rule's request timeout, the annotation first", func(t *testing.T) {
		objs := targettest.MustRead(t, linkerd.ReadConfig, "r.yaml", route("HTTPRoute", "policy.linkerd.io/v1beta3", "    retry.linkerd.io/timeout: 250ms\n"))
		o := objs[0]
		assert.Equal(t, "HTTPRoute rule", o.Kind)
		assert.Equal(t, &target.Setting[float64]{Value: 5, Pos: target.Pos{File: "r.yaml", Line: 10}, Raw: "5s"}, o.Timeout)
		assert.Equal(t, target.Defaulted(2, target.Pos{File: "r.yaml", Line: 10}), o.Attempts, "a retry timeout alone: the limit's default 1")
		assert.Equal(t, []string{"timeout"}, o.RetryOn.Value)
		objs = targettest.MustRead(t, linkerd.ReadConfig, "r.yaml", route("HTTPRoute", "policy.linkerd.io/v1beta3", "    timeout.linkerd.io/request: 2m\n"))
		assert.Equal(t, 120.0, objs[0].Timeout.Value)
		assert.Nil(t, objs[0].Attempts)
	})
	t.Run("the response timeout ends an attempt first", func(t *testing.T) {
		objs := targettest.MustRead(t, linkerd.ReadConfig, "r.yaml", route("GRPCRoute", "policy.linkerd.io/v1alpha1", "    retry.linkerd.io/grpc: unavailable,CANCELLED\n    retry.linkerd.io/timeout: 2s\n    timeout.linkerd.io/response: 500ms\n    retry.linkerd.io/http: 5xx\n"))
		o := objs[0]
		assert.Equal(t, &target.Setting[float64]{Value: 0.5, Pos: target.Pos{File: "r.yaml", Line: 8}, Raw: "500ms"}, o.PerTryTimeout)
		assert.Equal(t, []string{"unavailable", "CANCELLED", "timeout"}, o.RetryOn.Value)
		assert.True(t, targettest.HasNote(o, "retry.linkerd.io/http is not read on a GRPCRoute"), targettest.DescribeObject(o))
	})
	t.Run("Service annotations", func(t *testing.T) {
		objs := targettest.MustRead(t, linkerd.ReadConfig, "s.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: ns\n  annotations:\n    retry.linkerd.io/grpc: internal\n    timeout.linkerd.io/request: 1d\n")
		require.Len(t, objs, 1)
		o := objs[0]
		assert.Equal(t, "Service (Linkerd annotations)", o.Kind)
		assert.Equal(t, "ns/svc", o.Name)
		assert.Equal(t, 86400.0, o.Timeout.Value)
		assert.Equal(t, []string{"internal"}, o.RetryOn.Value)
	})
	t.Run("other annotations are not Linkerd's business", func(t *testing.T) {
		objs := targettest.MustRead(t, linkerd.ReadConfig, "s.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  annotations:\n    prometheus.io/port: 9090\n")
		assert.Empty(t, objs)
	})
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct{ ann, want string }{
			{"    retry.linkerd.io/limit: 3\n", `r.yaml:6: annotation retry.linkerd.io/limit: "3" is not a string`},
			{"    retry.linkerd.io/limit: \"many\"\n", `r.yaml:6: retry.linkerd.io/limit "many": not a whole number`},
			{"    retry.linkerd.io/limit: \"70000\"\n", `r.yaml:6: retry.linkerd.io/limit "70000": not a whole number from 0 to 65535`},
			{"    retry.linkerd.io/http: 5xx, 503\n", `r.yaml:6: retry.linkerd.io/http "5xx, 503": invalid retry condition " 503"`},
			{"    retry.linkerd.io/http: \"600\"\n", `r.yaml:6: retry.linkerd.io/http "600": invalid retry condition "600"`},
			{"    retry.linkerd.io/http: 504-500\n", `r.yaml:6: retry.linkerd.io/http "504-500": invalid retry condition`},
			{"    timeout.linkerd.io/request: 1m30s\n", `r.yaml:6: timeout.linkerd.io/request "1m30s": not a duration`},
			{"    timeout.linkerd.io/request: 1.5s\n", `r.yaml:6: timeout.linkerd.io/request "1.5s": not a duration`},
			{"    timeout.linkerd.io/request: \"5\"\n", `r.yaml:6: timeout.linkerd.io/request "5": no unit`},
			{"    retry.linkerd.io/timeout: 5us\n", `r.yaml:6: retry.linkerd.io/timeout "5us": unit "us" is not one of ms, s, m, h or d`},
		} {
			_, err := linkerd.ReadConfig("r.yaml", []byte(route("HTTPRoute", "policy.linkerd.io/v1beta3", c.ann)), nil, nil)
			if assert.Error(t, err, c.ann) {
				assert.Contains(t, err.Error(), c.want)
			}
		}
	})
}

func TestReadLinkerdAnnotationDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "15ms": 15 * time.Millisecond, "2s": 2 * time.Second, "3m": 3 * time.Minute,
		"1h": time.Hour, "2d": 48 * time.Hour, " 5s ": 5 * time.Second, "+5s": 5 * time.Second, "0s": 0} {
		got, err := linkerd.AnnotationDuration(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "s", "5", "1.5s", "1m30s", "5 s", "-5s", "5S", "99999999999999999d"} {
		_, err := linkerd.AnnotationDuration(in)
		assert.Error(t, err, in)
	}
}

func TestReadLinkerdServiceProfile(t *testing.T) {
	const sp = `apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata: {name: api.ns.svc.cluster.local, namespace: ns}
spec:
  routes:
  - name: create
    condition:
      all:
      - method: POST
      - pathRegex: /orders
    isRetryable: true
    timeout: 1.5s
  - name: either
    condition:
      any:
      - method: GET
      - method: HEAD
    isRetryable: false
`
	objs := targettest.ByName(t, targettest.MustRead(t, linkerd.ReadConfig, "sp.yaml", sp))
	c := objs["ns/api.ns.svc.cluster.local create"]
	assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "api.ns.svc.cluster.local"}, {Kind: target.MatchMethod, Value: "POST"}, {Kind: target.MatchRegex, Value: "/orders"}}, c.Matches)
	assert.Equal(t, 1.5, c.Timeout.Value)
	assert.True(t, c.RetryNonIdempotent.Value, "a retryable POST")
	assert.Equal(t, target.Defaulted(0.2, target.Pos{File: "sp.yaml", Line: 1}), c.RetryBudget, "Linkerd's default budget, at the profile")
	e := objs["ns/api.ns.svc.cluster.local either"]
	assert.Equal(t, &target.Setting[int]{Value: 1, Pos: target.Pos{File: "sp.yaml", Line: 18}, Raw: "false"}, e.Attempts)
	assert.True(t, targettest.HasNote(e, "conditions any are not modeled"), targettest.DescribeObject(e))

	head := "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a}\nspec:\n"
	for _, c := range []struct{ body, want string }{
		{"  routes:\n  - condition: {method: GET}\n", `sp.yaml:6: spec.routes[0]: a route without a name`},
		{"  routes:\n  - name: a\n", `sp.yaml:6: spec.routes[0]: a route without a condition`},
		{"  routes:\n  - name: a\n    condition: {pathRegex: \"(\"}\n", `sp.yaml:7: spec.routes[0].condition.pathRegex "(": error parsing regexp`},
		{"  routes:\n  - name: a\n    condition: {method: GET}\n    timeout: 10\n", `sp.yaml:8: spec.routes[0].timeout "10": not a duration`},
		{"  routes:\n  - name: a\n    condition: {method: GET}\n    timeout: 0s\n", `sp.yaml:8: spec.routes[0].timeout "0s": want a positive duration`},
		{"  retryBudget: {retryRatio: 0.2, minRetriesPerSecond: 10}\n", `sp.yaml:5: spec.retryBudget: retryRatio, minRetriesPerSecond and ttl are all required`},
		{"  retryBudget: {retryRatio: -1, minRetriesPerSecond: 10, ttl: 10s}\n", `sp.yaml:5: spec.retryBudget.retryRatio -1: negative`},
		{"  retryBudget: {retryRatio: 0.1, minRetriesPerSecond: 10, ttl: ten}\n", `sp.yaml:5: spec.retryBudget.ttl "ten": not a duration`},
	} {
		_, err := linkerd.ReadConfig("sp.yaml", []byte(head+c.body), nil, nil)
		if assert.Error(t, err, c.body) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

// FuzzReadLinkerd: any bytes, no panic, positions inside the input.
func FuzzReadLinkerd(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(linkerdFixtures, "*.yaml"))
	for _, p := range files {
		f.Add(targettest.MustFile(f, p))
	}
	f.Add([]byte(targettest.MixedStream))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  annotations:\n    retry.linkerd.io/limit: \"+7\"\n    timeout.linkerd.io/request: 18446744073709551615d\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := linkerd.ReadConfig("f.yaml", data, nil, nil)
		if err == nil {
			targettest.RequireInside(t, "f.yaml", data, objs)
		}
	})
}
