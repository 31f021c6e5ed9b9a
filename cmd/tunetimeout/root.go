package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tunetimeout",
		Short: "Recommend client timeouts, pools and retry policies from measured latency",
		Long: `tunetimeout reads latency you have measured (CSV today; access logs,
Prometheus and HdrHistogram logs are coming) and tells you what your client
timeout should be at a chosen share of false timeouts, what a hang of the
dependency costs your connection or thread pool (Little's law), and how large a
bulkhead prevents that.`,
		Example: `  tunetimeout analyze testdata/mixture.csv --rate 400 --pool 200
  tunetimeout analyze --by route -o json latencies.csv > report.json`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newAnalyze(), newPrometheus(), newVersion())
	root.AddCommand(newSimulate())
	root.AddCommand(newSnippet())
	return root
}
