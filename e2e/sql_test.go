package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	"github.com/tunetimeout/tunetimeout/internal/names"
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

	// --max-groups 1: PostgreSQL keeps the route of most rows and folds
	// the other two into one group.
	for i, extra := range [][]string{{"--latency", "latency_ms", "--unit", "ms", "--status-column", "status"}, {"--time", "timestamp", "--arrivals"}} {
		query, errOut, code := runTool(t, append([]string{"sql", "--dialect", "postgres", "--table", "access", "--by", "route", "--max-groups", "1"}, extra...)...)
		require.Equal(t, 0, code, errOut)
		require.NoError(t, os.WriteFile(qfile, []byte(query), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("folded%d.csv", i)), sql("--csv", "-f", qfile), 0o644))
	}
	wantFolded, gotFolded := sqlReports(t, foldedMixture(t, dir, mixture, "/api/users"), filepath.Join(dir, "folded0.csv"), filepath.Join(dir, "folded1.csv"))
	sameAsLocal(t, wantFolded, gotFolded)
	assertFoldNote(t, gotFolded, 80258, 2)

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
	chs := startClickHouse(t, "")
	dir, base, query := chs.dir, chs.base, chs.query
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
	// The done-when of issue 19: the command's text and JSON reports are
	// byte-identical to analyze's on the same rows, but for the input
	// section (which names the table rather than the file).
	for _, extra := range [][]string{nil, {"--by", "route", "--pool", "200"}, {"--rate", "400", "--deadline", "2s"}} {
		for _, format := range []string{"text", "json"} {
			args := append([]string{"-o", format}, extra...)
			local, errOut, code := runTool(t, append([]string{"analyze", mixture}, args...)...)
			require.Equal(t, 0, code, errOut)
			remote, errOut, code := runTool(t, append([]string{"clickhouse", "--url", base, "--table", "access",
				"--latency", "latency_ms", "--unit", "ms", "--status-column", "status", "--time", "timestamp"}, args...)...)
			require.Equal(t, 0, code, errOut)
			l, r := withoutInput(t, format, local), withoutInput(t, format, remote)
			assert.Equal(t, l, r, "%s report, %v", format, extra)
			if format == "text" {
				assert.Contains(t, remote, "access at "+strings.TrimSuffix(base, "/"))
			}
		}
	}
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

	// --max-groups in the engine: the route of most rows kept, the other
	// two folded into one group by ClickHouse (over the Distributed table,
	// chosen once over both shards: GLOBAL IN), which reads as the local
	// read of the rows with those routes renamed "other".
	folded := foldedMixture(t, dir, mixture, "/api/users")
	wantFolded, err := analysis.Run(context.Background(), sqlRunOptions([]string{"route"}, folded), nil)
	require.NoError(t, err)
	for _, table := range []string{"access", "access_all"} {
		o := sqlRunOptions(nil)
		o.MaxGroups = 1
		got, err := analysis.RunClickHouse(context.Background(), o, analysis.ClickHouseOptions{
			Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: strings.TrimSuffix(base, "/")}},
			Rows: sqlsource.Options{Table: table, Latency: "latency_ms", Unit: time.Millisecond, Status: "status",
				Time: "timestamp", By: []string{"route"}},
		})
		require.NoError(t, err)
		sameAsLocal(t, wantFolded, got)
		assertFoldNote(t, got, 80258, 2)
	}
	version := strings.TrimSpace(string(query("SELECT version()", nil)))
	t.Logf("ClickHouse %s; %d of %d rows on the first shard", version, half, want.Input.Records)
}

// clickHouseServer is a clickhouse-server the test started on loopback,
// with its own data directory and config, no service manager.
type clickHouseServer struct {
	dir  string
	base string // http://127.0.0.1:port/
	// query sends q (as the body, or with body as the INSERT's data) and
	// returns the answer; anything but 200 fails the test.
	query func(q string, body io.Reader) []byte
}

