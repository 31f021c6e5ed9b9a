package targets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
)

// The readers are also tested on real configs that other projects wrote
// (Envoy's and Istio's examples, nginx's own nginx.conf, HAProxy's
// examples...). Those files are not part of this repository: they are
// public data taken from other projects, kept with their origins beside
// the repository, in the configs folder of the shared conformance folder
// (one folder per target, each with its ORIGIN.md), or wherever
// TUNETIMEOUT_CONFIG_FIXTURES points. Where they are absent, the tests that
// read them skip and say so (or fail, under TUNETIMEOUT_E2E=1 as in CI); the readers' other tests (their own inputs,
// and every snippet this project writes, read back) run everywhere.

// configFixtureDir is the folder of the real configs of a target.
func configFixtureDir(name string) string {
	if d := os.Getenv("TUNETIMEOUT_CONFIG_FIXTURES"); d != "" {
		return filepath.Join(d, name)
	}
	return filepath.Join("..", "..", "..", "shared", "conformance", "configs", name)
}

// requireConfigFixtures skips t when the real configs of dir are absent,
// or fails it under TUNETIMEOUT_E2E=1: CI has the shared conformance
// folder beside the repository, and a reader test that skips there tests
// nothing.
func requireConfigFixtures(t testing.TB, dir string) {
	t.Helper()
	e2etest.RequireFile(t, dir, "the real configs of other projects: set TUNETIMEOUT_CONFIG_FIXTURES to their folder (see read_fixtures_test.go)")
}
