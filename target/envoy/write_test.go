package envoy_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestEnvoyRetryAfter: a route that retries 429 or 503 waits for their
// Retry-After (RFC 9110 section 10.2.3) through rate_limited_retry_back_off
// (RetryPolicy.RateLimitedRetryBackOff): without it Envoy retries after
// its 25ms backoff whatever the server asked for. The reader reads it back.
func TestEnvoyRetryAfter(t *testing.T) {
	body, err := envoy.Target.Render(targettest.LoadReport(t, "policy.json"), target.Options{Service: "shop-api"})
	require.NoError(t, err)
	require.NoError(t, validateEnvoy(body))
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

// TestRetriesOffEnvoyRuntime: the runtime keys the Envoy header sets name
// the cluster the snippet wrote and its default priority, the retry
// budget's settings where the cluster has a budget (which replaces
// max_retries), max_retries where it has none.
func TestRetriesOffEnvoyRuntime(t *testing.T) {
	for _, f := range targettest.Fixtures[:3] {
		body, err := envoy.Target.Render(targettest.LoadReport(t, f.Report), f.Opts)
		require.NoError(t, err)
		docs := targettest.DecodeYAMLDocs(t, body)
		require.Len(t, docs, 2)
		cluster := docs[1]
		name, _ := cluster["name"].(string)
		note := targettest.RetriesOffNote(t, envoy.Target, f)
		m := regexp.MustCompile(`runtime_modify\?([^' ]+)'`).FindStringSubmatch(note)
		require.NotNil(t, m, note)
		var keys []string
		for _, kv := range strings.Split(m[1], "&") {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, kv)
			assert.Equal(t, "0", v, kv)
			keys = append(keys, k)
		}
		prefix := "circuit_breakers." + name + ".default."
		want := []string{prefix + "max_retries"}
		if targettest.Dig(cluster, "circuit_breakers", "thresholds", 0, "retry_budget") != nil {
			want = []string{prefix + "retry_budget.budget_percent", prefix + "retry_budget.min_retry_concurrency"}
		}
		assert.Equal(t, want, keys, f.Name)
	}
}
