// Package sqlsource writes the query that makes a SQL engine compute the
// histogram tunetimeout would, where the rows are: grouped by the groups
// and by the HDR bucket of each latency, with the status rule's censored
// and excluded calls as conditional counts. What comes back is bounded by
// groups x filled buckets, not rows, and reads back with --input buckets
// (ingest/buckets.go) into the same histograms a local read fills.
package sqlsource

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Dialects are the engines the query is written for.
var Dialects = []string{"clickhouse", "duckdb", "postgres", "trino", "bigquery"}

// Options say where the rows are and what their columns mean.
type Options struct {
	Dialect string
	// Table is the table (or view) the rows are in; Query a subquery
	// instead of it.
	Table, Query string
	// Latency is the latency column (or an expression), in Unit.
	Latency string
	Unit    time.Duration
	// Status is the HTTP status column; "" = none (every call counts).
	Status string
	// Time is the time column; From and To bound it, [From, To).
	Time     string
	From, To time.Time
	// Window, when not 0, groups the rows by window of Time too: the
	// answer's WindowColumn is the Unix second each window starts at,
	// a whole multiple of Window since the epoch, as analyze --window
	// makes windows (clickhouse dialect alone).
	Window time.Duration
	// By are the group columns (or expressions), in order. route(COL)
	// is the route of the request target in COL, as --by route gives it
	// for a log (see routeKey).
	By []string
	// RoutePatterns are the user's own routes (--route-pattern), for
	// route(COL).
	RoutePatterns []string
	// Rule is the status rule, as analyze applies it.
	Rule ingest.StatusRule
	// MaxGroups, when there are groups: the engine keeps the MaxGroups
	// groups of most rows apart and folds the rest into one (see fold);
	// 0 or less = no limit.
	MaxGroups int
}

// Column names of the result, which ingest's buckets format reads.
const (
	BucketColumn   = ingest.BucketsBucketColumn
	CallsColumn    = ingest.BucketsCallsColumn
	CensoredColumn = ingest.BucketsCensoredColumn
	FoldedColumn   = ingest.BucketsFoldedColumn
	// RouteTargetColumn holds request targets whose routes analyze
	// makes on reading.
	RouteTargetColumn = ingest.BucketsRouteTargetColumn
	// WindowColumn holds the window of the calls, with Options.Window.
	WindowColumn = ingest.BucketsWindowColumn
)

