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

var checkData = filepath.Join("..", "..", "analysis", "testdata", "check")

// TestCheckExitCodes: 1 when a finding is at or above --fail-on, 0 when
// none is, 2 for a wrong command line before anything is read.
func TestCheckExitCodes(t *testing.T) {
	envoy := filepath.Join(checkData, "envoy-250ms.yaml")
	out, errOut, code := execute(t, "", "check", envoy, "--data", mixture)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, envoy+":21: error [TT-CHECK-TIMEOUT-CUTS-OFF]")
	assert.Contains(t, errOut, "findings at or above error")

	_, errOut, code = execute(t, "", "check", envoy, "--data", mixture, "--fail-on", "never")
	assert.Equal(t, 0, code, errOut)

	nginx := filepath.Join(checkData, "nginx-default.conf")
	_, errOut, code = execute(t, "", "check", nginx, "--data", mixture, "--false-timeouts", "5%")
	assert.Equal(t, 0, code, "no rate, no pool: the 60 s default only warns: %s", errOut)
	_, errOut, code = execute(t, "", "check", nginx, "--data", mixture, "--false-timeouts", "5%", "--fail-on", "warning")
	assert.Equal(t, 1, code, errOut)

	for _, args := range [][]string{
		{"check", envoy}, // no --data
		{"check", envoy, "--data", mixture, "--fail-on", "bad"}, // unknown severity
		{"check", envoy, "--data", mixture, "--map", "x"},       // not OBJECT=GROUP
		{"check", envoy, "--data", mixture, "--config-format", "go"},
		{"check", envoy, "--data", mixture, "-o", "html"},
	} {
		_, errOut, code := execute(t, "", args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}

// TestCheckJSON: the JSON contract of check.
func TestCheckJSON(t *testing.T) {
	out, errOut, code := execute(t, "", "check", filepath.Join(checkData, "nginx-default.conf"), "--data", mixture,
		"--rate", "400", "--pool", "200", "-o", "json")
	require.Equal(t, 1, code, errOut)
	var doc struct {
		Findings []struct {
			Code, Severity, File, Target, Object, Group, Message string
			Line                                                 int
			Measured                                             map[string]any
		}
		UnmatchedConfig []any `json:"unmatched_config"`
		UnmatchedGroups []any `json:"unmatched_groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotNil(t, doc.UnmatchedConfig)
	require.NotNil(t, doc.UnmatchedGroups)
	var hang map[string]any
	for _, f := range doc.Findings {
		assert.Equal(t, "nginx", f.Target)
		assert.Equal(t, 6, f.Line)
		if f.Code == "TT-CHECK-HANG-EXHAUSTS-POOL" {
			hang = f.Measured
		}
	}
	require.NotNil(t, hang, out)
	assert.Equal(t, 0.5, hang["seconds_to_exhaustion"])
	assert.Equal(t, 60.0, hang["configured_seconds"])
}

// TestCheckBaselineAndSuggest: --baseline accepts the findings of an
// earlier check -o json (exit 0, still shown), a new one still fails;
// --suggest writes the edit alone, as a diff.
func TestCheckBaselineAndSuggest(t *testing.T) {
	envoy := filepath.Join(checkData, "envoy-250ms.yaml")
	base, errOut, code := execute(t, "", "check", envoy, "--data", mixture, "-o", "json")
	require.Equal(t, 1, code, errOut)
	file := filepath.Join(t.TempDir(), "baseline.json")
	require.NoError(t, os.WriteFile(file, []byte(base), 0o644))
	out, errOut, code := execute(t, "", "check", envoy, "--data", mixture, "--baseline", file)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "(all) [baseline]: the timeout of 250ms cuts off 1.74 %")
	assert.Contains(t, out, "\nNo findings (and 1 known from the baseline).\n")

	// A stricter --false-timeouts is the same finding; another config's is new.
	three := filepath.Join(checkData, "envoy-3-attempts.yaml")
	_, errOut, code = execute(t, "", "check", envoy, three, "--data", mixture, "--baseline", file, "--false-timeouts", "0.01%")
	assert.Equal(t, 1, code, "the second file's timeout is new: %s", errOut)

	_, errOut, code = execute(t, "", "check", envoy, "--data", mixture, "--baseline", filepath.Join(t.TempDir(), "none.json"))
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "--baseline: open")

	diff, errOut, code := execute(t, "", "check", envoy, "--data", mixture, "--suggest")
	assert.Equal(t, 1, code, "--suggest does not hide what it found: %s", errOut)
	assert.True(t, strings.HasPrefix(diff, "--- "+envoy+"\n+++ "+envoy+"\n@@ "), diff)
	assert.Contains(t, diff, "\n-                  timeout: 0.25s\n+                  timeout: 0.800s\n")
}

// TestCheckReportAsData: a report analyze wrote with -o json is data too;
// one source at a time.
func TestCheckReportAsData(t *testing.T) {
	saved, errOut, code := execute(t, "", "analyze", mixture, "-o", "json")
	require.Equal(t, 0, code, errOut)
	file := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, os.WriteFile(file, []byte(saved), 0o644))
	envoy := filepath.Join(checkData, "envoy-250ms.yaml")
	out, errOut, code := execute(t, "", "check", envoy, "--report", file)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "the timeout of 250ms cuts off 1.74 % of these 200,000 calls")

	_, errOut, code = execute(t, "", "check", envoy, "--report", file, "--data", mixture)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "one source of latency at a time")
}
