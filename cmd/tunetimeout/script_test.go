package main

import (
	"io"
	"net/http"
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
//     analysis/testdata/check and target/testdata;
//   - $PROM_URL is a fake Prometheus (promtest.Labelled) holding one
//     classic histogram http_request_duration_seconds with the series
//     route="/api/orders" (1,000 calls) and route="/api/users" (2,000);
//   - $JAEGER_URL is a fake Jaeger (jaegertest) with 250 traces of the
//     service checkout from 2026-11-30T12:00:01Z, 13 s apart;
//   - $CLICKHOUSE_URL is a fake ClickHouse that answers every query with
//     the same histogram of 1,552 calls (clickhouseHistogram);
//   - "scrub" puts the three variables back in place of the servers'
//     addresses in the last command's standard output and error, whose
//     ports change from run to run.
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
				"reports":  filepath.Join("target", "testdata"),
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
			clickhouse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				io.WriteString(w, clickhouseHistogram)
			}))
			env.Defer(clickhouse.Close)
			env.Setenv("PROM_URL", prom.URL)
			env.Setenv("CLICKHOUSE_URL", clickhouse.URL)
			env.Setenv("JAEGER_URL", jaeger.URL)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"scrub": scrub,
		},
	})
}

// clickhouseHistogram is the answer of the fake ClickHouse, in the columns
// of the query tunetimeout sql --dialect clickhouse writes (CSVWithNames).
const clickhouseHistogram = `"bucket_us","calls","censored","excluded_5xx"
20000,1000,0,0
40000,500,0,10
200000,50,0,0
800000,2,1,0
`

// scrub replaces the fake servers' addresses in the last command's
// standard output and error by the names of their variables.
func scrub(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: scrub")
	}
	r := strings.NewReplacer(ts.Getenv("PROM_URL"), "$PROM_URL", ts.Getenv("JAEGER_URL"), "$JAEGER_URL",
		ts.Getenv("CLICKHOUSE_URL"), "$CLICKHOUSE_URL")
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	ts.Stdout().Write([]byte(r.Replace(stdout)))
	ts.Stderr().Write([]byte(r.Replace(stderr)))
}
