package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// newClickHouse is `tunetimeout clickhouse`: the analysis of rows held in
// ClickHouse, computed there (sqlsource, analysis.RunClickHouse).
func newClickHouse() *cobra.Command {
	var (
		o        = analysis.Options{Recommend: recommend.DefaultOptions()}
		ch       analysis.ClickHouseOptions
		f        analyzeFlags
		pol      policyFlags
		conn     connectionFlags
		printSQL bool
		e        emitFlags
	)
	e.output = &f.output
	lookup := e.wrap(report.Lookup)
	rows := &ch.Rows
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
			if err := f.apply(cmd.Flags(), &o); err != nil {
				return usageError{err}
			}
			if err := pol.apply(cmd, &o); err != nil {
				return usageError{err}
			}
			rows.Unit, rows.By, rows.From, rows.To = o.Ingest.Unit, o.Ingest.By, o.From, o.To
			// The rule, routes, --max-groups and --window as the run
			// sends them: --print-sql prints the queries that run.
			*rows = analysis.ClickHouseRows(o, *rows)
			if (!rows.From.IsZero() || !rows.To.IsZero()) && rows.Time == "" {
				return usageError{fmt.Errorf("--from and --to need --time, the time column")}
			}
			for _, name := range []string{"for", "window-precision", "profile", "tz"} {
				if rows.Window == 0 && cmd.Flags().Changed(name) {
					return usageError{fmt.Errorf("--%s is of windows: give --window (and --time)", name)}
				}
			}
			if printSQL {
				q, err := sqlsource.Build(*rows)
				if err != nil {
					return usageError{err}
				}
				fmt.Fprintln(cmd.OutOrStdout(), q+";")
				if rows.Time != "" {
					q, err := sqlsource.BuildArrivals(*rows)
					if err != nil {
						return usageError{err}
					}
					fmt.Fprintln(cmd.OutOrStdout(), q+";")
				}
				return nil
			}
			if _, err := sqlsource.Build(*rows); err != nil {
				return usageError{err}
			}
			c := &ch.Server.Connection
			if err := conn.apply(&c.Attempts, &c.MaxResponseBytes, c.Timeout); err != nil {
				return usageError{err}
			}
			if err := ch.Server.Check(); err != nil {
				return usageError{err}
			}
			write, err := lookup(f.format)
			if err != nil {
				return usageError{formatHint(err, f.format)}
			}
			r, err := analysis.RunClickHouse(cmd.Context(), o, ch)
			if r != nil {
				if werr := emitReport(cmd, f.output, write, r); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&ch.Server.Database, "database", "", "the database (default: the user's)")
	fl.StringVar(&rows.Table, "table", "", "the table (or view) the rows are in")
	fl.StringVar(&rows.Query, "query", "", "a subquery the rows come from, instead of --table")
	fl.StringVar(&rows.Latency, "latency", "", "the latency column, or an expression")
	fl.StringVar(&f.unit, "unit", "", "the latency column's unit: ns, us, ms, s")
	fl.StringVar(&rows.Status, "status-column", "", "the HTTP status column (none: every call counts)")
	fl.StringVar(&f.status, "status", "", "status rule overrides, e.g. \"exclude=4xx count=404 censor=503\"")
	fl.BoolVar(&o.Status.IncludeErrors, "include-errors", false, "count 4xx and 5xx responses as latency samples")
	fl.StringVar(&rows.Time, "time", "", "the time column: --from and --to, and the rates")
	fl.StringVar(&f.from, "from", "", "rows from this time on ("+timeflag.Grammar+")")
	fl.StringVar(&f.to, "to", "", "rows before this time")
	fl.StringSliceVar(&f.by, "by", nil, "group columns (or expressions), e.g. route,method; route(COL): the route of the targets in COL")
	fl.StringArrayVar(&o.Ingest.RoutePatterns, "route-pattern", nil, "a route of your own for route(COL), e.g. /users/{id}/posts/* (repeatable)")
	fl.BoolVar(&printSQL, "print-sql", false, "print the queries instead of running them")
	fl.IntVar(&o.MaxGroups, "max-groups", analysis.DefaultMaxGroups, "keep at most this many groups apart; the rest go to \"other\"")
	s := &ch.Server.Connection
	addConnectionFlags(cmd, connectionFields{url: &s.URL, bearerFile: &s.BearerTokenFile, bearerEnv: &s.BearerTokenEnv,
		basicUser: &s.BasicUser, basicPassFile: &s.BasicPasswordFile, basicPassEnv: &s.BasicPasswordEnv,
		caFile: &s.CAFile, insecure: &s.InsecureSkipVerify, headers: &s.Headers, timeout: &s.Timeout},
		&conn, "address of ClickHouse's HTTP interface, e.g. http://localhost:8123")
	complete(cmd, "unit", unitNames...)
	e.register(cmd)
	addPolicyFlags(cmd, &o, &pol)
	addAnalysisFlags(cmd, &o, &f, outputFormats(report.Lookup))
	addWindowFlags(cmd, &f)
	return withTopics(cmd, "database", "status", "timeout", "policy", "targets", "servers")
}
