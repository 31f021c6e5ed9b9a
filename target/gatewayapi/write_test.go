package gatewayapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/gatewayapi"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

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
		body, err := gatewayapi.Target.Render(targettest.LoadReport(t, "policy.json"), target.Options{GatewayAPIChannel: ch})
		require.NoError(t, err)
		rules := ruleBlocks(t, body)
		require.Len(t, rules, 4, ch)
		assert.Contains(t, rules["post-api-orders"], "    retry:\n      attempts: 0\n", ch)
		assert.Contains(t, rules["all"], "    retry:\n      attempts: 0\n", "%s: the catch-all is not known to be idempotent", ch)
		assert.Contains(t, rules["get-api-users-id"], "    retry:\n      attempts: 2\n      codes: [", ch)
		assert.Contains(t, rules["get-api-search"], "    retry:\n      attempts: 6\n      codes: [408, 503]\n", ch)
		assert.NotContains(t, string(body), "the standard channel has no retry field", ch)
		require.NoError(t, validateGateway(body))
	}
	body, err := gatewayapi.Target.Render(targettest.LoadReport(t, "mixture.json"), target.Options{})
	require.NoError(t, err)
	for name, rule := range ruleBlocks(t, body) {
		assert.Contains(t, rule, "    retry:\n      attempts: 0\n", "no call policy, one attempt: rule %s", name)
	}
}