// MaxWindows bounds the windows of one analysis of buckets (--window):
// what the client keeps grows with the windows (docs/windows.md: about
// 500 bytes a window and group while reading, and a row of the report
// each), and so does the engine's answer, by groups x windows x filled
// buckets. 100,000 are 69 days of 1-minute windows, 11 years of hours.
const MaxWindows = 100_000

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// Build writes the query. Column names that are plain identifiers are
// used as they are; anything else is taken as an expression of the
// dialect, written by the user (--by, --latency), and kept in parentheses.
func Build(o Options) (string, error) {
	if o.Latency == "" {
		return "", usage.About(usage.Latency, fmt.Errorf("give %s, the latency column", usage.Latency))
	}
	if o.Unit <= 0 {
		return "", usage.About(usage.Unit, fmt.Errorf("give %s, the latency column's unit: ns, us, ms or s", usage.Unit))
	}
	d, from, err := o.source()
	if err != nil {
		return "", err
	}
	// The latency in whole microseconds, cut as the histogram cuts a
	// duration (histogram.toMicros): toward zero.
	us := micros(d, expr(o.Latency), o.Unit)

	var inner []string
	for i, b := range o.By {
		inner = append(inner, fmt.Sprintf("%s AS g%d", o.groupExpr(d, b), i+1))
	}
	inner = append(inner, us+" AS us")
	if o.Window > 0 {
		inner = append(inner, d.window(expr(o.Time), int64(o.Window/time.Second))+" AS ws")
	}
	// No status column: 0, which no rule censors or excludes (a NULL
	// would be as good, but ClickHouse 18 cannot cast one to an integer).
	status := "0"
	if o.Status != "" {
		status = expr(o.Status)
	}
	inner = append(inner, status+" AS status")
	where := o.where(d)
	fold, folded := o.fold(d, from, where)
	if fold != "" {
		inner = append(inner, "CASE WHEN "+fold+" THEN 0 ELSE 1 END AS folded")
	}

	censor, exclude := statusLists(&o.Rule)
	// Grouped and ordered by position (Trino does not group by an
	// alias), or by name where positions are not known (ClickHouse before
	// 21.x).
	var outer, groupBy []string
	for i, b := range o.By {
		name, col := fmt.Sprintf("g%d", i+1), d.quote(o.groupColumn(b, i))
		if fold == "" {
			outer = append(outer, name+" AS "+col)
			groupBy = append(groupBy, d.position(i+1, name))
			continue
		}
		outer = append(outer, fmt.Sprintf("CASE WHEN folded = 1 THEN NULL ELSE %s END AS %s", name, col))
		groupBy = append(groupBy, d.position(i+1, col))
	}
	if o.Window > 0 {
		// The window after the groups, before the bucket: the answer
		// comes group by group, each in time order, as a log is read.
		outer = append(outer, "ws AS "+WindowColumn)
		groupBy = append(groupBy, d.position(len(outer), WindowColumn))
	}
	outer = append(outer, bucketExpr(d, "us")+" AS "+BucketColumn, "COUNT(*) AS "+CallsColumn)
	outer = append(outer, fmt.Sprintf("SUM(CASE WHEN %s THEN 1 ELSE 0 END) AS %s", in("status", censor), CensoredColumn))
	for _, class := range slices.Sorted(maps.Keys(exclude)) {
		outer = append(outer, fmt.Sprintf("SUM(CASE WHEN %s THEN 1 ELSE 0 END) AS %s", in("status", exclude[class]), ingest.BucketsExcludedPrefix+class))
	}
	if fold != "" {
		outer = append(outer, fmt.Sprintf("CASE WHEN MAX(folded) = 1 THEN %s ELSE 0 END AS %s", folded, FoldedColumn))
	}
	groupBy = append(groupBy, d.position(len(groupBy)+1, BucketColumn))
	var b strings.Builder
	per := "group"
	if o.Window > 0 {
		per = "group and window of " + strconv.FormatInt(int64(o.Window/time.Second), 10) + " s"
	}
	fmt.Fprintf(&b, "-- tunetimeout: the HDR histogram (3 significant digits, microseconds) of %s per %s, %s\n", oneLine(o.Latency), per, o.Dialect)
	fmt.Fprintf(&b, "SELECT %s\nFROM (\n  SELECT %s\n  FROM %s\n  WHERE %s\n) AS tt\nGROUP BY %s\nORDER BY %s",
		strings.Join(outer, ",\n  "), strings.Join(inner, ",\n    "), from, strings.Join(where, "\n    AND "),
		strings.Join(groupBy, ", "), strings.Join(groupBy, ", "))
	return b.String(), nil
}

// source checks what both queries read: the dialect, where the rows are
// and the time bounds; it returns the dialect and the FROM clause.
func (o Options) source() (dialect, string, error) {
	if !slices.Contains(Dialects, o.Dialect) {
		return dialect{}, "", usage.About(usage.Dialect, fmt.Errorf("%s %q: want one of %s", usage.Dialect, o.Dialect, strings.Join(Dialects, ", ")))
	}
	if (o.Table == "") == (o.Query == "") {
		return dialect{}, "", fmt.Errorf("give %s or %s (a subquery), one of them", usage.Table, usage.Query)
	}
	d := dialects[o.Dialect]
	if err := d.checkBounds(o); err != nil {
		return dialect{}, "", err
	}
	if err := o.checkWindow(d); err != nil {
		return dialect{}, "", err
	}
	if err := o.checkExpressions(d); err != nil {
		return dialect{}, "", err
	}
	if o.Query != "" {
		return d, "(" + o.Query + ") AS src", nil
	}
	return d, o.Table, nil
}

// where is what both queries keep of the rows: those in the time range
// with a latency.
func (o Options) where(d dialect) []string {
	var where []string
	if o.Time != "" && !o.From.IsZero() {
		where = append(where, fmt.Sprintf("%s >= %s", expr(o.Time), d.timestamp(o.From)))
	}
	if o.Time != "" && !o.To.IsZero() {
		where = append(where, fmt.Sprintf("%s < %s", expr(o.Time), d.timestamp(o.To)))
	}
	if o.Latency != "" {
		where = append(where, expr(o.Latency)+" IS NOT NULL")
	}
	return where
}

