package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/sqlsource"
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

	want, got := sqlReports(t, mixture, buckets, arrivals)
	sameAsLocal(t, want, got)
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

// duckdbVersion is the DuckDB the test installs from the npm registry
// (@duckdb/node-api, which ships DuckDB itself as a prebuilt binding):
// Debian has no DuckDB package.
const duckdbVersion = "1.5.6-r.1"

// duckdbScript loads a CSV into DuckDB and writes a query's answer as CSV
// with its header: node duckdb.mjs rows.csv query.sql out.csv.
const duckdbScript = `import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'fs';
const [,, csv, sqlFile, out] = process.argv;
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run("CREATE TABLE access AS SELECT * FROM read_csv('" + csv + "', header=true, columns={'timestamp':'TIMESTAMPTZ','route':'VARCHAR','status':'INTEGER','latency_ms':'DECIMAL(18,3)'})");
const q = readFileSync(sqlFile, 'utf8').replace(/^--.*\n/gm, '').replace(/;\s*$/, '');
await c.run("COPY (" + q + ") TO '" + out + "' (HEADER, DELIMITER ',')");
`

// The same histogram computed inside DuckDB: the duckdb dialect's
// queries, run by DuckDB itself, give the report of a local read.
func TestSQLDuckDBEqualsLocalRead(t *testing.T) {
	node := requireBinary(t, "node", "nodejs")
	npm := requireBinary(t, "npm", "npm")
	dir := t.TempDir()
	install := exec.Command(npm, "install", "--silent", "--no-audit", "--no-fund", "@duckdb/node-api@"+duckdbVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		msg := fmt.Sprintf("npm install @duckdb/node-api@%s: %v: %s", duckdbVersion, err, out)
		if os.Getenv("TUNETIMEOUT_E2E") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (the npm registry is needed; TUNETIMEOUT_E2E=1 makes this a failure)")
	}
	script := filepath.Join(dir, "duckdb.mjs")
	require.NoError(t, os.WriteFile(script, []byte(duckdbScript), 0o644))
	mixture, err := filepath.Abs("../testdata/mixture.csv")
	require.NoError(t, err)
	answer := func(name string, args ...string) string {
		t.Helper()
		query, errOut, code := runTool(t, append([]string{"sql", "--dialect", "duckdb", "--table", "access"}, args...)...)
		require.Equal(t, 0, code, errOut)
		q := filepath.Join(dir, name+".sql")
		require.NoError(t, os.WriteFile(q, []byte(query), 0o644))
		out := filepath.Join(dir, name+".csv")
		cmd := exec.Command(node, script, mixture, q, out)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", b, query)
		return out
	}
	buckets := answer("buckets", "--latency", "latency_ms", "--unit", "ms", "--status-column", "status", "--by", "route")
	arrivals := answer("arrivals", "--time", "timestamp", "--by", "route", "--arrivals")

	want, got := sqlReports(t, mixture, buckets, arrivals)
	sameAsLocal(t, want, got)
}

