package sqlsource

import (
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
)

// The ladder the query writes, evaluated here branch by branch, gives the
// histogram's own bucket of every value: the lowest value it keeps.
func TestBucketLadderIsTheHistogramsArithmetic(t *testing.T) {
	expr := bucketExpr(dialects["postgres"], "us")
	branch := regexp.MustCompile(`WHEN us < (\d+) THEN \(us / (\d+)\) \* (\d+)`)
	type step struct{ limit, div int64 }
	var ladder []step
	for _, m := range branch.FindAllStringSubmatch(expr, -1) {
		limit, _ := strconv.ParseInt(m[1], 10, 64)
		div, _ := strconv.ParseInt(m[2], 10, 64)
		mul, _ := strconv.ParseInt(m[3], 10, 64)
		require.Equal(t, div, mul)
		ladder = append(ladder, step{limit, div})
	}
	require.NotEmpty(t, ladder)
	eval := func(us int64) int64 {
		if us < 2048 {
			return us
		}
		for _, s := range ladder {
			if us < s.limit {
				return us / s.div * s.div
			}
		}
		return us
	}
	r := rand.New(rand.NewPCG(1, 2))
	values := []int64{0, 1, 2047, 2048, 2049, 4095, 4096, 1 << 20, 1<<20 - 1, histogram.Highest.Microseconds()}
	for range 100_000 {
		values = append(values, r.Int64N(histogram.Highest.Microseconds()))
	}
	for _, v := range values {
		require.Equal(t, histogram.BucketLowerMicros(v), eval(v), "us %d", v)
	}
	assert.Greater(t, ladder[len(ladder)-1].limit, histogram.Highest.Microseconds(), "the ladder reaches 24 hours")
}

func TestStatusLists(t *testing.T) {
	censor, exclude := statusLists(&ingest.StatusRule{})
	assert.Equal(t, []int{408, 499, 504, 524, 598, 599}, censor)
	assert.Equal(t, []string{"5xx"}, slices.Collect(maps.Keys(exclude)))
	assert.Equal(t, "(status BETWEEN 500 AND 503 OR status BETWEEN 505 AND 523 OR status BETWEEN 525 AND 597)", in("status", exclude["5xx"]))
	rule, err := ingest.ParseStatusRule("exclude=4xx count=404")
	require.NoError(t, err)
	_, exclude = statusLists(&rule)
	assert.Contains(t, in("status", exclude["4xx"]), "status BETWEEN 400 AND 403")
	assert.Contains(t, in("status", exclude["4xx"]), "status BETWEEN 405 AND 499", "404 counts; the class override takes 408 and 499 too, as analyze does")
	assert.Equal(t, "1 = 0", in("status", nil))
}

func TestBuild(t *testing.T) {
	o := Options{Dialect: "clickhouse", Table: "logs.access", Latency: "duration_ns", Unit: time.Nanosecond, Status: "status",
		Time: "ts", From: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		By: []string{"route", "lower(method)"}}
	q, err := Build(o)
	require.NoError(t, err)
	for _, want := range []string{
		"toInt64(trunc(duration_ns / 1000)) AS us", // cut toward zero, as the histogram cuts
		"intDiv(us, 2) * 2",
		"g1 AS `route`", "g2 AS `g2`", "(lower(method)) AS g2",
		"ts >= toDateTime('2026-11-30 00:00:00', 'UTC')", "ts < toDateTime('2026-12-01 00:00:00', 'UTC')",
		"GROUP BY g1, g2, bucket_us", "AS excluded_5xx", "FROM logs.access",
	} {
		assert.Contains(t, q, want)
	}
	for d, want := range map[string]string{"duckdb": "(us // 2) * 2", "trino": "truncate(latency_s * 1000000)", "bigquery": "DIV(us, 2) * 2"} {
		q, err := Build(Options{Dialect: d, Query: "select * from t", Latency: "latency_s", Unit: time.Second})
		require.NoError(t, err)
		assert.Contains(t, q, want, d)
		assert.Contains(t, q, "FROM (select * from t) AS src", d)
		assert.Contains(t, q, "GROUP BY 1", d)
	}
	for _, bad := range []Options{
		{Dialect: "mysql", Table: "t", Latency: "l", Unit: time.Millisecond},
		{Dialect: "postgres", Latency: "l", Unit: time.Millisecond},
		{Dialect: "postgres", Table: "t", Query: "q", Latency: "l", Unit: time.Millisecond},
		{Dialect: "postgres", Table: "t", Unit: time.Millisecond},
		{Dialect: "postgres", Table: "t", Latency: "l"},
	} {
		_, err := Build(bad)
		assert.Error(t, err, "%+v", bad)
	}
	_, err = Build(Options{Dialect: "mysql", Table: "t", Latency: "l", Unit: time.Millisecond})
	assert.True(t, strings.Contains(err.Error(), "clickhouse, duckdb, postgres, trino, bigquery"))
}