// fold is --max-groups inside the engine: a condition, true of a row
// whose group is among the MaxGroups groups of most rows (ties by key),
// and the number of the other groups, which are folded into one (their
// group columns NULL, FoldedColumn their number). Both are subqueries over
// the rows the buckets query reads (where), so the buckets and the
// arrivals fold the same groups. A group's key is its columns as text,
// each after its length, so that no two groups share one; "" and NULL are
// one group, as the answer reads them. It is "" without groups or a limit.
func (o Options) fold(d dialect, from string, where []string) (cond, folded string) {
	if len(o.By) == 0 || o.MaxGroups <= 0 {
		return "", ""
	}
	for _, b := range o.By {
		if _, ok := routeKey(b); ok && !o.routeInEngine(d) {
			// The engine sees targets, not routes: the routes are
			// made, and the groups beyond the limit folded, on reading.
			return "", ""
		}
	}
	var parts []string
	for _, b := range o.By {
		v := d.coalesceText(o.groupExpr(d, b))
		if len(o.By) == 1 {
			parts = append(parts, v)
			continue
		}
		parts = append(parts, d.text(d.length(v)), "':'", v)
	}
	key := d.concat(parts)
	rows := fmt.Sprintf("SELECT %s AS k FROM %s", key, from)
	if len(where) > 0 {
		rows += " WHERE " + strings.Join(where, " AND ")
	}
	cond = fmt.Sprintf("%s %s (SELECT k FROM (%s) AS tt_keys GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT %d)",
		key, d.inSubquery, rows, o.MaxGroups)
	folded = fmt.Sprintf("(SELECT COUNT(*) - %d FROM (SELECT k FROM (%s) AS tt_keys GROUP BY k) AS tt_groups)", o.MaxGroups, rows)
	return cond, folded
}

// routeCall is --by route(COL).
var routeCall = regexp.MustCompile(`^(?i:route)\((.+)\)$`)

// routeKey returns COL of a group key route(COL).
func routeKey(b string) (string, bool) {
	m := routeCall.FindStringSubmatch(strings.TrimSpace(b))
	if m == nil {
		return "", false
	}
	return strings.TrimSpace(m[1]), true
}

// routeInEngine says whether the dialect makes the routes of route(COL)
// itself: ClickHouse, whose lambdas write ingest.NormalizeRoute exactly
// (clickHouseRoute), when there are no --route-pattern routes. Elsewhere
// the engine groups by the target as it is, and analyze makes the routes
// of the answer's RouteTargetColumn (ingest's buckets format).
func (o Options) routeInEngine(d dialect) bool {
	return d.route != nil && len(o.RoutePatterns) == 0
}

// groupExpr is the expression of group key b.
func (o Options) groupExpr(d dialect, b string) string {
	if col, ok := routeKey(b); ok {
		if o.routeInEngine(d) {
			return d.route(expr(col))
		}
		return expr(col)
	}
	return expr(b)
}

// groupColumn names the result's column of group key i: route for a
// route the engine made, RouteTargetColumn for one made on reading, the
// column's own name, or g<i> for an expression.
func (o Options) groupColumn(b string, i int) string {
	if _, ok := routeKey(b); ok {
		if o.routeInEngine(dialects[o.Dialect]) {
			return "route"
		}
		return RouteTargetColumn
	}
	if identifier.MatchString(b) {
		if j := strings.LastIndexByte(b, '.'); j >= 0 {
			return b[j+1:]
		}
		return b
	}
	return "g" + strconv.Itoa(i+1)
}

func expr(s string) string {
	if identifier.MatchString(s) {
		return s
	}
	return "(" + s + ")"
}

// statusLists are the codes the rule censors and those it excludes, by
// class ("5xx"), as analyze applies them (ingest.StatusRule.Action).
func statusLists(r *ingest.StatusRule) (censor []int, exclude map[string][]int) {
	exclude = map[string][]int{}
	for code := 100; code <= 999; code++ {
		switch r.Action(code) {
		case ingest.Censor:
			censor = append(censor, code)
		case ingest.Exclude:
			class := strconv.Itoa(code/100) + "xx"
			exclude[class] = append(exclude[class], code)
		}
	}
	return censor, exclude
}

