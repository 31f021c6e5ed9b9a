package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// The histogram computed inside a real PostgreSQL (Debian's postgresql):
// the rows of testdata/mixture.csv in a table, tunetimeout sql's query run
// by psql, its answer read back with --input buckets, gives the report a
// local read of the same rows gives: the same samples, exclusions,
// percentiles and timeout per group.
func TestSQLPostgresEqualsLocalRead(t *testing.T) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		e2etest.RequireFile(t, "/usr/lib/postgresql/15/bin/initdb", "apt-get install postgresql")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	psql := requireBinary(t, "psql", "postgresql-client")
	// A directory the postgres user can reach (t.TempDir's parent is
	// private to this user).
	dir, err := os.MkdirTemp("", "tunetimeout-e2e-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	port := strconv.Itoa(freePort(t))
	// PostgreSQL refuses to run as root: as root (CI), as the postgres user.
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if os.Geteuid() == 0 {
			cmd = exec.Command("su", "postgres", "-s", "/bin/sh", "-c", shellQuote(args))
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	data := filepath.Join(dir, "data")
	run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "tt")
	run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", "-p "+port+" -k "+dir+" -c listen_addresses=127.0.0.1", "-l", filepath.Join(dir, "log"), "-w", "start")
	t.Cleanup(func() { run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop") })

	sql := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(psql, append([]string{"-h", "127.0.0.1", "-p", port, "-U", "tt", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-X"}, args...)...).Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("psql %v: %s", args, ee.Stderr)
		}
		require.NoError(t, err)
		return out
	}
	var mixture string
	sql("-q", "-c", "create table access (timestamp timestamptz, route text, status int, latency_ms numeric)")
	mixture, err = filepath.Abs("../testdata/mixture.csv")
	require.NoError(t, err)
	sql("-q", "-c", `\copy access from '`+mixture+`' csv header`)

	query, errOut, code := runTool(t, "sql", "--dialect", "postgres", "--table", "access", "--latency", "latency_ms",
		"--unit", "ms", "--status-column", "status", "--by", "route")
	require.Equal(t, 0, code, errOut)
	qfile := filepath.Join(dir, "q.sql")
	require.NoError(t, os.WriteFile(qfile, []byte(query), 0o644))
	buckets := filepath.Join(dir, "buckets.csv")
	require.NoError(t, os.WriteFile(buckets, sql("--csv", "-f", qfile), 0o644))

	// And the calls per second, for the rates.
	query, errOut, code = runTool(t, "sql", "--dialect", "postgres", "--table", "access", "--time", "timestamp", "--by", "route", "--arrivals")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, os.WriteFile(qfile, []byte(query), 0o644))
	arrivals := filepath.Join(dir, "arrivals.csv")
	require.NoError(t, os.WriteFile(arrivals, sql("--csv", "-f", qfile), 0o644))

	opts := func(by []string, in ...string) analysis.Options {
		return analysis.Options{Inputs: in, Recommend: recommend.DefaultOptions(), Ingest: ingest.Options{By: by}, Pool: 200}
	}
	got, err := analysis.Run(context.Background(), opts(nil, buckets, arrivals), nil)
	require.NoError(t, err)
	want, err := analysis.Run(context.Background(), opts([]string{"route"}, mixture), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"buckets"}, got.Input.Formats, "detected, both files")
	assert.Equal(t, want.Input.Records, got.Input.Records, "every row, counted in its bucket")
	require.Len(t, got.Groups, len(want.Groups))
	for i, w := range want.Groups {
		g := got.Groups[i]
		assert.Equal(t, w.Name, g.Name)
		assert.Equal(t, w.Samples, g.Samples, w.Name)
		assert.Equal(t, w.Excluded, g.Excluded, w.Name)
		assert.Equal(t, w.Censored, g.Censored, w.Name)
		assert.Equal(t, w.Percentiles, g.Percentiles, w.Name)
		assert.Equal(t, w.Recommendation.TimeoutSeconds, g.Recommendation.TimeoutSeconds, w.Name)
		// The rates, from the calls per second: mean, busiest minute and
		// second, and Little's law on them.
		assert.Equal(t, w.LittlesLaw, g.LittlesLaw, w.Name)
		require.NotNil(t, g.LittlesLaw.RatePerSecond, w.Name)
		assert.Equal(t, "measured", g.LittlesLaw.RateSource, w.Name)
	}
	rows, err := os.ReadFile(buckets)
	require.NoError(t, err)
	t.Logf("%d rows came back as %d bucket rows (%d bytes)", want.Input.Records, bytes.Count(rows, []byte("\n"))-1, len(rows))
}

func shellQuote(args []string) string {
	q := ""
	for i, a := range args {
		if i > 0 {
			q += " "
		}
		q += "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return q
}
