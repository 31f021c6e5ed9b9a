package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/watch"
)

// watchFlags holds the watch command's own flags.
type watchFlags struct {
	every    time.Duration
	listen   string
	timeouts []time.Duration
	follow   bool
}

func newWatch() *cobra.Command {
	var (
		o   = analysis.Options{Recommend: recommend.DefaultOptions()}
		p   analysis.PrometheusOptions
		f   analyzeFlags
		pf  prometheusFlags
		pol policyFlags
		wf  watchFlags
	)
	cmd := &cobra.Command{
		Use:   "watch (--url URL --metric NAME | --follow FILE...)",
		Short: "Run an analysis on a timer and serve the last report",
		Long: `watch runs the analysis of the prometheus command every --every, each time
on the --window ending now, and serves the last good report on --listen.
--by, --metric and --unit are then the labels to group by, the histogram
(without _bucket) and its unit, as in the prometheus command.

With --follow it reads the files named instead, as tail -F does: the lines
appended since the last run (a file renamed, truncated or replaced is
followed), reduced to one histogram per group and minute, of which it keeps
those of the last --window, and analyses them as analyze would. The files
are read from their ends, as they are now; CSV files need --input csv.

It serves:

  /metrics       its numbers for Prometheus, named in docs/watch.md
  /              the HTML report
  /report.json   the JSON report
  /-/healthy     200 while serving
  /-/ready       200 once a run has succeeded, 503 before

A failed run (Prometheus down, a bad answer) logs one line, keeps serving the
last good report and sets tunetimeout_last_run_success to 0; the next run
tries again. Groups gone from a run are gone from /metrics. Memory holds one
report (with --follow, and the window's histograms), however many the runs.

--timeout names the timeouts the clients are configured with:
tunetimeout_cut_off_ratio gives the share of calls each cuts off (for
buckets, an upper bound), beside the recommended timeout's. They join the
report's candidates: the default ladder, or --candidates when given.

SIGINT or SIGTERM stops the run in progress and the server, which lets the
requests in flight end; the exit code is then 130.`,
		Example: `  # Every 5 minutes, the last 7 days of one job's latency, per route
  tunetimeout watch --url http://localhost:9090 \
      --metric http_request_duration_seconds --selector '{job="api"}' \
      --by route --pool 200 --timeout 1s --timeout 2.5s

  # Every minute over the last hour, on all interfaces of a container
  tunetimeout watch --url http://prometheus:9090 --metric rpc_latency_seconds \
      --window 1h --every 1m --listen :9847

  # An nginx access log as it is written, per route, over the last hour
  tunetimeout watch --follow --window 1h --every 30s --by route \
      --nginx-conf /etc/nginx/nginx.conf --log-format-name timing \
      /var/log/nginx/access.log`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 && !wf.follow {
				return usageError{fmt.Errorf("watch reads no files (got %q): name the histogram with --metric, or follow files with --follow", args[0])}
			}
			if len(args) == 0 && wf.follow {
				return usageError{fmt.Errorf("--follow: name the files to follow")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			for _, name := range []string{"format", "output"} {
				if fl.Changed(name) {
					return usageError{fmt.Errorf("--%s: watch writes no report; it serves it as HTML on / and as JSON on /report.json", name)}
				}
			}
			if wf.follow {
				for _, name := range []string{"url", "selector", "at", "step", "aggregate"} {
					if fl.Changed(name) {
						return usageError{fmt.Errorf("--%s: watch --follow reads files, not Prometheus", name)}
					}
				}
			} else {
				// --by, --unit and --metric are the labels, the unit and
				// the name of the histogram in Prometheus.
				pf.unit, p.Source.By, p.Source.Metric = f.unit, f.by, o.Ingest.Metric
				o.Ingest.Metric, f.unit = "", ""
			}
			if err := f.apply(fl, &o); err != nil {
				return usageError{err}
			}
			if err := pol.apply(cmd, &o); err != nil {
				return usageError{err}
			}
			if err := pf.apply(&p); err != nil {
				return usageError{err}
			}
			if !wf.follow {
				if err := p.Source.Check(); err != nil {
					return usageError{err}
				}
			}
			if err := wf.check(); err != nil {
				return usageError{err}
			}
			// The configured timeouts join the candidates (the ladder
			// around each recommendation, or --candidates).
			o.MoreCandidates = wf.timeouts
			var run func(context.Context) (*report.Report, error)
			if wf.follow {
				o.Progress = nil
				follow, err := watch.NewFollow(args, o, p.Source.Window, nil)
				if err != nil {
					return err
				}
				defer follow.Close()
				run = follow.Run
			} else {
				// The window ends at --at read anew at each run: "now"
				// is now.
				at := pf.at
				run = func(ctx context.Context) (*report.Report, error) {
					p := p
					var err error
					if p.Source.At, err = timeflag.Parse(at, time.Now()); err != nil {
						return nil, fmt.Errorf("--at %w", err)
					}
					return analysis.RunPrometheus(ctx, o, p)
				}
			}
			return watch.Serve(cmd.Context(), watch.Options{
				Run:      run,
				Every:    wf.every,
				Listen:   wf.listen,
				Timeouts: wf.timeouts,
				Log:      cmd.ErrOrStderr(),
			})
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&wf.every, "every", watch.DefaultEvery, "run the analysis this often (at least 1s)")
	fl.StringVar(&wf.listen, "listen", watch.DefaultListen, "address to serve on, host:port")
	fl.DurationSliceVar(&wf.timeouts, "timeout", nil, "timeouts the clients are configured with, for tunetimeout_cut_off_ratio: comma-separated `durations` (repeatable)")
	fl.BoolVar(&wf.follow, "follow", false, "read the files named as arguments as they grow, as tail -F, instead of Prometheus")
	addPolicyFlags(cmd, &o, &pol)
	addInputFlags(cmd, &o, &f)
	addPrometheusFlags(cmd, &p, &pf, false)
	addAnalysisFlags(cmd, &o, &f, outputFormats(report.Lookup))
	// The report is served, not written.
	_ = fl.MarkHidden("format")
	_ = fl.MarkHidden("output")
	return cmd
}

// check checks the watch command's own flags.
func (wf watchFlags) check() error {
	if wf.every < watch.MinEvery {
		return fmt.Errorf("--every %v is below the minimum of %v", wf.every, watch.MinEvery)
	}
	if _, _, err := net.SplitHostPort(wf.listen); err != nil {
		return fmt.Errorf("--listen %q is not host:port: %w", wf.listen, err)
	}
	for _, t := range wf.timeouts {
		if t <= 0 {
			return fmt.Errorf("--timeout %v is not a positive duration", t)
		}
	}
	return nil
}
