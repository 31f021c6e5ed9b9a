package resilience4j_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
	"sigs.k8s.io/yaml"
)

// TestResilience4jRetryInstanceAlways: a @Retry(name=...) whose instance
// is not configured gets resilience4j's defaults (3 attempts, 500ms wait,
// every exception retried, the TimeLimiter's TimeoutException included), so
// every group has a retry instance, with maxAttempts 1 where no retry fits.
func TestResilience4jRetryInstanceAlways(t *testing.T) {
	for _, fx := range []string{"mixture.json", "policy.json", "deadline.json"} {
		r := targettest.LoadReport(t, fx)
		body, err := resilience4j.Target.Render(r, target.Options{})
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
		require.NoError(t, validateResilience4j(body))
	}
	body, err := resilience4j.Target.Render(targettest.LoadReport(t, "mixture.json"), target.Options{})
	require.NoError(t, err)
	assert.Contains(t, string(body), "  retry:\n    instances:\n      backend:\n        maxAttempts: 1\n")
}

// TestRetriesOffResilience4j: the SPRING_APPLICATION_JSON of the header
// is JSON, and sets maxAttempts 1 for exactly the retry instances that
// make more than one attempt.
func TestRetriesOffResilience4j(t *testing.T) {
	f := targettest.Fixtures[1] // policy: instances with and without retries
	require.Equal(t, "policy", f.Name)
	body, err := resilience4j.Target.Render(targettest.LoadReport(t, f.Report), f.Opts)
	require.NoError(t, err)
	docs := targettest.DecodeYAMLDocs(t, body)
	require.Len(t, docs, 1)
	retrying := map[string]any{}
	insts, _ := targettest.Dig(docs[0], "resilience4j", "retry", "instances").(map[string]any)
	for name, inst := range insts {
		if targettest.AsInt(targettest.Dig(inst, "maxAttempts")) > 1 {
			retrying[name] = map[string]any{"maxAttempts": 1.0}
		}
	}
	require.NotEmpty(t, retrying, "precondition: some instance retries\n%s", body)
	note := targettest.RetriesOffNote(t, resilience4j.Target, f)
	m := regexp.MustCompile(`SPRING_APPLICATION_JSON='([^']*)'`).FindStringSubmatch(note)
	require.NotNil(t, m, note)
	var props map[string]any
	require.NoError(t, json.Unmarshal([]byte(m[1]), &props), m[1])
	assert.Equal(t, retrying, targettest.Dig(props, "resilience4j", "retry", "instances"))
	for name := range retrying {
		assert.Contains(t, note, name)
	}
}
