package resilience4j_test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
)

var r4jFixtures = targettest.ConfigFixtureDir("resilience4j")

// TestReadResilience4jFixtures reads resilience4j's Spring Boot demo and
// its own test properties (origins in each file).
func TestReadResilience4jFixtures(t *testing.T) {
	targettest.RequireConfigFixtures(t, r4jFixtures)
	t.Run("Spring Boot demo application.yml", func(t *testing.T) {
		p := filepath.Join(r4jFixtures, "application.yml")
		objs := targettest.ReadConfig(t, resilience4j.Target, p)
		require.Len(t, objs, 2, "backendA and backendB; the circuit breaker's and rate limiter's settings are not timeouts")
		a, b := objs[0], objs[1]
		assert.Equal(t, "backendA", a.Name)
		assert.Equal(t, "resilience4j instance", a.Kind)
		assert.Equal(t, target.Pos{File: p, Line: 78}, a.Pos, "where backendA first stands: retry.instances")
		assert.Nil(t, a.Matches)
		// baseConfig: default, and configs.default for what the instances leave out.
		assert.Equal(t, &target.Setting[float64]{Value: 2, Pos: target.Pos{File: p, Line: 127}, Raw: "2s"}, a.PerTryTimeout, "timelimiter configs.default")
		assert.Nil(t, a.Timeout, "nothing bounds the whole call")
		assert.Equal(t, &target.Setting[int]{Value: 3, Pos: target.Pos{File: p, Line: 69}, Raw: "3"}, a.Attempts, "maxAttempts counts the first call")
		assert.Equal(t, &target.Setting[float64]{Value: 0.1, Pos: target.Pos{File: p, Line: 70}, Raw: "100"}, a.BackoffBase, "a bare number is milliseconds")
		assert.Equal(t, a.BackoffBase, a.BackoffMax, "a fixed wait")
		assert.Equal(t, "none", a.Jitter)
		assert.Equal(t, []string{"org.springframework.web.client.HttpServerErrorException", "java.util.concurrent.TimeoutException", "java.io.IOException"}, a.RetryOn.Value)
		assert.Equal(t, 71, a.RetryOn.Pos.Line)
		assert.Equal(t, &target.Setting[int]{Value: 10, Pos: target.Pos{File: p, Line: 88}, Raw: "10"}, a.MaxInFlight, "the instance's, over configs.default's 100")
		assert.Equal(t, target.Defaulted(0.0, target.Pos{File: p, Line: 78}), a.QueueTimeout, "maxWaitDuration defaults to 0")
		assert.True(t, targettest.HasNote(a, "cancelRunningFuture false"), targettest.DescribeObject(a))
		assert.True(t, targettest.HasNote(a, "maxAttempts, waitDuration, retryExceptions, ignoreExceptions from resilience4j.retry.configs.default"), targettest.DescribeObject(a))
		assert.True(t, targettest.HasNote(a, "thread-pool-bulkhead (maxThreadPoolSize 4, coreThreadPoolSize 2, queueCapacity 2)"), targettest.DescribeObject(a))

		assert.Equal(t, "backendB", b.Name)
		assert.Equal(t, &target.Setting[int]{Value: 20, Pos: target.Pos{File: p, Line: 91}, Raw: "20"}, b.MaxInFlight)
		assert.Equal(t, &target.Setting[float64]{Value: 0.01, Pos: target.Pos{File: p, Line: 90}, Raw: "10ms"}, b.QueueTimeout)
		assert.Equal(t, 2.0, b.PerTryTimeout.Value)
	})

	t.Run("resilience4j's test properties", func(t *testing.T) {
		p := filepath.Join(r4jFixtures, "resilience.properties")
		objs := targettest.ByName(t, targettest.ReadConfig(t, resilience4j.Target, p))
		require.Len(t, objs, 2)
		a, b := objs["backendA"], objs["backendB"]
		assert.Equal(t, &target.Setting[float64]{Value: 5, Pos: target.Pos{File: p, Line: 114}, Raw: "PT5S"}, a.PerTryTimeout, "the instance's own, over its baseConfig's PT10S")
		assert.Equal(t, &target.Setting[int]{Value: 3, Pos: target.Pos{File: p, Line: 65}, Raw: "3"}, a.Attempts)
		assert.Equal(t, &target.Setting[float64]{Value: 10, Pos: target.Pos{File: p, Line: 66}, Raw: "PT10S"}, a.BackoffBase)
		assert.Equal(t, []string{"java.util.concurrent.TimeoutException", "java.io.IOException"}, a.RetryOn.Value, "a comma-separated list")
		assert.Equal(t, 10, a.MaxInFlight.Value)

		assert.Equal(t, &target.Setting[float64]{Value: 15, Pos: target.Pos{File: p, Line: 115}, Raw: "PT15S"}, b.PerTryTimeout)
		assert.Equal(t, &target.Setting[int]{Value: 5, Pos: target.Pos{File: p, Line: 70}, Raw: "5"}, b.Attempts)
		assert.Equal(t, 10.0, b.BackoffBase.Value, "waitDuration from configs.default: backendB has no baseConfig")
		assert.Equal(t, &target.Setting[float64]{Value: 10, Pos: target.Pos{File: p, Line: 78}, Raw: "PT10S"}, b.BackoffMax, "exponential up to exponentialMaxWaitDuration")
		assert.Equal(t, "none", b.Jitter, "enableRandomizedWait=false")
		assert.Equal(t, &target.Setting[float64]{Value: 0.01, Pos: target.Pos{File: p, Line: 86}, Raw: "PT0.01S"}, b.QueueTimeout)
		assert.True(t, targettest.HasNote(b, "resultPredicate"), targettest.DescribeObject(b))
	})
}

// TestReadResilience4jRoundTrip reads back the YAML tunetimeout writes and
// finds what the snippet's own reader (readResilience4j, snippet_test.go) finds in it.
func TestReadResilience4jRoundTrip(t *testing.T) {
	for _, fx := range []struct {
		report string
		opts   target.Options
	}{{"mixture.json", target.Options{}}, {"policy.json", target.Options{Service: "shop-api"}}, {"deadline.json", target.Options{}}} {
		t.Run(fx.report, func(t *testing.T) {
			r := targettest.LoadReport(t, fx.report)
			body, err := resilience4j.Target.Render(r, fx.opts)
			require.NoError(t, err)
			require.NoError(t, validateResilience4j(body))
			objs, err := resilience4j.ReadConfig("resilience4j.yaml", body, nil, nil)
			require.NoError(t, err)
			targettest.RequireInside(t, "resilience4j.yaml", body, objs)
			want, err := readResilience4j(body)
			require.NoError(t, err)
			got := targettest.ByName(t, objs)
			require.Len(t, got, len(want))
			for _, b := range want {
				o, ok := got[b.Name]
				require.True(t, ok, b.Name)
				assert.InDelta(t, b.PerTry.Seconds(), o.PerTryTimeout.Value, 1e-9, b.Name)
				if b.Attempts > 1 {
					assert.Equal(t, b.Attempts, o.Attempts.Value, b.Name)
					assert.InDelta(t, b.Base.Seconds(), o.BackoffBase.Value, 1e-9, b.Name)
					assert.InDelta(t, b.Cap.Seconds(), o.BackoffMax.Value, 1e-9, b.Name)
					assert.Equal(t, b.RetryExceptions, o.RetryOn.Value, b.Name)
					assert.Equal(t, "±50 %", o.Jitter, b.Name)
				} else {
					// maxAttempts 1 written out: an unconfigured instance
					// would take resilience4j's default of 3.
					require.NotNil(t, o.Attempts, b.Name)
					assert.Equal(t, 1, o.Attempts.Value, b.Name)
					assert.False(t, o.Attempts.Default, b.Name)
				}
			}
		})
	}
}