// in is col IN (codes), ranges of consecutive codes written BETWEEN.
func in(col string, codes []int) string {
	if len(codes) == 0 {
		return "1 = 0"
	}
	var parts, singles []string
	for i := 0; i < len(codes); {
		j := i
		for j+1 < len(codes) && codes[j+1] == codes[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%s BETWEEN %d AND %d", col, codes[i], codes[j]))
		} else {
			for k := i; k <= j; k++ {
				singles = append(singles, strconv.Itoa(codes[k]))
			}
		}
		i = j + 1
	}
	if len(singles) > 0 {
		parts = append(parts, col+" IN ("+strings.Join(singles, ", ")+")")
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// bucketExpr is the HDR bucket's lowest value of us, the histogram's own
// arithmetic (histogram.BucketLowerMicros): below 2,048 every microsecond
// is a bucket; above, the value with its lowest s bits cleared, s =
// floor(log2(us)) - 10, written as a ladder of powers of two (exact in
// every engine, where a floating log2 is not) up to 24 hours.
func bucketExpr(d dialect, us string) string {
	var b strings.Builder
	b.WriteString("CASE WHEN " + us + " < 2048 THEN " + us)
	for s := 1; ; s++ {
		limit := int64(2048) << s
		p := int64(1) << s
		fmt.Fprintf(&b, " WHEN %s < %d THEN %s * %d", us, limit, d.intDiv(us, p), p)
		if limit > histogram.Highest.Microseconds() {
			break
		}
	}
	b.WriteString(" ELSE " + us + " END")
	return b.String()
}

// micros is the latency column in whole microseconds, cut toward zero.
func micros(d dialect, col string, unit time.Duration) string {
	switch {
	case unit == time.Microsecond:
		return d.cast(d.trunc(col))
	case unit > time.Microsecond:
		return d.cast(d.trunc(fmt.Sprintf("%s * %d", col, unit/time.Microsecond)))
	}
	return d.cast(d.trunc(fmt.Sprintf("%s / %d", col, time.Microsecond/unit)))
}

// BuildArrivals writes the query of the calls per second per group, for
// the rates: every row in the time range (the excluded ones too, as a
// local read counts arrivals), by the whole second that holds its time.
func BuildArrivals(o Options) (string, error) {
	if o.Time == "" {
		return "", usage.About(usage.Arrivals, fmt.Errorf("%s needs %s, the time column", usage.Arrivals, usage.Time))
	}
	d, from, err := o.source()
	if err != nil {
		return "", err
	}
	where := o.where(d)
	fold, folded := o.fold(d, from, where)
	var cols, groupBy []string
	for i, b := range o.By {
		v := o.groupExpr(d, b)
		if fold != "" {
			v = fmt.Sprintf("CASE WHEN %s THEN %s ELSE NULL END", fold, v)
		}
		cols = append(cols, fmt.Sprintf("%s AS %s", v, d.quote(o.groupColumn(b, i))))
		groupBy = append(groupBy, d.position(i+1, d.quote(o.groupColumn(b, i))))
	}
	cols = append(cols, d.epoch(expr(o.Time))+" AS "+ingest.BucketsSecondColumn, "COUNT(*) AS "+CallsColumn)
	groupBy = append(groupBy, d.position(len(o.By)+1, ingest.BucketsSecondColumn))
	if fold != "" {
		cols = append(cols, fmt.Sprintf("CASE WHEN MAX(CASE WHEN %s THEN 0 ELSE 1 END) = 1 THEN %s ELSE 0 END AS %s", fold, folded, FoldedColumn))
	}
	where = append([]string{expr(o.Time) + " IS NOT NULL"}, where...)
	return fmt.Sprintf("-- tunetimeout: calls per second per group, %s\nSELECT %s\nFROM %s\nWHERE %s\nGROUP BY %s\nORDER BY %s",
		o.Dialect, strings.Join(cols, ",\n  "), from, strings.Join(where, "\n  AND "), strings.Join(groupBy, ", "), strings.Join(groupBy, ", ")), nil
}

// dialect is what differs between engines.
type dialect struct {
	intDiv    func(a string, b int64) string
	trunc     func(x string) string
	cast      func(x string) string
	quote     func(name string) string
	timestamp func(t time.Time) string
	// epoch is the whole second (Unix time) that holds a timestamp.
	epoch func(ts string) string
	// text is a value as text; length a text's length; concat joins
	// texts.
	text, length func(x string) string
	concat       func(parts []string) string
	// inSubquery is how a value is looked up in a subquery's answer.
	inSubquery string
	// route is the route of a request target, as ingest.NormalizeRoute
	// makes it; nil: the dialect has none, the routes are made on reading.
	route func(target string) string
	// window is the start of the window of length secs that holds a
	// timestamp, in Unix seconds; nil: the dialect has none (Window).
	window func(ts string, secs int64) string
	// backslash: a backslash escapes the next character in a quoted
	// string or name (checkExpressions).
	backslash bool
	// hashComment: # starts a comment, as -- does.
	hashComment bool
	// byName: GROUP BY and ORDER BY name their columns, not positions.
	byName bool
	// wholeSeconds: its time bounds are whole seconds.
	wholeSeconds bool
}

// checkBounds refuses a time bound the dialect cannot write.
func (d dialect) checkBounds(o Options) error {
	for _, b := range []struct {
		option usage.Option
		t      time.Time
	}{{usage.From, o.From}, {usage.To, o.To}} {
		if d.wholeSeconds && b.t.Nanosecond() != 0 {
			return usage.About(b.option, fmt.Errorf("%s %s: %s's time bounds are whole seconds", b.option, b.t.UTC().Format(time.RFC3339Nano), o.Dialect))
		}
	}
	return nil
}

// checkWindow refuses a Window the query cannot group by: without a time
// column, in a dialect without windows, not whole seconds, or of more
// than MaxWindows windows between --from and --to.
func (o Options) checkWindow(d dialect) error {
	switch {
	case o.Window == 0:
		return nil
	case o.Window < time.Second || o.Window%time.Second != 0:
		return usage.About(usage.Window, fmt.Errorf("%s %s: give whole seconds, at least one", usage.Window, o.Window))
	case d.window == nil:
		return usage.About(usage.Window, fmt.Errorf("%s: the %s queries are not grouped by window (clickhouse's are)", usage.Window, o.Dialect))
	case o.Time == "":
		return usage.About(usage.Window, fmt.Errorf("%s needs %s, the time column the windows are of", usage.Window, usage.Time))
	case !o.From.IsZero() && !o.To.IsZero() && o.To.Sub(o.From)/o.Window >= MaxWindows:
		return usage.About(usage.Window, fmt.Errorf("%s %s makes %d windows from %s to %s; at most %d: give a longer %s or a shorter period",
			usage.Window, o.Window, o.To.Sub(o.From)/o.Window+1, usage.From, usage.To, MaxWindows, usage.Window))
	}
	return nil
}

// checkExpressions refuses a table, subquery, column or expression that
// is not one: a ';', a comment, a parenthesis closed that was not opened
// (or opened and not closed), or a quote not closed, outside quoted
// strings and names. Expressions are the user's SQL, kept in parentheses
// (expr); such a value would end them, or the query, and run as SQL of
// its own (--time "ts) AS ws FROM t; DROP TABLE t --").
func (o Options) checkExpressions(d dialect) error {
	type value struct {
		option usage.Option
		v      string
	}
	values := []value{{usage.Table, o.Table}, {usage.Query, o.Query}, {usage.Latency, o.Latency}, {usage.StatusColumn, o.Status}, {usage.Time, o.Time}}
	for _, b := range o.By {
		values = append(values, value{usage.By, b})
	}
	for _, v := range values {
		if err := d.oneExpression(v.v); err != nil {
			return usage.About(v.option, fmt.Errorf("%s %q: %v: give one column or expression", v.option, v.v, err))
		}
	}
	return nil
}

// oneExpression says why s is not one SQL expression of the dialect
// (checkExpressions); nil when it is.
func (d dialect) oneExpression(s string) error {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"' || c == '`':
			j, closed := i+1, false
			for j < len(s) && !closed {
				switch {
				case d.backslash && s[j] == '\\':
					j += 2
				case s[j] == c && j+1 < len(s) && s[j+1] == c: // doubled: the quote itself
					j += 2
				case s[j] == c:
					closed = true
				default:
					j++
				}
			}
			if !closed {
				return fmt.Errorf("it opens a quote (%c) it does not close", c)
			}
			i = j
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				return errors.New("it closes a parenthesis it did not open")
			}
		case c == ';':
			return errors.New("it has a ';', which ends a statement")
		case c == '-' && strings.HasPrefix(s[i:], "--"), c == '/' && strings.HasPrefix(s[i:], "/*"), c == '#' && d.hashComment:
			return errors.New("it has a comment")
		}
	}
	if depth > 0 {
		return errors.New("it opens a parenthesis it does not close")
	}
	return nil
}

