package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/jaegersource"
)

// Jaeger is the traces of one service in a live Jaeger query service over
// a window. They are spooled: a window's traces may be larger than memory
// should hold, and the call graph's checks read the spans twice.
type Jaeger struct {
	Options jaegersource.Options
}

// Name is the service and the query service, without credentials.
func (j *Jaeger) Name() string {
	return fmt.Sprintf("service %s at %s", j.Options.Service, j.Options.Connection.Display())
}

// Gives is Spans.
func (j *Jaeger) Gives() Gives { return Spans }

// Spool fetches the traces as Jaeger JSON (jaegersource.Fetch) into
// dir/traces.json, read by the jaeger format.
func (j *Jaeger) Spool(ctx context.Context, dir string) (*Spool, error) {
	path := filepath.Join(dir, "traces.json")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	res, err := jaegersource.Fetch(ctx, j.Options, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing the traces to %s: %w", dir, cerr)
	}
	if err != nil {
		return nil, err
	}
	from, to := res.Start.UTC().Format(time.RFC3339), res.End.UTC().Format(time.RFC3339)
	notes := []finding.Finding{finding.Newf(finding.JaegerRead, finding.Fields{"traces": res.Traces, "service": res.Service, "from": from, "to": to, "searches": res.Searches},
		"%d traces of %s read from Jaeger between %s and %s in %d searches.", res.Traces, res.Service, from, to, res.Searches)}
	for _, n := range res.Notes {
		notes = append(notes, finding.New(finding.JaegerNote, nil, n))
	}
	return &Spool{Paths: []string{path}, Format: "jaeger", Notes: notes}, nil
}
