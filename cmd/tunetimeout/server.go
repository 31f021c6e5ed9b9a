package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// serverCommand is what the commands that analyse one server share
// (prometheus, jaeger, clickhouse): the analysis's options, the analysis
// and call policy flags, --emit and friends (snippet.go), and the writer
// of -o.
type serverCommand struct {
	o      analysis.Options
	f      analyzeFlags
	pol    policyFlags
	e      emitFlags
	lookup func(string) (report.Writer, error)
}

// newServerCommand is a serverCommand on the default options; e is its
// --emit flags (their serviceFlag).
func newServerCommand(e emitFlags) *serverCommand {
	s := &serverCommand{o: analysis.Options{Recommend: recommend.DefaultOptions()}, e: e}
	s.e.output = &s.f.output
	s.lookup = s.e.wrap(report.Lookup)
	return s
}

// register adds --emit and friends, the call policy flags and the
// analysis flags to cmd.
func (s *serverCommand) register(cmd *cobra.Command) {
	s.e.register(cmd)
	addPolicyFlags(cmd, &s.o, &s.pol)
	addAnalysisFlags(cmd, &s.o, &s.f, outputFormats(report.Lookup))
}

// apply parses the analysis and call policy flags into s.o.
func (s *serverCommand) apply(cmd *cobra.Command) error {
	if err := s.f.apply(cmd.Flags(), &s.o); err != nil {
		return usageError{err}
	}
	if err := s.pol.apply(cmd, &s.o); err != nil {
		return usageError{err}
	}
	return nil
}

// run looks up the writer of -o, runs the analysis and writes its report:
// also the report run returns with an error (what it read before it
// failed), and then the error.
func (s *serverCommand) run(cmd *cobra.Command, run func(context.Context, analysis.Options) (*report.Report, error)) error {
	write, err := s.lookup(s.f.format)
	if err != nil {
		return usageError{formatHint(err, s.f.format)}
	}
	r, err := run(cmd.Context(), s.o)
	if r != nil {
		if werr := emitReport(cmd, s.f.output, write, r); werr != nil {
			return werr
		}
	}
	return err
}

// httpFields are where the connection flags write the values of an
// httpclient.Options (addConnectionFlags).
func httpFields(c *httpclient.Options) connectionFields {
	return connectionFields{url: &c.URL, bearerFile: &c.BearerTokenFile, bearerEnv: &c.BearerTokenEnv,
		basicUser: &c.BasicUser, basicPassFile: &c.BasicPasswordFile, basicPassEnv: &c.BasicPasswordEnv,
		caFile: &c.CAFile, insecure: &c.InsecureSkipVerify, headers: &c.Headers, timeout: &c.Timeout}
}
