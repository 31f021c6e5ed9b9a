package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// analyzeFlags holds the raw flag values that need parsing.
type analyzeFlags struct {
	unit, falseTimeouts, network, format, output, status string
	from, to                                             string
	by                                                   []string
	quiet                                                bool // no progress line (file commands)
	window, forWhat, windowPrecision                     string
	profile, tz                                          string
	plan                                                 bool   // spans: plan the chain (--plan)
	retryAt                                              string // with --plan: the layer that keeps retries
}

func newAnalyze() *cobra.Command {
	return withTopics(newFileCommand(&cobra.Command{
		Use:   "analyze [FILE...]",
		Short: "Recommend a timeout from measured latencies (CSV or access logs)",
		Long: `analyze reads latencies from files (globs and rotated .gz/.zst logs too) or
standard input ("-"), builds an HDR histogram per group and recommends a
timeout at the chosen share of false timeouts, with every padding rule shown as
a step. With a call rate (--rate, or measured from timestamps) and a pool size
(--pool) it applies Little's law: calls in flight normally and during a hang,
whether the pool is exhausted, and the bulkhead that prevents it. --deadline
and --attempts fit a call policy; --emit writes the client configuration.`,
		Example: `  # The worked example of the README
  tunetimeout analyze testdata/mixture.csv --rate 400 --pool 200

  # Per route, one HTML page with plots (-o markdown, -o json: other formats)
  tunetimeout analyze --by route -o html --output report.html latencies.csv

  # A 1s deadline and 3 attempts: the call policy, and Envoy's configuration
  tunetimeout analyze testdata/mixture.csv --rate 400 --pool 200 \
      --deadline 1s --attempts 3 --emit envoy`,
	}, report.Lookup, false), "formats", "status", "timeout", "policy", "targets")
}

// outputFormats lists the -o formats lookup accepts, from the registry of
// report formats: --help, completion and the "unknown output format"
// error of each command read the same registry.
func outputFormats(lookup func(string) (report.Writer, error)) []string {
	var names []string
	for _, n := range report.Formats() {
		if _, err := lookup(n); err == nil {
			names = append(names, n)
		}
	}
	return names
}

// newFileCommand completes a command that analyses files (analyze,
// simulate): both register the same flags here and run through runFiles,
// which writes the report with the writer lookup finds for -o. always
// simulates the call policy, even without a deadline or retries.
func newFileCommand(cmd *cobra.Command, lookup func(string) (report.Writer, error), always bool) *cobra.Command {
	var (
		o  = analysis.Options{Recommend: recommend.DefaultOptions(), AlwaysSimulate: always}
		f  analyzeFlags
		pf policyFlags
		e  emitFlags // --emit, --emit-dir, --service, --namespace: snippets after the report (snippet.go)
	)
	e.output = &f.output
	lookup = e.wrap(lookup)
	e.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return runFiles(cmd, args, o, f, pf, lookup)
	}
	addPolicyFlags(cmd, &o, &pf)
	addLoopFlags(cmd, &o, &pf)
	addInputFlags(cmd, &o, &f)
	addAnalysisFlags(cmd, &o, &f, outputFormats(lookup))
	addWindowFlags(cmd, &f)
	addPlanFlags(cmd, &f)
	return cmd
}

// addWindowFlags registers --window, --for, --window-precision,
// --profile and --tz, for the commands that analyse calls with their
// times (analyze, simulate, clickhouse); f.apply parses them.
func addWindowFlags(cmd *cobra.Command, f *analyzeFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.window, "window", "", "analyse each window of this length too (1h, 15m, 1d; 0: none)")
	fl.StringVar(&f.forWhat, "for", "", "with windows: worst-window (default) or all, the period the timeout is for")
	fl.StringVar(&f.windowPrecision, "window-precision", "50%", "widest interval of a window's quantile, a share of it, to rank the window")
	fl.StringVar(&f.profile, "profile", advice.ProfileAuto, "with windows: pool the same hour across days (daily) or of the week across weeks (weekly); auto: daily when the windows span 3 days or more; none")
	fl.StringVar(&f.tz, "tz", "UTC", "time zone of the profile's hours (an IANA name: Europe/Berlin)")
	complete(cmd, "for", "worst-window", "all")
	complete(cmd, "profile", advice.ProfileKinds...)
}

