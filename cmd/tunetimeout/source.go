package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/source"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// sourceFlags are the flags that name a job's latency beyond files, in one
// place for every job that reads sources (check, watch, rules): a
// Prometheus histogram (--url, --metric, --selector, --window...), the
// traces of Jaeger (--jaeger-url, --service...), rows in ClickHouse
// (--clickhouse-url, --table, --time...). The connection flags
// (--bearer-token-file, --header, --query-timeout...) serve whichever
// server is named; --by, --unit, --from, --to, --status and --latency
// serve each source as its own command reads them.
type sourceFlags struct {
	prom      analysis.PrometheusOptions
	pf        prometheusFlags
	jaeger    jaegersource.Options
	lookback  time.Duration
	maxBytes  string
	jaegerURL string
	ch        analysis.ClickHouseOptions
	chURL     string
	// from and to are the servers' --from and --to in a job that reads no
	// files (whose own would be the files').
	from, to string
}

// addSourceFlags adds the source flags to cmd; byAndUnit adds --metric,
// --by and --unit as Prometheus's own (a job that reads no files).
func addSourceFlags(cmd *cobra.Command, s *sourceFlags, byAndUnit bool) {
	addPrometheusFlags(cmd, &s.prom, &s.pf, byAndUnit)
	fl := cmd.Flags()
	fl.StringVar(&s.jaegerURL, "jaeger-url", "", "read the traces of a Jaeger query service instead, e.g. http://localhost:16686, as the jaeger command does (with --service)")
	fl.StringVar(&s.jaeger.Service, "service", "", "with --jaeger-url: the service whose traces to read")
	fl.StringVar(&s.jaeger.Operation, "operation", "", "with --jaeger-url: only traces with this operation of the service")
	fl.StringVar(&s.jaeger.Tags, "tags", "", `with --jaeger-url: only traces with these tags, as JSON: '{"http.status_code":"200"}'`)
	fl.DurationVar(&s.lookback, "lookback", jaegersource.DefaultLookback, "with --jaeger-url: how far back from now (or --to) to read")
	fl.IntVar(&s.jaeger.Limit, "limit", jaegersource.DefaultLimit, "with --jaeger-url: traces asked for in one search; a full answer is split")
	fl.IntVar(&s.jaeger.MaxTraces, "max-traces", jaegersource.DefaultMaxTraces, "with --jaeger-url: stop after this many distinct traces")
	fl.IntVar(&s.jaeger.MaxSearches, "max-searches", jaegersource.DefaultMaxSearches, "with --jaeger-url: fail after this many searches")
	fl.StringVar(&s.maxBytes, "max-fetch-bytes", "4GiB", "with --jaeger-url: fail when the answers of all searches together are larger")
	fl.DurationVar(&s.jaeger.MaxTime, "max-fetch-time", jaegersource.DefaultMaxTime, "with --jaeger-url: fail when the searches take longer in all")
	fl.StringVar(&s.chURL, "clickhouse-url", "", "have ClickHouse compute the histogram of rows instead, over its HTTP interface, e.g. http://localhost:8123, as the clickhouse command does (with --table or --query; --latency and --status-column name its columns, --unit the latency's unit)")
	rows := &s.ch.Rows
	fl.StringVar(&s.ch.Server.Database, "database", "", "with --clickhouse-url: the database (default: the user's)")
	fl.StringVar(&rows.Table, "table", "", "with --clickhouse-url: the table (or view) the rows are in")
	fl.StringVar(&rows.Query, "query", "", "with --clickhouse-url: a subquery the rows come from, instead of --table")
	fl.StringVar(&rows.Time, "time", "", "with --clickhouse-url: the time column: --from and --to, and the rates")
	// A job that reads files has --latency and --status-column already
	// (the log's latency, the CSV's column): with --clickhouse-url they
	// name ClickHouse's columns (prepare). One that does not gets them here.
	if fl.Lookup("latency") == nil {
		fl.StringVar(&rows.Latency, "latency", "", "with --clickhouse-url: the latency column, or an expression")
	}
	if fl.Lookup("from") == nil {
		fl.StringVar(&s.from, "from", "", "with --jaeger-url or --clickhouse-url: read from this time on ("+timeflag.Grammar+")")
		fl.StringVar(&s.to, "to", "", "with --jaeger-url or --clickhouse-url: read before this time (default: now)")
	}
	if fl.Lookup("status-column") == nil {
		fl.StringVar(&rows.Status, "status-column", "", "with --clickhouse-url: the HTTP status column (none: every call counts)")
	}
}

// given is how many sources beyond files the flags name.
func (s *sourceFlags) given() int {
	n := 0
	for _, url := range []string{s.prom.Source.URL, s.jaegerURL, s.chURL} {
		if url != "" {
			n++
		}
	}
	return n
}