// startClickHouse starts Debian's clickhouse-server on two free loopback
// ports (HTTP and native, the native one serving the two_shards cluster:
// two databases of this server reached as remote shards). password, if
// not empty, is the default user's.
func startClickHouse(t *testing.T, password string) *clickHouseServer {
	t.Helper()
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
        <shard><replica><host>127.0.0.1</host><port>%d</port><default_database>shard1</default_database><password>%s</password></replica></shard>
        <shard><replica><host>127.0.0.1</host><port>%d</port><default_database>shard2</default_database><password>%s</password></replica></shard>
    </two_shards></remote_servers>
</yandex>
`, httpPort, tcpPort, dir, dir, tcpPort, password, tcpPort, password)
	users := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <profiles><default></default><readonly><readonly>1</readonly></readonly></profiles>
    <users>
        <default><password>%s</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
        <reader><password></password><networks><ip>127.0.0.1</ip></networks><profile>readonly</profile><quota>default</quota></reader>
    </users>
    <quotas><default></default></quotas>
</yandex>
`, password)
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
		req, err := http.NewRequest(http.MethodPost, u, body)
		require.NoError(t, err)
		if password != "" {
			req.SetBasicAuth("default", password)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s\n%s", b, q)
		return b
	}
	return &clickHouseServer{dir: dir, base: base, query: query}
}

// foldedMixture is a copy of mixture with every route but keep renamed
// "other": the local read an engine's --max-groups must equal.
func foldedMixture(t *testing.T, dir, mixture, keep string) string {
	t.Helper()
	raw, err := os.ReadFile(mixture)
	require.NoError(t, err)
	lines := strings.Split(string(raw), "\n")
	for i := 1; i < len(lines); i++ {
		f := strings.Split(lines[i], ",")
		if len(f) > 1 && f[1] != keep {
			f[1] = "other"
			lines[i] = strings.Join(f, ",")
		}
	}
	out := filepath.Join(dir, "folded-mixture.csv")
	require.NoError(t, os.WriteFile(out, []byte(strings.Join(lines, "\n")), 0o644))
	return out
}

// assertFoldNote checks the report says calls from groups were folded.
func assertFoldNote(t *testing.T, r *report.Report, calls int64, groups int) {
	t.Helper()
	for _, f := range r.Input.Findings {
		if f.Fields["into"] == "other" {
			assert.EqualValues(t, calls, f.Fields["calls"])
			assert.EqualValues(t, groups, f.Fields["groups"])
			return
		}
	}
	t.Errorf("no note of folded groups in %q", r.Input.Notes)
}

