// Package rules writes Prometheus rules that keep checking a recommended
// timeout after the day it was chosen: per group, recording rules for the
// share of calls the timeout in force cuts off (the false-timeout ratio),
// multi-window, multi-burn-rate alerts on that ratio against the budget the
// recommendation was made for (the SRE workbook's, as Sloth and Pyrra write
// them), and Little's law alerts for the calls a hang would hold and for
// normal demand near the bulkhead. It also writes a promtool unit test of
// the rules and a Grafana dashboard over them (docs/rules.md).
//
// The input is a report of `tunetimeout prometheus` (a live run or its JSON
// report); the output is a model marshalled to YAML with a YAML library,
// never by string templates, so that names from the data are escaped.
package rules

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/report"
)

// Kinds of file Marshal writes.
const (
	// KindRules is a Prometheus rules file (rule_files, promtool check rules).
	KindRules = "rules"
	// KindPrometheusRule is a prometheus-operator PrometheusRule resource.
	KindPrometheusRule = "prometheusrule"
)

// Kinds lists the values of --kind.
var Kinds = []string{KindRules, KindPrometheusRule}

// Names of what the rules write: the recorded ratio (one per window, the
// window's duration appended, as Sloth's slo:sli_error:ratio_rate5m) and
// the alerts.
const (
	RatioRecord = "tunetimeout:false_timeout:ratio_rate"
	BurnAlert   = "TunetimeoutFalseTimeoutBudgetBurn"
	HangAlert   = "TunetimeoutHangExhaustsPool"
	// SharedHangAlert is HangAlert for the pool all groups share.
	SharedHangAlert = "TunetimeoutHangExhaustsSharedPool"
	DemandAlert     = "TunetimeoutDemandNearBulkhead"
	// RetryStormAlert and GoodputAlert are the signals of a metastable
	// state (docs/metastability.md): the callers send more than
	// MetastableAttempts attempts per request, and fewer than
	// MetastableGoodput of their requests' worth of calls are answered
	// within the timeout, both for MetastableFor. They need the callers'
	// requests (Options.RequestsMetric).
	RetryStormAlert    = "TunetimeoutRetryStorm"
	GoodputAlert       = "TunetimeoutGoodputBehindDemand"
	MetastableAttempts = 1.1
	MetastableGoodput  = 0.99
	MetastableFor      = 5 * time.Minute
	// metastableRunbook is the runbook annotation of both (MetastableRunbook
	// names the option in it): break the loop, then restore (Bronson et al.,
	// HotOS 2021: a metastable state outlives its trigger; only removing the
	// retry load ends it).
	metastableRunbook = "A metastable state outlives its trigger: rolling the trigger back does not end it, restarting does not either, breaking the loop does. 1. Shed load: turn away or rate-limit requests at the edge until attempts per request are back near 1. 2. Drain the queues: the dependency is working on calls whose callers gave up; let it drop them (work with an expired deadline), or drain its queue once the load is off. 3. Turn retries off: the switch each snippet's comments name (docs/policy.md), without a deploy. 4. Restore: when goodput meets the offered load again, turn retries back on (with a retry budget: tunetimeout simulate %s names the one that recovers), then the load, in steps."
	// DefaultWindows are the SRE workbook's recommended pairs ("Alerting on
	// SLOs", table 5-8): page on 2 % of a month's budget spent in 1h and on
	// 5 % in 6h, ticket on 10 % in 1d and in 3d.
	DefaultWindows = "1h/5m:14.4:page,6h/30m:6:page,1d/2h:3:ticket,3d/6h:1:ticket"
)

// MetastableRunbook is the runbook annotation of the metastable alerts,
// naming simulate's option that finds the retry budget that recovers.
func MetastableRunbook() string { return fmt.Sprintf(metastableRunbook, usage.Trigger) }

// Window is one pair of the multi-window, multi-burn-rate alerts: the
// ratio over both Long and Short above Burn x budget fires an alert of
// Severity. Long catches a sustained burn, Short makes the alert stop soon
// after the burn does (SRE workbook, "Alerting on SLOs", section 6).
type Window struct {
	Long, Short time.Duration
	Burn        float64
	Severity    string
}

// pageWindow is the longest long window that pages by default.
const pageWindow = 6 * time.Hour

