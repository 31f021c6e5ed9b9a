package analysis

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/source"
)

// RunSource analyses any source and returns the report: files as Run
// reads them (stdin for "-"), a Prometheus histogram as RunPrometheus
// does, and a source spooled first (Jaeger, ClickHouse) as Run reads
// files of its format, under the source's name.
func RunSource(ctx context.Context, o Options, s source.Source, stdin io.Reader) (*report.Report, error) {
	switch s := s.(type) {
	case *source.Files:
		o.useFiles(s)
		return Run(ctx, o, stdin)
	case *source.Prometheus:
		return RunPrometheus(ctx, o, PrometheusOptions{Source: s.Options, Overall: s.Overall})
	case source.Spooler:
		o, notes, done, err := o.spool(ctx, s)
		if err != nil {
			return nil, err
		}
		defer done()
		r, err := Run(ctx, o, nil)
		if err != nil {
			return nil, err
		}
		r.Input.Files = []string{s.Name()} // one name for all its files
		for _, n := range notes {
			r.Input.Note(n)
		}
		return r, nil
	}
	return nil, fmt.Errorf("%s: no job reads this source", s.Name())
}

// useFiles makes f o's inputs.
func (o *Options) useFiles(f *source.Files) {
	o.Inputs = f.Paths
	if f.Format != "" {
		o.Format = f.Format
	}
}

// spool fetches s into a temporary directory and returns o reading its
// files under s's name (Options.spools), the notes of the fetch, and done,
// which removes the directory. A source that grouped the calls and applied
// the status rule and the window itself (Spool.AsIs) is read as it is.
func (o Options) spool(ctx context.Context, s source.Spooler) (Options, []finding.Finding, func(), error) {
	if ch, ok := s.(*source.ClickHouse); ok {
		// The rule, routes, --max-groups and --window as the run sends
		// them (ClickHouseRows).
		c := *ch
		c.Rows = ClickHouseRows(o, c.Rows)
		s = &c
	}
	dir, err := os.MkdirTemp("", "tunetimeout-spool-")
	if err != nil {
		return o, nil, nil, err
	}
	done := func() { os.RemoveAll(dir) }
	sp, err := s.Spool(ctx, dir)
	if err != nil {
		done()
		return o, nil, nil, err
	}
	// Each file is read under the source's name: no note, example,
	// finding or error of the analysis can quote its path.
	name := s.Name()
	o.Inputs, o.spools, o.Format = []string{name}, nil, sp.Format
	for _, p := range sp.Paths {
		o.spools = append(o.spools, input{name: name, path: p})
	}
	if sp.AsIs {
		o.Ingest = ingest.Options{RoutePatterns: o.Ingest.RoutePatterns} // for the route_target column
		o.From, o.To = time.Time{}, time.Time{}
	}
	return o, sp.Notes, done, nil
}

// sourceGroups reads check's data from its source: files as analyze
// reads them, a Prometheus histogram bucket by bucket over its whole
// window, a spooled source as files of its format under its name.
func sourceGroups(ctx context.Context, o CheckOptions, stdin io.Reader) (map[string]checkedGroup, report.Input, error) {
	switch s := o.Source.(type) {
	case *source.Prometheus:
		o.Prometheus = &PrometheusOptions{Source: s.Options, Overall: s.Overall}
	case source.Spooler:
		var notes []finding.Finding
		var done func()
		var err error
		if o.Options, notes, done, err = o.Options.spool(ctx, s); err != nil {
			return nil, report.Input{}, err
		}
		defer done()
		groups, in, err := fileGroups(ctx, o, nil)
		in.Files = []string{s.Name()}
		for _, n := range notes {
			in.Note(n)
		}
		return groups, in, err
	}
	if o.Prometheus != nil {
		return prometheusGroups(ctx, o)
	}
	return fileGroups(ctx, o, stdin)
}