// addPlanFlags registers --plan and --retry-at, for the commands that read
// spans (analyze, simulate, jaeger).
func addPlanFlags(cmd *cobra.Command, f *analyzeFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.plan, "plan", false, "spans with --deadline: plan the chain, each hop's policy fitted to the time its calls have left of the deadline, retries at one layer; its longest path replayed under faults at its bottom, every hop retrying against the plan (docs/chain.md)")
	fl.StringVar(&f.retryAt, "retry-at", analysis.PlanOutermost, "with --plan, the layer that keeps the retries: outermost (the calls of the services nobody calls) or innermost (the calls to the services that call no one)")
	complete(cmd, "retry-at", analysis.PlanOutermost, analysis.PlanInnermost)
}

// applyPlan parses --plan and --retry-at.
func (f analyzeFlags) applyPlan(fl *pflag.FlagSet, o *analysis.Options) error {
	if f.retryAt != analysis.PlanOutermost && f.retryAt != analysis.PlanInnermost {
		return fmt.Errorf("--retry-at %q: want %s or %s", f.retryAt, analysis.PlanOutermost, analysis.PlanInnermost)
	}
	if !f.plan {
		if fl.Changed("retry-at") {
			return errors.New("--retry-at is the layer of a plan: give --plan too")
		}
		return nil
	}
	if o.Policy.Deadline <= 0 {
		return errors.New("--plan fits each hop to the root's deadline: give --deadline too")
	}
	o.Plan = f.retryAt
	return nil
}

// applyWindow parses --window, --for and --window-precision.
func (f analyzeFlags) applyWindow(fl *pflag.FlagSet, o *analysis.Options) error {
	if f.window == "" {
		// --for and --window-precision apply to the windows of interval
		// logs too, which need no --window.
		return f.applyFor(fl, o)
	}
	w, err := model.ParseDuration(f.window)
	if err != nil {
		return fmt.Errorf("--window %q: %w", f.window, err)
	}
	d := time.Duration(w)
	if d == 0 {
		// No windows, not even an interval log's own.
		if f.forWhat != "" || fl.Changed("window-precision") {
			return errors.New("--for and --window-precision need windows: --window 0 has none")
		}
		o.NoWindows = true
		return nil
	}
	if d < time.Second || d%time.Second != 0 {
		return fmt.Errorf("--window %s: give whole seconds, at least one", d)
	}
	o.Window = d
	return f.applyFor(fl, o)
}

// applyFor parses --for, --window-precision, --profile and --tz.
func (f analyzeFlags) applyFor(fl *pflag.FlagSet, o *analysis.Options) error {
	if err := f.applyProfile(o); err != nil {
		return err
	}
	switch f.forWhat {
	case "", "worst-window":
	case "all":
		o.WindowForAll = true
	default:
		return fmt.Errorf("--for %q: worst-window or all", f.forWhat)
	}
	if f.windowPrecision == "" {
		return nil // a command without windows: the flag is not there
	}
	var err error
	if o.WindowPrecision, err = recommend.ParsePercent(f.windowPrecision); err != nil || o.WindowPrecision <= 0 {
		return fmt.Errorf("--window-precision %q: a share such as 50%%", f.windowPrecision)
	}
	return nil
}

// applyProfile parses --profile and --tz.
func (f analyzeFlags) applyProfile(o *analysis.Options) error {
	if f.profile == "" {
		return nil // a command without windows: the flag is not there
	}
	if !slices.Contains(advice.ProfileKinds, f.profile) {
		return fmt.Errorf("--profile %q: %s", f.profile, strings.Join(advice.ProfileKinds, ", "))
	}
	o.Profile = f.profile
	loc, err := time.LoadLocation(f.tz)
	if err != nil || f.tz == "" || f.tz == "Local" {
		return fmt.Errorf("--tz %q: an IANA time zone name such as UTC or Europe/Berlin", f.tz)
	}
	o.TZ = loc
	return nil
}

