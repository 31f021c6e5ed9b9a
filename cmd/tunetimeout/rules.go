package main

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/outfile"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/report/rules"
)

// rulesFlags holds the raw values of the rules command's flags.
type rulesFlags struct {
	reportFile, falseTimeouts, network, windows, near, kind string
	output, testOut, grafana, name, namespace               string
	metaLabels, data, le                                    []string
}

func newRules() *cobra.Command {
	var (
		o   = analysis.Options{Recommend: recommend.DefaultOptions()}
		src sourceFlags
		ro  = rules.DefaultOptions()
		f   rulesFlags
	)
	cmd := &cobra.Command{
		Use:   "rules (SOURCE --metric NAME | --report FILE)",
		Short: "Write Prometheus rules that keep checking a recommended timeout",
		Long: `rules writes Prometheus rules that keep checking a timeout after the day it
was chosen, per group: recording rules for the share of calls slower than the
timeout in force (the recommendation, or --timeout), multi-window, multi-burn-
rate alerts on it against the budget, and Little's law alerts for the pool and
the bulkhead. The input is a live Prometheus, read as the prometheus command
reads it (a SOURCE: --url); the calls of files (--data), of Jaeger's spans
(--jaeger-url) or of ClickHouse's rows (--clickhouse-url), with --metric
naming the histogram in Prometheus that records the same calls, which the
rules query; or --report, a saved tunetimeout prometheus -o json.`,
		Example: `  # Rules for one job's routes, checked with promtool
  tunetimeout rules --url http://localhost:9090 \
      --metric http_request_duration_seconds --selector '{job="api"}' \
      --by route --pool 200 --output timeouts.rules.yaml \
      --test-out timeouts.test.yaml --grafana timeouts.dashboard.json
  promtool check rules timeouts.rules.yaml
  promtool test rules timeouts.test.yaml`,
		Args: noArgs("give --report FILE or --url"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			meta, err := f.apply(cmd, &o, &ro)
			if err != nil {
				return usageError{err}
			}
			if f.testOut != "" && (f.output == "" || f.output == "-") {
				return usageError{errors.New("--test-out needs --output: the test names the rules file")}
			}
			if f.testOut != "" && f.kind != rules.KindRules {
				return usageError{errors.New("--test-out needs --kind rules: promtool reads rules files, not PrometheusRules")}
			}
			r, err := f.read(cmd, o, &src)
			if err != nil {
				return err
			}
			p := src.prom.Source
			ro.Metric, ro.Selector, ro.By = p.Metric, p.Selector, p.By
			return f.write(cmd, r, ro, meta)
		},
	}
	addRulesFlags(cmd, &f, &o, &ro)
	addSourceFlags(cmd, &src, true)
	return withTopics(cmd, "alerting", "histograms", "timeout", "servers")
}

