package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/report"
)

// prometheusFlags holds the raw values of the prometheus command's own flags.
type prometheusFlags struct {
	window, at, step, aggregate, unit, peakRange string
	conn                                         connectionFlags
}

// aggregates are the values of --aggregate: what the recommendation builds
// on with --step.
var aggregates = []string{"worst", "overall"}

func newPrometheus() *cobra.Command {
	var (
		s  = newServerCommand(emitFlags{}) // --emit and friends: snippets after the report (snippet.go)
		p  analysis.PrometheusOptions
		pf prometheusFlags
	)
	cmd := &cobra.Command{
		Use:     "prometheus --url URL --metric NAME",
		Aliases: []string{"prom"},
		Short:   "Recommend a timeout from a latency histogram in Prometheus",
		Long: `prometheus reads a latency histogram live from Prometheus (or Thanos, Mimir,
Cortex, VictoriaMetrics: anything that speaks its HTTP API) and recommends a
timeout per group, with the same rules, Little's law and reports as analyze.
A bucket only says that a quantile lies within it: the timeout builds on the
bucket's upper bound, and the report says which le bound to add.`,
		Example: `  # The last 7 days of one job's request latency, per route
  tunetimeout prometheus --url http://localhost:9090 \
      --metric http_request_duration_seconds --selector '{job="api"}' \
      --by route --pool 200

  # Hour by hour over a day; the timeout must survive the worst hour
  tunetimeout prom --url http://localhost:9090 --metric rpc_latency_seconds \
      --window 1d --step 1h`,
		Args: noArgs("name the histogram with --metric"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := s.apply(cmd); err != nil {
				return err
			}
			if err := pf.apply(&p); err != nil {
				return usageError{err}
			}
			if err := s.f.applyProfile(&s.o); err != nil {
				return usageError{err}
			}
			// promsource's own rule, before anything is sent: --url,
			// --metric, --selector, --by, --step, the auth flags, -H.
			if err := p.Source.Check(); err != nil {
				return usageError{err}
			}
			return s.run(cmd, func(ctx context.Context, o analysis.Options) (*report.Report, error) {
				return analysis.RunPrometheus(ctx, o, p)
			})
		},
	}
	s.register(cmd)
	addPrometheusFlags(cmd, &p, &pf, true)
	addProfileFlags(cmd, &s.f)
	return withTopics(cmd, "histograms", "timeout", "policy", "targets", "servers")
}

// addProfileFlags registers prometheus's --profile and --tz, the profile
// of the steps; f.applyProfile parses them.
func addProfileFlags(cmd *cobra.Command, f *analyzeFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", advice.ProfileAuto, "with --step: pool the steps by hour of the day (daily) or of the week (weekly), shown beside the recommendation; auto: daily when the steps span 3 days or more; none")
	fl.StringVar(&f.tz, "tz", "UTC", "time zone of the profile's hours (an IANA name: Europe/Berlin)")
	complete(cmd, "profile", advice.ProfileKinds...)
}

// addPrometheusFlags registers the flags of a Prometheus source: where,
// which metric, which window, how to authenticate. byAndUnit adds --by
// (labels), --unit (the metric's) and --metric; a command that reads files
// too (check) has its own (--metric is the otlp-metrics format's), which
// then serve both.
func addPrometheusFlags(cmd *cobra.Command, p *analysis.PrometheusOptions, pf *prometheusFlags, byAndUnit bool) {
	fl := cmd.Flags()
	s := &p.Source
	if byAndUnit {
		fl.StringVar(&s.Metric, "metric", "", "the histogram's name without _bucket, e.g. http_request_duration_seconds")
	}
	fl.StringVar(&s.Selector, "selector", "", `label matchers, e.g. '{job="api",code!~"5.."}'`)
	if byAndUnit {
		fl.StringSliceVar(&s.By, "by", nil, "labels to group by, e.g. route,method")
	}
	newPromDuration(fl, &pf.window, "window", promsource.DefaultWindow, "how far back to read: 1h, 1d, 7d, ...")
	fl.StringVar(&pf.at, "at", "now", "end of the window: "+timeflag.Grammar)
	newPromDuration(fl, &pf.step, "step", 0, "also evaluate every step-long window within --window, e.g. 1h")
	fl.StringVar(&pf.aggregate, "aggregate", aggregates[0], "with --step, what the recommendation builds on: worst (step) or overall")
	if byAndUnit {
		fl.StringVar(&pf.unit, "unit", "", "unit of the metric: s, ms, us; default: from the name's suffix")
		complete(cmd, "unit", unitNames...)
	}
	newPromDuration(fl, &pf.peakRange, "peak-range", promsource.DefaultPeakRange, "range of the rate whose maximum is the peak rate")
	complete(cmd, "aggregate", aggregates...)

	addConnectionFlags(cmd, connectionFields{url: &s.URL, bearerFile: &s.BearerTokenFile, bearerEnv: &s.BearerTokenEnv,
		basicUser: &s.BasicUser, basicPassFile: &s.BasicPasswordFile, basicPassEnv: &s.BasicPasswordEnv,
		caFile: &s.CAFile, insecure: &s.InsecureSkipVerify, headers: &s.Headers, timeout: &s.QueryTimeout},
		&pf.conn, "address of the Prometheus HTTP API, e.g. http://localhost:9090")
}

