package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// sarifSchema is the official SARIF 2.1.0 schema the report tests use too
// (report/check_sarif_test.go says where it comes from and why it is not
// in this repository).
var sarifSchema = func() string {
	if p := os.Getenv("TUNETIMEOUT_SARIF_SCHEMA"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "..", "shared", "conformance", "sarif-schema-2.1.0.json")
}()

// TestCheckSARIF: check -o sarif on real configs and data writes a log the
// official schema accepts, with the findings at the config's lines, and
// still exits 1 for an error finding (--fail-on gates, whatever the
// format); --output writes the same log to a file.
func TestCheckSARIF(t *testing.T) {
	envoy := filepath.Join(checkData, "envoy-250ms.yaml")
	layered := []string{filepath.Join(checkData, "envoy-3-attempts.yaml"), filepath.Join(checkData, "grpc-3-attempts.json")}
	args := append([]string{"check", "--chain", envoy}, layered...)
	args = append(args, "--data", mixture, "-o", "sarif")
	out, errOut, code := execute(t, "", args...)
	require.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "findings at or above error")

	if _, err := os.Stat(sarifSchema); err == nil {
		sch, err := jsonschema.NewCompiler().Compile(sarifSchema)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		require.NoError(t, err)
		require.NoError(t, sch.Validate(inst))
	} else {
		t.Logf("not validated against the SARIF schema, which is not here (%s): set TUNETIMEOUT_SARIF_SCHEMA", sarifSchema)
	}

	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Name, Version string
					Rules         []struct{ ID string }
				}
			}
			Results []struct {
				RuleID       string `json:"ruleId"`
				RuleIndex    int    `json:"ruleIndex"`
				Level        string
				Fingerprints map[string]string `json:"partialFingerprints"`
				Locations    []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine int }
					}
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Runs, 1)
	run := doc.Runs[0]
	assert.Equal(t, "tunetimeout", run.Tool.Driver.Name)
	assert.NotEmpty(t, run.Tool.Driver.Version)
	require.NotEmpty(t, run.Results)
	first := run.Results[0]
	assert.Equal(t, "TT-CHECK-TIMEOUT-CUTS-OFF", first.RuleID)
	assert.Equal(t, "error", first.Level)
	assert.Equal(t, filepath.ToSlash(envoy), first.Locations[0].PhysicalLocation.ArtifactLocation.URI)
	assert.Equal(t, 21, first.Locations[0].PhysicalLocation.Region.StartLine, "the line of the text report")
	var codes []string
	prints := map[string]bool{}
	for _, r := range run.Results {
		codes = append(codes, r.RuleID)
		assert.Equal(t, r.RuleID, run.Tool.Driver.Rules[r.RuleIndex].ID)
		prints[r.Fingerprints["tunetimeoutCheck/v1"]] = true
	}
	assert.Contains(t, codes, "TT-CHECK-RETRY-NON-IDEMPOTENT")
	assert.Contains(t, codes, "TT-CHECK-RETRY-LAYERS")
	assert.Len(t, prints, len(run.Results), "one fingerprint a result, the route's two fitting timeouts included")

	file := filepath.Join(t.TempDir(), "check.sarif")
	_, errOut, code = execute(t, "", append(args, "--output", file, "--fail-on", "never")...)
	require.Equal(t, 0, code, errOut)
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, out, string(written))
}

// TestCheckMarkdownFormat: check -o markdown writes the table a pull
// request comment shows; an unknown -o names every format check has.
func TestCheckMarkdownFormat(t *testing.T) {
	envoy := filepath.Join(checkData, "envoy-250ms.yaml")
	out, errOut, code := execute(t, "", "check", envoy, "--data", mixture, "-o", "markdown", "--fail-on", "never")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "## tunetimeout check\n\n**1 error"), out)
	assert.Contains(t, out, "| **error** | "+filepath.ToSlash(envoy)+":21 | local\\_route/backend/route 1 | all | [TT-CHECK-TIMEOUT-CUTS-OFF](")

	_, errOut, code = execute(t, "", "check", envoy, "--data", mixture, "-o", "html")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown output format "html" (known: json, markdown, sarif, text)`)
}

// TestCheckTopology: check --topology reads the configs its file names
// (relative to it) and multiplies the retries along its path: Envoy's 3 x
// gRPC's 3 x Istio's default 3; --chain with it is a usage error, and a
// topology naming an unknown callee fails with its line.
func TestCheckTopology(t *testing.T) {
	topo := filepath.Join(checkData, "chain.yaml")
	out, errOut, code := execute(t, "", "check", "--topology", topo, "--data", mixture, "--fail-on", "never", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var c report.Check
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	var layers []report.CheckFinding
	for _, f := range c.Findings {
		if f.Code == "TT-CHECK-RETRY-LAYERS" {
			layers = append(layers, f)
		}
	}
	require.Len(t, layers, 1)
	assert.EqualValues(t, 27, layers[0].Measured["attempts_at_bottom"])
	assert.Equal(t, filepath.Join(checkData, "envoy-3-attempts.yaml"), layers[0].File)

	_, errOut, code = execute(t, "", "check", "--topology", topo, "--chain", "--data", mixture)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--chain, --topology")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("services:\n  a:\n    calls: [nobody]\n"), 0o644))
	_, errOut, code = execute(t, "", "check", "--topology", bad, "--data", mixture)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, bad+":2: service \"a\" calls \"nobody\"")
}
