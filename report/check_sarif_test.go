package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// sarifSchemaFile is the official JSON schema of SARIF 2.1.0 (OASIS
// Standard with Errata 01, id https://docs.oasis-open.org/sarif/sarif/
// v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json), from
// oasis-tcs/sarif-spec, sarif-2.1/schema/sarif-schema-2.1.0.json at commit
// e0583813964ec43cea53b6b531b402866095ed1f, 112,768 bytes, SHA-256
// c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e. It is
// public data taken from another project, so it is not in this
// repository: it lives in the shared conformance folder beside the repository,
// or where TUNETIMEOUT_SARIF_SCHEMA points, and the tests that validate
// against it skip where it is absent.
var sarifSchemaFile = sarifSchemaPath(filepath.Join("..", "..", "shared", "conformance", "sarif-schema-2.1.0.json"))

// sarifSchemaPath is TUNETIMEOUT_SARIF_SCHEMA, or def.
func sarifSchemaPath(def string) string {
	if p := os.Getenv("TUNETIMEOUT_SARIF_SCHEMA"); p != "" {
		return p
	}
	return def
}

// requireSARIFSchema skips t when the schema is not here, or fails it under
// TUNETIMEOUT_E2E=1 (CI has it in the shared conformance folder).
func requireSARIFSchema(t *testing.T) {
	t.Helper()
	e2etest.RequireFile(t, sarifSchemaFile, "the SARIF 2.1.0 schema: set TUNETIMEOUT_SARIF_SCHEMA to it (see sarifSchemaFile)")
}

// checkSample is a check as analysis.Check builds one, with the findings of
// analysis/testdata/check over testdata/mixture.csv (envoy-250ms.yaml,
// nginx-default.conf at --rate 400 --pool 200, envoy-3-attempts.yaml whose
// route has two timeouts that fit), plus what a real run may also hold: an
// absolute path with a space, a finding without a line, config and groups
// that met nothing, a note.
func checkSample() *Check {
	cut := finding.Fields{"calls": int64(200000), "calls_cut_off": int64(3482), "configured_seconds": 0.25, "cut_off_fraction": 0.01741,
		"cut_off_high_fraction": 0.017992554957367367, "cut_off_low_fraction": 0.01684598318268791, "false_timeouts_fraction": 0.001,
		"in_flight_during_hang": 100.0, "recommended_seconds": 0.8}
	nginx := "analysis/testdata/check/nginx-default.conf"
	three := "analysis/testdata/check/envoy-3-attempts.yaml"
	return &Check{
		Input:   Input{Files: []string{"testdata/mixture.csv"}, Records: 200961},
		Configs: []string{"analysis/testdata/check/envoy-250ms.yaml", nginx, three, "/etc/envoy/my envoy.yaml"},
		Findings: []CheckFinding{
			{Code: "TT-CHECK-TIMEOUT-CUTS-OFF", Severity: "error", File: "analysis/testdata/check/envoy-250ms.yaml", Line: 21, Target: "envoy",
				Object: "local_route/backend/route 1", Group: "all", Measured: cut,
				Message: "the timeout of 250ms cuts off 1.74 % of these calls (3,482 of 200,000; 95 % confidence: 1.68 % to 1.8 %), more than the 0.1 % asked for (--false-timeouts): 800ms would not"},
			{Code: "TT-CHECK-DEFAULT-TIMEOUT", Severity: "warning", File: nginx, Line: 6, Target: "nginx", Object: "server 127.0.0.1:8081 location /", Group: "all",
				Message: "no timeout is set: nginx's default of 1m is in force, chosen by nobody for this service", Measured: finding.Fields{"configured_seconds": 60.0}},
			{Code: "TT-CHECK-HANG-EXHAUSTS-POOL", Severity: "error", File: nginx, Line: 6, Target: "nginx", Object: "server 127.0.0.1:8081 location /", Group: "all",
				Message:  "during a hang, 400 calls/s x 1m = 24,000 calls wait at once, 120.0 x the pool of 200: the pool is exhausted 0.5 s into the hang",
				Measured: finding.Fields{"configured_seconds": 60.0, "in_flight_during_hang": 24000.0, "pool": 200, "rate_per_second": 400.0, "recommended_seconds": 0.8, "seconds_to_exhaustion": 0.5}},
			{Code: "TT-CHECK-TIMEOUT-FITS", Severity: "info", File: three, Line: 21, Target: "envoy", Object: "local_route/backend/route 1", Group: "all",
				Message:  "the timeout of 2.5s cuts off 0 % of these calls (0 of 200,000), within the 0.1 % asked for; the recommendation is 800ms",
				Measured: finding.Fields{"configured_seconds": 2.5, "cut_off_fraction": 0.0}},
			{Code: "TT-CHECK-RETRY-LAYERS", Severity: "warning", File: three, Line: 24, Target: "envoy", Object: "local_route/backend/route 1",
				Message:  "2 layers retry: 3 x 3 make up to 9 attempts at the bottom per request",
				Measured: finding.Fields{"layers": 2, "attempts_at_bottom": 9}},
			{Code: "TT-CHECK-TIMEOUT-FITS", Severity: "info", File: three, Line: 25, Target: "envoy", Object: "local_route/backend/route 1", Group: "all",
				Message:  "the per-try timeout of 800ms cuts off 0.0655 % of these calls (131 of 200,000), within the 0.1 % asked for; the recommendation is 800ms",
				Measured: finding.Fields{"configured_seconds": 0.8, "cut_off_fraction": 0.000655}},
			{Code: "TT-CHECK-CONNECT-TIMEOUT-LONG", Severity: "warning", File: "/etc/envoy/my envoy.yaml", Line: 0, Target: "envoy", Object: "backend", Group: "all",
				Message: "the connect timeout is 5s (the default: none is set)", Measured: finding.Fields{"configured_seconds": 5.0, "limit_seconds": 1.0}},
		},
		UnmatchedConfig: []ConfigObject{{File: "./analysis/testdata/check/grpc-3-attempts.json", Line: 4, Target: "grpc", Kind: "method", Object: "shop.Orders"}},
		UnmatchedGroups: []string{"GET /health"},
		Notes:           []string{"empty.yaml: no timeout or retry policy found (read as envoy)."},
	}
}