// addInputFlags registers the flags that say how to read the inputs and
// group their samples, which analyze, simulate and summarize share.
func addInputFlags(cmd *cobra.Command, o *analysis.Options, f *analyzeFlags) {
	fl := cmd.Flags()
	fl.StringVar(&o.Format, "input", "auto", "input format: "+strings.Join(ingest.FormatNames(), ", "))
	// Each format's own options, from the registry (ingest.Format.Flags).
	for _, ff := range ingest.FormatFlags() {
		fl.StringVar(ff.Field(&o.Ingest), ff.Name, "", usage.Expand(ff.Usage))
	}
	fl.StringVar(&o.Ingest.Latency, "latency", "", "which latency of a log: "+strings.Join(ingest.LatencyNames(), ", ")+" (default: request)")
	fl.StringArrayVar(&o.Ingest.RoutePatterns, "route-pattern", nil, "a route of your own, e.g. /users/{id}/posts/* (repeatable; tried before automatic normalization)")
	fl.StringVar(&f.status, "status", "", "status rule overrides, e.g. \"exclude=4xx count=404 censor=503\"")
	fl.StringVar(&f.unit, "unit", "", "unit of the latency column (CSV, JSON logs) or of interval logs other tools wrote: ns, us, ms, s; default: from the column name's suffix, ns for interval logs")
	fl.StringSliceVar(&f.by, "by", nil, "group by: CSV column names, or for logs "+strings.Join(ingest.GroupKeys, ", ")+
		"; for spans "+strings.Join(ingest.SpanGroupKeys, ", "))
	fl.BoolVar(&o.Strict, "strict", false, "stop at the first bad record instead of counting it")
	fl.BoolVar(&o.Status.IncludeErrors, "include-errors", false, "count 4xx and 5xx responses as latency samples")
	fl.IntVar(&o.MaxGroups, "max-groups", analysis.DefaultMaxGroups, "keep at most this many groups apart; the rest go to \"other\"")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line on standard error while reading (drawn only when it is a terminal)")
	fl.StringVar(&f.from, "from", "", "keep the calls from this time on ("+timeflag.Grammar+"); interval logs: the intervals that start then or later")
	fl.StringVar(&f.to, "to", "", "keep the calls before this time ("+timeflag.Grammar+"); interval logs: the intervals that start before it")
	complete(cmd, "input", ingest.FormatNames()...)
	complete(cmd, "latency", ingest.LatencyNames()...)
	complete(cmd, "unit", unitNames...)
	keys := slices.Clone(ingest.GroupKeys)
	for _, k := range ingest.SpanGroupKeys {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	completeList(cmd, "by", keys...)
}

// unitNames are the units completion offers for --unit, the short names
// of ingest.ParseUnit, which reads them (and their long forms).
var unitNames = []string{"ns", "us", "ms", "s"}

// addAnalysisFlags registers the flags every analysing command shares
// (analyze, simulate, prometheus): the recommendation, Little's law and
// the report. The call policy flags are addPolicyFlags.
func addAnalysisFlags(cmd *cobra.Command, o *analysis.Options, f *analyzeFlags, formats []string) {
	fl := cmd.Flags()
	fl.StringVar(&f.falseTimeouts, "false-timeouts", "0.1%", "share of good calls the timeout may cut off: a percentage (0.1% -> p99.9) or a ratio (1/1000)")
	fl.Float64Var(&o.Recommend.TightTailRatio, "tight-tail", o.Recommend.TightTailRatio, "never recommend less than this multiple of the median")
	fl.StringVar(&f.network, "network-allowance", "datacenter", "added for the client's network: a preset or a duration")
	fl.DurationVar(&o.Recommend.Min, "min", 0, "lowest timeout to recommend")
	fl.DurationVar(&o.Recommend.Max, "max", 0, "highest timeout to recommend")
	fl.DurationVar(&o.Recommend.RTT, "rtt", 0, "round-trip time to the server, for the connect timeout")
	fl.Float64Var(&o.Recommend.Confidence, "confidence", o.Recommend.Confidence, "confidence of the quantile's interval")
	fl.DurationSliceVar(&o.Candidates, "candidates", nil, "timeouts to compare, comma-separated `durations` (default: a ladder around the recommendation)")

	fl.Float64Var(&o.Rate, "rate", 0, "calls per second to the dependency (default: measured from timestamps)")
	fl.IntVar(&o.Pool, "pool", 0, "size of the pool the calls share (threads, connections)")

	fl.StringVarP(&f.format, "format", "o", "text", "output format: "+strings.Join(formats, ", "))
	fl.StringVar(&f.output, "output", "", "write the report to this file instead of standard output")
	complete(cmd, "format", formats...)
	complete(cmd, "network-allowance", presetNames()...)
}

// apply parses the flags that are not plain values into o and checks
// the options of the recommendation (checkRecommend), so that a bad value
// is a usage error before any input is read.
func (f analyzeFlags) apply(fl *pflag.FlagSet, o *analysis.Options) error {
	if err := f.applyInput(o); err != nil {
		return err
	}
	if err := f.applyWindow(fl, o); err != nil {
		return err
	}
	if fl.Lookup("plan") != nil {
		if err := f.applyPlan(fl, o); err != nil {
			return err
		}
	}
	var err error
	if o.Recommend.FalseTimeouts, err = recommend.ParsePercent(f.falseTimeouts); err != nil {
		return fmt.Errorf("--false-timeouts: %w", err)
	}
	if o.Recommend.NetworkAllowance, err = recommend.ParseNetworkAllowance(f.network); err != nil {
		return fmt.Errorf("--network-allowance: %w", err)
	}
	if o.Rate < 0 {
		return fmt.Errorf("--rate: %v is negative", o.Rate)
	}
	if o.Pool < 0 {
		return fmt.Errorf("--pool: %d is negative", o.Pool)
	}
	for _, c := range o.Candidates {
		if c <= 0 {
			return fmt.Errorf("--candidates: %v is not a positive duration", c)
		}
	}
	return checkRecommend(fl, o.Recommend)
}

// optionFlag is a flag that sets one field of a library's options T, so
// that checkOptions can name the flag at fault.
type optionFlag[T any] struct {
	name string
	set  func(dst *T, src T)
}

// recommendFlags are the flags that set recommend.Options.
var recommendFlags = []optionFlag[recommend.Options]{
	{"false-timeouts", func(d *recommend.Options, s recommend.Options) { d.FalseTimeouts = s.FalseTimeouts }},
	{"tight-tail", func(d *recommend.Options, s recommend.Options) { d.TightTailRatio = s.TightTailRatio }},
	{"network-allowance", func(d *recommend.Options, s recommend.Options) { d.NetworkAllowance = s.NetworkAllowance }},
	{"min", func(d *recommend.Options, s recommend.Options) { d.Min = s.Min }},
	{"max", func(d *recommend.Options, s recommend.Options) { d.Max = s.Max }},
	{"rtt", func(d *recommend.Options, s recommend.Options) { d.RTT = s.RTT }},
	{"confidence", func(d *recommend.Options, s recommend.Options) { d.Confidence = s.Confidence }},
}

// checkRecommend checks o with recommend's own rule (Options.Validate).
func checkRecommend(fl *pflag.FlagSet, o recommend.Options) error {
	return checkOptions(fl, o, recommend.DefaultOptions(), recommendFlags, recommend.Options.Validate)
}

// checkOptions checks o with the library's own rule, validate, before any
// input is read, and leads its error with the flags at fault and their
// values: each flag the user gave, alone on defaults; when none is wrong
// alone (--min above --max), every one of them the user gave.
func checkOptions[T any](fl *pflag.FlagSet, o, defaults T, flags []optionFlag[T], validate func(T) error) error {
	err := validate(o)
	if err == nil {
		return nil
	}
	value := func(name string) string { return strings.Trim(fl.Lookup(name).Value.String(), "[]") }
	var named, given []string
	for _, f := range flags {
		if !fl.Changed(f.name) {
			continue
		}
		given = append(given, "--"+f.name+" "+value(f.name))
		one := defaults
		f.set(&one, o)
		if validate(one) != nil {
			named = append(named, "--"+f.name+" "+value(f.name))
		}
	}
	if len(named) == 0 {
		named = given
	}
	if len(named) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(named, ", "), err)
}