// withoutInput is a report without its input section: in text, the
// paragraph before the first blank line; in JSON, the "input" object,
// which comes first.
func withoutInput(t *testing.T, format, out string) string {
	t.Helper()
	sep := "\n\n"
	if format == "json" {
		sep = "\n  \"groups\":"
	}
	i := strings.Index(out, sep)
	require.GreaterOrEqual(t, i, 0, "no %q in\n%s", sep, out)
	return out[i:]
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

// What tunetimeout clickhouse holds is bounded by groups x filled buckets
// (and seconds, for the rates), not by rows: its peak RSS is the same for
// 200,000 rows as for 5,000,000 (issue 19), though the engine reads 25
// times more. The rows are made by ClickHouse itself: four routes, one
// hour, latencies spread over 0 to 2 s by a hash of the row number.
func TestClickHouseClientMemoryIndependentOfRows(t *testing.T) {
	gnuTime := requireBinary(t, "time", "time")
	chs := startClickHouse(t, "")
	rss := map[int]int64{}
	for _, rows := range []int{200_000, 5_000_000} {
		table := fmt.Sprintf("rows%d", rows)
		chs.query("CREATE TABLE "+table+" (ts DateTime, route String, status Int32, latency_us UInt64) ENGINE = MergeTree ORDER BY ts", nil)
		chs.query(fmt.Sprintf(`INSERT INTO %s SELECT toDateTime(1800000000 + number %% 3600), concat('/api/r', toString(number %% 4)),
			if(number %% 1000 = 7, 503, 200), intHash64(number) %% 2000000 FROM system.numbers LIMIT %d`, table, rows), nil)
		n, err := strconv.Atoi(strings.TrimSpace(string(chs.query("SELECT count() FROM "+table, nil))))
		require.NoError(t, err)
		require.Equal(t, rows, n)

		args := []string{"clickhouse", "--url", chs.base, "--table", table, "--latency", "latency_us", "--unit", "us",
			"--status-column", "status", "--time", "ts", "--by", "route", "-o", "json"}
		// GNU time's %M, the tool's own peak: the rusage of a process Go
		// starts counts the test's memory too (it shares it until exec,
		// and Linux keeps that high-water mark across exec).
		cmd := exec.Command(gnuTime, append([]string{"-f", "%M", tool(t)}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), errOut.String())
		errLines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		kib, err := strconv.ParseInt(errLines[len(errLines)-1], 10, 64)
		require.NoError(t, err, errOut.String())
		rss[rows] = kib
		var r struct {
			Input  struct{ Records int64 }
			Groups []struct {
				Name     string
				Samples  int64
				Censored int64
				Excluded map[string]int64
			}
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		assert.Equal(t, int64(rows), r.Input.Records)
		require.Len(t, r.Groups, 4)
		for _, g := range r.Groups {
			// Row i is on route i mod 4, and a 503 when i mod 1000 is 7,
			// so on /api/r3 only.
			var excluded int64
			if g.Name == "/api/r3" {
				excluded = int64(rows / 1000)
			}
			assert.Equal(t, excluded, g.Excluded["status 5xx"], g.Name)
			assert.Equal(t, int64(rows/4)-excluded, g.Samples+g.Censored, g.Name)
		}

		// The answer itself: at most one row per group and HDR bucket.
		q, errText, code := runTool(t, append(args[:len(args)-2], "--print-sql")...)
		require.Equal(t, 0, code, errText)
		first, _, _ := strings.Cut(q, ";\n")
		answer := chs.query(first+" FORMAT TabSeparated", nil)
		lines := bytes.Count(answer, []byte("\n"))
		buckets := 2048 + 1024*10 // 2 s = 2,000,000 us < 2^21: ten halvings above 2,048
		assert.LessOrEqual(t, lines, 4*buckets, "answer rows for %d rows", rows)
		t.Logf("%d rows: %d answer rows, client peak RSS %.1f MB", rows, lines, float64(rss[rows])/1024)
	}
	// The same within 25 % or 8 MB: the runtime's own noise, not rows.
	small, large := float64(rss[200_000]), float64(rss[5_000_000])
	assert.LessOrEqual(t, large, small*1.25+8*1024, "peak RSS %.1f MB at 5,000,000 rows against %.1f MB at 200,000", large/1024, small/1024)
}

// Faults, as for Prometheus: wrong credentials (refused, never printed), a
// query error (ClickHouse's message shown), a slow query bounded by
// --query-timeout (and stopped by the server too: max_execution_time), a
// server that is down, and an endless answer bounded by
// --max-response-bytes.
func TestClickHouseFaults(t *testing.T) {
	const password = "hunter2-Sekret"
	chs := startClickHouse(t, password)
	chs.query("CREATE TABLE access (ts DateTime, route String, status Int32, latency_ms Float64) ENGINE = MergeTree ORDER BY ts", nil)
	chs.query("INSERT INTO access SELECT toDateTime(1800000000 + number % 60), '/a', 200, number % 100 FROM system.numbers LIMIT 10000", nil)
	rows := []string{"clickhouse", "--url", chs.base, "--table", "access", "--latency", "latency_ms", "--unit", "ms"}
	run := func(env []string, args ...string) (string, string, int, time.Duration) {
		t.Helper()
		cmd := exec.Command(tool(t), args...)
		cmd.Env = append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return out.String(), errOut.String(), code, time.Since(start)
	}
	auth := []string{"--basic-auth-user", "default", "--basic-auth-password-env", "CH_PASSWORD"}

	out, errOut, code, _ := run([]string{"CH_PASSWORD=" + password}, append(rows, auth...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "10,000 calls")
	// A user whose profile is readonly=1 (the usual one for reading).
	// It may not set max_execution_time: the query goes without it, and
	// the report says so.
	out, errOut, code, _ = run(nil, append(rows, "--basic-auth-user", "reader")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "10,000 calls")
	assert.Contains(t, out, "ClickHouse's profile for this user is read-only, so the queries could not carry max_execution_time=30")

	out, errOut, code, _ = run([]string{"CH_PASSWORD=wrong-" + password}, append(rows, auth...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refused the query")
	assert.Contains(t, errOut, "password")
	assert.NotContains(t, out+errOut, password)
	t.Logf("wrong password: %s", strings.TrimSpace(errOut))

	_, errOut, code, _ = run([]string{"CH_PASSWORD=" + password}, append(append(rows, auth...), "--latency", "no_such_column")...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refused the query (HTTP 4")
	assert.Contains(t, errOut, "no_such_column")

	// A query that would take minutes: 10^11 rows of system.numbers. Three
	// attempts of 1 s (and the backoff between them) bound it.
	slow := []string{"clickhouse", "--url", chs.base, "--query", "SELECT number AS us FROM system.numbers LIMIT 100000000000",
		"--latency", "us", "--unit", "us", "--query-timeout", "1s"}
	_, errOut, code, took := run([]string{"CH_PASSWORD=" + password}, append(slow, auth...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "did not answer within 1s (3 attempts)")
	assert.Less(t, took, 20*time.Second, "three attempts of 1 s")
	t.Logf("slow query: %s after %v", strings.TrimSpace(errOut), took.Round(time.Millisecond))
	// The server stopped the query too (max_execution_time): nothing of it
	// is still running a few seconds on.
	deadline := time.Now().Add(10 * time.Second)
	for {
		running := strings.TrimSpace(string(chs.query("SELECT count() FROM system.processes WHERE query LIKE '%system.numbers LIMIT 100000000000%' AND query NOT LIKE '%system.processes%'", nil)))
		if running == "0" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the slow query still runs on the server: %s", running)
		time.Sleep(200 * time.Millisecond)
	}

	down := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	_, errOut, code, _ = run(nil, "clickhouse", "--url", down, "--table", "access", "--latency", "latency_ms", "--unit", "ms", "--query-retries", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "ClickHouse at "+down)
	assert.Contains(t, errOut, "connection refused")

	// An answer that never ends (a fake: the error path only).
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "bucket_us,calls\n")
		line := []byte("1000,1\n")
		for i := 0; i < 1<<22 && r.Context().Err() == nil; i++ { // 28 MB at most: a bounded loop
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	_, errOut, code, _ = run(nil, "clickhouse", "--url", endless.URL, "--table", "access", "--latency", "latency_ms", "--unit", "ms",
		"--max-response-bytes", "1MiB")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "answered the query with more than 1 MiB, the --max-response-bytes cap")
}

// The nginx sample (testdata/nginx: a real nginx's log of calls with ids
// in their paths and query strings) in ClickHouse: --by 'route(target)'
// gives the groups, percentiles, censored (504s), excluded and rates of
// analyze --by route on the log itself, with the routes made by ClickHouse
// (its lambdas) and, with --route-pattern, on reading the answer. And
// ClickHouse's route of every tricky target equals ingest's.
func TestClickHouseRoutesEqualLocalRead(t *testing.T) {
	chs := startClickHouse(t, "")
	logPath, err := filepath.Abs("../testdata/nginx/access.log")
	require.NoError(t, err)
	confPath, err := filepath.Abs("../testdata/nginx/nginx.conf")
	require.NoError(t, err)
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	// $remote_addr [$time_local] "$request" $status $request_time
	// $upstream_connect_time $upstream_response_time "$http_user_agent"
	line := regexp.MustCompile(`^\S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d+) (\S+) \S+ (\S+) `)
	var tsv bytes.Buffer
	for i, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "line %d: %s", i+1, l)
		ts, err := time.Parse("02/Jan/2006:15:04:05 -0700", m[1])
		require.NoError(t, err)
		fmt.Fprintf(&tsv, "%s\t%s\t%s\t%s\t%s\t%s\n", ts.UTC().Format("2006-01-02 15:04:05"), m[2], m[3], m[4], m[5], m[6])
	}
	chs.query("CREATE TABLE nginx (ts DateTime, method String, target String, status Int32, request_time Decimal(9, 3), upstream_time String) ENGINE = MergeTree ORDER BY ts", nil)
	chs.query("INSERT INTO nginx FORMAT TabSeparated", &tsv)

	local := func(by []string, patterns ...string) *report.Report {
		r, err := analysis.Run(context.Background(), analysis.Options{Inputs: []string{logPath}, Recommend: recommend.DefaultOptions(), Pool: 50,
			Ingest: ingest.Options{NginxConf: confPath, LogFormatName: "timing", By: by, RoutePatterns: patterns}}, nil)
		require.NoError(t, err)
		return r
	}
	remote := func(by []string, patterns ...string) *report.Report {
		o := analysis.Options{Recommend: recommend.DefaultOptions(), Pool: 50, Ingest: ingest.Options{RoutePatterns: patterns}}
		r, err := analysis.RunClickHouse(context.Background(), o, analysis.ClickHouseOptions{
			Server: sqlsource.ClickHouse{Connection: httpclient.Options{URL: chs.base}},
			Rows: sqlsource.Options{Table: "nginx", Latency: "request_time", Unit: time.Second, Status: "status",
				Time: "ts", By: by},
		})
		require.NoError(t, err)
		return r
	}
	want := local([]string{"route"})
	require.Equal(t, []string{"/api/items/{id}", "/api/search"}, []string{want.Groups[0].Name, want.Groups[1].Name})
	require.Positive(t, want.Groups[0].Censored, "the sample's 504s")
	sameAsLocal(t, want, remote([]string{"route(target)"}))
	sameAsLocal(t, local([]string{"route", "method"}), remote([]string{"route(target)", "method"}))
	// A pattern of the user's: the engine groups by target, the routes are
	// made on reading.
	patterned := local([]string{"route"}, "/api/items/{item}")
	require.Equal(t, "/api/items/{item}", patterned.Groups[0].Name)
	sameAsLocal(t, patterned, remote([]string{"route(target)"}, "/api/items/{item}"))

	// ClickHouse's route of a target is ingest's, for the targets that
	// decide each rule of the normalization.
	targets := []string{"", "/", "//", "/a//b/", "a/b", "/users/42", "/users/42/orders/9f86d081884c7d65?x=1#f",
		"/x#frag?q", "/x?q#f", "http://host:80/users/7", "https://h", "hxxp://h/a", "/?u=http://x/y", "abc://d/e/123",
		"/u/550e8400-e29b-41d4-a716-446655440000", "/u/550e8400-e29b-41d4-a716-44665544000g", "/u/550e8400_e29b_41d4_a716_446655440000",
		"/h/deadbeef", "/h/deadbee", "/h/DEADBEEF1", "/t/abcdefghijklmno1", "/t/abcdefghijklmn1", "/t/ABC-def_ghi-jkl-1", "/t/1234567890abcdefg",
		"/t/aaaaaaaaaaaaaaaaaaaa", "/t/0000000000000000", "/\u00e9t\u00e9/12", "/v1/users", "/a b/3", "/%41/4"}
	var in bytes.Buffer
	for _, tg := range targets {
		in.WriteString(strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`).Replace(tg) + "\n")
	}
	chs.query("CREATE TABLE targets (target String) ENGINE = Memory", nil)
	chs.query("INSERT INTO targets FORMAT TabSeparated", &in)
	q, errOut, code := runTool(t, "sql", "--dialect", "clickhouse", "--table", "targets", "--latency", "1", "--unit", "us", "--by", "route(target)")
	require.Equal(t, 0, code, errOut)
	routeSQL := regexp.MustCompile(`(?m)^  SELECT (arrayStringConcat\(.*\)) AS g1,$`).FindStringSubmatch(q)
	require.NotNil(t, routeSQL, q)
	got := strings.Split(strings.TrimSuffix(string(chs.query("SELECT target, "+routeSQL[1]+" FROM targets FORMAT TabSeparated", nil)), "\n"), "\n")
	require.Len(t, got, len(targets))
	g, err := ingest.NewGrouper([]string{"route"}, nil)
	require.NoError(t, err)
	for _, row := range got {
		target, route, ok := strings.Cut(row, "\t")
		require.True(t, ok, row)
		target = strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n").Replace(target)
		// The engine's value is the route; ingest's key is the group's
		// name, the route quoted as every source quotes it (names.Value).
		assert.Equal(t, g.Key(&ingest.Sample{}, &ingest.Fields{Path: []byte(target)}), names.Value(route), "target %q", target)
	}
}
