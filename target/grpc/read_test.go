package grpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	grpctarget "github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// grpcFixtureDir holds real service configs (ORIGIN.md says whose).
var grpcFixtureDir = targettest.ConfigFixtureDir("grpc")

// grpcTestParse parses a service config with grpc-go's own parser, through
// a resolver's ClientConn, and returns what grpc-go made of it.
func grpcTestParse(t *testing.T, js string) (*grpc.ServiceConfig, error) {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///x", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(js))
	if err != nil {
		return nil, err
	}
	require.NoError(t, cc.Close())
	built := make(chan resolver.ClientConn, 1)
	r := manual.NewBuilderWithScheme("tunetimeoutread")
	r.BuildCallback = func(_ resolver.Target, c resolver.ClientConn, _ resolver.BuildOptions) { built <- c }
	cc, err = grpc.NewClient("tunetimeoutread:///x", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(r))
	require.NoError(t, err)
	defer cc.Close()
	cc.Connect()
	var rcc resolver.ClientConn
	select {
	case rcc = <-built:
	case <-time.After(10 * time.Second):
		t.Fatal("the gRPC resolver was not built")
	}
	res := rcc.ParseServiceConfig(js)
	if res.Err != nil {
		return nil, res.Err
	}
	sc, ok := res.Config.(*grpc.ServiceConfig)
	require.True(t, ok, "%T", res.Config)
	return sc, nil
}

// grpcTestRead reads a fixture, requiring no error.
func grpcTestRead(t *testing.T, name string) ([]byte, []target.Object) {
	targettest.RequireConfigFixtures(t, grpcFixtureDir)
	t.Helper()
	data, err := os.ReadFile(filepath.Join(grpcFixtureDir, name))
	require.NoError(t, err)
	objs, err := grpctarget.ReadConfig(name, data, nil, nil)
	require.NoError(t, err)
	targettest.PBLinesInside(t, name, data, objs)
	return data, objs
}