// The same histogram computed inside a real ClickHouse (Debian's
// clickhouse-server, 18.16 in bookworm), over its HTTP interface: the
// clickhouse dialect's queries give the report of a local read.
func TestSQLClickHouseEqualsLocalRead(t *testing.T) {
	server := requireBinary(t, "clickhouse-server", "clickhouse-server")
	dir := t.TempDir()
	httpPort, tcpPort := freePort(t), freePort(t)
	cfg := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><console>1</console></logger>
    <http_port>%d</http_port>
    <tcp_port>%d</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <path>%s/data/</path>
    <tmp_path>%s/tmp/</tmp_path>
    <users_config>users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>268435456</mark_cache_size>
    <remote_servers><two_shards>
        <shard><replica><host>127.0.0.1</host><port>%d</port><default_database>shard1</default_database></replica></shard>
        <shard><replica><host>127.0.0.1</host><port>%d</port><default_database>shard2</default_database></replica></shard>
    </two_shards></remote_servers>
</yandex>
`, httpPort, tcpPort, dir, dir, tcpPort, tcpPort)
	users := `<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
    <quotas><default></default></quotas>
</yandex>
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o644))
	var log lockedBuffer
	cmd := exec.Command(server, "--config-file="+filepath.Join(dir, "config.xml"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	base := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/"
	waitForPort(t, "127.0.0.1:"+strconv.Itoa(httpPort), &log)
	query := func(q string, body io.Reader) []byte {
		t.Helper()
		u := base
		if body != nil {
			u += "?query=" + url.QueryEscape(q)
		} else {
			body = strings.NewReader(q)
		}
		resp, err := http.Post(u, "text/plain", body)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s\n%s", b, q)
		return b
	}
	query("CREATE TABLE access (timestamp DateTime, route String, status Int32, latency_ms Decimal(18, 3)) ENGINE = MergeTree ORDER BY timestamp", nil)
	mixture, err := filepath.Abs("../testdata/mixture.csv")
	require.NoError(t, err)
	raw, err := os.ReadFile(mixture)
	require.NoError(t, err)
	var tsv bytes.Buffer
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if i == 0 {
			continue
		}
		f := strings.Split(line, ",")
		// A DateTime holds whole seconds, which is all the rates read.
		fmt.Fprintf(&tsv, "%s\t%s\t%s\t%s\n", strings.Replace(f[0][:19], "T", " ", 1), f[1], f[2], f[3])
	}
	query("INSERT INTO access FORMAT TabSeparated", &tsv)

	answer := func(name string, args ...string) string {
		t.Helper()
		q, errOut, code := runTool(t, append([]string{"sql", "--dialect", "clickhouse", "--table", "access"}, args...)...)
		require.Equal(t, 0, code, errOut)
		out := filepath.Join(dir, name+".csv")
		require.NoError(t, os.WriteFile(out, query(strings.TrimSuffix(strings.TrimSpace(q), ";")+" FORMAT CSVWithNames", nil), 0o644))
		return out
	}
	buckets := answer("buckets", "--latency", "latency_ms", "--unit", "ms", "--status-column", "status", "--by", "route")
	arrivals := answer("arrivals", "--time", "timestamp", "--by", "route", "--arrivals")

	want, got := sqlReports(t, mixture, buckets, arrivals)
	sameAsLocal(t, want, got)
	// tunetimeout clickhouse: the same two queries, sent by the tool itself.
	live, err := analysis.RunClickHouse(context.Background(), sqlRunOptions(nil), analysis.ClickHouseOptions{
		Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: strings.TrimSuffix(base, "/")}},
		Rows: sqlsource.Options{Table: "access", Latency: "latency_ms", Unit: time.Millisecond, Status: "status",
			Time: "timestamp", By: []string{"route"}},
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"access at " + strings.TrimSuffix(base, "/")}, live.Input.Files)
	sameAsLocal(t, want, live)
	_, err = analysis.RunClickHouse(context.Background(), sqlRunOptions(nil), analysis.ClickHouseOptions{
		Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: strings.TrimSuffix(base, "/")}},
		Rows:   sqlsource.Options{Table: "nope", Latency: "latency_ms", Unit: time.Millisecond},
	})
	assert.ErrorContains(t, err, "refused the query (HTTP 404): Code 60: Table default.nope doesn't exist")

	// A Distributed table over two shards (two databases of this server,
	// reached as remote shards): each shard computes its part of the
	// buckets and ClickHouse adds them up; the report is the same.
	for _, q := range []string{
		"CREATE DATABASE shard1", "CREATE DATABASE shard2",
		"CREATE TABLE shard1.access AS default.access", "CREATE TABLE shard2.access AS default.access",
		"INSERT INTO shard1.access SELECT * FROM default.access WHERE toUnixTimestamp(timestamp) % 2 = 0",
		"INSERT INTO shard2.access SELECT * FROM default.access WHERE toUnixTimestamp(timestamp) % 2 = 1",
		"CREATE TABLE default.access_all AS default.access ENGINE = Distributed(two_shards, '', access)",
	} {
		query(q, nil)
	}
	half, err := strconv.Atoi(strings.TrimSpace(string(query("SELECT count() FROM shard1.access", nil))))
	require.NoError(t, err)
	assert.True(t, half > 0 && int64(half) < want.Input.Records, "both shards hold rows: %d of %d", half, want.Input.Records)
	dist, err := analysis.RunClickHouse(context.Background(), sqlRunOptions(nil), analysis.ClickHouseOptions{
		Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: strings.TrimSuffix(base, "/")}},
		Rows: sqlsource.Options{Table: "access_all", Latency: "latency_ms", Unit: time.Millisecond, Status: "status",
			Time: "timestamp", By: []string{"route"}},
	})
	require.NoError(t, err)
	sameAsLocal(t, want, dist)
	version := strings.TrimSpace(string(query("SELECT version()", nil)))
	t.Logf("ClickHouse %s; %d of %d rows on the first shard", version, half, want.Input.Records)
}

// sqlRunOptions are what the SQL tests analyse with: the pool too, so
// that Little's law is compared.
func sqlRunOptions(by []string, in ...string) analysis.Options {
	return analysis.Options{Inputs: in, Recommend: recommend.DefaultOptions(), Ingest: ingest.Options{By: by}, Pool: 200}
}

// sqlReports analyses an engine's answers, and mixture by route, the
// local read they must equal.
func sqlReports(t *testing.T, mixture string, answers ...string) (want, got *report.Report) {
	t.Helper()
	got, err := analysis.Run(context.Background(), sqlRunOptions(nil, answers...), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"buckets"}, got.Input.Formats, "detected, every answer")
	want, err = analysis.Run(context.Background(), sqlRunOptions([]string{"route"}, mixture), nil)
	require.NoError(t, err)
	return want, got
}

// sameAsLocal checks a report of an engine's answers against the local
// read's: every row counted in its bucket, and per group the samples,
// exclusions, censored calls, percentiles, timeout and Little's law, the
// measured rates included.
func sameAsLocal(t *testing.T, want, got *report.Report) {
	t.Helper()
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
		assert.Equal(t, w.LittlesLaw, g.LittlesLaw, w.Name)
		if assert.NotNil(t, g.LittlesLaw.RatePerSecond, w.Name) {
			assert.Equal(t, "measured", g.LittlesLaw.RateSource, w.Name)
		}
	}
}