// validateSARIF fails the test unless doc is valid against the official
// SARIF 2.1.0 schema, formats (uri, uri-reference) included.
func validateSARIF(t *testing.T, doc []byte) {
	t.Helper()
	requireSARIFSchema(t)
	require.NoError(t, sarifAgainstSchema(doc))
}

func sarifAgainstSchema(doc []byte) error {
	sch, err := jsonschema.NewCompiler().Compile(sarifSchemaFile)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

func writeSARIF(t *testing.T, c *Check) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteCheckSARIF(&b, c))
	return b.Bytes()
}

// TestCheckSARIFSchema: the log of a check with findings, and of one with
// none, is valid SARIF 2.1.0; the validator does reject what the schema
// forbids (a level "info", a line 0), so a pass means something.
func TestCheckSARIFSchema(t *testing.T) {
	requireSARIFSchema(t)
	validateSARIF(t, writeSARIF(t, checkSample()))
	validateSARIF(t, writeSARIF(t, &Check{Configs: []string{"envoy.yaml"}}))

	out := string(writeSARIF(t, checkSample()))
	for old, bad := range map[string]string{`"level": "note"`: `"level": "info"`, `"startLine": 21`: `"startLine": 0`} {
		require.Contains(t, out, old)
		assert.Error(t, sarifAgainstSchema([]byte(strings.Replace(out, old, bad, 1))), bad)
	}

	var schema struct {
		ID string `json:"id"`
	}
	raw, err := os.ReadFile(sarifSchemaFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &schema))
	assert.Equal(t, schema.ID, SARIFSchema, "$schema names the schema the log is valid against")
}

// sarifDoc is the part of a SARIF log the tests read.
type sarifDoc struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name, Version  string
				InformationURI string `json:"informationUri"`
				Rules          []struct {
					ID               string
					HelpURI          string `json:"helpUri"`
					ShortDescription struct{ Text string }
					Default          struct{ Level string } `json:"defaultConfiguration"`
				}
				Notifications []struct{ ID string }
			}
		}
		Invocations []struct {
			ExecutionSuccessful bool
			Notifications       []struct {
				Descriptor struct {
					ID    string
					Index int
				}
				Level     string
				Message   struct{ Text string }
				Locations []sarifDocLocation
			} `json:"toolExecutionNotifications"`
		}
		Results []struct {
			RuleID       string `json:"ruleId"`
			RuleIndex    int    `json:"ruleIndex"`
			Level        string
			Message      struct{ Text string }
			Locations    []sarifDocLocation
			Fingerprints map[string]string `json:"partialFingerprints"`
			Properties   struct {
				Object, Group, Target string
				Measured              map[string]any
			}
		}
	}
}