// apply parses the prometheus command's own flags into p; p.Source.Check
// checks what they say.
func (pf prometheusFlags) apply(p *analysis.PrometheusOptions) error {
	s := &p.Source
	w, err := model.ParseDuration(pf.window)
	if err != nil || w <= 0 {
		return fmt.Errorf("--window %q is not a duration such as 1h, 1d or 7d", pf.window)
	}
	s.Window = time.Duration(w)
	if pf.step != "" {
		st, err := model.ParseDuration(pf.step)
		if err != nil || st <= 0 {
			return fmt.Errorf("--step %q is not a duration such as 1h", pf.step)
		}
		s.Step = time.Duration(st)
	}
	pr, err := model.ParseDuration(pf.peakRange)
	if err != nil || pr <= 0 {
		return fmt.Errorf("--peak-range %q is not a duration such as 1m", pf.peakRange)
	}
	s.PeakRange = time.Duration(pr)
	if s.At, err = timeflag.Parse(pf.at, time.Now()); err != nil {
		return fmt.Errorf("--at %w", err)
	}
	switch pf.aggregate {
	case aggregates[0]:
		p.Overall = false
	case aggregates[1]:
		p.Overall = true
	default:
		return fmt.Errorf("--aggregate %q: want %s", pf.aggregate, strings.Join(aggregates, " or "))
	}
	if pf.unit != "" {
		if s.Unit, err = ingest.ParseUnit(pf.unit); err != nil {
			return fmt.Errorf("--unit: %w", err)
		}
	}
	return pf.conn.apply(&s.Attempts, &s.MaxResponseBytes, s.QueryTimeout)
}

// connectionFlags holds the raw values of the connection flags that need
// parsing, which every server command (prometheus, check, jaeger) shares.
type connectionFlags struct {
	maxResponse string
	retries     int
}

// connectionFields are where the connection flags write their plain
// values: the fields of a promsource.Connection or an httpclient.Options.
type connectionFields struct {
	url, bearerFile, bearerEnv, basicUser, basicPassFile, basicPassEnv, caFile *string
	insecure                                                                   *bool
	headers                                                                    *[]string
	timeout                                                                    *time.Duration
}

// addConnectionFlags registers the flags of a server connection: where,
// how to authenticate, and the client rules of internal/httpclient
// (timeouts, retries, the response cap). urlUsage is --url's help.
func addConnectionFlags(cmd *cobra.Command, s connectionFields, cf *connectionFlags, urlUsage string) {
	fl := cmd.Flags()
	fl.StringVar(s.url, "url", "", urlUsage)
	fl.StringVar(s.bearerFile, "bearer-token-file", "", "read a bearer token from this file")
	fl.StringVar(s.bearerEnv, "bearer-token-env", "", "read a bearer token from this environment variable")
	fl.StringVar(s.basicUser, "basic-auth-user", "", "basic auth user (the password from --basic-auth-password-file or -env)")
	fl.StringVar(s.basicPassFile, "basic-auth-password-file", "", "read the basic auth password from this file")
	fl.StringVar(s.basicPassEnv, "basic-auth-password-env", "", "read the basic auth password from this environment variable")
	fl.StringVar(s.caFile, "ca-file", "", "PEM CA certificates to verify the server with")
	fl.BoolVar(s.insecure, "insecure-skip-verify", false, "do not verify the server's TLS certificate")
	fl.StringArrayVarP(s.headers, "header", "H", nil, "extra request header, e.g. 'X-Scope-OrgID: team-a' (repeatable); @FILE reads them from a file (credentials)")
	fl.DurationVar(s.timeout, "query-timeout", httpclient.DefaultTimeout, "timeout of one query attempt")
	fl.IntVar(&cf.retries, "query-retries", httpclient.DefaultAttempts-1, "retries of a failed query (capped exponential backoff, full jitter)")
	fl.StringVar(&cf.maxResponse, "max-response-bytes", "256MiB", "largest answer to one query (after decompression); a larger one fails the query. Bytes (1048576) or a number with a unit: KiB, MiB, GiB (powers of 1024) or kB, MB, GB (powers of 1000), e.g. 512MiB, 1GB")
}

// apply parses the connection flags that need it; timeout is
// --query-timeout's value.
func (cf connectionFlags) apply(attempts *int, maxResponseBytes *int64, timeout time.Duration) error {
	if cf.retries < 0 {
		return fmt.Errorf("--query-retries %d is negative", cf.retries)
	}
	*attempts = cf.retries + 1
	if timeout <= 0 {
		return errors.New("--query-timeout must be positive")
	}
	var err error
	if *maxResponseBytes, err = human.ParseBytes(cf.maxResponse); err != nil {
		return fmt.Errorf("--max-response-bytes %w", err)
	}
	if *maxResponseBytes <= 0 {
		return fmt.Errorf("--max-response-bytes %q must be positive", cf.maxResponse)
	}
	return nil
}