// ParseWindows reads --windows: pairs LONG/SHORT:BURN[:SEVERITY] separated
// by commas, e.g. "1h/5m:14.4:page,1d/2h:3:ticket". A pair without a
// severity is "page" when its long window is at most 6h, else "ticket", as
// the SRE workbook pages on 1h/5m and 6h/30m and tickets on 1d/2h and 3d/6h.
func ParseWindows(s string) ([]Window, error) {
	var ws []Window
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		fields := strings.Split(part, ":")
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("%q is not LONG/SHORT:BURN[:SEVERITY], e.g. 1h/5m:14.4:page", part)
		}
		long, short, ok := strings.Cut(fields[0], "/")
		if !ok {
			return nil, fmt.Errorf("%q: want two windows LONG/SHORT, e.g. 1h/5m", part)
		}
		var w Window
		for _, d := range []struct {
			s   string
			dst *time.Duration
		}{{long, &w.Long}, {short, &w.Short}} {
			v, err := model.ParseDuration(strings.TrimSpace(d.s))
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("%q: %q is not a duration such as 5m or 1h", part, d.s)
			}
			*d.dst = time.Duration(v)
		}
		if w.Short >= w.Long {
			return nil, fmt.Errorf("%q: the short window %s must be shorter than the long one %s", part, dur(w.Short), dur(w.Long))
		}
		b, err := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
		if err != nil || !(b > 0) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("%q: burn rate %q is not a positive number", part, fields[1])
		}
		w.Burn = b
		w.Severity = "ticket"
		if w.Long <= pageWindow {
			w.Severity = "page"
		}
		if len(fields) == 3 {
			if w.Severity = strings.TrimSpace(fields[2]); w.Severity == "" {
				return nil, fmt.Errorf("%q: empty severity", part)
			}
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// Options are the choices of `tunetimeout rules`.
type Options struct {
	// Metric, Selector and By name the histogram as the report read it:
	// Metric defaults to the report's; Selector is label matchers in braces
	// ({job="api"}), By the labels the groups are the values of.
	Metric   string
	Selector string
	By       []string
	// Timeout is the timeout in force; 0: each group's recommendation.
	Timeout time.Duration
	// FalseTimeouts is the budget, the share of calls the timeout may cut
	// off; 0: 1 - each group's recommendation quantile.
	FalseTimeouts float64
	Windows       []Window
	// Pool and Bulkhead are what the Little's law alerts compare against;
	// 0: the report's.
	Pool, Bulkhead int
	// NearBulkhead is the share of the bulkhead at which normal demand
	// alerts (0.8).
	NearBulkhead float64
	// DemandRange is the range of the rates of the Little's law alerts (5m).
	DemandRange time.Duration
	// For is how long the Little's law alerts must hold before firing.
	For time.Duration
	// RunbookURL goes into every alert's annotations.
	RunbookURL string
	// RequestsMetric is a counter of the callers' requests, each counted
	// once however many attempts it makes, with the labels of the latency
	// metric's groups (and the selector's): the metastable alerts compare
	// the calls with it. "": no such alerts.
	RequestsMetric string
}

// DefaultOptions returns the options of a run without flags.
func DefaultOptions() Options {
	ws, err := ParseWindows(DefaultWindows)
	if err != nil {
		panic(err)
	}
	return Options{Windows: ws, NearBulkhead: 0.8, DemandRange: 5 * time.Minute, For: 5 * time.Minute}
}

// Rules are the generated rules: the file and, per group, what they were
// built from.
type Rules struct {
	File    File
	Targets []Target
	// Notes say what could not be written (a group without a timeout, an
	// alert without a pool), in the file's head comment too.
	Notes []string
	// Source says where the recommendation came from: "metric, 6h ending
	// 2026-11-02T12:00:00Z".
	Source string
}

// File is a Prometheus rules file.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is one rule group; Notes become its head comment.
type Group struct {
	Name  string   `yaml:"name"`
	Rules []Rule   `yaml:"rules"`
	Notes []string `yaml:"-"`
}

// Rule is a recording or an alerting rule; Comment becomes its head
// comment.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
	Comment     string            `yaml:"-"`
}

// Target is what the rules of one report group check.
type Target struct {
	Group string
	// Labels are the group's label values, by label, in --by order
	// ("" for a missing label).
	Labels  [][2]string
	Kind    string // "classic" or "native"
	Timeout time.Duration
	// LE is the le bound the ratio counts below, as the label is written
	// ("0.25"); Exact is false when it is not the timeout, and then the
	// ratio is a LowerBound (the next bound above) or an upper bound (the
	// largest bound, below the timeout). AddLE is the le to add so that
	// the ratio becomes exact. Native histograms have none of these:
	// histogram_fraction interpolates.
	LE         string
	Exact      bool
	LowerBound bool
	AddLE      string
	Budget     float64
	// Pool and Bulkhead are 0 when unknown.
	Pool, Bulkhead int
	UnitSeconds    float64
	Matchers       string // the selector's and the group's, without braces
}