// prepare moves the flags that files and servers share to the server
// named, before f.apply parses them as the files': for Prometheus --by,
// --unit and --metric are its labels, its unit and its name; for
// ClickHouse --latency and --status-column are its columns. Without files
// (files false) and no other server, the source is Prometheus.
func (s *sourceFlags) prepare(f *analyzeFlags, o *analysis.Options, files bool) {
	switch {
	case s.prom.Source.URL != "" || !files && s.jaegerURL == "" && s.chURL == "":
		s.pf.unit, s.prom.Source.By = f.unit, f.by
		if o.Ingest.Metric != "" {
			s.prom.Source.Metric = o.Ingest.Metric
		}
		o.Ingest.Metric, f.unit = "", ""
	case s.chURL != "":
		if o.Ingest.Latency != "" {
			s.ch.Rows.Latency = o.Ingest.Latency
		}
		if o.Ingest.CSV.StatusColumn != "" {
			s.ch.Rows.Status = o.Ingest.CSV.StatusColumn
		}
		o.Ingest.Latency, o.Ingest.CSV.StatusColumn = "", ""
	}
}

// source is the source the flags name, o parsed (f.apply): the files
// unless a server is named, one at a time; Prometheus when neither is. A Jaeger window without --from
// ends now: a job on a timer builds its source at each run.
func (s *sourceFlags) source(o *analysis.Options, files []string) (source.Source, error) {
	if s.given() > 1 || s.given() == 1 && len(files) > 0 {
		return nil, errors.New("--data, --url, --jaeger-url, --clickhouse-url: read one source of latency at a time")
	}
	if err := s.applyWindow(o); err != nil {
		return nil, err
	}
	switch {
	case s.prom.Source.URL != "" || s.given() == 0 && len(files) == 0:
		// Nothing named: Prometheus's checks say what is missing.
		return s.prometheus()
	case s.jaegerURL != "":
		return s.jaegerSource(o, s.shared())
	case s.chURL != "":
		return s.clickhouse(o, s.shared())
	}
	return &source.Files{Paths: files}, nil
}

// applyWindow parses the servers' own --from and --to (a job that reads
// no files) into o.
func (s *sourceFlags) applyWindow(o *analysis.Options) error {
	now := time.Now()
	for _, t := range []struct {
		flag, value string
		at          *time.Time
	}{{"--from", s.from, &o.From}, {"--to", s.to, &o.To}} {
		if t.value == "" {
			continue
		}
		var err error
		if *t.at, err = timeflag.Parse(t.value, now); err != nil {
			return fmt.Errorf("%s: %w", t.flag, err)
		}
	}
	return nil
}

// shared is the connection the connection flags name (the Prometheus
// source's fields), for Jaeger and ClickHouse.
func (s *sourceFlags) shared() httpclient.Options {
	conn := s.prom.Source.Connection
	return httpclient.Options{BearerTokenFile: conn.BearerTokenFile, BearerTokenEnv: conn.BearerTokenEnv,
		BasicUser: conn.BasicUser, BasicPasswordFile: conn.BasicPasswordFile, BasicPasswordEnv: conn.BasicPasswordEnv,
		CAFile: conn.CAFile, InsecureSkipVerify: conn.InsecureSkipVerify, Headers: conn.Headers, Timeout: conn.QueryTimeout}
}

// prometheus is the Prometheus source the flags name.
func (s *sourceFlags) prometheus() (source.Source, error) {
	if err := s.pf.apply(&s.prom); err != nil {
		return nil, err
	}
	if err := s.prom.Source.Check(); err != nil {
		return nil, err
	}
	return &source.Prometheus{Options: s.prom.Source, Overall: s.prom.Overall}, nil
}

// jaegerSource is the Jaeger source the flags name, reached with the
// shared connection flags.
func (s *sourceFlags) jaegerSource(o *analysis.Options, shared httpclient.Options) (source.Source, error) {
	j := s.jaeger
	j.Connection, j.Connection.URL = shared, s.jaegerURL
	jf := jaegerFlags{lookback: s.lookback, maxBytes: s.maxBytes, conn: s.pf.conn}
	if err := jf.apply(&j, o); err != nil {
		return nil, err
	}
	if err := j.Check(); err != nil {
		return nil, err
	}
	return &source.Jaeger{Options: j}, nil
}

// clickhouse is the ClickHouse source the flags name, reached with the
// shared connection flags.
func (s *sourceFlags) clickhouse(o *analysis.Options, shared httpclient.Options) (source.Source, error) {
	ch := s.ch
	ch.Server.Connection, ch.Server.Connection.URL = shared, s.chURL
	rows := &ch.Rows
	rows.Unit, rows.By, rows.From, rows.To = o.Ingest.Unit, o.Ingest.By, o.From, o.To
	if (!rows.From.IsZero() || !rows.To.IsZero()) && rows.Time == "" {
		return nil, fmt.Errorf("--from and --to need --time, the time column")
	}
	if _, err := sqlsource.Build(analysis.ClickHouseRows(*o, *rows)); err != nil {
		return nil, err
	}
	c := &ch.Server.Connection
	if err := s.pf.conn.apply(&c.Attempts, &c.MaxResponseBytes, c.Timeout); err != nil {
		return nil, err
	}
	if err := ch.Server.Check(); err != nil {
		return nil, err
	}
	return &source.ClickHouse{Server: ch.Server, Rows: ch.Rows}, nil
}
