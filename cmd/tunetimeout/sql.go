package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// sqlFlags holds the raw values of the sql command's flags that need
// parsing.
type sqlFlags struct {
	unit, status, from, to  string
	includeErrors, arrivals bool
}

// newSQL is `tunetimeout sql`: the query that makes a SQL engine compute
// the histogram where the rows are (sqlsource).
func newSQL() *cobra.Command {
	var (
		o  sqlsource.Options
		sf sqlFlags
	)
	cmd := &cobra.Command{
		Use:   "sql --dialect NAME --table T --latency COLUMN --unit UNIT",
		Short: "Print the query that computes the histogram inside a SQL engine",
		Long: `sql prints a query that makes the engine holding the rows compute the
histogram tunetimeout would: one row per group and HDR bucket, with the
status rule as conditional counts. What comes back is bounded by groups x
filled buckets, not rows; save it as CSV with its header and read it with
tunetimeout analyze --input buckets: the report is the one a local read of
the same rows gives. --arrivals prints the query of the calls per second
per group instead, for the rates.`,
		Example: `  # PostgreSQL: the query, run by psql, read back
  tunetimeout sql --dialect postgres --table access --latency latency_ms \
      --unit ms --status-column status --by route > hist.sql
  psql --csv -f hist.sql > buckets.csv
  tunetimeout sql --dialect postgres --table access --time ts \
      --by route --arrivals | psql --csv > arrivals.csv
  tunetimeout analyze buckets.csv arrivals.csv --pool 200`,
		Args: noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sf.apply(&o); err != nil {
				return usageError{err}
			}
			build := sqlsource.Build
			if sf.arrivals {
				build = sqlsource.BuildArrivals
			}
			q, err := build(o)
			if err != nil {
				return usageError{err}
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), q+";")
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Dialect, "dialect", "", "the engine: "+strings.Join(sqlsource.Dialects, ", "))
	addRowsFlags(cmd, &o, rowsFlagVars{unit: &sf.unit, status: &sf.status, from: &sf.from, to: &sf.to,
		by: &o.By, includeErrors: &sf.includeErrors})
	fl.StringVar(&o.Time, "time", "", "the time column, for --from and --to")
	fl.StringArrayVar(&o.RoutePatterns, "route-pattern", nil, "a route of your own for route(COL) (repeatable; give analyze the same)")
	fl.IntVar(&o.MaxGroups, "max-groups", analysis.DefaultMaxGroups, "the engine keeps the groups of most rows apart, this many; the rest go to one (0: no limit)")
	fl.BoolVar(&sf.arrivals, "arrivals", false, "print the query of the calls per second instead, for the rates (needs --time)")
	complete(cmd, "dialect", sqlsource.Dialects...)
	return withTopics(cmd, "database", "status")
}

// rowsFlagVars are where the rows flags (addRowsFlags) that are not plain
// values of sqlsource.Options go, for the command to parse.
type rowsFlagVars struct {
	unit, status, from, to *string
	by                     *[]string
	includeErrors          *bool
}

// addRowsFlags registers the flags that name the rows in a SQL engine and
// their columns, alike in sql and clickhouse: the table or query, the
// latency, its unit, the status, the times and the groups.
func addRowsFlags(cmd *cobra.Command, rows *sqlsource.Options, v rowsFlagVars) {
	fl := cmd.Flags()
	fl.StringVar(&rows.Table, "table", "", "the table (or view) the rows are in")
	fl.StringVar(&rows.Query, "query", "", "a subquery the rows come from, instead of --table")
	fl.StringVar(&rows.Latency, "latency", "", "the latency column, or an expression")
	fl.StringVar(v.unit, "unit", "", "the latency column's unit: ns, us, ms, s")
	fl.StringVar(&rows.Status, "status-column", "", "the HTTP status column (none: every call counts)")
	fl.StringVar(v.status, "status", "", "status rule overrides, e.g. \"exclude=4xx count=404 censor=503\"")
	fl.BoolVar(v.includeErrors, "include-errors", false, "count 4xx and 5xx responses as latency samples")
	fl.StringVar(v.from, "from", "", "rows from this time on ("+timeflag.Grammar+")")
	fl.StringVar(v.to, "to", "", "rows before this time")
	fl.StringSliceVar(v.by, "by", nil, "group columns (or expressions), e.g. route,method; route(COL): the route of the targets in COL")
	complete(cmd, "unit", unitNames...)
}

// apply parses the sql command's flags into o.
func (sf sqlFlags) apply(o *sqlsource.Options) error {
	var err error
	if sf.unit != "" {
		if o.Unit, err = ingest.ParseUnit(sf.unit); err != nil {
			return fmt.Errorf("--unit: %w", err)
		}
	}
	if sf.status != "" {
		if o.Rule, err = ingest.ParseStatusRule(sf.status); err != nil {
			return err
		}
	}
	o.Rule.IncludeErrors = sf.includeErrors
	now := time.Now()
	if o.From, err = timeflag.Parse(sf.from, now); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	if o.To, err = timeflag.Parse(sf.to, now); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if (!o.From.IsZero() || !o.To.IsZero()) && o.Time == "" {
		return fmt.Errorf("--from and --to need --time, the time column")
	}
	return nil
}