// Build writes the rules for every group of r.
func Build(r *report.Report, o Options) (*Rules, error) {
	if r == nil || r.Prometheus == nil {
		if o.Metric == "" {
			return nil, usage.About(usage.Metric, fmt.Errorf("the report was not read from Prometheus (no prometheus object): give %s, or use a report of tunetimeout prometheus -o json", usage.Metric))
		}
	}
	src := r.Prometheus
	if src == nil {
		src = &report.PrometheusSource{Kind: "classic", UnitSeconds: 1}
	}
	// Every name and matcher written into PromQL is checked first: a
	// --metric, --by or --selector that is not PromQL would make a file
	// promtool refuses, or end an expression and add to it. The flags are
	// the command line's (exit 2); a report's metric is the data's.
	if o.Metric != "" {
		if err := promsource.CheckMetric(usage.Metric.String(), o.Metric); err != nil {
			return nil, &usage.Error{Err: err}
		}
	}
	for _, l := range o.By {
		if err := promsource.CheckBy(l); err != nil {
			return nil, &usage.Error{Err: err}
		}
	}
	if _, err := promsource.ParseSelector(o.Selector); err != nil {
		return nil, &usage.Error{Err: err}
	}
	if o.RequestsMetric != "" {
		if err := promsource.CheckMetric(usage.RequestsMetric.String(), o.RequestsMetric); err != nil {
			return nil, &usage.Error{Err: err}
		}
	}
	metric := o.Metric
	if metric == "" {
		metric = src.Metric
		if err := promsource.CheckMetric("the report's metric", metric); err != nil {
			return nil, err
		}
	}
	if len(o.Windows) == 0 {
		return nil, usage.About(usage.Windows, fmt.Errorf("no %s", usage.Windows))
	}
	if o.DemandRange <= 0 {
		o.DemandRange = 5 * time.Minute
	}
	if !(o.NearBulkhead > 0 && o.NearBulkhead <= 1) {
		return nil, fmt.Errorf("near-bulkhead share %v is not in (0, 1]", o.NearBulkhead)
	}
	if o.FalseTimeouts < 0 || o.FalseTimeouts >= 1 {
		return nil, fmt.Errorf("false-timeouts %v is not in [0, 1)", o.FalseTimeouts)
	}
	sel, err := selectorBody(o.Selector)
	if err != nil {
		return nil, err
	}
	unit := src.UnitSeconds
	if unit <= 0 {
		unit = 1
	}
	out := &Rules{Source: metric}
	if src.At != "" && src.WindowSeconds > 0 {
		out.Source = fmt.Sprintf("%s, %s ending %s", metric, dur(seconds(src.WindowSeconds)), src.At)
	}
	for _, g := range r.Groups {
		t, note, err := target(g, o, src.Kind, sel, unit)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", g.Name, err)
		}
		if note != "" {
			out.Notes = append(out.Notes, note)
			continue
		}
		out.Targets = append(out.Targets, t)
		out.File.Groups = append(out.File.Groups, groupRules(t, o, metric, out.Source))
	}
	if len(out.Targets) == 0 {
		return nil, errors.New("no group has a timeout to check: " + strings.Join(out.Notes, "; "))
	}
	pool := o.Pool
	if pool == 0 && r.SharedPool != nil {
		pool = r.SharedPool.Pool
	}
	if len(out.Targets) > 1 && pool > 0 {
		// Appended last: File.Groups[i] stays the rules of Targets[i].
		out.File.Groups = append(out.File.Groups, sharedPoolRules(out.Targets, o, metric, out.Source, pool))
	}
	return out, nil
}

