package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmePolicy is the command of the README's "Call policy and simulation"
// section.
var readmePolicy = []string{"analyze", mixture, "--rate", "400", "--pool", "200",
	"--deadline", "1s", "--attempts", "3", "--retry-budget", "10%", "--idempotent"}

// TestGoldenPolicy pins the call policy and its simulation: the README's
// example (3 attempts within 1s: a hang sends 2 and waits the deadline)
// and one whose hang sends all 3 (3s).
func TestGoldenPolicy(t *testing.T) {
	t.Run("readme", func(t *testing.T) {
		out, errOut, code := execute(t, "", readmePolicy...)
		require.Equal(t, 0, code, errOut)
		golden(t, "analyze-mixture-policy.text", []byte(out))
		assert.Contains(t, out, "\nCall policy (deadline 1s)\n")
		assert.Contains(t, out, "3 attempts of 800ms, each cutting off at most 0.069 % of calls; at most 1s in all")
		assert.Contains(t, out, "During a hang: 400 calls in flight, 2.0 x the pool of 200.")
		assert.Regexp(t, `fail 20%\s+no\s+99\.1 %\s+1\.24`, out, "the retry lesson's 99.1 %")
	})
	for _, format := range []string{"text", "json"} {
		t.Run("simulate "+format, func(t *testing.T) {
			out, errOut, code := execute(t, "", "simulate", mixture, "--rate", "400", "--pool", "200",
				"--deadline", "3s", "--attempts", "3", "--retry-budget", "10%", "--idempotent", "-o", format)
			require.Equal(t, 0, code, errOut)
			golden(t, "simulate-mixture."+format, []byte(out))
			assert.NotContains(t, out, "Candidates", "simulate prints only the policy")
		})
	}
}

