package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/jaegersource"
	"github.com/tunetimeout/tunetimeout/report"
)

// jaegerFlags holds the raw values of the jaeger command's own flags.
type jaegerFlags struct {
	lookback time.Duration
	maxBytes string
	conn     connectionFlags
}

func newJaeger() *cobra.Command {
	var (
		// --emit and friends (snippet.go): --service names what to read,
		// so the snippets' service is --snippet-service.
		s  = newServerCommand(emitFlags{serviceFlag: "snippet-service"})
		j  analysis.JaegerOptions
		jf jaegerFlags
	)
	cmd := &cobra.Command{
		Use:   "jaeger --url URL --service NAME",
		Short: "Recommend timeouts per call from traces in Jaeger",
		Long: `jaeger reads traces live from a Jaeger query service (the HTTP API its UI
calls, /api/traces) and analyses their spans per caller -> callee edge, as
analyze does a file of Jaeger JSON: the same percentiles, timeouts, Little's
law and call-graph checks. The window is --lookback up to now, or --from and
--to; without --service, the services Jaeger knows are listed.`,
		Example: `  # The last hour of checkout's traces, per edge
  tunetimeout jaeger --url http://127.0.0.1:16686 --service checkout

  # One operation over a fixed window, as JSON
  tunetimeout jaeger --url http://jaeger:16686 --service checkout \
      --operation 'POST /pay' --from 2026-11-30T12:00:00Z \
      --to 2026-11-30T13:00:00Z -o json`,
		Args: noArgs("name the service with --service, or analyze a file with tunetimeout analyze"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s.o.Format = "jaeger"
			if err := s.apply(cmd); err != nil {
				return err
			}
			if err := jf.apply(&j.Source, &s.o); err != nil {
				return usageError{err}
			}
			if err := j.Source.Check(); err != nil {
				return usageError{err}
			}
			return s.run(cmd, func(ctx context.Context, o analysis.Options) (*report.Report, error) {
				return analysis.RunJaeger(ctx, o, j)
			})
		},
	}
	addJaegerFlags(cmd, &j.Source, &jf, &s.f, &s.o)
	s.register(cmd)
	addPlanFlags(cmd, &s.f)
	return withTopics(cmd, "servers", "timeout", "policy", "targets")
}

// addJaegerFlags registers the jaeger command's own flags: which traces,
// which window, how many, and the connection to the query service.
func addJaegerFlags(cmd *cobra.Command, s *jaegersource.Options, jf *jaegerFlags, f *analyzeFlags, o *analysis.Options) {
	fl := cmd.Flags()
	fl.StringVar(&s.Service, "service", "", "the service whose traces to read (without it: the list)")
	fl.StringVar(&s.Operation, "operation", "", "only traces with this operation of the service")
	fl.StringVar(&s.Tags, "tags", "", `only traces with these tags, as JSON: '{"http.status_code":"200"}'`)
	fl.DurationVar(&jf.lookback, "lookback", jaegersource.DefaultLookback, "how far back from now (or --to) to read")
	fl.StringVar(&f.from, "from", "", "read the traces that start from this time on ("+timeflag.Grammar+")")
	fl.StringVar(&f.to, "to", "", "read the traces that start before this time (default: now)")
	fl.IntVar(&s.Limit, "limit", jaegersource.DefaultLimit, "traces asked for in one search; a full answer is split")
	fl.IntVar(&s.MaxTraces, "max-traces", jaegersource.DefaultMaxTraces, "stop after this many distinct traces")
	fl.IntVar(&s.MaxSearches, "max-searches", jaegersource.DefaultMaxSearches, "fail after this many searches")
	fl.StringVar(&jf.maxBytes, "max-fetch-bytes", "4GiB", "fail when the answers of all searches together are larger")
	fl.DurationVar(&s.MaxTime, "max-fetch-time", jaegersource.DefaultMaxTime, "fail when the searches take longer in all")
	fl.StringSliceVar(&f.by, "by", nil, "group spans by: "+strings.Join(ingest.SpanGroupKeys, ", ")+" (default: the edge)")
	fl.BoolVar(&o.Status.IncludeErrors, "include-errors", false, "count failed spans as latency samples")
	fl.IntVar(&o.MaxGroups, "max-groups", analysis.DefaultMaxGroups, "keep at most this many groups apart; the rest go to \"other\"")
	addConnectionFlags(cmd, httpFields(&s.Connection), &jf.conn, "address of the Jaeger query service, e.g. http://localhost:16686")
	completeList(cmd, "by", ingest.SpanGroupKeys...)
}

// apply parses the jaeger command's own flags into s; the window comes
// from o's --from and --to (analyzeFlags.applyInput) and --lookback.
func (jf jaegerFlags) apply(s *jaegersource.Options, o *analysis.Options) error {
	if err := jf.conn.apply(&s.Connection.Attempts, &s.Connection.MaxResponseBytes, s.Connection.Timeout); err != nil {
		return err
	}
	if jf.lookback <= 0 {
		return fmt.Errorf("--lookback %v must be positive", jf.lookback)
	}
	if s.Limit <= 0 {
		return fmt.Errorf("--limit %d must be positive", s.Limit)
	}
	if s.MaxTraces <= 0 {
		return fmt.Errorf("--max-traces %d must be positive", s.MaxTraces)
	}
	if s.MaxSearches <= 0 {
		return fmt.Errorf("--max-searches %d must be positive", s.MaxSearches)
	}
	if s.MaxTime <= 0 {
		return fmt.Errorf("--max-fetch-time %v must be positive", s.MaxTime)
	}
	var err error
	if s.MaxBytes, err = human.ParseBytes(jf.maxBytes); err != nil {
		return fmt.Errorf("--max-fetch-bytes %w", err)
	}
	if s.MaxBytes <= 0 {
		return fmt.Errorf("--max-fetch-bytes %q must be positive", jf.maxBytes)
	}
	s.End = o.To
	if s.End.IsZero() {
		s.End = time.Now()
	}
	s.Start = o.From
	if s.Start.IsZero() {
		s.Start = s.End.Add(-jf.lookback)
	}
	if !s.Start.Before(s.End) {
		return fmt.Errorf("--from %s is not before --to %s", s.Start.UTC().Format(time.RFC3339), s.End.UTC().Format(time.RFC3339))
	}
	return nil
}