// addRulesFlags registers the rules command's own flags: the input beside
// the source flags, the rules and alerts, what to write and where, and the
// recommendation's flags as the prometheus command has them.
func addRulesFlags(cmd *cobra.Command, f *rulesFlags, o *analysis.Options, ro *rules.Options) {
	fl := cmd.Flags()
	fl.StringVar(&f.reportFile, "report", "", "read a saved report (tunetimeout prometheus -o json) instead of --url")
	fl.DurationVar(&ro.Timeout, "timeout", 0, "the timeout in force (default: each group's recommendation)")
	fl.StringVar(&f.falseTimeouts, "false-timeouts", "0.1%", "the budget: share of calls the timeout may cut off (a percentage or a ratio)")
	fl.StringVar(&f.windows, "windows", "", "burn-rate alert pairs LONG/SHORT:BURN[:SEVERITY], comma-separated (default: the SRE workbook's, "+strings.ReplaceAll(rules.DefaultWindows, ",", ", ")+")")
	fl.IntVar(&o.Pool, "pool", 0, "size of the pool the calls share (default: the report's)")
	fl.IntVar(&ro.Bulkhead, "bulkhead", 0, "the bulkhead normal demand is compared with (default: the report's)")
	fl.StringVar(&f.near, "near-bulkhead", "80%", "share of the bulkhead at which normal demand alerts")
	fl.DurationVar(&ro.DemandRange, "demand-range", ro.DemandRange, "range of the rates of the Little's law alerts")
	fl.DurationVar(&ro.For, "for", ro.For, "how long a Little's law alert must hold before it fires")
	fl.StringVar(&ro.RunbookURL, "runbook-url", "", "runbook link for every alert's annotations")
	fl.StringVar(&ro.RequestsMetric, "requests-metric", "", "a counter of the callers' requests, each counted once however many attempts it makes, with the latency metric's labels: adds the alerts of a metastable state (more than 1.1 attempts per request, goodput behind the requests, for 5m; docs/metastability.md)")
	fl.StringVar(&f.kind, "kind", rules.KindRules, "what to write: "+strings.Join(rules.Kinds, " or "))
	fl.StringVar(&f.name, "name", "tunetimeout", "metadata.name of the PrometheusRule")
	fl.StringVar(&f.namespace, "namespace", "", "metadata.namespace of the PrometheusRule")
	fl.StringArrayVar(&f.metaLabels, "label", nil, "metadata label KEY=VALUE of the PrometheusRule (repeatable)")
	fl.StringVar(&f.output, "output", "", "write the rules to this file instead of standard output")
	fl.StringVar(&f.testOut, "test-out", "", "also write a promtool unit test of the rules (needs --output)")
	fl.StringVar(&f.grafana, "grafana", "", "also write a Grafana dashboard (JSON) to this file")
	fl.StringSliceVar(&f.data, "data", nil, "the measured latency: files, globs or - (any input analyze reads); from a source other than Prometheus, --metric names the histogram in Prometheus that records the same calls, which the rules query")
	fl.StringSliceVar(&f.le, "le", nil, "from a source other than Prometheus: --metric is a classic histogram with these le bounds, in its unit (its name's suffix, else seconds); without them, a native histogram")
	// The recommendation, as the prometheus command makes it.
	fl.Float64Var(&o.Recommend.TightTailRatio, "tight-tail", o.Recommend.TightTailRatio, "never recommend less than this multiple of the median")
	fl.StringVar(&f.network, "network-allowance", "datacenter", "added for the client's network: a preset or a duration")
	fl.DurationVar(&o.Recommend.Min, "min", 0, "lowest timeout to recommend")
	fl.DurationVar(&o.Recommend.Max, "max", 0, "highest timeout to recommend")
	fl.Float64Var(&o.Rate, "rate", 0, "calls per second to the dependency (default: from Prometheus)")
	complete(cmd, "kind", rules.Kinds...)
	complete(cmd, "network-allowance", presetNames()...)
}

// read reads the report the rules are written from: --report, or the
// analysis of the source the flags name (analysis.RunRules).
func (f rulesFlags) read(cmd *cobra.Command, o analysis.Options, src *sourceFlags) (*report.Report, error) {
	if f.reportFile != "" {
		if src.given() > 0 || len(f.data) > 0 {
			return nil, usageError{errors.New("give --report or --url, not both")}
		}
		return readReport(cmd.InOrStdin(), f.reportFile)
	}
	if len(f.data) > 0 || src.jaegerURL != "" || src.chURL != "" {
		// --by and --unit are the source's: the groups' labels in
		// Prometheus are --by too.
		o.Ingest.By = src.prom.Source.By
		if src.pf.unit != "" {
			var err error
			if o.Ingest.Unit, err = ingest.ParseUnit(src.pf.unit); err != nil {
				return nil, usageError{fmt.Errorf("--unit: %w", err)}
			}
		}
		if src.prom.Source.Metric == "" {
			return nil, usageError{errors.New("--metric: name the histogram in Prometheus that records these calls: the rules query it")}
		}
	}
	m := analysis.Metric{Name: src.prom.Source.Metric}
	for _, le := range f.le {
		b, err := strconv.ParseFloat(le, 64)
		if err != nil || !(b > 0) || math.IsInf(b, 0) {
			return nil, usageError{fmt.Errorf("--le %q is not a positive bound", le)}
		}
		m.Bounds = append(m.Bounds, b)
	}
	s, err := src.source(&o, f.data)
	if err != nil {
		return nil, usageError{err}
	}
	return analysis.RunRules(cmd.Context(), o, s, m)
}

