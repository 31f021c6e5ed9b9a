package targets

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenDir holds the snippets of every fixture, one folder per fixture.
const goldenDir = "../../testdata/golden/snippets"

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	path = filepath.Join(goldenDir, path)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./target/targets -update to create it")
	assert.Equal(t, string(want), string(got))
}

func loadReport(t *testing.T, name string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	require.NoError(t, err)
	var r report.Report
	require.NoError(t, json.Unmarshal(b, &r))
	return &r
}

// validate runs the target's validator on a snippet.
func validate(t *testing.T, name string, body []byte) error {
	t.Helper()
	if v, ok := goValidators[name]; ok {
		return v(body)
	}
	switch name {
	case "go":
		return validateGo(t, body)
	case "httpx":
		return validatePython(t, body)
	case "nginx":
		return validateNginx(t, body)
	case "haproxy":
		return validateHAProxy(t, body)
	}
	t.Fatalf("no validator for name %q", name)
	return nil
}

var fixtures = []struct {
	name, report string
	opts         target.Options
	only         string // the one target the fixture is for; "" for all
}{
	// The README's worked example with a 2ms RTT: one group, no call policy.
	{"mixture", "mixture.json", target.Options{}, ""},
	// Three routes with call policies: retries within a deadline, a POST
	// retried on never-sent failures only, 7 attempts (gRPC clamps to 5),
	// retry budgets.
	{"policy", "policy.json", target.Options{Service: "shop-api", Namespace: "shop"}, ""},
	// The case from a real analysis: the worked example by route
	// with a 1s deadline, 3 idempotent attempts, hedging and a 2ms RTT;
	// Gateway API's experimental retries, Linkerd's legacy ServiceProfile.
	{"deadline", "deadline.json", target.Options{GatewayAPIChannel: target.GatewayExperimental}, ""},
	{"deadline-serviceprofile", "deadline.json", target.Options{LinkerdResource: target.LinkerdServiceProfile}, "linkerd"},
}

// TestGolden pins every target's snippet of each fixture, and has each one
// read by its target's validator.
func TestGolden(t *testing.T) {
	for _, f := range fixtures {
		r := loadReport(t, f.report)
		for _, tg := range All {
			if f.only != "" && tg.Name != f.only {
				continue
			}
			t.Run(f.name+"/"+tg.Name, func(t *testing.T) {
				got, err := tg.Render(r, f.opts)
				require.NoError(t, err)
				golden(t, filepath.Join(f.name, tg.File), got)
				if tg.Comment == "" {
					notes, err := tg.Explain(r, f.opts)
					require.NoError(t, err)
					golden(t, filepath.Join(f.name, tg.File+".txt"), []byte(strings.Join(notes, "\n")+"\n"))
				}
				require.NoError(t, validate(t, tg.Name, got))
			})
		}
	}
}