func TestBuildArrivals(t *testing.T) {
	q, err := BuildArrivals(Options{Dialect: "postgres", Table: "access", Time: "ts", By: []string{"route"},
		From: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	for _, want := range []string{`route AS "route"`, "CAST(floor(extract(epoch from ts)) AS BIGINT) AS second", "COUNT(*) AS calls",
		"ts >= TIMESTAMP '2026-11-30 00:00:00+00:00'", "GROUP BY 1, 2"} {
		assert.Contains(t, q, want)
	}
	for d, want := range map[string]string{"clickhouse": "toInt64(toUnixTimestamp(ts))", "duckdb": "CAST(floor(epoch(ts)) AS BIGINT)",
		"trino": "CAST(floor(to_unixtime(ts)) AS BIGINT)", "bigquery": "UNIX_SECONDS(ts)"} {
		q, err := BuildArrivals(Options{Dialect: d, Table: "t", Time: "ts"})
		require.NoError(t, err)
		assert.Contains(t, q, want, d)
	}
	_, err = Build(Options{Dialect: "clickhouse", Table: "t", Latency: "l", Unit: time.Millisecond, Time: "ts", From: time.Date(2026, 1, 1, 0, 0, 0, 5e8, time.UTC)})
	assert.ErrorContains(t, err, "whole seconds")
	_, err = BuildArrivals(Options{Dialect: "postgres", Table: "t"})
	assert.ErrorContains(t, err, "--arrivals needs --time")
}

// --max-groups in the engine: the groups of most rows kept, chosen by a
// subquery over the same rows in both queries (GLOBAL over ClickHouse's
// shards), the rest folded into one row group with their number.
func TestBuildFoldsGroupsBeyondMaxGroups(t *testing.T) {
	o := Options{Dialect: "postgres", Table: "access", Latency: "l", Unit: time.Millisecond, Time: "ts",
		By: []string{"route", "method"}, MaxGroups: 50}
	q, err := Build(o)
	require.NoError(t, err)
	key := `(CAST(LENGTH(COALESCE(CAST(route AS VARCHAR), '')) AS VARCHAR) || ':' || COALESCE(CAST(route AS VARCHAR), '') || ` +
		`CAST(LENGTH(COALESCE(CAST(method AS VARCHAR), '')) AS VARCHAR) || ':' || COALESCE(CAST(method AS VARCHAR), ''))`
	top := key + " IN (SELECT k FROM (SELECT " + key + " AS k FROM access WHERE l IS NOT NULL) AS tt_keys GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT 50)"
	for _, want := range []string{
		"CASE WHEN " + top + " THEN 0 ELSE 1 END AS folded",
		`CASE WHEN folded = 1 THEN NULL ELSE g1 END AS "route"`,
		"CASE WHEN MAX(folded) = 1 THEN (SELECT COUNT(*) - 50 FROM (SELECT k FROM (SELECT " + key + " AS k FROM access WHERE l IS NOT NULL) AS tt_keys GROUP BY k) AS tt_groups) ELSE 0 END AS folded_groups",
		"GROUP BY 1, 2, 3",
	} {
		assert.Contains(t, q, want)
	}
	a, err := BuildArrivals(o)
	require.NoError(t, err)
	assert.Contains(t, a, "CASE WHEN "+top+" THEN route ELSE NULL END AS \"route\"", "the same groups as the buckets query")
	assert.Contains(t, a, "AS folded_groups")

	o.Dialect, o.By = "clickhouse", []string{"route"}
	q, err = Build(o)
	require.NoError(t, err)
	assert.Contains(t, q, "COALESCE(toString(route), '') GLOBAL IN (SELECT k FROM (SELECT COALESCE(toString(route), '') AS k FROM access WHERE l IS NOT NULL)")
	assert.Contains(t, q, "GROUP BY `route`, bucket_us")
	for _, o := range []Options{{MaxGroups: 0, By: []string{"route"}}, {MaxGroups: 5}} {
		o.Dialect, o.Table, o.Latency, o.Unit = "duckdb", "t", "l", time.Millisecond
		q, err := Build(o)
		require.NoError(t, err)
		assert.NotContains(t, q, "folded", "no limit, or no groups: nothing to fold")
	}
}

// route(COL): ClickHouse makes the routes itself (and folds by route);
// elsewhere, or with the user's patterns, the answer holds the targets in
// route_target, for analyze to make the routes of, and nothing is folded
// by target.
func TestBuildRoutes(t *testing.T) {
	o := Options{Dialect: "clickhouse", Table: "nginx", Latency: "request_time", Unit: time.Second, By: []string{"route(target)", "method"}, MaxGroups: 10}
	q, err := Build(o)
	require.NoError(t, err)
	assert.Contains(t, q, "arrayStringConcat(arrayMap(s -> if(match(s, '^[0-9]+$')")
	assert.Contains(t, q, "g1 END AS `route`")
	assert.Contains(t, q, "GLOBAL IN", "folded by route")
	for _, o := range []Options{
		{Dialect: "postgres", Table: "nginx", Latency: "request_time", Unit: time.Second, By: []string{"ROUTE( target )", "method"}, MaxGroups: 10},
		{Dialect: "clickhouse", Table: "nginx", Latency: "request_time", Unit: time.Second, By: []string{"route(target)", "method"}, MaxGroups: 10,
			RoutePatterns: []string{"/users/{id}"}},
	} {
		q, err := Build(o)
		require.NoError(t, err)
		assert.Contains(t, q, "target AS g1", o.Dialect)
		assert.Contains(t, q, "AS "+dialects[o.Dialect].quote("route_target"), o.Dialect)
		assert.NotContains(t, q, "folded", "targets are not folded: their routes are", o.Dialect)
		assert.NotContains(t, q, "arrayMap", o.Dialect)
	}
}

// --window in the clickhouse dialect: the rows grouped by the window of
// their time too, whose start is a whole multiple of the window since the
// epoch (the local read's windows), between the groups and the bucket.
func TestBuildWindows(t *testing.T) {
	o := Options{Dialect: "clickhouse", Table: "logs.access", Latency: "latency_us", Unit: time.Microsecond, Status: "status",
		Time: "ts", By: []string{"route"}, Window: time.Hour}
	q, err := Build(o)
	require.NoError(t, err)
	for _, want := range []string{
		"intDiv(toInt64(toUnixTimestamp(ts)), 3600) * 3600 AS ws",
		"ws AS window_start",
		"GROUP BY g1, window_start, bucket_us\nORDER BY g1, window_start, bucket_us",
		"per group and window of 3600 s, clickhouse",
	} {
		assert.Contains(t, q, want)
	}
	// The window expression is the histogram's: evaluated here, it gives
	// the start Group.Cell gives each second.
	set := histogram.NewSet()
	set.Every(15 * time.Minute)
	g := set.Group("g")
	for _, sec := range []int64{0, 1, 899, 900, 1_800_000_000, 1_800_000_899, 1_800_000_901} {
		assert.Equal(t, g.Cell(time.Unix(sec, 0)).Start, sec/900*900, "second %d", sec)
	}
	// Folded groups: the window stays the second column.
	o.MaxGroups = 3
	q, err = Build(o)
	require.NoError(t, err)
	assert.Contains(t, q, "GROUP BY `route`, window_start, bucket_us")
	// An expression of a time column is kept in parentheses.
	o.Time = "toDateTime(ts_ms / 1000)"
	q, err = Build(o)
	require.NoError(t, err)
	assert.Contains(t, q, "intDiv(toInt64(toUnixTimestamp((toDateTime(ts_ms / 1000)))), 3600) * 3600 AS ws")

	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Dialect: "clickhouse", Table: "t", Latency: "l", Unit: time.Millisecond, Window: time.Hour}, "--window needs --time"},
		{Options{Dialect: "postgres", Table: "t", Latency: "l", Unit: time.Millisecond, Time: "ts", Window: time.Hour}, "the postgres queries are not grouped by window"},
		{Options{Dialect: "clickhouse", Table: "t", Latency: "l", Unit: time.Millisecond, Time: "ts", Window: 1500 * time.Millisecond}, "whole seconds"},
		{Options{Dialect: "clickhouse", Table: "t", Latency: "l", Unit: time.Millisecond, Time: "ts", Window: time.Minute,
			From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}, "makes 217441 windows from --from to --to; at most 100000"},
	} {
		_, err := Build(c.o)
		assert.ErrorContains(t, err, c.want)
	}
}