// oneLine is s with its line breaks made spaces, for a comment of the
// query: a line break would end the comment and make the rest SQL.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// coalesceText is a value as text, NULL as "".
func (d dialect) coalesceText(x string) string { return "COALESCE(" + d.text(x) + ", '')" }

// position is the i-th output column, name, in GROUP BY and ORDER BY.
func (d dialect) position(i int, name string) string {
	if d.byName {
		return name
	}
	return strconv.Itoa(i)
}

var dialects = map[string]dialect{
	"clickhouse": {
		text:   func(x string) string { return "toString(" + x + ")" },
		length: func(x string) string { return "length(" + x + ")" },
		concat: func(p []string) string {
			if len(p) == 1 {
				return p[0] // concat takes two or more
			}
			return "concat(" + strings.Join(p, ", ") + ")"
		},
		// GLOBAL: over a Distributed table, the groups are chosen once,
		// over every shard's rows, not by each shard over its own.
		inSubquery: "GLOBAL IN",
		route:      clickHouseRoute,
		intDiv:     func(a string, b int64) string { return fmt.Sprintf("intDiv(%s, %d)", a, b) },
		trunc:      func(x string) string { return "trunc(" + x + ")" },
		cast:       func(x string) string { return "toInt64(" + x + ")" },
		quote:      backquote,
		// toDateTime, which every ClickHouse has (toDateTime64 came in
		// 20.1): whole seconds (checkBounds).
		timestamp: func(t time.Time) string {
			return fmt.Sprintf("toDateTime('%s', 'UTC')", t.UTC().Format("2006-01-02 15:04:05"))
		},
		wholeSeconds: true,
		epoch:        func(ts string) string { return "toInt64(toUnixTimestamp(" + ts + "))" },
		// Windows start at whole multiples of their length since the
		// epoch, in UTC, as histogram.Group.Cell makes them. Not
		// toStartOfInterval: it came in 19.x (ClickHouse pull request
		// 4304), after Debian's 18.16, and starts hours and days in the
		// time zone of the server or the column, so that with a zone of
		// +05:30, or --window 1d, its windows are not the local read's.
		// toUnixTimestamp is a UInt32 (no second before 1970), so
		// intDiv, which truncates, is the floor.
		window: func(ts string, secs int64) string {
			return fmt.Sprintf("intDiv(toInt64(toUnixTimestamp(%s)), %d) * %d", ts, secs, secs)
		},
		// ClickHouse's string literals and quoted names take backslash
		// escapes ('it\'s'), and newer releases take # as well as -- to
		// start a comment (https://clickhouse.com/docs/reference/syntax).
		backslash:   true,
		hashComment: true,
		byName:      true,
	},
	"duckdb": {
		text:       func(x string) string { return "CAST(" + x + " AS VARCHAR)" },
		length:     func(x string) string { return "LENGTH(" + x + ")" },
		concat:     pipes,
		inSubquery: "IN",
		intDiv:     func(a string, b int64) string { return fmt.Sprintf("(%s // %d)", a, b) },
		trunc:      func(x string) string { return "trunc(" + x + ")" },
		cast:       func(x string) string { return "CAST(" + x + " AS BIGINT)" },
		quote:      doublequote,
		timestamp:  isoTimestamp,
		epoch:      func(ts string) string { return "CAST(floor(epoch(" + ts + ")) AS BIGINT)" },
	},
	"postgres": {
		text:       func(x string) string { return "CAST(" + x + " AS VARCHAR)" },
		length:     func(x string) string { return "LENGTH(" + x + ")" },
		concat:     pipes,
		inSubquery: "IN",
		intDiv:     func(a string, b int64) string { return fmt.Sprintf("(%s / %d)", a, b) },
		trunc:      func(x string) string { return "trunc(" + x + ")" },
		cast:       func(x string) string { return "CAST(" + x + " AS BIGINT)" },
		quote:      doublequote,
		timestamp:  isoTimestamp,
		epoch:      func(ts string) string { return "CAST(floor(extract(epoch from " + ts + ")) AS BIGINT)" },
	},
	"trino": {
		text:       func(x string) string { return "CAST(" + x + " AS VARCHAR)" },
		length:     func(x string) string { return "LENGTH(" + x + ")" },
		concat:     pipes,
		inSubquery: "IN",
		intDiv:     func(a string, b int64) string { return fmt.Sprintf("(%s / %d)", a, b) },
		trunc:      func(x string) string { return "truncate(" + x + ")" },
		cast:       func(x string) string { return "CAST(" + x + " AS BIGINT)" },
		quote:      doublequote,
		timestamp:  isoTimestamp,
		epoch:      func(ts string) string { return "CAST(floor(to_unixtime(" + ts + ")) AS BIGINT)" },
	},
	"bigquery": {
		text:       func(x string) string { return "CAST(" + x + " AS STRING)" },
		length:     func(x string) string { return "LENGTH(" + x + ")" },
		concat:     pipes,
		inSubquery: "IN",
		intDiv:     func(a string, b int64) string { return fmt.Sprintf("DIV(%s, %d)", a, b) },
		trunc:      func(x string) string { return "TRUNC(" + x + ")" },
		cast:       func(x string) string { return "CAST(" + x + " AS INT64)" },
		quote:      backquote,
		timestamp:  func(t time.Time) string { return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00'" },
		epoch:      func(ts string) string { return "UNIX_SECONDS(" + ts + ")" },
		backslash:  true,
	},
}

// clickHouseRoute is ingest's route of a request target, in SQL that
// ClickHouse 18 has: the path of the target (pathOf: a scheme and
// authority within its first 10 bytes dropped, then the query string and
// fragment), "/" before it unless it starts with one, and each segment
// that looks like an identifier (identifierOf: all digits; a UUID; 8 or
// more hex digits with a digit; 16 or more letters, digits, '-' and '_'
// with a digit and a letter) made {id}. Lengths are in bytes, as Go's.
func clickHouseRoute(t string) string {
	scheme := "position(" + t + ", '://')"
	rest := "substring(" + t + ", " + scheme + " + 3)"
	path := fmt.Sprintf("if(%s BETWEEN 1 AND 10, if(position(%s, '/') > 0, substring(%s, position(%s, '/')), '/'), %s)",
		scheme, rest, rest, rest, t)
	path = "replaceRegexpOne(" + path + ", '(?s)[?#].*', '')"
	rooted := fmt.Sprintf("if(substring(%s, 1, 1) = '/', %s, concat('/', %s))", path, path, path)
	id := "match(s, '^[0-9]+$')" +
		" OR match(s, '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$')" +
		" OR (length(s) >= 8 AND match(s, '^[0-9a-fA-F]+$') AND match(s, '[0-9]'))" +
		" OR (length(s) >= 16 AND match(s, '^[0-9A-Za-z_-]+$') AND match(s, '[0-9]') AND match(s, '[A-Za-z]'))"
	return fmt.Sprintf("arrayStringConcat(arrayMap(s -> if(%s, '{id}', s), splitByChar('/', %s)), '/')", id, rooted)
}

func pipes(p []string) string {
	if len(p) == 1 {
		return p[0]
	}
	return "(" + strings.Join(p, " || ") + ")"
}
func doublequote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func backquote(s string) string   { return "`" + strings.ReplaceAll(s, "`", "") + "`" }
func isoTimestamp(t time.Time) string {
	return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00:00'"
}
