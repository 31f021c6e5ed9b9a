package analysis

import (
	"context"

	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/source"
)

// JaegerOptions says which traces to read from a Jaeger query service.
type JaegerOptions struct {
	Source jaegersource.Options
}

// RunJaeger analyses the traces of j (source.Jaeger, spooled) as Run does
// a file in the jaeger format: the same per-edge analysis, and the
// call-graph checks, which read the spans a second time (deadline.go). The
// report's input names the service and the URL.
func RunJaeger(ctx context.Context, o Options, j JaegerOptions) (*report.Report, error) {
	return RunSource(ctx, o, &source.Jaeger{Options: j.Source}, nil)
}