// sharedPoolRules alerts when a hang of the whole dependency would hold
// more calls than the pool its groups share: they hang together, so their
// calls in flight (each group's rate x its timeout) add up
// (docs/method.md#6-littles-law). A group without calls counts 0.
func sharedPoolRules(ts []Target, o Options, metric, source string, pool int) Group {
	var terms, names []string
	for _, t := range ts {
		term := rateExpr(t, metric, nil, o.DemandRange) + " * " + num(t.Timeout.Seconds())
		if t.Bulkhead > 0 {
			// A group's bulkhead caps its calls in flight, a hang's too.
			term = "clamp_max(" + term + ", " + strconv.Itoa(t.Bulkhead) + ")"
		}
		terms = append(terms, "("+term+" or vector(0))")
		names = append(names, t.Group)
	}
	r := Rule{
		Alert:  SharedHangAlert,
		Expr:   strings.Join(terms, " + ") + " > " + strconv.Itoa(pool),
		Labels: map[string]string{"severity": "ticket", "pool": strconv.Itoa(pool)},
		Annotations: map[string]string{
			"summary": literal(fmt.Sprintf("A hang of the dependency would hold more calls than the pool of %d its %d groups share", pool, len(ts))),
			"description": literal(fmt.Sprintf("Little's law: when the dependency hangs, its groups (%s) hang together; the calls in flight are the sum of each group's call rate (over %s) x its timeout, each at most its bulkhead, more than the shared pool of %d: a hang would exhaust it. Cap the calls with bulkheads that fit the pool together, or shorten the timeouts.",
				strings.Join(names, ", "), dur(o.DemandRange), pool)),
			"recommended_from": literal(source),
		},
	}
	if o.RunbookURL != "" {
		r.Annotations["runbook_url"] = literal(o.RunbookURL)
	}
	if o.For > 0 {
		r.For = dur(o.For)
	}
	return Group{Name: "tunetimeout:shared-pool", Rules: []Rule{r}}
}

// target tells what the rules of g check; a note instead when g has no
// timeout to check.
func target(g report.Group, o Options, kind, sel string, unit float64) (Target, string, error) {
	t := Target{Group: g.Name, Kind: kind, UnitSeconds: unit}
	switch kind {
	case "classic", "native":
	default:
		return t, "", fmt.Errorf("a %s histogram has no PromQL for the share above a bound: rules are written for classic (le) and native histograms", kind)
	}
	labels, err := groupLabels(g, o.By)
	if err != nil {
		return t, "", err
	}
	t.Labels = labels
	ms := []string{}
	if sel != "" {
		ms = append(ms, sel)
	}
	for _, l := range labels {
		ms = append(ms, l[0]+"="+strconv.Quote(l[1]))
	}
	t.Matchers = strings.Join(ms, ", ")

	t.Timeout = o.Timeout
	if t.Timeout == 0 {
		t.Timeout = seconds(g.Recommendation.TimeoutSeconds)
	}
	if t.Timeout <= 0 {
		return t, fmt.Sprintf("group %q has no recommended timeout: give %s", g.Name, usage.Timeout), nil
	}
	t.Budget = o.FalseTimeouts
	if t.Budget == 0 {
		if q := g.Recommendation.Quantile; q > 0 && q < 1 {
			t.Budget = round12(1 - q)
		}
	}
	if !(t.Budget > 0) {
		return t, "", usage.About(usage.FalseTimeouts, fmt.Errorf("no false-timeout budget: the report has no recommendation quantile; give %s", usage.FalseTimeouts))
	}
	for _, w := range o.Windows {
		if w.Burn*t.Budget >= 1 {
			return t, "", fmt.Errorf("burn rate %s x budget %s is at least 1: the ratio can never exceed it", num(w.Burn), num(t.Budget))
		}
	}
	t.Pool = o.Pool
	if t.Pool == 0 && g.LittlesLaw.Pool != nil {
		t.Pool = *g.LittlesLaw.Pool
	}
	t.Bulkhead = o.Bulkhead
	if t.Bulkhead == 0 && g.LittlesLaw.Bulkhead != nil {
		t.Bulkhead = *g.LittlesLaw.Bulkhead
	}
	if kind == "classic" {
		if g.Buckets == nil || len(g.Buckets.BoundsSeconds) == 0 {
			return t, "", errors.New("the report has no bucket bounds (buckets.bounds_seconds) to count the calls below the timeout with")
		}
		chooseLE(&t, g.Buckets.BoundsSeconds)
	}
	return t, "", nil
}

// chooseLE picks the bound the ratio counts below (docs/rules.md#exactness):
// the timeout itself when it is a bound, exact; else the next bound above,
// and the ratio, the calls above that bound, is a lower bound of the calls
// above the timeout; beyond the largest finite bound, the largest, an
// upper bound. AddLE is the timeout as its le label would be written.
func chooseLE(t *Target, bounds []float64) {
	ts := t.Timeout.Seconds()
	bs := slices.Clone(bounds)
	slices.Sort(bs)
	t.AddLE = LE(ts, t.UnitSeconds)
	for _, b := range bs {
		if math.Abs(b-ts) <= 1e-9*ts {
			t.LE, t.Exact = LE(b, t.UnitSeconds), true
			return
		}
		if b > ts {
			t.LE, t.LowerBound = LE(b, t.UnitSeconds), true
			return
		}
	}
	t.LE = LE(bs[len(bs)-1], t.UnitSeconds)
}