// TestRegistry checks that every target has a validator, a distinct file
// name, and that unknown names are refused with the list of known ones.
func TestRegistry(t *testing.T) {
	files := map[string]bool{}
	for _, tg := range All {
		assert.False(t, files[tg.File], "file %s twice", tg.File)
		files[tg.File] = true
		assert.NotEmpty(t, tg.Summary)
	}
	assert.Equal(t, []string{"envoy", "grpc", "istio", "linkerd", "gateway-api", "resilience4j", "go", "httpx", "nginx", "haproxy"}, Names())

	_, err := ParseList("envoy,bogus")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown snippet target "bogus"`)
	assert.Contains(t, err.Error(), "envoy, grpc, istio")

	all, err := ParseList("all")
	require.NoError(t, err)
	assert.Len(t, all, len(All))
	two, err := ParseList(" GRPC , envoy,grpc")
	require.NoError(t, err)
	assert.Equal(t, []string{"envoy", "grpc"}, []string{two[0].Name, two[1].Name}, "registry order, no duplicates")
	_, err = ParseList(" , ")
	require.Error(t, err)

	_, err = Render("envoy", &report.Report{}, target.Options{})
	require.Error(t, err, "a report without groups")
}

// TestFormats pins the duration syntaxes, where a wrong one is easy to write.
func TestFormats(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		d                                   time.Duration
		proto, unit, gateway, py, goLiteral string
	}{
		{800 * ms, "0.800s", "800ms", "800ms", "0.8", "800 * time.Millisecond"},
		{time.Second, "1.000s", "1s", "1s", "1.0", "time.Second"},
		{61001 * ms, "61.001s", "61001ms", "1m1s1ms", "61.001", "61001 * time.Millisecond"},
		{600 * time.Second, "600.000s", "600s", "10m", "600.0", "600 * time.Second"},
		{ms, "0.001s", "1ms", "1ms", "0.001", "1 * time.Millisecond"},
		{3723004 * ms, "3723.004s", "3723004ms", "1h2m3s4ms", "3723.004", "3723004 * time.Millisecond"},
	} {
		assert.Equal(t, tc.proto, target.ProtoDur(tc.d))
		assert.Equal(t, tc.unit, target.UnitDur(tc.d))
		assert.Equal(t, tc.gateway, target.GatewayDur(tc.d))
		assert.Equal(t, tc.py, target.PySeconds(tc.d))
		assert.Equal(t, tc.goLiteral, target.GoDurLit(tc.d))
	}
	for _, tc := range []struct {
		s    float64
		want time.Duration
	}{
		{0.8, 800 * ms}, {0.3, 300 * ms}, {0.7915, 792 * ms}, {0.0000001, ms}, {0, ms}, {1.0000000004, time.Second}, {1.0000004, 1001 * ms},
	} {
		assert.Equal(t, tc.want, target.CeilMs(tc.s), "ceilMs(%v)", tc.s)
	}
}

// TestMatch pins how group names become path matches.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  target.PathMatch
	}{
		{"all", target.PathMatch{CatchAll: true}},
		{"other", target.PathMatch{CatchAll: true}},
		{"/users", target.PathMatch{Exact: "/users", Prefix: "/users"}},
		{"GET /users/{id}", target.PathMatch{Method: "GET", Prefix: "/users/", Regex: `^/users/[^/]+$`}},
		{"/users/{id} POST", target.PathMatch{Method: "POST", Prefix: "/users/", Regex: `^/users/[^/]+$`}},
		{"/static/*", target.PathMatch{Prefix: "/static/", Regex: `^/static/.*$`}},
		{"/a.b/{x}/c", target.PathMatch{Prefix: "/a.b/", Regex: `^/a\.b/[^/]+/c$`}},
		{"DELETE", target.PathMatch{Method: "DELETE", Prefix: "/"}},
		{"checkout", target.PathMatch{CatchAll: true, NotPath: true, Prefix: "/"}},
		{"2xx", target.PathMatch{CatchAll: true, NotPath: true, Prefix: "/"}},
	} {
		assert.Equal(t, tc.want, target.ParseMatch(tc.group), tc.group)
	}
}

// TestGRPCClamp: gRPC treats maxAttempts above 5 as 5; the snippet says 5
// and its explanation says why.
func TestGRPCClamp(t *testing.T) {
	r := loadReport(t, "policy.json")
	body, err := Render("grpc", r, target.Options{})
	require.NoError(t, err)
	assert.Contains(t, string(body), `"maxAttempts": 5`)
	assert.NotContains(t, string(body), `"maxAttempts": 7`)
	tg, _ := Lookup("grpc")
	notes, err := tg.Explain(r, target.Options{})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(notes, "\n"), "7 attempts clamped to 5")
}

// TestOneAttempt: without a call policy a snippet has no retries, and
// targets that retry by default are told not to.
func TestOneAttempt(t *testing.T) {
	r := loadReport(t, "mixture.json")
	for name, want := range map[string]string{
		"istio":   "attempts: 0",
		"haproxy": "retries 0",
		"nginx":   "proxy_next_upstream off;",
		"linkerd": "timeout.linkerd.io/request: \"800ms\"\nspec:",
	} {
		body, err := Render(name, r, target.Options{})
		require.NoError(t, err)
		assert.Contains(t, string(body), want, name)
	}
	for _, name := range []string{"envoy", "grpc"} {
		body, err := Render(name, r, target.Options{})
		require.NoError(t, err)
		assert.NotContains(t, string(body), "retry_policy:", name)
		assert.NotContains(t, string(body), "retryPolicy", name)
	}
}

// TestHeaderExplains: the header says which data and rule made the timeout.
func TestHeaderExplains(t *testing.T) {
	r := loadReport(t, "mixture.json")
	body, err := Render("envoy", r, target.Options{})
	require.NoError(t, err)
	assert.Contains(t, string(body), "#   timeout 0.800s: 800ms = p99.9 of 200,000 calls (792ms), rounded up")
	assert.Contains(t, string(body), "max_requests 25 = bulkhead (Poisson p99.9 of 13 calls in flight at the peak rate)")
}

// TestWeirdNamesTools runs the binary-validated targets on group names a
// config language could choke on.
func TestWeirdNamesTools(t *testing.T) {
	r := loadReport(t, "policy.json")
	names := []string{`GET /a b/{id}`, `/<script>alert("x")</script>`, "/caf\u00e9/{id}/;#{}", `/back\slash/*`, "checkout", "POST /a'quote"}
	for i := range r.Groups {
		r.Groups[i].Name = names[i%len(names)]
	}
	extra := r.Groups[0]
	extra.Name = names[3]
	r.Groups = append(r.Groups, extra)
	for _, name := range []string{"go", "httpx", "nginx", "haproxy"} {
		t.Run(name, func(t *testing.T) {
			body, err := Render(name, r, target.Options{Service: "my service!"})
			require.NoError(t, err)
			require.NoError(t, validate(t, name, body), "%s", body)
		})
	}
}

// TestValidatorsRefuse shows that each validator would catch the mistakes
// the snippets must not make: a snippet with the mistake is refused.
func TestValidatorsRefuse(t *testing.T) {
	r := loadReport(t, "policy.json")
	for _, tc := range []struct {
		name, target, from, to string
		linkerd                string
	}{
		{"gateway decimal duration", "gateway-api", "request: 1s", "request: 0.5s", ""},
		{"gateway backendRequest > request", "gateway-api", "backendRequest: 351ms", "backendRequest: 9s", ""},
		{"gateway path character", "gateway-api", "value: /api/orders", `value: "/api/or ders"`, ""},
		{"gateway unknown field", "gateway-api", "    timeouts:\n", "    timeout:\n", ""},
		{"grpc maxAttempts 1", "grpc", `"maxAttempts": 3`, `"maxAttempts": 1`, ""},
		{"grpc maxBackoff < initialBackoff", "grpc", `"maxBackoff": "0.250s"`, `"maxBackoff": "0.010s"`, ""},
		{"grpc Go duration", "grpc", `"timeout": "1.000s"`, `"timeout": "1000ms"`, ""},
		{"envoy max_interval < base_interval", "envoy", "max_interval: 0.250s", "max_interval: 0.010s", ""},
		{"envoy Go duration", "envoy", "timeout: 0.800s", "timeout: 800ms", ""},
		{"envoy per_try_timeout as long as the route's", "envoy", "per_try_timeout: 0.800s", "per_try_timeout: 2.500s", ""},
		{"envoy unknown retry_on", "envoy", `retry_on: "connect-failure,refused-stream,reset-before-request"`, `retry_on: "connect-failure,timeout"`, ""},
		{"envoy zero connect timeout", "envoy", "connect_timeout: 0.006s", "connect_timeout: 0s", ""},
		{"envoy unknown field", "envoy", "num_retries: 2", "retries: 2", ""},
		{"istio sub-millisecond timeout", "istio", "perTryTimeout: 800ms", "perTryTimeout: 500us", ""},
		{"istio unknown field", "istio", "perTryTimeout: 800ms", "perTryTimout: 800ms", ""},
		{"istio bad retryOn", "istio", "connect-failure,reset,408,503", "connect-failure,timeout", ""},
		{"linkerd bad timeout", "linkerd", `timeout.linkerd.io/request: "1s"`, `timeout.linkerd.io/request: "1"`, ""},
		{"linkerd unknown annotation", "linkerd", "retry.linkerd.io/limit:", "retry.linkerd.io/limits:", ""},
		{"linkerd parent is a Gateway", "linkerd", "    kind: Service\n", "    kind: Gateway\n", ""},
		{"linkerd bad condition", "linkerd", `retry.linkerd.io/http: "408,503"`, `retry.linkerd.io/http: "408,timeout"`, ""},
		{"linkerd unknown field", "linkerd", "    backendRefs:", "    backendRef:", ""},
		{"serviceprofile missing ttl", "linkerd", "    ttl: 10s\n", "", target.LinkerdServiceProfile},
		{"serviceprofile bad timeout", "linkerd", "timeout: 1s", "timeout: 1", target.LinkerdServiceProfile},
		{"serviceprofile unknown field", "linkerd", "isRetryable: false", "retryable: false", target.LinkerdServiceProfile},
		{"resilience4j compound duration", "resilience4j", "timeoutDuration: 351ms", "timeoutDuration: 1s351ms", ""},
		{"resilience4j randomizedWaitFactor 1", "resilience4j", "randomizedWaitFactor: 0.5", "randomizedWaitFactor: 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := Render(tc.target, r, target.Options{Service: "shop-api", Namespace: "shop", LinkerdResource: tc.linkerd})
			require.NoError(t, err)
			require.Contains(t, string(body), tc.from)
			// The last occurrence: the first may be in the header.
			i := strings.LastIndex(string(body), tc.from)
			bad := string(body[:i]) + tc.to + string(body[i+len(tc.from):])
			assert.Error(t, goValidators[tc.target]([]byte(bad)))
		})
	}
}
