package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/report"
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
// with a time column, their calls per second for the rates), spools the
// answers to a temporary directory (removed afterwards) and analyses them
// as Run does files of the buckets format: the report a local read of the
// same rows gives, with --window its windows and profile too. The report's
// input names the table and the server.
func RunClickHouse(ctx context.Context, o Options, ch ClickHouseOptions) (*report.Report, error) {
	ch.Rows = ClickHouseRows(o, ch.Rows)
	dir, err := os.MkdirTemp("", "tunetimeout-clickhouse-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fetch := func(name string, build func(sqlsource.Options) (string, error)) (string, string, error) {
		q, err := build(ch.Rows)
		if err != nil {
			return "", "", err
		}
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return "", "", err
		}
		display, err := ch.Server.Fetch(ctx, q, f)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return path, display, err
	}
	var notes []string
	ch.Server.Note = func(n string) {
		if !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	buckets, display, err := fetch("buckets.csv", sqlsource.Build)
	if err != nil {
		return nil, err
	}
	paths := []string{buckets}
	if ch.Rows.Time != "" {
		arrivals, _, err := fetch("arrivals.csv", sqlsource.BuildArrivals)
		if err != nil {
			return nil, err
		}
		paths = append(paths, arrivals)
	}
	what := ch.Rows.Table
	if what == "" {
		what = "the query"
	}
	name := fmt.Sprintf("%s at %s", what, display)
	// The engine grouped the rows, applied the status rule and the window:
	// the answers are read as they are, each under the source's name (no
	// note, example, finding or error can quote a spool's path).
	o.Inputs, o.spools, o.Format = []string{name}, nil, "buckets"
	for _, p := range paths {
		o.spools = append(o.spools, input{name: name, path: p})
	}
	o.Ingest = ingest.Options{RoutePatterns: o.Ingest.RoutePatterns} // for the route_target column
	o.From, o.To = time.Time{}, time.Time{}
	r, err := Run(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	r.Input.Files = []string{name} // one name for its answers
	for _, n := range notes {
		r.Input.Note(finding.New(finding.ClickHouseNote, nil, n))
	}
	if ch.Rows.Time == "" {
		r.Input.Note(finding.New(finding.NoTimeColumn, nil, "No --time column: the rates are not measured (give --time, or --rate)."))
	}
	return r, nil
}
