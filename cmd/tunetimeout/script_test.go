package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/tunetimeout/tunetimeout/jaegersource/jaegertest"
	"github.com/tunetimeout/tunetimeout/promsource/promtest"
)

// TestScripts runs the golden scripts in testdata/script: each command
// line of the tool with what it writes, byte for byte, frozen before the
// code under them moves (issue 32). Each script runs the command as a
// process (the test binary, see TestMain) in its own directory, where
//
//   - testdata, checks and reports name the repository's testdata,
//     analysis/testdata/check and report/snippet/testdata;
//   - $PROM_URL is a fake Prometheus (promtest.Labelled) holding one
//     classic histogram http_request_duration_seconds with the series
//     route="/api/orders" (1,000 calls) and route="/api/users" (2,000);
//   - $JAEGER_URL is a fake Jaeger (jaegertest) with 250 traces of the
//     service checkout from 2026-11-30T12:00:01Z, 13 s apart;
//   - "scrub" puts $PROM_URL and $JAEGER_URL back in the last command's
//     standard output and error, whose ports change from run to run.
//
// go test ./cmd/tunetimeout -run TestScripts -update rewrites the
// expected outputs inside the scripts; review the diff like code.
func TestScripts(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join(root, "testdata", "script"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			for link, dir := range map[string]string{
				"testdata": "testdata",
				"checks":   filepath.Join("analysis", "testdata", "check"),
				"reports":  filepath.Join("report", "snippet", "testdata"),
			} {
				if err := os.Symlink(filepath.Join(root, dir), filepath.Join(env.WorkDir, link)); err != nil {
					return err
				}
			}
			prom := httptest.NewServer(promtest.Labelled([]map[string]string{
				{"route": "/api/orders"}, {"route": "/api/users"},
			}))
			env.Defer(prom.Close)
			t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			jaeger := httptest.NewServer(&jaegertest.Server{
				Traces:   jaegertest.Traces(250, t0.Add(time.Second), 13*time.Second),
				Services: []string{"checkout", "frontend"},
			})
			env.Defer(jaeger.Close)
			env.Setenv("PROM_URL", prom.URL)
			env.Setenv("JAEGER_URL", jaeger.URL)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"scrub": scrub,
		},
	})
}

// scrub replaces the fake servers' addresses in the last command's
// standard output and error by the names of their variables.
func scrub(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: scrub")
	}
	r := strings.NewReplacer(ts.Getenv("PROM_URL"), "$PROM_URL", ts.Getenv("JAEGER_URL"), "$JAEGER_URL")
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	ts.Stdout().Write([]byte(r.Replace(stdout)))
	ts.Stderr().Write([]byte(r.Replace(stderr)))
}