// applyInput parses the input flags (addInputFlags) into o.
func (f analyzeFlags) applyInput(o *analysis.Options) error {
	if o.Format != "" && !slices.Contains(ingest.FormatNames(), o.Format) {
		return fmt.Errorf("--input %q: unknown input format (known: %s)", o.Format, strings.Join(ingest.FormatNames(), ", "))
	}
	if err := ingest.CheckLatency(ingest.ImpliedFormat(o.Format, o.Ingest), o.Ingest.Latency); err != nil {
		return fmt.Errorf("--latency: %w", err)
	}
	var err error
	if f.unit != "" {
		if o.Ingest.Unit, err = ingest.ParseUnit(f.unit); err != nil {
			return fmt.Errorf("--unit: %w", err)
		}
	}
	o.Ingest.By = f.by
	if f.status != "" {
		include := o.Status.IncludeErrors
		if o.Status, err = ingest.ParseStatusRule(f.status); err != nil {
			return fmt.Errorf("--status: %w", err)
		}
		o.Status.IncludeErrors = include
	}
	now := time.Now()
	if o.From, err = timeflag.Parse(f.from, now); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	if o.To, err = timeflag.Parse(f.to, now); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return fmt.Errorf("--from %s is not before --to %s", f.from, f.to)
	}
	return nil
}

// presetList names the network allowance presets for --help.
func presetList() string {
	var parts []string
	for _, p := range recommend.NetworkPresets {
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, human.ExactDuration(p.Allowance, false)))
	}
	return strings.Join(parts, ", ")
}

// presetNames are the network allowance presets, for completion.
func presetNames() []string {
	var names []string
	for _, p := range recommend.NetworkPresets {
		names = append(names, p.Name)
	}
	return names
}

// formatList lists the input formats for --help, one a line.
func formatList() string {
	var rows [][]string
	for _, f := range ingest.Formats() {
		rows = append(rows, []string{f.Name, usage.Expand(f.Summary)})
	}
	return wrapList(rows)
}
