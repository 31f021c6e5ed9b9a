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
		Long: `watch runs the analysis of the prometheus command every --every on the
--window ending now (--by, --metric and --unit as there), or with --follow
analyses the lines appended to the files named since the last run, as tail -F
reads them, keeping one histogram per group and minute of the last --window.
It serves the last good report on --listen: the HTML report on /, the JSON on
/report.json, its numbers on /metrics.`,
		Example: `  # Every 5 minutes, the last 7 days of one job's latency, per route
  tunetimeout watch --url http://localhost:9090 \
      --metric http_request_duration_seconds --selector '{job="api"}' \
      --by route --pool 200 --timeout 1s --timeout 2.5s

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
	return withTopics(cmd, "endpoints", "histograms", "formats", "status", "timeout", "policy", "servers")
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