func TestReadGRPCFixtures(t *testing.T) {
	t.Run("grpc-go's retry example: keys in any case, .01s", func(t *testing.T) {
		const file = "go-examples-retry.json"
		data, objs := grpcTestRead(t, file)
		require.Len(t, objs, 1)
		o := objs[0]
		assert.Equal(t, "grpc.examples.echo.Echo", o.Name)
		assert.Equal(t, "methodConfig", o.Kind)
		assert.Equal(t, []target.Match{{Kind: target.MatchMethod, Value: "grpc.examples.echo.Echo"}}, o.Matches)
		assert.Equal(t, targettest.PBLine(t, data, `"methodConfig": [{`, 1), o.Pos.Line)
		assert.Nil(t, o.Timeout, "no timeout: no deadline but the caller's")
		assert.Equal(t, &target.Setting[int]{Value: 4, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"MaxAttempts"`, 1)}, Raw: "4"}, o.Attempts)
		assert.Equal(t, &target.Setting[float64]{Value: 0.01, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"InitialBackoff"`, 1)}, Raw: ".01s"}, o.BackoffBase)
		assert.Equal(t, 0.01, o.BackoffMax.Value)
		assert.Equal(t, &target.Setting[[]string]{Value: []string{"UNAVAILABLE"}, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"RetryableStatusCodes"`, 1)}, Raw: "[UNAVAILABLE]"}, o.RetryOn)
		assert.Equal(t, "±20 %", o.Jitter)
		assert.Contains(t, o.Notes, "backoffMultiplier 1.0: each wait is 1.0 times the one before, up to maxBackoff")
		assert.Nil(t, o.RetryBudget)
	})
	t.Run("grpc-java's retrying example", func(t *testing.T) {
		_, objs := grpcTestRead(t, "java-examples-retrying_service_config.json")
		require.Len(t, objs, 1)
		o := targettest.PBFind(t, objs, "helloworld.Greeter/SayHello")
		assert.Equal(t, []target.Match{{Kind: target.MatchMethod, Value: "helloworld.Greeter/SayHello"}}, o.Matches)
		assert.Equal(t, 5, o.Attempts.Value)
		assert.Equal(t, 0.5, o.BackoffBase.Value)
		assert.Equal(t, 30.0, o.BackoffMax.Value)
	})
	t.Run("grpc-java's hedging example: retryThrottling", func(t *testing.T) {
		const file = "java-examples-hedging_service_config.json"
		data, objs := grpcTestRead(t, file)
		require.Len(t, objs, 1)
		o := objs[0]
		assert.Equal(t, &target.Setting[int]{Value: 3, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"maxAttempts": 3`, 1)}, Raw: "3"}, o.HedgeAttempts)
		assert.Equal(t, &target.Setting[float64]{Value: 1, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"hedgingDelay"`, 1)}, Raw: "1s"}, o.HedgeDelay)
		assert.Nil(t, o.Attempts, "hedged, not retried")
		assert.Equal(t, &target.Setting[float64]{Value: 0.1, Pos: target.Pos{File: file, Line: targettest.PBLine(t, data, `"tokenRatio"`, 1)}, Raw: "0.1"}, o.RetryBudget)
		notes := strings.Join(o.Notes, "\n")
		assert.Contains(t, notes, "grpc-go (1.85) and C-core ignore it")
		assert.Contains(t, notes, "not a percentage")
	})
	t.Run("grpc-java's retry test config: a service, two methods of two services", func(t *testing.T) {
		const file = "java-test_retry_service_config.json"
		data, objs := grpcTestRead(t, file)
		require.Len(t, objs, 3)
		s1 := targettest.PBFind(t, objs, "SimpleService1")
		assert.Equal(t, []target.Match{{Kind: target.MatchMethod, Value: "SimpleService1"}}, s1.Matches, "a whole service")
		assert.Equal(t, 3, s1.Attempts.Value)
		assert.Equal(t, 2.1, s1.BackoffBase.Value)
		assert.Equal(t, 2.2, s1.BackoffMax.Value)
		assert.Equal(t, []string{"UNAVAILABLE", "RESOURCE_EXHAUSTED"}, s1.RetryOn.Value)
		assert.Contains(t, s1.Notes, "backoffMultiplier 3: each wait is 3 times the one before, up to maxBackoff")
		s2 := targettest.PBFind(t, objs, "SimpleService2")
		assert.Equal(t, &target.Setting[int]{Value: 1, Pos: s2.Pos, Default: true}, s2.Attempts)
		assert.Nil(t, s2.RetryOn)
		both := targettest.PBFind(t, objs, "SimpleService1/Foo1, SimpleService2/Foo2")
		assert.Equal(t, []target.Match{{Kind: target.MatchMethod, Value: "SimpleService1/Foo1"}, {Kind: target.MatchMethod, Value: "SimpleService2/Foo2"}}, both.Matches)
		assert.Equal(t, targettest.PBLine(t, data, `"maxAttempts":5`, 1), both.Attempts.Pos.Line)
		assert.Contains(t, strings.Join(both.Notes, "\n"), "waitForReady")
		assert.NotContains(t, strings.Join(s1.Notes, "\n"), "waitForReady", "false")
		for _, o := range objs {
			assert.Equal(t, 0.1, o.RetryBudget.Value, o.Name)
		}
	})
	t.Run("grpc-java's hedging test config", func(t *testing.T) {
		_, objs := grpcTestRead(t, "java-test_hedging_service_config.json")
		require.Len(t, objs, 3)
		o := targettest.PBFind(t, objs, "SimpleService1")
		assert.Equal(t, 2.1, o.HedgeDelay.Value)
		assert.Equal(t, 3, o.HedgeAttempts.Value)
		assert.Contains(t, strings.Join(o.Notes, "\n"), "nonFatalStatusCodes UNAVAILABLE, RESOURCE_EXHAUSTED")
		assert.Equal(t, 0.1, targettest.PBFind(t, objs, "SimpleService1/Foo1, SimpleService2/Foo2").HedgeDelay.Value)
	})
}

// TestReadGRPCAgreesWithGRPCGo parses every fixture with grpc-go, which
// must take it, and holds what the reader read against what grpc-go made
// of it.
func TestReadGRPCAgreesWithGRPCGo(t *testing.T) {
	targettest.RequireConfigFixtures(t, grpcFixtureDir)
	entries, err := os.ReadDir(grpcFixtureDir)
	require.NoError(t, err)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			data, objs := grpcTestRead(t, e.Name())
			assert.LessOrEqual(t, bytes.Count(data, []byte("\n")), 200, "keep targettest.Fixtures small")
			sc, err := grpcTestParse(t, string(data))
			require.NoError(t, err)
			for _, o := range objs {
				for _, m := range o.Matches {
					path := "/" + m.Value
					if !strings.Contains(m.Value, "/") {
						path += "/"
					}
					mc, ok := sc.Methods[path] //nolint:staticcheck // Methods is how the parsed config can be read
					require.True(t, ok, "grpc-go has no method config %s", path)
					if o.Timeout != nil {
						assert.Equal(t, o.Timeout.Value, mc.Timeout.Seconds())
					} else {
						assert.Nil(t, mc.Timeout)
					}
					if o.RetryOn == nil {
						assert.Nil(t, mc.RetryPolicy, path)
						continue
					}
					require.NotNil(t, mc.RetryPolicy, path)
					assert.Equal(t, mc.RetryPolicy.MaxAttempts, o.Attempts.Value, path)
					assert.Equal(t, mc.RetryPolicy.InitialBackoff.Seconds(), o.BackoffBase.Value, path)
					assert.Equal(t, mc.RetryPolicy.MaxBackoff.Seconds(), o.BackoffMax.Value, path)
					assert.Len(t, mc.RetryPolicy.RetryableStatusCodes, len(o.RetryOn.Value), path)
				}
			}
		})
	}
}

func TestReadGRPCSemantics(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		check      func(t *testing.T, objs []target.Object)
	}{
		{"maxAttempts above 5 is 5; codes by number; the empty name is every method", `{
  "methodConfig": [
    {"name": [{"service": "shop.Search", "method": "Find"}], "timeout": "8.457s",
     "retryPolicy": {"maxAttempts": 7, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14, "RESOURCE_EXHAUSTED"]}},
    {"name": [{}], "timeout": "30s"}
  ],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1234}
}`, func(t *testing.T, objs []target.Object) {
			o := targettest.PBFind(t, objs, "shop.Search/Find")
			assert.Equal(t, &target.Setting[int]{Value: 5, Pos: target.Pos{File: "x.json", Line: 4}, Raw: "7"}, o.Attempts)
			assert.Contains(t, strings.Join(o.Notes, "\n"), "maxAttempts 7: gRPC makes at most 5 attempts")
			assert.Equal(t, []string{"UNAVAILABLE", "RESOURCE_EXHAUSTED"}, o.RetryOn.Value)
			assert.Equal(t, "[14, RESOURCE_EXHAUSTED]", o.RetryOn.Raw)
			assert.Equal(t, 8.457, o.Timeout.Value)
			assert.Equal(t, 0.1234, o.RetryBudget.Value)
			assert.Contains(t, strings.Join(o.Notes, "\n"), "gRPC reads tokenRatio to 3 decimals")
			all := targettest.PBFind(t, objs, "(every method)")
			assert.Nil(t, all.Matches, "no condition: every method")
			assert.Equal(t, 30.0, all.Timeout.Value)
		}},
		{"a method config without a name applies to nothing", `{"methodConfig": [{"timeout": "1s"}, {"name": [], "timeout": "2s"}]}`, func(t *testing.T, objs []target.Object) {
			assert.Empty(t, objs)
		}},
		{"a tokenRatio above 1 is a budget of 1", `{"methodConfig": [{"name": [{"service": "a"}]}], "retryThrottling": {"maxTokens": 1000, "tokenRatio": 3}}`, func(t *testing.T, objs []target.Object) {
			assert.Equal(t, 1.0, objs[0].RetryBudget.Value)
			assert.Equal(t, "3", objs[0].RetryBudget.Raw)
		}},
		{"a hedging policy without a delay sends every request at once", `{"methodConfig": [{"name": [{"service": "a"}], "hedgingPolicy": {"maxAttempts": 9}}]}`, func(t *testing.T, objs []target.Object) {
			o := objs[0]
			assert.Equal(t, &target.Setting[float64]{Value: 0, Pos: o.Pos, Default: true}, o.HedgeDelay)
			assert.Equal(t, 5, o.HedgeAttempts.Value)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.json)
			objs, err := grpctarget.ReadConfig("x.json", data, nil, nil)
			require.NoError(t, err)
			targettest.PBLinesInside(t, "x.json", data, objs)
			tc.check(t, objs)
		})
	}
}

func TestReadGRPCErrors(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
		grpcGoRefuses    bool // grpc-go refuses the config too
	}{
		{"a timeout that is not a duration", `{"methodConfig": [{"name": [{"service": "a"}],
  "timeout": "abc"}]}`, `x.json:2: field "timeout": "abc" is not a duration: it does not end in s (a proto JSON duration is seconds with an "s", as "1.5s")`, true},
		{"a timeout in milliseconds", `{"methodConfig": [{"name": [{"service": "a"}], "timeout": "800ms"}]}`,
			`x.json:1: field "timeout": "800ms" is not a duration: it is not a number of seconds (a proto JSON duration is seconds with an "s", as "1.5s")`, true},
		{"a timeout as a number", `{"methodConfig": [{"name": [{"service": "a"}], "timeout": 1}]}`,
			`x.json:1: field "timeout": 1 is not a duration: gRPC takes a string of seconds, as "1s"`, true},
		{"one attempt", `{"methodConfig": [{"name": [{"service": "a"}],
  "retryPolicy": {
    "maxAttempts": 1, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`,
			`x.json:3: field "maxAttempts": 1: gRPC needs at least 2 for a retryPolicy`, true},
		{"no status codes", `{"methodConfig": [{"name": [{"service": "a"}],
  "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": []}}]}`,
			`x.json:2: field "retryableStatusCodes" is empty: gRPC refuses a retryPolicy that retries no status`, true},
		{"a code in lower case", `{"methodConfig": [{"name": [{"service": "a"}],
  "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["unavailable"]}}]}`,
			`x.json:2: field "retryableStatusCodes": "unavailable" is not a status code (gRPC names them in capitals: UNAVAILABLE)`, true},
		{"a missing backoff", `{"methodConfig": [{"name": [{"service": "a"}],
  "retryPolicy": {"maxAttempts": 2, "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`,
			`x.json:2: retryPolicy has no initialBackoff: gRPC refuses it`, true},
		{"a method named twice", `{"methodConfig": [
  {"name": [{"service": "a", "method": "M"}]},
  {"name": [{"service": "a", "method": "M"}]}]}`,
			`x.json:3: name a/M is also named at line 2: gRPC refuses a service config that names a method twice`, true},
		{"a method without its service", `{"methodConfig": [{"name": [{"method": "M"}]}]}`,
			`x.json:1: name: method "M" without a service: gRPC refuses it`, true},
		{"maxTokens out of range", `{"methodConfig": [], "retryThrottling": {"maxTokens": 2000, "tokenRatio": 0.1}}`,
			`x.json:1: field "maxTokens": 2000 is outside (0, 1000]: gRPC refuses it`, true},
		{"maxAttempts as a string", `{"methodConfig": [{"name": [{"service": "a"}],
  "retryPolicy": {"maxAttempts": "3", "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`,
			`x.json:2: field "maxAttempts": 3 is not a whole number`, true},
		{"timeout 0s", `{"methodConfig": [{"name": [{"service": "a"}], "timeout": "0s"}]}`,
			`x.json:1: field "timeout": "0s": every call would fail at once with DEADLINE_EXCEEDED; leave timeout out for no deadline`, false},
		{"YAML", "methodConfig:\n- name: [{service: a}]\n", `x.json:1: a gRPC service config is a JSON object, {"methodConfig": [...]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := grpctarget.ReadConfig("x.json", []byte(tc.json), nil, nil)
			require.Error(t, err)
			var re *target.ReadError
			require.True(t, errors.As(err, &re), "%T", err)
			assert.Equal(t, tc.want, err.Error())
			_, gerr := grpcTestParse(t, tc.json)
			assert.Equal(t, tc.grpcGoRefuses, gerr != nil, "grpc-go: %v", gerr)
		})
	}
}

func TestReadGRPCDetect(t *testing.T) {
	targettest.RequireConfigFixtures(t, grpcFixtureDir)
	for _, tc := range []struct {
		file, content string
		want          bool
	}{
		{"grpc.json", `{"methodConfig": []}`, true},
		{"service_config.JSON", "\ufeff\n  {\"MethodConfig\": []}", true},
		{"-", `{"methodConfig": []}`, true},
		{"grpc.yaml", "methodConfig: []\n", false},
		{"cds.json", `{"name": "c", "connect_timeout": "1s"}`, false},
		{"list.json", `[{"methodConfig": []}]`, false},
		{"notes.txt", `{"methodConfig": []}`, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			assert.Equal(t, tc.want, grpctarget.Detect(tc.file, []byte(tc.content)))
		})
	}
	entries, err := os.ReadDir(grpcFixtureDir)
	require.NoError(t, err)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(grpcFixtureDir, e.Name()))
		require.NoError(t, err)
		assert.True(t, grpctarget.Detect(e.Name(), data), e.Name())
		assert.False(t, envoy.Detect(e.Name(), data), e.Name())
	}
	assert.True(t, grpctarget.Target.Reads())
}

// TestReadGRPCRoundTrip reads back the service configs tunetimeout
// writes: each method config with the numbers of the report.
func TestReadGRPCRoundTrip(t *testing.T) {
	for _, f := range targettest.Fixtures {
		if !f.For(grpctarget.Target) {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			r := targettest.LoadReport(t, f.Report)
			body, err := grpctarget.Target.Render(r, f.Opts)
			require.NoError(t, err)
			objs, err := grpctarget.ReadConfig("grpc.json", body, nil, nil)
			require.NoError(t, err)
			targettest.PBLinesInside(t, "grpc.json", body, objs)
			p, err := target.NewPlan(r, f.Opts)
			require.NoError(t, err)
			secs := func(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
			svc := target.GrpcFullName(p.Service)
			i := 0
			for _, rt := range p.PathRoutes() {
				if rt.Synthetic && i > 0 && grpcTestHasMatch(objs[:i], target.Match{Kind: target.MatchMethod, Value: svc}) {
					continue // the writer's rule: a method config of the whole service already serves it
				}
				require.Less(t, i, len(objs))
				o := objs[i]
				i++
				require.NotEmpty(t, o.Matches, rt.Group)
				assert.True(t, strings.HasPrefix(o.Matches[0].Value, svc) || target.GRPCMethodPath(rt.Group) != nil, rt.Group)
				assert.Equal(t, secs(rt.Timeout), o.Timeout.Value, rt.Group)
				codes, _ := grpctarget.Codes(rt.RetryOn)
				switch {
				case rt.Hedge != nil:
					assert.Equal(t, min(rt.Hedge.Attempts, grpctarget.MaxAttempts), o.HedgeAttempts.Value, rt.Group)
					assert.Equal(t, secs(target.CeilMs(rt.Hedge.DelaySeconds)), o.HedgeDelay.Value, rt.Group)
				case rt.Attempts <= 1 || rt.NeverSentOnly() || len(codes) == 0:
					assert.Equal(t, &target.Setting[int]{Value: 1, Pos: o.Pos, Default: true}, o.Attempts, rt.Group)
				default:
					assert.Equal(t, min(rt.Attempts, grpctarget.MaxAttempts), o.Attempts.Value, rt.Group)
					assert.Equal(t, secs(rt.BackoffBase), o.BackoffBase.Value, rt.Group)
					assert.Equal(t, secs(rt.BackoffCap), o.BackoffMax.Value, rt.Group)
					assert.Equal(t, codes, o.RetryOn.Value, rt.Group)
				}
				if p.Budget != nil {
					assert.InDelta(t, *p.Budget, o.RetryBudget.Value, 0.0005, rt.Group)
				} else {
					assert.Nil(t, o.RetryBudget, rt.Group)
				}
			}
			assert.Len(t, objs, i)
		})
	}
}

// grpcTestHasMatch reports whether an object of objs has the match m.
func grpcTestHasMatch(objs []target.Object, m target.Match) bool {
	for _, o := range objs {
		for _, x := range o.Matches {
			if x == m {
				return true
			}
		}
	}
	return false
}

func FuzzReadGRPC(f *testing.F) {
	entries, _ := os.ReadDir(grpcFixtureDir) // seeds when the conformance configs are here
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(grpcFixtureDir, e.Name())); err == nil && filepath.Ext(e.Name()) == ".json" {
			f.Add(data)
		}
	}
	for _, name := range []string{"mixture.json", "policy.json", "deadline.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", name))
		require.NoError(f, err)
		var r report.Report
		require.NoError(f, json.Unmarshal(b, &r))
		if body, err := grpctarget.Target.Render(&r, target.Options{}); err == nil {
			f.Add(body)
		}
	}
	f.Add([]byte(`{"methodConfig": [{"name": [{}], "timeout": {"seconds": 1}}], "retryThrottling": {"maxTokens": 1e308, "tokenRatio": -0}}`))
	// Issue 30: one method named in many method configs.
	f.Add([]byte(`{"methodConfig": [` + strings.TrimSuffix(strings.Repeat(`{"name": [{"service": "s", "method": "m"}], "timeout": "1s"},`, 200), ",") + `]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := grpctarget.ReadConfig("f.json", data, nil, nil)
		var re *target.ReadError
		if err != nil && errors.As(err, &re) {
			lines := 1 + bytes.Count(data, []byte("\n"))
			if re.Pos.File != "f.json" || re.Pos.Line < 0 || re.Pos.Line > lines {
				t.Fatalf("error at %s, outside the file", re.Pos)
			}
		}
		targettest.PBLinesInside(t, "f.json", data, objs)
		for _, o := range objs {
			if o.Attempts != nil && (o.Attempts.Value < 1 || o.Attempts.Value > grpctarget.MaxAttempts) {
				t.Fatalf("%s: %d attempts", o.Name, o.Attempts.Value)
			}
			if o.RetryBudget != nil && (o.RetryBudget.Value <= 0 || o.RetryBudget.Value > 1) {
				t.Fatalf("%s: retry budget %v", o.Name, o.RetryBudget.Value)
			}
		}
	})
}
