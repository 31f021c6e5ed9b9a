package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/progress"
	"github.com/tunetimeout/tunetimeout/report"
)

func newSummarize() *cobra.Command {
	var (
		o      = analysis.Options{}
		f      analyzeFlags
		every  = analysis.DefaultInterval
		output string
	)
	cmd := &cobra.Command{
		Use:   "summarize [FILE...]",
		Short: "Reduce logs to an HdrHistogram interval log for analyze to merge",
		Long: `summarize reads the same inputs as analyze, with the same grouping and status
flags, and writes instead of a report an HdrHistogram interval log: one
histogram per group and interval (--interval), with what the format has no
place for in comments, so that analyze of the summaries of every host gives
the report one run over all the raw logs would give.`,
		Example: `  # On each host: the day's logs, per route, in one-minute intervals
  tunetimeout summarize --by route --output $(hostname).hlog \
      /var/log/nginx/access.log*

  # Anywhere: all hosts together
  tunetimeout analyze --pool 200 host-*.hlog`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.applyInput(&o); err != nil {
				return usageError{err}
			}
			if every < time.Second || every%time.Second != 0 {
				return usageError{fmt.Errorf("--interval %s: want whole seconds, at least 1s", every)}
			}
			if err := refuseInputAsOutput("--output", output, args); err != nil {
				return usageError{err}
			}
			o.Inputs = args
			stdinNotice(cmd, args)
			if errOut := cmd.ErrOrStderr(); !f.quiet && progress.IsTerminal(errOut) {
				o.Progress = progress.New(errOut)
			}
			return writeSummary(cmd, o, every, output)
		},
	}
	addInputFlags(cmd, &o, &f)
	fl := cmd.Flags()
	fl.DurationVar(&every, "interval", every, "length of each interval (whole seconds)")
	fl.StringVarP(&output, "output", "o", "", "write the interval log to this file instead of standard output")
	// -o names the output format in analyze, simulate and prometheus; here
	// it still names the file, with a warning, until it is removed.
	if err := fl.MarkShorthandDeprecated("output", "use --output (-o names the output format in the other commands)"); err != nil {
		panic(err)
	}
	return withTopics(cmd, "interval-logs", "formats", "status")
}

// writeSummary writes the interval log of the inputs of o (every long)
// to output or standard output, and to standard error what the reading
// noted, with the records, bad records and bytes of an output file.
func writeSummary(cmd *cobra.Command, o analysis.Options, every time.Duration, output string) error {
	notes := func(in report.Input) {
		for _, n := range in.Notes {
			fmt.Fprintln(cmd.ErrOrStderr(), n)
		}
	}
	if output == "" || output == "-" {
		in, err := analysis.Summarize(cmd.Context(), o, every, cmd.InOrStdin(), cmd.OutOrStdout())
		if err == nil {
			notes(in)
		}
		return err
	}
	var in report.Input
	err := temps.Write(cmd.Context(), output, func(w io.Writer) error {
		var err error
		in, err = analysis.Summarize(cmd.Context(), o, every, cmd.InOrStdin(), w)
		return err
	})
	if err != nil {
		return err
	}
	st, err := os.Stat(output)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s records (%s bad) in %s bytes\n",
		output, human.Count(in.Records), human.Count(in.BadRecords), human.Count(st.Size()))
	notes(in)
	return nil
}