// TestReadResilience4jBinding pins Spring's relaxed binding, the
// inheritance of configs and the .properties syntax.
func TestReadResilience4jBinding(t *testing.T) {
	t.Run("kebab case, brackets, baseConfig chains, profiles", func(t *testing.T) {
		const yml = `resilience4j:
  timelimiter:
    configs:
      slow: {timeout-duration: 5s, base-config: base}
      base: {timeout_duration: 9s}
      default: {timeoutDuration: 3s}
    instances:
      "[orders.v2]":
        base-config: slow
      inventory: {}
      default: {}
  retry.instances.inventory:
    max-attempts: 4
    wait-duration: PT0.2S
    enable-exponential-backoff: on
    enable-randomized-wait: "true"
    randomized-wait-factor: 0.25
  thread-pool-bulkhead:
    instances:
      inventory: {max-thread-pool-size: 8}
---
spring.config.activate.on-profile: prod
resilience4j.timelimiter.instances.inventory.timeoutDuration: 800ms
`
		objs := targettest.MustRead(t, resilience4j.ReadConfig, "application.yml", yml)
		var names []string
		for _, o := range objs {
			names = append(names, o.Name)
		}
		assert.Equal(t, []string{"orders.v2", "inventory", "default", "inventory (profile prod)"}, names)
		m := targettest.ByName(t, objs)
		assert.Equal(t, &target.Setting[float64]{Value: 5, Pos: target.Pos{File: "application.yml", Line: 4}, Raw: "5s"}, m["orders.v2"].PerTryTimeout, "its baseConfig's, not base's or default's")
		assert.Equal(t, &target.Setting[float64]{Value: 3, Pos: target.Pos{File: "application.yml", Line: 6}, Raw: "3s"}, m["inventory"].PerTryTimeout, "configs.default")
		assert.Equal(t, target.Defaulted(1.0, target.Pos{File: "application.yml", Line: 11}), m["default"].PerTryTimeout, "an instance named default does not take configs.default")
		inv := m["inventory"]
		assert.Equal(t, 4, inv.Attempts.Value)
		assert.Equal(t, 0.2, inv.BackoffBase.Value)
		assert.Nil(t, inv.BackoffMax, "exponential without exponentialMaxWaitDuration: no cap")
		assert.Equal(t, "±25 %", inv.Jitter)
		assert.Equal(t, target.Defaulted(resilience4j.Everything, target.Pos{File: "application.yml", Line: 10}), inv.RetryOn, "no retryExceptions: every exception")
		assert.True(t, targettest.HasNote(inv, "x1.5 without exponentialMaxWaitDuration"), targettest.DescribeObject(inv))
		assert.True(t, targettest.HasNote(inv, "maxThreadPoolSize 8") || targettest.HasNote(inv, "max-thread-pool-size 8"), targettest.DescribeObject(inv))
		prod := m["inventory (profile prod)"]
		assert.Equal(t, &target.Setting[float64]{Value: 0.8, Pos: target.Pos{File: "application.yml", Line: 23}, Raw: "800ms"}, prod.PerTryTimeout)
		assert.Equal(t, 4, prod.Attempts.Value, "the rest as without the profile")
	})

	t.Run("properties", func(t *testing.T) {
		const props = `# comment
! another
resilience4j.retry.instances.a.maxAttempts : 2
resilience4j.retry.instances.a.retry-exceptions[0]=java.io.IOException
resilience4j.retry.instances.a.retry-exceptions[1]=\
    java.util.concurrent.TimeoutException
resilience4j.retry.instances.a.wait\u0044uration 750
resilience4j.bulkhead.instances.a.maxConcurrentCalls=7
`
		objs := targettest.MustRead(t, resilience4j.ReadConfig, "application.properties", props)
		require.Len(t, objs, 1)
		a := objs[0]
		assert.Equal(t, target.Pos{File: "application.properties", Line: 3}, a.Pos)
		assert.Equal(t, &target.Setting[int]{Value: 2, Pos: target.Pos{File: "application.properties", Line: 3}, Raw: "2"}, a.Attempts)
		assert.Equal(t, []string{"java.io.IOException", "java.util.concurrent.TimeoutException"}, a.RetryOn.Value)
		assert.Equal(t, 4, a.RetryOn.Pos.Line)
		assert.Equal(t, &target.Setting[float64]{Value: 0.75, Pos: target.Pos{File: "application.properties", Line: 7}, Raw: "750"}, a.BackoffBase)
		assert.Equal(t, &target.Setting[int]{Value: 7, Pos: target.Pos{File: "application.properties", Line: 8}, Raw: "7"}, a.MaxInFlight)
		assert.Nil(t, a.PerTryTimeout, "no timelimiter instance")
	})
}

