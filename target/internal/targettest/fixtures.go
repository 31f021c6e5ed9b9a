// Package targettest holds what the tests of the config targets share:
// the report fixtures and the real configs of other projects, the helpers
// that read and describe objects, the random reports of the property
// tests, and Snippets, the checks every target's own package runs on its
// snippets with its own validator and its own reading of their semantics.
// Only tests import it.
package targettest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
)

// Root is the repository's folder, wherever the test that asks runs.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// The readers are also tested on real configs that other projects wrote
// (Envoy's and Istio's examples, nginx's own nginx.conf, HAProxy's
// examples...). Those files are not part of this repository: they are
// public data taken from other projects, kept with their origins beside
// the repository, in the configs folder of the shared conformance folder
// (one folder per target, each with its ORIGIN.md), or wherever
// TUNETIMEOUT_CONFIG_FIXTURES points. Where they are absent, the tests that
// read them skip and say so (or fail, under TUNETIMEOUT_E2E=1 as in CI); the readers' other tests (their own inputs,
// and every snippet this project writes, read back) run everywhere.

// ConfigFixtureDir is the folder of the real configs of a target.
func ConfigFixtureDir(name string) string {
	if d := os.Getenv("TUNETIMEOUT_CONFIG_FIXTURES"); d != "" {
		return filepath.Join(d, name)
	}
	return filepath.Join(Root(), "..", "shared", "conformance", "configs", name)
}

// RequireConfigFixtures skips t when the real configs of dir are absent,
// or fails it under TUNETIMEOUT_E2E=1: CI has the shared conformance
// folder beside the repository, and a reader test that skips there tests
// nothing.
func RequireConfigFixtures(t testing.TB, dir string) {
	t.Helper()
	e2etest.RequireFile(t, dir, "the real configs of other projects: set TUNETIMEOUT_CONFIG_FIXTURES to their folder (see target/internal/targettest/fixtures.go)")
}

// LoadReport reads a report fixture of target/testdata.
func LoadReport(t *testing.T, name string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(), "target", "testdata", name))
	require.NoError(t, err)
	var r report.Report
	require.NoError(t, json.Unmarshal(b, &r))
	return &r
}

// Fixture is a report every target writes a snippet of, with the options
// it is written with.
type Fixture struct {
	Name, Report string
	Opts         target.Options
	Only         string // the one target the fixture is for; "" for all
}

// For reports whether the fixture is one of tg's.
func (f Fixture) For(tg target.Target) bool { return f.Only == "" || f.Only == tg.Name }

// Fixtures are the reports of the golden snippets
// (testdata/golden/snippets/FIXTURE/FILE).
var Fixtures = []Fixture{
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