// LE writes a bound given in seconds as the le label of a histogram in
// units of unit seconds (promsource.FormatLE, the one writer of an le).
func LE(boundSeconds, unitSeconds float64) string {
	return promsource.FormatLE(boundSeconds, unitSeconds)
}

// leMatcher matches the le label of bound le as every exposition writes
// it. Fractions ("0.25", "2.5e-05") are written alike everywhere; a whole
// number is "1" in client_golang's text format and Prometheus 2's text
// scrapes, but "1.0" in OpenMetrics, protobuf scrapes and Prometheus 3,
// which normalises le on ingestion: a regex takes either.
func leMatcher(le string) string {
	if strings.ContainsAny(le, ".eE") || strings.Contains(le, "Inf") {
		return "le=" + strconv.Quote(le)
	}
	return "le=~" + strconv.Quote(regexpQuote(le)+"|"+regexpQuote(le+".0"))
}

func regexpQuote(s string) string { return strings.ReplaceAll(s, ".", `\.`) }

// groupLabels are a group's values of the by labels, in by's order, ""
// for a label its series do not have (a PromQL matcher l="" selects the
// series without l): the report's labels, its identity. A report without
// them (written before they were) has its group's names split back:
// promsource.GroupName's values, quoted where they hold a space or a
// quote or are "-", "-" for a missing label (with one label, a name that
// is not one such value is the value); "all" without --by.
func groupLabels(g report.Group, by []string) ([][2]string, error) {
	if len(by) == 0 {
		if g.Name != "all" || len(g.Labels) > 0 {
			return nil, usage.About(usage.By, fmt.Errorf("the group's name is not \"all\": the report was grouped by labels; give %s as the prometheus run had it", usage.By))
		}
		return nil, nil
	}
	if len(g.Labels) > 0 {
		out := make([][2]string, len(by))
		for i, l := range by {
			out[i] = [2]string{l, g.Labels[l]}
		}
		for l := range g.Labels {
			if !slices.Contains(by, l) {
				return nil, usage.About(usage.By, fmt.Errorf("the report grouped by the label %s, not in %s %s: give %s as the prometheus run had it", l, usage.By, strings.Join(by, ","), usage.By))
			}
		}
		return out, nil
	}
	values, ok := names.ParseKey(g.Name, by).ByValues()
	if !ok {
		return nil, usage.About(usage.By, fmt.Errorf("cannot split the group's name into the values of the %d labels %s: give %s as the prometheus run had it", len(by), strings.Join(by, ","), usage.By))
	}
	out := make([][2]string, len(by))
	for i, l := range by {
		out[i] = [2]string{l, values[i]}
	}
	return out, nil
}

// selectorBody returns the matchers of a selector without its braces.
func selectorBody(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return "", fmt.Errorf(`selector %q must be label matchers in braces, e.g. {job="api"}`, s)
	}
	return strings.TrimSuffix(strings.TrimSpace(s[1:len(s)-1]), ","), nil
}

// sumBy writes "sum by (labels) (expr)" or "sum(expr)".
func sumBy(by []string, expr string) string {
	if len(by) == 0 {
		return "sum(" + expr + ")"
	}
	return "sum by (" + strings.Join(by, ", ") + ") (" + expr + ")"
}

func series(name, matchers string) string {
	if matchers == "" {
		return name
	}
	return name + "{" + matchers + "}"
}

func with(matchers, more string) string {
	if matchers == "" {
		return more
	}
	return matchers + ", " + more
}

// RatioExpr is the share of calls slower than the timeout over window w.
func RatioExpr(t Target, metric string, by []string, w time.Duration) string {
	r := "[" + dur(w) + "]"
	if t.Kind == "native" {
		return fmt.Sprintf("1 - histogram_fraction(0, %s, %s)", num(t.Timeout.Seconds()/t.UnitSeconds),
			sumBy(by, "rate("+series(metric, t.Matchers)+r+")"))
	}
	return fmt.Sprintf("1 - (%s / %s)",
		sumBy(by, "rate("+series(metric+"_bucket", with(t.Matchers, leMatcher(t.LE)))+r+")"),
		sumBy(by, "rate("+series(metric+"_count", t.Matchers)+r+")"))
}

// rateExpr is the call rate of the group, calls per second.
func rateExpr(t Target, metric string, by []string, w time.Duration) string {
	r := "[" + dur(w) + "]"
	if t.Kind == "native" {
		return "histogram_count(" + sumBy(by, "rate("+series(metric, t.Matchers)+r+")") + ")"
	}
	return sumBy(by, "rate("+series(metric+"_count", t.Matchers)+r+")")
}

