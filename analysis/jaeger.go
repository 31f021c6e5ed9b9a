package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// checks, which read the spans a second time (deadline.go). The report's
// input names the service and the URL, not the spool file.
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
	o.Inputs = []string{spool}
	o.Format = "jaeger"
	r, err := Run(ctx, o, nil)
	if err != nil {
		return nil, &renamedError{msg: strings.ReplaceAll(err.Error(), spool, name), err: err}
	}
	rename(r, spool, name)
	r.Input.Files = []string{name}
	from, to := res.Start.UTC().Format(time.RFC3339), res.End.UTC().Format(time.RFC3339)
	r.Input.Note(finding.Newf(finding.JaegerRead, finding.Fields{"traces": res.Traces, "service": res.Service, "from": from, "to": to, "searches": res.Searches},
		"%d traces of %s read from Jaeger between %s and %s in %d searches.", res.Traces, res.Service, from, to, res.Searches))
	for _, n := range res.Notes {
		r.Input.Note(finding.New(finding.JaegerNote, nil, n))
	}
	return r, nil
}

// rename writes name for the spool file's path wherever the report quotes
// it: bad records, notes and findings.
func rename(r *report.Report, path, name string) {
	for i, s := range r.Input.BadExamples {
		r.Input.BadExamples[i] = strings.ReplaceAll(s, path, name)
	}
	for i, s := range r.Input.Notes {
		r.Input.Notes[i] = strings.ReplaceAll(s, path, name)
	}
	renameFindings(r.Input.Findings, path, name)
	if r.CallGraph != nil {
		renameFindings(r.CallGraph.Findings, path, name)
	}
}

func renameFindings(fs []finding.Finding, path, name string) {
	for i := range fs {
		fs[i].Message = strings.ReplaceAll(fs[i].Message, path, name)
		for k, v := range fs[i].Fields {
			if s, ok := v.(string); ok && strings.Contains(s, path) {
				fs[i].Fields[k] = strings.ReplaceAll(s, path, name)
			}
		}
	}
}

// renamedError is an error of Run with the spool file's path replaced.
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }
