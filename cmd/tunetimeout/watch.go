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
		f   analyzeFlags
		src sourceFlags
		pol policyFlags
		wf  watchFlags
	)
	cmd := &cobra.Command{
		Use:   "watch (SOURCE | --follow FILE...)",
		Short: "Run an analysis on a timer and serve the last report",
		Long: `watch runs the analysis of the prometheus command every --every on the
--window ending now (--by, --metric and --unit as there; a SOURCE: --url),
or of the jaeger or clickhouse command on that window (--jaeger-url,
--clickhouse-url), or with --follow analyses the lines appended to the files
named since the last run, as tail -F reads them, keeping one histogram per
group and minute of the last --window.
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
		Args: func(_ *cobra.Command, args []string) error { return wf.args(args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wf.apply(cmd, &f, &o, &src, &pol); err != nil {
				return err
			}
			run, done, err := wf.runner(args, o, f, &src)
			if err != nil {
				return err
			}
			defer done()
			return watch.Serve(cmd.Context(), watch.Options{
				Run:      run,
				Every:    wf.every,
				Listen:   wf.listen,
				Timeouts: wf.timeouts,
				Log:      cmd.ErrOrStderr(),
			})
		},
	}
	addWatchFlags(cmd, &wf)
	addPolicyFlags(cmd, &o, &pol)
	addInputFlags(cmd, &o, &f)
	addSourceFlags(cmd, &src, false)
	addAnalysisFlags(cmd, &o, &f, outputFormats(report.Lookup))
	// The report is served, not written.
	fl := cmd.Flags()
	_ = fl.MarkHidden("format")
	_ = fl.MarkHidden("output")
	return withTopics(cmd, "endpoints", "histograms", "formats", "status", "timeout", "policy", "servers")
}

// addWatchFlags registers the watch command's own flags: how often, where
// to serve, the clients' timeouts, --follow.
func addWatchFlags(cmd *cobra.Command, wf *watchFlags) {
	fl := cmd.Flags()
	fl.DurationVar(&wf.every, "every", watch.DefaultEvery, "run the analysis this often (at least 1s)")
	fl.StringVar(&wf.listen, "listen", watch.DefaultListen, "address to serve on, host:port")
	fl.DurationSliceVar(&wf.timeouts, "timeout", nil, "timeouts the clients are configured with, for tunetimeout_cut_off_ratio: comma-separated `durations` (repeatable)")
	fl.BoolVar(&wf.follow, "follow", false, "read the files named as arguments as they grow, as tail -F, instead of Prometheus")
}

// args checks watch's arguments: the files to follow, with --follow only.
func (wf watchFlags) args(args []string) error {
	if len(args) > 0 && !wf.follow {
		return usageError{fmt.Errorf("watch reads no files (got %q): name the histogram with --metric, or follow files with --follow", args[0])}
	}
	if len(args) == 0 && wf.follow {
		return usageError{fmt.Errorf("--follow: name the files to follow")}
	}
	return nil
}

// runner is one run of watch: on the source (run), or with --follow on
// the lines the files named gained, whose follower done closes.
func (wf watchFlags) runner(files []string, o analysis.Options, f analyzeFlags, src *sourceFlags) (run func(context.Context) (*report.Report, error), done func(), err error) {
	if !wf.follow {
		return func(ctx context.Context) (*report.Report, error) { return wf.run(ctx, o, f, src) }, func() {}, nil
	}
	o.Progress = nil
	follow, err := watch.NewFollow(files, o, src.prom.Source.Window, nil)
	if err != nil {
		return nil, nil, err
	}
	return follow.Run, follow.Close, nil
}

// apply parses watch's flags into o; the source is built again at each
// run (run), on a window ending then, and once here for the errors of the
// command line.
func (wf watchFlags) apply(cmd *cobra.Command, f *analyzeFlags, o *analysis.Options, src *sourceFlags, pol *policyFlags) error {
	fl := cmd.Flags()
	for _, name := range []string{"format", "output"} {
		if fl.Changed(name) {
			return usageError{fmt.Errorf("--%s: watch writes no report; it serves it as HTML on / and as JSON on /report.json", name)}
		}
	}
	if wf.follow {
		for _, name := range []string{"url", "selector", "at", "step", "aggregate", "jaeger-url", "clickhouse-url"} {
			if fl.Changed(name) {
				return usageError{fmt.Errorf("--%s: watch --follow reads files, not Prometheus", name)}
			}
		}
	} else {
		src.prepare(f, o, false)
	}
	if err := f.apply(fl, o); err != nil {
		return usageError{err}
	}
	if err := pol.apply(cmd, o); err != nil {
		return usageError{err}
	}
	// --window is the length of the window --follow keeps, too.
	if err := src.pf.apply(&src.prom); err != nil {
		return usageError{err}
	}
	if !wf.follow {
		if src.given() == 0 {
			// The error of the Prometheus source's missing --url.
			if err := src.prom.Source.Check(); err != nil {
				return usageError{err}
			}
		}
		if _, err := src.source(o, nil); err != nil {
			return usageError{err}
		}
	}
	if err := wf.check(); err != nil {
		return usageError{err}
	}
	// The configured timeouts join the candidates (the ladder around
	// each recommendation, or --candidates).
	o.MoreCandidates = wf.timeouts
	return nil
}

// run is one run of watch on a source: the window ends now (--at, --to,
// --lookback read anew), --from read anew too.
func (wf watchFlags) run(ctx context.Context, o analysis.Options, f analyzeFlags, src *sourceFlags) (*report.Report, error) {
	now := time.Now()
	var err error
	if o.From, err = timeflag.Parse(f.from, now); err != nil {
		return nil, fmt.Errorf("--from %w", err)
	}
	if o.To, err = timeflag.Parse(f.to, now); err != nil {
		return nil, fmt.Errorf("--to %w", err)
	}
	s, err := src.source(&o, nil)
	if err != nil {
		return nil, err
	}
	return analysis.RunSource(ctx, o, s, nil)
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