// A column name that would end the expression it is put in, or the query,
// is refused before anything is sent: the time column that closes the
// window's parentheses and starts a statement of its own, and the like in
// every flag that takes SQL. Quotes hide what they hold; names the answer
// gives its columns are quoted.
func TestBuildRefusesInjection(t *testing.T) {
	base := Options{Dialect: "clickhouse", Table: "access", Latency: "latency_us", Unit: time.Microsecond, Time: "ts", Window: time.Hour}
	for _, c := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Time = "ts)), 1) AS ws FROM access; DROP TABLE access; --" }, `--time "ts)), 1) AS ws FROM access; DROP TABLE access; --": it closes a parenthesis it did not open`},
		{func(o *Options) { o.Time = "ts; DROP TABLE access" }, "it has a ';'"},
		{func(o *Options) { o.Latency = "latency_us -- x" }, "--latency \"latency_us -- x\": it has a comment"},
		{func(o *Options) { o.Latency = "latency_us /* x */" }, "it has a comment"},
		{func(o *Options) { o.Status = "status # x" }, "--status-column \"status # x\": it has a comment"},
		{func(o *Options) { o.By = []string{"route", "concat(method"} }, `--by "concat(method": it opens a parenthesis it does not close`},
		{func(o *Options) { o.By = []string{"route('x)"} }, "it opens a quote (') it does not close"},
		{func(o *Options) { o.Table = "access WHERE 1) UNION ALL (SELECT 1" }, "--table"},
		{func(o *Options) { o.Table, o.Query = "", "SELECT * FROM access) AS src, system.users AS u, (SELECT 1" }, "--query"},
		{func(o *Options) { o.By = []string{"`a`; DROP TABLE access"} }, "it has a ';'"},
	} {
		o := base
		c.change(&o)
		_, err := Build(o)
		assert.ErrorContains(t, err, c.want)
		_, err = BuildArrivals(o)
		assert.Error(t, err, "arrivals too: %+v", o)
	}
	// Quoted, the same characters are the value's: kept as they are.
	o := base
	o.By = []string{"if(path LIKE '%;--)%', 'odd\\'s', `we;ird)`)", "\"a\"\"b;\""}
	o.Latency = "ifNull(latency_us, 0) /* not a comment */"
	_, err := Build(o)
	assert.ErrorContains(t, err, "comment", "a comment outside quotes is one")
	o.Latency = "latency_us"
	q, err := Build(o)
	require.NoError(t, err)
	assert.Contains(t, q, "(if(path LIKE '%;--)%', 'odd\\'s', `we;ird)`)) AS g1")
	// The answer's column names are quoted, their own quote taken out.
	o.By = []string{"x`y"}
	_, err = Build(o)
	assert.ErrorContains(t, err, "it opens a quote (`) it does not close")
	assert.Equal(t, "`route`", backquote("route"))
	assert.Equal(t, "`ab`", backquote("a`b"))
	assert.Equal(t, `"a""b"`, doublequote(`a"b`))
	// A line break in --latency does not end the query's first comment.
	o = base
	o.Latency = "latency_us\n + 0"
	q, err = Build(o)
	require.NoError(t, err)
	first, _, _ := strings.Cut(q, "\n")
	assert.Contains(t, first, "of latency_us  + 0 per group and window")
}