type sarifDocLocation struct {
	PhysicalLocation struct {
		ArtifactLocation struct {
			URI       string `json:"uri"`
			URIBaseID string `json:"uriBaseId"`
		}
		Region *struct{ StartLine int }
	}
}

func readSARIF(t *testing.T, c *Check) sarifDoc {
	t.Helper()
	var doc sarifDoc
	require.NoError(t, json.Unmarshal(writeSARIF(t, c), &doc))
	require.Len(t, doc.Runs, 1)
	return doc
}

// TestCheckSARIFValues: what code scanning reads of each result is the
// finding's: the level of its severity, the rule of its code at ruleIndex,
// its line, its file as a URI; the rules are the codes used, in the order
// of docs/findings.md, each with its summary, severity and section.
func TestCheckSARIFValues(t *testing.T) {
	c := checkSample()
	c.ToolVersion = "v1.2.3"
	doc := readSARIF(t, c)
	assert.Equal(t, "2.1.0", doc.Version)
	run := doc.Runs[0]
	d := run.Tool.Driver
	assert.Equal(t, "tunetimeout", d.Name)
	assert.Equal(t, "v1.2.3", d.Version)
	assert.Equal(t, "https://github.com/tunetimeout/tunetimeout", d.InformationURI)
	assert.Equal(t, "dev", readSARIF(t, checkSample()).Runs[0].Tool.Driver.Version, "no version: dev")

	var ids []string
	for _, r := range d.Rules {
		ids = append(ids, r.ID)
		def, ok := finding.Lookup(finding.Code(r.ID))
		require.True(t, ok, r.ID)
		assert.Equal(t, def.Summary, r.ShortDescription.Text, r.ID)
		assert.Equal(t, "https://github.com/tunetimeout/tunetimeout/blob/main/docs/findings.md#"+strings.ToLower(r.ID), r.HelpURI)
	}
	assert.Equal(t, []string{"TT-CHECK-TIMEOUT-CUTS-OFF", "TT-CHECK-TIMEOUT-FITS", "TT-CHECK-DEFAULT-TIMEOUT", "TT-CHECK-HANG-EXHAUSTS-POOL",
		"TT-CHECK-RETRY-LAYERS", "TT-CHECK-CONNECT-TIMEOUT-LONG"}, ids, "each code once, in the order of codes.go")
	assert.Equal(t, "error", d.Rules[0].Default.Level)
	assert.Equal(t, "note", d.Rules[1].Default.Level, "info is note")
	assert.Equal(t, "warning", d.Rules[2].Default.Level)

	require.Len(t, run.Results, len(c.Findings))
	levels := map[string]string{"error": "error", "warning": "warning", "info": "note"}
	for i, r := range run.Results {
		f := c.Findings[i]
		assert.Equal(t, f.Code, r.RuleID)
		assert.Equal(t, f.Code, d.Rules[r.RuleIndex].ID, "ruleIndex points at the rule of ruleId")
		assert.Equal(t, levels[f.Severity], r.Level, f.Code)
		assert.Equal(t, f.Object, r.Properties.Object)
		assert.Equal(t, f.Group, r.Properties.Group)
		assert.Equal(t, f.Target, r.Properties.Target)
		assert.True(t, strings.HasPrefix(r.Message.Text, f.Object), r.Message.Text)
		assert.True(t, strings.HasSuffix(r.Message.Text, ": "+f.Message), r.Message.Text)
		require.Len(t, r.Locations, 1)
		require.NotNil(t, r.Locations[0].PhysicalLocation.Region, "code scanning needs a line")
		assert.Equal(t, max(f.Line, 1), r.Locations[0].PhysicalLocation.Region.StartLine, f.Code)
	}
	assert.Equal(t, 21, run.Results[0].Locations[0].PhysicalLocation.Region.StartLine)
	assert.Equal(t, 1, run.Results[6].Locations[0].PhysicalLocation.Region.StartLine, "no line: line 1")
	assert.Equal(t, 0.01741, run.Results[0].Properties.Measured["cut_off_fraction"])
	assert.Equal(t, 0.5, run.Results[2].Properties.Measured["seconds_to_exhaustion"])
	assert.Empty(t, run.Results[4].Properties.Group, "retry layers belong to no group")

	rel := run.Results[0].Locations[0].PhysicalLocation.ArtifactLocation
	assert.Equal(t, "analysis/testdata/check/envoy-250ms.yaml", rel.URI, "a relative path as given")
	assert.Equal(t, "%SRCROOT%", rel.URIBaseID)
	abs := run.Results[6].Locations[0].PhysicalLocation.ArtifactLocation
	assert.Equal(t, "file:///etc/envoy/my%20envoy.yaml", abs.URI, "an absolute path: a file URI")
	assert.Empty(t, abs.URIBaseID, "an absolute URI has no uriBaseId (§3.4.4)")

	require.Len(t, run.Invocations, 1)
	inv := run.Invocations[0]
	assert.True(t, inv.ExecutionSuccessful)
	require.Len(t, inv.Notifications, 3)
	for _, n := range inv.Notifications {
		assert.Equal(t, n.Descriptor.ID, d.Notifications[n.Descriptor.Index].ID, "the descriptor's index points at it")
	}
	un := inv.Notifications[0]
	assert.Equal(t, "unmatched-config", un.Descriptor.ID)
	assert.Equal(t, "warning", un.Level, "not an error: an error notification means the run failed (§3.58.6)")
	assert.Contains(t, un.Message.Text, "shop.Orders")
	require.Len(t, un.Locations, 1)
	assert.Equal(t, "analysis/testdata/check/grpc-3-attempts.json", un.Locations[0].PhysicalLocation.ArtifactLocation.URI, "./ cleaned")
	assert.Equal(t, 4, un.Locations[0].PhysicalLocation.Region.StartLine)
	assert.Equal(t, "unmatched-group", inv.Notifications[1].Descriptor.ID)
	assert.Contains(t, inv.Notifications[1].Message.Text, "GET /health")
	assert.Equal(t, "config-note", inv.Notifications[2].Descriptor.ID)
	assert.Equal(t, "note", inv.Notifications[2].Level)
}

