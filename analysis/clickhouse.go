package analysis

import (
	"context"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/source"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// ClickHouseOptions say which server and which rows.
type ClickHouseOptions struct {
	Server sqlsource.ClickHouse
	// Rows are the table, columns, groups, window and status rule; the
	// dialect is clickhouse.
	Rows sqlsource.Options
}

// ClickHouseRows are the rows' options as RunClickHouse sends them: the
// queries --print-sql prints are the ones it runs.
func ClickHouseRows(o Options, rows sqlsource.Options) sqlsource.Options {
	rows.Dialect = "clickhouse"
	rows.Rule = o.Status
	rows.RoutePatterns = o.Ingest.RoutePatterns
	// --max-groups in the engine: the answer stays bounded by the groups
	// kept; the client's own limit then has nothing left to fold.
	rows.MaxGroups = o.MaxGroups
	if rows.MaxGroups == 0 {
		rows.MaxGroups = DefaultMaxGroups
	}
	// --window in the engine: the buckets grouped by window too, which
	// Run reads into each window's cell, as a local read's calls by their
	// times; the profile (--profile, --tz) is made of those windows.
	rows.Window = 0
	if !o.NoWindows {
		rows.Window = o.Window
	}
	return rows
}

// RunClickHouse has ClickHouse compute the histogram of the rows (and,
// with a time column, their calls per second for the rates) and analyses
// the answers (source.ClickHouse, spooled) as Run does files of the
// buckets format: the report a local read of the same rows gives, with
// --window its windows and profile too. The report's input names the
// table and the server.
func RunClickHouse(ctx context.Context, o Options, ch ClickHouseOptions) (*report.Report, error) {
	return RunSource(ctx, o, &source.ClickHouse{Server: ch.Server, Rows: ch.Rows}, nil)
}