// inFlightExpr is normal demand, the calls in flight on average: rate x
// mean latency = rate(_count) x rate(_sum) / rate(_count) = rate(_sum),
// in seconds (Little's law, docs/method.md#6-littles-law).
func inFlightExpr(t Target, metric string, by []string, w time.Duration) string {
	r := "[" + dur(w) + "]"
	var e string
	if t.Kind == "native" {
		e = "histogram_sum(" + sumBy(by, "rate("+series(metric, t.Matchers)+r+")") + ")"
	} else {
		e = sumBy(by, "rate("+series(metric+"_sum", t.Matchers)+r+")")
	}
	if t.UnitSeconds != 1 {
		e += " * " + num(t.UnitSeconds)
	}
	return e
}

// RecordName is the recorded ratio over w: tunetimeout:false_timeout:ratio_rate5m.
func RecordName(w time.Duration) string { return RatioRecord + dur(w) }

// Threshold is the ratio a pair alerts above: burn x budget.
func Threshold(w Window, budget float64) string {
	return "(" + num(w.Burn) + " * " + num(budget) + ")"
}

// windows are the distinct windows of the pairs, shortest first.
func windows(ws []Window) []time.Duration {
	var out []time.Duration
	for _, w := range ws {
		out = append(out, w.Long, w.Short)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// groupRules writes the rule group of one target.
func groupRules(t Target, o Options, metric, source string) Group {
	by := make([]string, len(t.Labels))
	for i, l := range t.Labels {
		by[i] = l[0]
	}
	g := Group{Name: "tunetimeout:" + t.Group}
	timeout := dur(t.Timeout)
	exactness := exactnessNote(t)
	g.Rules = append(g.Rules, recordingRules(t, o, metric, by, timeout, exactness)...)
	common := func(a map[string]string) map[string]string {
		a["recommended_from"] = literal(source)
		if o.RunbookURL != "" {
			a["runbook_url"] = literal(o.RunbookURL)
		}
		return a
	}
	g.Rules = append(g.Rules, burnRules(t, o, timeout, exactness, common)...)
	alertLabels := func(extra map[string]string) map[string]string {
		m := map[string]string{"severity": "ticket", "group": literal(t.Group), "timeout": timeout}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	g.littlesLawRules(t, o, metric, by, timeout, common, alertLabels)
	if o.RequestsMetric == "" {
		g.Notes = append(g.Notes, fmt.Sprintf("No %s or %s alert: no %s (the callers' requests, each counted once however many attempts it makes).", RetryStormAlert, GoodputAlert, usage.RequestsMetric))
		return g
	}
	g.Rules = append(g.Rules, metastableRules(t, o, metric, by, exactness, common, alertLabels)...)
	return g
}

// recordingRules record the share of t's calls slower than the timeout
// in force (timeout, written) over each window, grouped by by.
func recordingRules(t Target, o Options, metric string, by []string, timeout, exactness string) []Rule {
	var rules []Rule
	for i, w := range windows(o.Windows) {
		r := Rule{
			Record: RecordName(w),
			Expr:   RatioExpr(t, metric, by, w),
			Labels: map[string]string{"group": t.Group, "timeout": timeout},
		}
		if i == 0 {
			// Once, above the first: it holds for every window.
			r.Comment = exactness
		}
		rules = append(rules, r)
	}
	return rules
}

// burnRules are the multi-window burn-rate alerts of t on the recorded
// shares, one per pair of windows; common adds the annotations every
// alert has.
func burnRules(t Target, o Options, timeout, exactness string, common func(map[string]string) map[string]string) []Rule {
	var rules []Rule
	recorded := `group=` + strconv.Quote(t.Group) + `, timeout=` + strconv.Quote(timeout)
	for _, w := range o.Windows {
		th := Threshold(w, t.Budget)
		desc := fmt.Sprintf("The share of calls of group %s slower than the timeout in force, %s, exceeds %s (burn rate %s x the budget of %s) over both %s and %s: at this rate the budget of a month lasts %s. The latency moved since the timeout was chosen: re-run tunetimeout prometheus and compare.",
			t.Group, timeout, human.Percent(round12(w.Burn*t.Budget)), num(w.Burn), human.Percent(t.Budget), dur(w.Long), dur(w.Short), budgetLasts(w.Burn))
		if exactness != "" {
			desc += " " + exactness
		}
		rules = append(rules, Rule{
			Alert: BurnAlert,
			Expr: fmt.Sprintf("%s{%s} > %s and %s{%s} > %s",
				RecordName(w.Long), recorded, th, RecordName(w.Short), recorded, th),
			// group and timeout, as the recorded ratios carry them, so
			// that the rules of two groups differ (promtool's lint).
			Labels: map[string]string{"severity": w.Severity, "long": dur(w.Long), "short": dur(w.Short), "group": literal(t.Group), "timeout": timeout},
			Annotations: common(map[string]string{
				"summary":     literal(fmt.Sprintf("The %s timeout of %s cuts off calls %s x faster than its budget of %s allows", timeout, t.Group, num(w.Burn), human.Percent(t.Budget))),
				"description": literal(desc),
			}),
		})
	}
	return rules
}

// littlesLawRules adds to g the Little's law alerts of t, for the pool
// and the bulkhead, or the notes that say why there is none; common and
// alertLabels add the annotations and labels every alert has.
func (g *Group) littlesLawRules(t Target, o Options, metric string, by []string, timeout string, common, alertLabels func(map[string]string) map[string]string) {
	rate := rateExpr(t, metric, by, o.DemandRange)
	forLit := ""
	if o.For > 0 {
		forLit = dur(o.For)
	}
	// A bulkhead caps the calls in flight, a hang's too: min(rate x
	// timeout, bulkhead) exceeds the pool only when the bulkhead does, and
	// then exactly when rate x timeout does.
	switch {
	case t.Pool == 0:
		g.Notes = append(g.Notes, fmt.Sprintf("No %s alert: no pool size (%s).", HangAlert, usage.Pool))
	case t.Bulkhead > 0 && t.Bulkhead <= t.Pool:
		g.Notes = append(g.Notes, fmt.Sprintf("No %s alert: the bulkhead of %d caps the calls a hang holds within the pool of %d (%s watches the bulkhead).", HangAlert, t.Bulkhead, t.Pool, DemandAlert))
	default:
		advice := "Cap the calls with a bulkhead or shorten the timeout."
		if t.Bulkhead > 0 {
			advice = fmt.Sprintf("The bulkhead of %d is above the pool and does not keep a hang within it: lower it to the pool or below, or shorten the timeout.", t.Bulkhead)
		}
		g.Rules = append(g.Rules, Rule{
			Alert:  HangAlert,
			Expr:   fmt.Sprintf("%s * %s > %d", rate, num(t.Timeout.Seconds()), t.Pool),
			For:    forLit,
			Labels: alertLabels(map[string]string{"pool": strconv.Itoa(t.Pool)}),
			Annotations: common(map[string]string{
				"summary": literal(fmt.Sprintf("A hang of %s would hold more calls than the pool of %d", t.Group, t.Pool)),
				"description": literal(fmt.Sprintf("Little's law: during a hang every call of group %s waits the whole timeout, %s, so the calls in flight are the call rate (over %s) x %s, more than the pool of %d: a hang would exhaust it and fail everything the pool serves. %s",
					t.Group, timeout, dur(o.DemandRange), timeout, t.Pool, advice)),
			}),
		})
	}
	if t.Bulkhead > 0 {
		g.Rules = append(g.Rules, Rule{
			Alert:  DemandAlert,
			Expr:   fmt.Sprintf("%s > (%s * %d)", inFlightExpr(t, metric, by, o.DemandRange), num(o.NearBulkhead), t.Bulkhead),
			For:    forLit,
			Labels: alertLabels(map[string]string{"bulkhead": strconv.Itoa(t.Bulkhead)}),
			Annotations: common(map[string]string{
				"summary": literal(fmt.Sprintf("Normal demand of %s is above %s of its bulkhead of %d", t.Group, human.Percent(o.NearBulkhead), t.Bulkhead)),
				"description": literal(fmt.Sprintf("Little's law: the calls of group %s in flight on average, call rate x mean latency (rate(_sum) over %s), exceed %s of the bulkhead of %d: the bulkhead will turn away calls on a normal day. Re-size it (tunetimeout prometheus).",
					t.Group, dur(o.DemandRange), human.Percent(o.NearBulkhead), t.Bulkhead)),
			}),
		})
	} else {
		g.Notes = append(g.Notes, fmt.Sprintf("No %s alert: no bulkhead (a rate and a mean latency size it).", DemandAlert))
	}
}

// metastableRules are the alerts of a metastable state (docs/metastability.md):
// the calls (attempts) per request of the callers, and the calls answered
// within the timeout (goodput) against the requests (offered load).
func metastableRules(t Target, o Options, metric string, by []string, exactness string, common, alertLabels func(map[string]string) map[string]string) []Rule {
	w := o.DemandRange
	r := "[" + dur(w) + "]"
	requests := sumBy(by, "rate("+series(o.RequestsMetric, t.Matchers)+r+")")
	attempts := rateExpr(t, metric, by, w)
	var goodput string
	if t.Kind == "native" {
		h := sumBy(by, "rate("+series(metric, t.Matchers)+r+")")
		goodput = fmt.Sprintf("histogram_count(%s) * histogram_fraction(0, %s, %s)", h, num(t.Timeout.Seconds()/t.UnitSeconds), h)
	} else {
		goodput = sumBy(by, "rate("+series(metric+"_bucket", with(t.Matchers, leMatcher(t.LE)))+r+")")
	}
	forLit := dur(MetastableFor)
	runbook := literal(MetastableRunbook())
	goodDesc := fmt.Sprintf("The calls of group %s answered within the timeout, %s, per second (over %s) have been below %s of the callers' requests per second (%s) for %s: the dependency does not serve the offered load, and its retries keep it so.",
		t.Group, dur(t.Timeout), dur(w), human.Percent(MetastableGoodput), o.RequestsMetric, forLit)
	if exactness != "" {
		goodDesc += " " + exactness
	}
	return []Rule{
		{
			Alert:  RetryStormAlert,
			Expr:   fmt.Sprintf("(%s / %s) > %s", attempts, requests, num(MetastableAttempts)),
			For:    forLit,
			Labels: alertLabels(map[string]string{"severity": "page"}),
			Annotations: common(map[string]string{
				"summary": literal(fmt.Sprintf("The callers of %s send more than %s attempts per request", t.Group, num(MetastableAttempts))),
				"description": literal(fmt.Sprintf("The calls of group %s (%s) per request of the callers (%s), over %s, have been above %s for %s: retries are load on a dependency that is already slow, the loop of a metastable failure.",
					t.Group, metric, o.RequestsMetric, dur(w), num(MetastableAttempts), forLit)),
				"runbook": runbook,
			}),
		},
		{
			Alert:  GoodputAlert,
			Expr:   fmt.Sprintf("%s < (%s * %s)", goodput, num(MetastableGoodput), requests),
			For:    forLit,
			Labels: alertLabels(map[string]string{"severity": "page"}),
			Annotations: common(map[string]string{
				"summary":     literal(fmt.Sprintf("Goodput of %s is behind the offered load", t.Group)),
				"description": literal(goodDesc),
				"runbook":     runbook,
			}),
		},
	}
}

// exactnessNote says when the recorded ratio is not the share above the
// timeout itself.
func exactnessNote(t Target) string {
	switch {
	case t.Kind == "native":
		return "Native histogram: histogram_fraction interpolates within the bucket that holds the timeout (linearly in Prometheus 2, exponentially in Prometheus 3), so the ratio is an estimate, not an exact count."
	case t.Exact:
		return ""
	case t.LowerBound:
		return fmt.Sprintf("The timeout %s is no bucket bound: the ratio counts the calls above the next bound, le=%q, so it is a LOWER bound of the calls the timeout cuts off. Add le=%q to the histogram to make it exact.",
			dur(t.Timeout), t.LE, t.AddLE)
	}
	return fmt.Sprintf("The timeout %s lies beyond the largest finite bucket bound: the ratio counts the calls above le=%q, so it is an UPPER bound of the calls the timeout cuts off. Add le=%q to the histogram to make it exact.",
		dur(t.Timeout), t.LE, t.AddLE)
}

// budgetLasts is how long a 30-day budget lasts at burn rate b.
func budgetLasts(b float64) string {
	hours := 30 * 24 / b
	if hours >= 48 {
		return strconv.FormatFloat(hours/24, 'g', 3, 64) + " days"
	}
	return strconv.FormatFloat(hours, 'g', 3, 64) + " hours"
}

// literal escapes s for the text of an alert's labels and annotations,
// which Prometheus expands as Go templates: a "{{" from the data becomes
// the template that prints it.
func literal(s string) string {
	return strings.ReplaceAll(s, "{{", `{{ "{{" }}`)
}

// num writes a number with at most 12 significant digits: 1 - 0.999 is
// 0.001, not 0.0010000000000000009.
func num(v float64) string { return strconv.FormatFloat(round12(v), 'g', -1, 64) }

func round12(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return r
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// dur writes a duration the way PromQL reads it: 5m, 1h30m, 250ms.
func dur(d time.Duration) string { return model.Duration(d).String() }
