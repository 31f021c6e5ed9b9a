package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/report"
)

// JaegerOptions says which traces to read from a Jaeger query service.
type JaegerOptions struct {
	Source jaegersource.Options
}

// RunJaeger fetches the traces of j from Jaeger to a spool file in a
// temporary directory (removed afterwards) and analyses it as Run does a
// file in the jaeger format: the same per-edge analysis, and the call-graph
// checks, which read the spans a second time (deadline.go). The spool is
// read under the name of the service and the URL, which the report's input
// gives.
func RunJaeger(ctx context.Context, o Options, j JaegerOptions) (*report.Report, error) {
	dir, err := os.MkdirTemp("", "tunetimeout-jaeger-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	spool := filepath.Join(dir, "traces.json")
	f, err := os.Create(spool)
	if err != nil {
		return nil, err
	}
	res, err := jaegersource.Fetch(ctx, j.Source, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing the traces to %s: %w", dir, cerr)
	}
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("service %s at %s", res.Service, res.URL)
	// The spool is read under the source's name: no note, example,
	// finding or error of the analysis can quote its path.
	o.Inputs, o.spools = []string{name}, []input{{name: name, path: spool}}
	o.Format = "jaeger"
	r, err := Run(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	from, to := res.Start.UTC().Format(time.RFC3339), res.End.UTC().Format(time.RFC3339)
	r.Input.Note(finding.Newf(finding.JaegerRead, finding.Fields{"traces": res.Traces, "service": res.Service, "from": from, "to": to, "searches": res.Searches},
		"%d traces of %s read from Jaeger between %s and %s in %d searches.", res.Traces, res.Service, from, to, res.Searches))
	for _, n := range res.Notes {
		r.Input.Note(finding.New(finding.JaegerNote, nil, n))
	}
	return r, nil
}