// TestCheckSARIFFingerprints: a finding's partial fingerprint is the same
// from run to run and when its line moves, and differs between findings:
// other codes, other objects, and the two timeouts of one route that both
// fit (the same code, file, object and group).
func TestCheckSARIFFingerprints(t *testing.T) {
	prints := func(c *Check) []string {
		var out []string
		for _, r := range readSARIF(t, c).Runs[0].Results {
			fp := r.Fingerprints[FingerprintKey]
			require.Regexp(t, "^[0-9a-f]{64}$", fp)
			out = append(out, fp)
		}
		return out
	}
	first := prints(checkSample())
	assert.Equal(t, first, prints(checkSample()), "stable across runs")
	distinct := map[string]bool{}
	for _, fp := range first {
		distinct[fp] = true
	}
	assert.Len(t, distinct, len(first), "one fingerprint a finding")

	moved := checkSample()
	for i := range moved.Findings {
		moved.Findings[i].Line += 3
	}
	assert.Equal(t, first, prints(moved), "lines moved: the same alerts")

	other := checkSample()
	other.Findings[0].Object = "local_route/backend/route 2"
	assert.NotEqual(t, first[0], prints(other)[0], "another object, another alert")
	assert.Equal(t, first[1:], prints(other)[1:])
}

// TestCheckSARIFHelpAnchors: each rule's helpUri names the anchor GitHub
// makes of its heading in docs/findings.md (lower case, punctuation other
// than hyphens dropped, spaces as hyphens).
func TestCheckSARIFHelpAnchors(t *testing.T) {
	doc, err := os.ReadFile("../docs/findings.md")
	require.NoError(t, err)
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")] = true
		}
	}
	for _, d := range finding.Codes() {
		if !strings.HasPrefix(string(d.Code), "TT-CHECK-") {
			continue
		}
		_, frag, ok := strings.Cut(FindingHelpURI(string(d.Code)), "#")
		require.True(t, ok)
		assert.True(t, anchors[frag], "%s: no heading of docs/findings.md has the anchor #%s", d.Code, frag)
	}
}
