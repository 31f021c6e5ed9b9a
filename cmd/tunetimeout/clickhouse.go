package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// clickhouseFlags holds the clickhouse command's own flags: the rows, the
// server, the connection flags that need parsing, --print-sql.
type clickhouseFlags struct {
	ch       analysis.ClickHouseOptions
	conn     connectionFlags
	printSQL bool
}

// newClickHouse is `tunetimeout clickhouse`: the analysis of rows held in
// ClickHouse, computed there (sqlsource, analysis.RunClickHouse).
func newClickHouse() *cobra.Command {
	var (
		s  = newServerCommand(emitFlags{})
		cf clickhouseFlags
	)
	cmd := &cobra.Command{
		Use:   "clickhouse --url URL --table T --latency COL --unit UNIT",
		Short: "Recommend timeouts from rows in ClickHouse, computed there",
		Long: `clickhouse has ClickHouse compute the histogram of the rows where they are,
over its HTTP interface (no driver): one query grouped by --by and by HDR
bucket, the status rule as conditional counts, and with --time one of the
calls per second for the rates. What comes back is bounded by groups x
filled buckets, not rows, and the report is the one a local read of the
same rows gives (docs/sql.md). --window (with --time) groups the rows by
window too, in ClickHouse: the windows, the worst window and the daily
profile (--profile, --tz) of analyze --window (docs/windows.md).
--print-sql prints the queries instead.`,
		Example: `  # Per route, the last day, with the rates from the time column
  tunetimeout clickhouse --url http://localhost:8123 --table logs.access \
      --latency duration_ms --unit ms --status-column status --time ts \
      --by route --from -24h --pool 200

  # A week by the hour: the worst hour, and the daily profile's worst slot
  tunetimeout clickhouse --url http://localhost:8123 --table logs.access \
      --latency duration_ms --unit ms --time ts --by route --from -7d \
      --window 1h`,
		Args: noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := s.apply(cmd); err != nil {
				return err
			}
			if err := cf.applyRows(cmd, s.o); err != nil {
				return usageError{err}
			}
			if cf.printSQL {
				return cf.print(cmd.OutOrStdout())
			}
			if err := cf.applyServer(); err != nil {
				return usageError{err}
			}
			return s.run(cmd, func(ctx context.Context, o analysis.Options) (*report.Report, error) {
				return analysis.RunClickHouse(ctx, o, cf.ch)
			})
		},
	}
	addClickHouseFlags(cmd, &cf, &s.f, &s.o)
	s.register(cmd)
	addWindowFlags(cmd, &s.f)
	return withTopics(cmd, "database", "status", "timeout", "policy", "targets", "servers")
}

// addClickHouseFlags registers the clickhouse command's own flags: the
// rows, their columns and window, and the connection to ClickHouse.
func addClickHouseFlags(cmd *cobra.Command, cf *clickhouseFlags, f *analyzeFlags, o *analysis.Options) {
	rows := &cf.ch.Rows
	fl := cmd.Flags()
	fl.StringVar(&cf.ch.Server.Database, "database", "", "the database (default: the user's)")
	addRowsFlags(cmd, rows, rowsFlagVars{unit: &f.unit, status: &f.status, from: &f.from, to: &f.to,
		by: &f.by, includeErrors: &o.Status.IncludeErrors})
	fl.StringVar(&rows.Time, "time", "", "the time column: --from and --to, and the rates")
	fl.StringArrayVar(&o.Ingest.RoutePatterns, "route-pattern", nil, "a route of your own for route(COL), e.g. /users/{id}/posts/* (repeatable)")
	fl.BoolVar(&cf.printSQL, "print-sql", false, "print the queries instead of running them")
	fl.IntVar(&o.MaxGroups, "max-groups", analysis.DefaultMaxGroups, "keep at most this many groups apart; the rest go to \"other\"")
	addConnectionFlags(cmd, httpFields(&cf.ch.Server.Connection), &cf.conn, "address of ClickHouse's HTTP interface, e.g. http://localhost:8123")
}

// applyRows completes the rows from o, parsed: the unit, the groups, the
// window, and the rule, routes, --max-groups and --window as the run
// sends them, so that --print-sql prints the queries that run.
func (cf *clickhouseFlags) applyRows(cmd *cobra.Command, o analysis.Options) error {
	rows := &cf.ch.Rows
	rows.Unit, rows.By, rows.From, rows.To = o.Ingest.Unit, o.Ingest.By, o.From, o.To
	*rows = analysis.ClickHouseRows(o, *rows)
	if (!rows.From.IsZero() || !rows.To.IsZero()) && rows.Time == "" {
		return fmt.Errorf("--from and --to need --time, the time column")
	}
	for _, name := range []string{"for", "window-precision", "profile", "tz"} {
		if rows.Window == 0 && cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s is of windows: give --window (and --time)", name)
		}
	}
	return nil
}

// print prints the queries (--print-sql): the histogram's, and with a
// time column the calls per second's.
func (cf *clickhouseFlags) print(w io.Writer) error {
	q, err := sqlsource.Build(cf.ch.Rows)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintln(w, q+";")
	if cf.ch.Rows.Time != "" {
		q, err := sqlsource.BuildArrivals(cf.ch.Rows)
		if err != nil {
			return usageError{err}
		}
		fmt.Fprintln(w, q+";")
	}
	return nil
}

// applyServer checks the query the rows make, and parses the connection
// flags and checks the server's options.
func (cf *clickhouseFlags) applyServer() error {
	if _, err := sqlsource.Build(cf.ch.Rows); err != nil {
		return err
	}
	c := &cf.ch.Server.Connection
	if err := cf.conn.apply(&c.Attempts, &c.MaxResponseBytes, c.Timeout); err != nil {
		return err
	}
	return cf.ch.Server.Check()
}