// TestSimulateJSON checks the policy's contract and the budget figures of
// docs/method.md#retry-budgets as the command reports them.
func TestSimulateJSON(t *testing.T) {
	out, errOut, code := execute(t, "", "simulate", mixture, "--rate", "400",
		"--deadline", "3s", "--attempts", "3", "--retry-budget", "10%", "--idempotent", "--requests", "20000", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Groups []struct {
			Name   string         `json:"name"`
			Policy map[string]any `json:"policy"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Groups, 1)
	p := doc.Groups[0].Policy
	for _, k := range []string{"deadline_seconds", "requested_attempts", "attempts", "per_try_timeout_seconds", "cut_off_fraction",
		"backoff_base_seconds", "backoff_cap_seconds", "jitter", "worst_case_seconds", "retry_on", "retry_budget", "idempotent",
		"layers", "amplification", "in_flight_during_hang", "steps", "warnings", "simulation"} {
		assert.Contains(t, p, k)
	}
	for _, k := range []string{"static_attempts", "static_worst_case_seconds", "hang_attempts", "hang_wait_seconds",
		"hang_backoff_seconds", "fast_failure_attempts", "method", "hedge"} {
		assert.Contains(t, p, k)
	}
	assert.Equal(t, 3.0, p["attempts"])
	assert.Equal(t, 2.9, p["worst_case_seconds"])
	assert.Equal(t, 3.0, p["hang_attempts"])
	assert.InDelta(t, 2.4375, p["hang_wait_seconds"], 1e-9)
	assert.Nil(t, p["hedge"])
	// 400/s x (3 x 800ms + 37.5ms of expected backoff).
	assert.InDelta(t, 975, p["in_flight_during_hang"], 1e-9)
	sim := p["simulation"].(map[string]any)
	assert.Equal(t, 20000.0, sim["requests"])
	byName := map[string]map[string]any{}
	for _, s := range sim["scenarios"].([]any) {
		sc := s.(map[string]any)
		key := sc["name"].(string)
		if sc["with_budget"].(bool) {
			key += " budget"
		}
		byName[key] = sc
	}
	require.Len(t, byName, 6)
	assert.InDelta(t, 0.99, byName["fail 20%"]["success_fraction"], 0.01)
	assert.InDelta(t, 0.88, byName["fail 20% budget"]["success_fraction"], 0.01)
	assert.InDelta(t, 3.0, byName["hang"]["attempts_per_request"], 0.001)
	assert.InDelta(t, 1.1, byName["hang budget"]["attempts_per_request"], 0.02)
}

func TestSimulateSeed(t *testing.T) {
	args := []string{"simulate", mixture, "--attempts", "3", "--idempotent", "--requests", "5000"}
	a, _, code := execute(t, "", append(args, "--seed", "7")...)
	require.Equal(t, 0, code)
	b, _, _ := execute(t, "", append(args, "--seed", "7")...)
	c, _, _ := execute(t, "", append(args, "--seed", "8")...)
	assert.Equal(t, a, b, "the same seed gives the same figures")
	assert.NotEqual(t, a, c)
	assert.Contains(t, a, "seed 7")
}

// TestAnalyzeWithoutPolicyFlags: the text report only grows a call policy
// section when a deadline or retries are asked for.
func TestAnalyzeWithoutPolicyFlags(t *testing.T) {
	out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Call policy")
	assert.NotContains(t, out, "Simulation")
}

func TestPolicyFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"never retry 404", []string{"--retry-on", "timeout,404"}, "retry-on 404: never retried"},
		{"unknown jitter", []string{"--jitter", "none"}, `unknown jitter "none"`},
		{"bad budget", []string{"--retry-budget", "lots"}, "--retry-budget"},
		{"bad fail rate", []string{"--fail-rate", "150%"}, "--fail-rate"},
		{"cap below base", []string{"--backoff-base", "1s", "--backoff-cap", "100ms"}, "below the base"},
		{"negative deadline", []string{"--deadline", "-1s"}, "deadline -1s"},
		{"too many attempts", []string{"--attempts", "1000"}, "attempts 1000"},
	}
	for _, tt := range tests {
		for _, command := range []string{"analyze", "simulate"} {
			t.Run(command+" "+tt.name, func(t *testing.T) {
				_, errOut, code := execute(t, "", append([]string{command, mixture}, tt.args...)...)
				assert.Equal(t, 2, code, "a bad policy flag is a usage error: %s", errOut)
				assert.Contains(t, errOut, tt.wantErr)
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			})
		}
	}
}

// TestSharedFlags: analyze and simulate register the same flags.
func TestSharedFlags(t *testing.T) {
	root := newRoot(nil, nil, nil)
	analyze, _, err := root.Find([]string{"analyze"})
	require.NoError(t, err)
	simulate, _, err := root.Find([]string{"simulate"})
	require.NoError(t, err)
	// The same flags, -o aside: it lists what each command writes.
	withoutFormat := func(usages string) string {
		var keep []string
		for _, l := range strings.Split(usages, "\n") {
			if !strings.Contains(l, " --format string ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	assert.Equal(t, withoutFormat(analyze.Flags().FlagUsages()), withoutFormat(simulate.Flags().FlagUsages()))
	assert.Contains(t, simulate.Flags().Lookup("format").Usage, "output format: json, text")
	for _, want := range []string{"deadline", "attempts", "backoff-base", "backoff-cap", "jitter", "retry-budget",
		"retry-on", "idempotent", "layers", "fail-rate", "seed", "input", "column", "rate", "pool"} {
		assert.NotNil(t, simulate.Flags().Lookup(want), "--%s", want)
	}
}

// TestReadmePolicyOutput: the README shows the real output of its call
// policy examples, as pinned by the golden files.
func TestReadmePolicyOutput(t *testing.T) {
	readme, err := userDocs()
	require.NoError(t, err)
	for _, tt := range []struct{ golden, from string }{
		{"analyze-mixture-policy.text", "Call policy (deadline 1s)"},
		{"simulate-mixture.text", "Call policy (deadline 3s)"},
	} {
		g, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", tt.golden))
		require.NoError(t, err)
		i := strings.Index(string(g), tt.from)
		require.GreaterOrEqual(t, i, 0, "%s lacks %q", tt.golden, tt.from)
		assert.Contains(t, string(readme), string(g[i:]), "README.md or docs/ is out of date with %s", tt.golden)
	}
}

// TestPolicyFlagsNamed: a bad call policy value is refused before the
// input is read, led by the flag at fault, and only by it.
func TestPolicyFlagsNamed(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--deadline", "-1s", "--attempts", "3", "--layers", "2"}, "tunetimeout: --deadline -1s: deadline -1s must not be negative"},
		{[]string{"--backoff-base", "-1s"}, "tunetimeout: --backoff-base -1s: backoff base -1s"},
		{[]string{"--attempts", "-1"}, "tunetimeout: --attempts -1: attempts -1 must lie between 1 and 100"},
		{[]string{"--retry-on", "foo,503"}, `tunetimeout: --retry-on foo,503: retry-on "foo" is neither`},
	} {
		_, errOut, code := execute(t, "", append([]string{"analyze", "does-not-exist.csv"}, tt.args...)...)
		assert.Equal(t, 2, code, "%v", tt.args)
		assert.True(t, strings.HasPrefix(errOut, tt.want), "%v: %s", tt.args, errOut)
		assert.NotContains(t, errOut, "does-not-exist", "refused before the input is read")
	}
}
