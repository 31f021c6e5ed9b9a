package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tunetimeout",
		Short: "Recommend client timeouts, pools and retry policies from measured latency",
		Long: `tunetimeout reads latency you have measured (CSV, access logs of nginx,
Apache, ingress-nginx, Envoy, HAProxy, AWS ALB and JSON logs, HdrHistogram
interval logs, or a live Prometheus) and tells you what your client timeout
should be at a chosen share of false timeouts, what a hang of the dependency
costs your connection or thread pool (Little's law), how large a bulkhead
prevents that, which retry policy fits the caller's deadline, and the client
configuration to paste.`,
		Example: `  tunetimeout analyze testdata/mixture.csv --rate 400 --pool 200
  tunetimeout analyze --input nginx --nginx-conf /etc/nginx/nginx.conf \
      --log-format-name main --by route access.log*
  tunetimeout prometheus --url http://localhost:9090 \
      --metric http_request_duration_seconds --by route
  tunetimeout analyze -o html --output report.html --deadline 1s --attempts 3 \
      --emit envoy,grpc latencies.csv
  tunetimeout summarize --by route --output host-a.hlog access.log*
  tunetimeout analyze host-*.hlog   # the summaries of every host together`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newAnalyze(), newCheck(), newClickHouse(), newJaeger(), newPrometheus(), newRules(), newSimulate(), newSnippet(), newSQL(), newSummarize(),
		newVersion(), newWatch(), newReleaseFiles())
	root.AddCommand(topicCommands()...)
	finishHelp(root)
	completeTopics(root)
	markRuns(root)
	return root
}
