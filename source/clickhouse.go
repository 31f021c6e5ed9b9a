package source

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// ClickHouse is rows in ClickHouse whose histogram ClickHouse computes
// where they are (sqlsource): one answer of groups x HDR buckets, and with
// a time column one of the calls per second. The answers are spooled and
// read by the buckets format.
type ClickHouse struct {
	Server sqlsource.ClickHouse
	// Rows are the table, columns, groups, window and status rule, as the
	// run sends them (analysis.ClickHouseRows).
	Rows sqlsource.Options
}

// Name is the table (or "the query") and the server, without
// credentials.
func (c *ClickHouse) Name() string {
	what := c.Rows.Table
	if what == "" {
		what = "the query"
	}
	return what + " at " + c.Server.Display()
}

// Gives is Buckets: HDR buckets, computed by the engine.
func (c *ClickHouse) Gives() Gives { return Buckets }

// Spool runs the queries into dir: buckets.csv, and with a time column
// arrivals.csv.
func (c *ClickHouse) Spool(ctx context.Context, dir string) (*Spool, error) {
	var notes []string
	server := c.Server
	server.Note = func(n string) {
		if !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	fetch := func(name string, build func(sqlsource.Options) (string, error)) (string, error) {
		q, err := build(c.Rows)
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return "", err
		}
		_, err = server.Fetch(ctx, q, f)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return path, err
	}
	buckets, err := fetch("buckets.csv", sqlsource.Build)
	if err != nil {
		return nil, err
	}
	s := &Spool{Paths: []string{buckets}, Format: "buckets", AsIs: true}
	if c.Rows.Time != "" {
		arrivals, err := fetch("arrivals.csv", sqlsource.BuildArrivals)
		if err != nil {
			return nil, err
		}
		s.Paths = append(s.Paths, arrivals)
	}
	for _, n := range notes {
		s.Notes = append(s.Notes, finding.New(finding.ClickHouseNote, nil, n))
	}
	if c.Rows.Time == "" {
		s.Notes = append(s.Notes, finding.Newf(finding.NoTimeColumn, nil, "No %s column: the rates are not measured (give %s, or %s).", usage.Time, usage.Time, usage.Rate))
	}
	return s, nil
}