// TestReadResilience4jDuration holds the parser to Spring Boot's
// DurationStyle and java.time.Duration.parse.
func TestReadResilience4jDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"2s": 2 * time.Second, "500ms": 500 * time.Millisecond, "100": 100 * time.Millisecond, "5MS": 5 * time.Millisecond,
		"+3s": 3 * time.Second, "1d": 24 * time.Hour, "10us": 10 * time.Microsecond, "0": 0,
		"PT2S": 2 * time.Second, "PT0.5S": 500 * time.Millisecond, "pt1m": time.Minute, "PT1,25S": 1250 * time.Millisecond,
		"P1DT2H": 26 * time.Hour, "PT1H30M": 90 * time.Minute, "-PT5S": -5 * time.Second, "PT-0.5S": -500 * time.Millisecond,
		"P2D": 48 * time.Hour,
	} {
		got, err := resilience4j.SpringBootDuration(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"1.5s", "2 s", "1x", "PT", "P", "PT1.5M", "P1W", "", "s", "1h30m", "99999999999999d"} {
		_, err := resilience4j.SpringBootDuration(in)
		assert.Error(t, err, in)
	}
}

// TestReadResilience4jRefuses checks that what resilience4j or Spring
// refuse is refused with its line, in YAML and in properties.
func TestReadResilience4jRefuses(t *testing.T) {
	for _, c := range []struct{ file, body, want string }{
		{"a.yml", "resilience4j.retry.instances.a:\n  maxAttempts: 0\n", `a.yml:2: resilience4j.retry.instances.a.maxAttempts "0": resilience4j requires at least 1`},
		{"a.yml", "resilience4j.retry.instances.a:\n  maxAttempts: three\n", `a.yml:2: resilience4j.retry.instances.a.maxAttempts "three": not a whole number`},
		{"a.yml", "resilience4j.retry.instances.a:\n  waitDuration: -1s\n", `a.yml:2: resilience4j.retry.instances.a.waitDuration "-1s": negative`},
		{"a.yml", "resilience4j.timelimiter.instances.a:\n  timeoutDuration: 1.5s\n", `a.yml:2: resilience4j.timelimiter.instances.a.timeoutDuration "1.5s": not a duration`},
		{"a.yml", "resilience4j.retry.instances.a:\n  waitDuration: 1s\n  enableRandomizedWait: true\n  randomizedWaitFactor: 1\n", `a.yml:4: resilience4j.retry.instances.a.randomizedWaitFactor "1": resilience4j takes 0 to less than 1`},
		{"a.yml", "resilience4j.retry.instances.a:\n  waitDuration: 1s\n  enableExponentialBackoff: true\n  exponentialBackoffMultiplier: 0.5\n", `a.yml:4: resilience4j.retry.instances.a.exponentialBackoffMultiplier "0.5": resilience4j requires at least 1`},
		{"a.yml", "resilience4j.retry.instances.a:\n  enableExponentialBackoff: maybe\n", `a.yml:2: resilience4j.retry.instances.a.enableExponentialBackoff "maybe": want true or false`},
		{"a.yml", "resilience4j.bulkhead.instances.a:\n  baseConfig: shared\n  maxConcurrentCalls: 3\n", `a.yml:2: resilience4j.bulkhead.instances.a.baseConfig "shared": resilience4j.bulkhead.configs has no "shared"`},
		{"a.yml", "resilience4j.bulkhead:\n  configs:\n    x: {baseConfig: y}\n    y: {baseConfig: x}\n  instances:\n    a: {baseConfig: x}\n", `the baseConfig chain comes back to`},
		{"a.properties", "\n\nresilience4j.timelimiter.instances.a.timeoutDuration=10x\n", `a.properties:3: resilience4j.timelimiter.instances.a.timeoutDuration "10x": unknown unit "x"`},
		{"a.properties", "resilience4j.bulkhead.instances.a.maxConcurrentCalls=-1\n", `a.properties:1: resilience4j.bulkhead.instances.a.maxConcurrentCalls "-1": negative`},
	} {
		_, err := resilience4j.ReadConfig(c.file, []byte(c.body), nil, nil)
		if assert.Error(t, err, c.body) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

func TestReadResilience4jDetect(t *testing.T) {
	for _, c := range []struct {
		file, data string
		want       bool
	}{
		{"src/main/resources/application.yml", "server.port: 8080\n", true},
		{"application-prod.yaml", "", true},
		{"config/application.properties", "", true},
		{"bootstrap.yml", "", true},
		{"settings.yaml", "resilience4j:\n  retry: {}\n", true},
		{"-", "resilience4j.retry.instances.a.maxAttempts=3\n", true},
		{"values.yaml", "replicas: 2\n", false},
		{"my-application.yml", "a: b\n", false},
		{"applicationContext.yaml", "", true},
	} {
		assert.Equal(t, c.want, resilience4j.Detect(c.file, []byte(c.data)), c.file)
	}
	// Without a telling name, the reader sniffs YAML or properties.
	objs := targettest.MustRead(t, resilience4j.ReadConfig, "-", "resilience4j.retry.instances.a.maxAttempts=3\n")
	require.Len(t, objs, 1)
	assert.Equal(t, 3, objs[0].Attempts.Value)
	objs = targettest.MustRead(t, resilience4j.ReadConfig, "-", "resilience4j:\n  retry:\n    instances:\n      a: {maxAttempts: 2}\n")
	assert.Equal(t, 2, objs[0].Attempts.Value)
}

// FuzzReadResilience4j: any bytes, as YAML and as properties, never a
// panic, positions inside the input.
func FuzzReadResilience4j(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(r4jFixtures, "*"))
	sort.Strings(files)
	for _, p := range files {
		f.Add(targettest.MustFile(f, p), filepath.Ext(p) == ".properties")
	}
	f.Add([]byte("resilience4j.retry.instances.a.waitDuration=PT-9223372036854775808S\\\n"), true)
	f.Add([]byte("a: &x {b: *x}\nresilience4j: {retry: {instances: {a: {<<: *x}}}}\n"), false)
	// Issue 30: the alias bomb, and a long key named many times.
	f.Add([]byte(targettest.AliasBomb("", 9, 9, "lol")+"resilience4j.retry.instances.a.maxAttempts: 3\n"), false)
	f.Add([]byte("x: &m {"+strings.Repeat("a.", 499)+"b: 1}\nl: ["+strings.TrimSuffix(strings.Repeat("*m,", 3000), ",")+"]\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, properties bool) {
		file := "application.yml"
		if properties {
			file = "application.properties"
		}
		objs, err := resilience4j.ReadConfig(file, data, nil, nil)
		if err == nil {
			targettest.RequireInside(t, file, data, objs)
		}
	})
}