// write writes the rules of r, and with --test-out and --grafana their
// test and dashboard.
func (f rulesFlags) write(cmd *cobra.Command, r *report.Report, ro rules.Options, meta rules.Meta) error {
	rs, err := rules.Build(r, ro)
	if err != nil {
		return err
	}
	for _, n := range rs.Notes {
		fmt.Fprintln(cmd.ErrOrStderr(), "tunetimeout rules: "+n)
	}
	out, err := rules.Marshal(rs, f.kind, meta)
	if err != nil {
		return err
	}
	if err := writeFile(cmd, f.output, out); err != nil {
		return err
	}
	if f.testOut != "" {
		rel, err := relativeTo(f.testOut, f.output)
		if err != nil {
			return err
		}
		metric := ro.Metric
		if metric == "" {
			metric = r.Prometheus.Metric
		}
		test, err := rules.UnitTest(rs, ro, metric, ro.Selector, rel)
		if err != nil {
			return fmt.Errorf("--test-out: %w", err)
		}
		if err := writeFile(cmd, f.testOut, test); err != nil {
			return err
		}
	}
	if f.grafana != "" {
		d, err := rules.Dashboard(ro.Windows, "tunetimeout: "+rs.Source)
		if err != nil {
			return err
		}
		return writeFile(cmd, f.grafana, append(d, '\n'))
	}
	return nil
}

// apply parses the flags that are not plain values into o and ro, and
// returns the PrometheusRule's metadata.
func (f rulesFlags) apply(cmd *cobra.Command, o *analysis.Options, ro *rules.Options) (rules.Meta, error) {
	fl := cmd.Flags()
	meta, err := f.meta()
	if err != nil {
		return meta, err
	}
	if o.Recommend.FalseTimeouts, err = recommend.ParsePercent(f.falseTimeouts); err != nil {
		return meta, fmt.Errorf("--false-timeouts: %w", err)
	}
	// The live run recommends at --false-timeouts, so the report's
	// quantile says the same; a saved report keeps its own unless the
	// flag is given.
	if fl.Changed("false-timeouts") {
		ro.FalseTimeouts = o.Recommend.FalseTimeouts
	}
	if o.Recommend.NetworkAllowance, err = recommend.ParseNetworkAllowance(f.network); err != nil {
		return meta, fmt.Errorf("--network-allowance: %w", err)
	}
	windows := f.windows
	if windows == "" {
		windows = rules.DefaultWindows
	}
	if ro.Windows, err = rules.ParseWindows(windows); err != nil {
		return meta, fmt.Errorf("--windows: %w", err)
	}
	if ro.NearBulkhead, err = recommend.ParsePercent(f.near); err != nil {
		return meta, fmt.Errorf("--near-bulkhead: %w", err)
	}
	switch {
	case o.Pool < 0:
		return meta, fmt.Errorf("--pool: %d is negative", o.Pool)
	case ro.Bulkhead < 0:
		return meta, fmt.Errorf("--bulkhead: %d is negative", ro.Bulkhead)
	case ro.Timeout < 0:
		return meta, fmt.Errorf("--timeout: %v is negative", ro.Timeout)
	case ro.DemandRange <= 0:
		return meta, fmt.Errorf("--demand-range: %v is not positive", ro.DemandRange)
	case ro.For < 0:
		return meta, fmt.Errorf("--for: %v is negative", ro.For)
	case o.Rate < 0:
		return meta, fmt.Errorf("--rate: %v is negative", o.Rate)
	}
	ro.Pool = o.Pool
	return meta, checkRecommend(fl, o.Recommend)
}

// meta parses --name, --namespace, --label and --kind: the
// PrometheusRule's metadata, and what to write.
func (f rulesFlags) meta() (rules.Meta, error) {
	meta := rules.Meta{Name: f.name, Namespace: f.namespace, Labels: map[string]string{}}
	for _, l := range f.metaLabels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return meta, fmt.Errorf("--label %q is not KEY=VALUE", l)
		}
		meta.Labels[k] = v
	}
	if len(meta.Labels) == 0 {
		meta.Labels = nil
	}
	if !slices.Contains(rules.Kinds, f.kind) {
		return meta, fmt.Errorf("--kind %q: want %s", f.kind, strings.Join(rules.Kinds, " or "))
	}
	return meta, nil
}

// writeFile writes b to path, or to standard output for "" and "-".
func writeFile(cmd *cobra.Command, path string, b []byte) error {
	if path == "" || path == "-" {
		_, err := cmd.OutOrStdout().Write(b)
		return err
	}
	return temps.WriteAll(cmd.Context(), outfile.Bytes(path, b))
}

// relativeTo is target as a file in from's directory names it.
func relativeTo(from, target string) (string, error) {
	a, err := filepath.Abs(filepath.Dir(from))
	if err != nil {
		return "", err
	}
	b, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	return filepath.Rel(a, b)
}
