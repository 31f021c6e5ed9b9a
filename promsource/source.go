// Package promsource reads latency histograms live from Prometheus (or
// Thanos, Mimir, Cortex, VictoriaMetrics: anything speaking its HTTP API):
// classic histograms (NAME_bucket{le}), VictoriaMetrics histograms
// (NAME_bucket{vmrange}), native histograms, summaries (shown, never
// aggregated), call rates for Little's law, and per-step windows. It
// sits between histogram and recommend in the pipeline: its output is one
// bucketed histogram.Bucketed per group, which converts to a histogram.Latency
// (docs/method.md#4-bucketed-data).
//
// Answers are decoded as a stream, one series at a time, keeping only the
// labels the session reads, and an answer larger than
// Connection.MaxResponseBytes fails its query (api.go, response.go).
//
// Bucketed data only says that a quantile lies within a bucket (lo, hi]:
// histogram.Bucketed.Latency records every call at its bucket's upper bound, so the
// timeout built on it is conservative, and histogram.Bucketed.Locate gives
// histogram_quantile's linear estimate beside it.
package promsource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Options say what to read and where from.
type Options struct {
	Connection
	Metric   string        // histogram name without _bucket, e.g. http_request_duration_seconds
	Selector string        // label matchers, e.g. {job="api"}; "" for all series
	By       []string      // labels to group by; none: one group "all"
	Window   time.Duration // how far back from At; 0 = DefaultWindow
	At       time.Time     // end of the window; zero = now
	Step     time.Duration // > 0: also evaluate each step-long window within Window
	// Unit is what one unit of the metric lasts; 0 = from the name's suffix.
	Unit time.Duration
	// PeakRange is the range of the rate whose maximum is the peak rate;
	// 0 = DefaultPeakRange.
	PeakRange time.Duration
	// Quantile is the quantile the recommendation uses (0.999 for p99.9);
	// 0 = none. With it Fetch tells the server apart (as DetectServer), and
	// from VictoriaMetrics, whose histogram_quantile differs from
	// Prometheus's, it also reads the server's own estimate of it
	// (Group.ServerEstimate, Step.ServerEstimate).
	Quantile float64
	// DetectServer tells the server apart (Result.Server) without Quantile.
	// Off, a Fetch sends nothing but its queries.
	DetectServer bool
}

// Defaults of Options.
const (
	DefaultWindow    = 7 * 24 * time.Hour
	DefaultPeakRange = time.Minute
	// maxSteps bounds --step: Prometheus refuses range queries of more than
	// 11,000 points.
	maxSteps = 11000
)

// Result is what was read.
type Result struct {
	URL      string // without credentials
	Metric   string
	Kind     string        // Classic, VMRange, Native or Summary
	Unit     time.Duration // what one unit of the metric lasts
	UnitFrom string        // "the name's suffix _seconds", or the option (usage.Unit) as the CLI writes it
	At       time.Time
	Window   time.Duration
	Step     time.Duration
	Queries  []string // every query sent, in order
	// DataFrom and DataTo are the first and last sample of the calls'
	// series in the window, to the second (zero when unknown): where they
	// leave much of the window without data, the rates are measured over
	// the part with data, and a note says how much that is (span).
	DataFrom, DataTo time.Time
	// Notes are facts for people: repairs, renamed metrics, missing rates.
	Notes []string
	// Warnings are Prometheus's own warnings and infos, deduplicated.
	Warnings []string
	Groups   []Group         // sorted by name; Classic, VMRange and Native
	Summary  []SummarySeries // Summary only
	// Server is which server answered (ServerPrometheus,
	// ServerVictoriaMetrics, ...; ServerUnknown), "" when not asked
	// (Options.Quantile and Options.DetectServer unset); ServerVersion is
	// the version it gave, one printable line, "" when none (see
	// DetectServer).
	Server        string
	ServerVersion string
	// ServerAsked: the server was asked for its own histogram_quantile
	// (Group.ServerEstimate, Step.ServerEstimate): VictoriaMetrics, whose
	// answer differs from Prometheus's, with Options.Quantile set.
	ServerAsked bool
}

// Summary is the kind of a metric that only has precomputed quantiles.
const Summary = "summary"

// Group is one group's histogram and rates.
type Group struct {
	Name string // GroupName of Labels
	// Labels are the group's values of the --by labels that its series
	// have, in --by order: its identity (a missing label is absent).
	Labels  []Label
	Overall *histogram.Bucketed // the whole window; nil with Err
	Steps   []Step              // per step when Options.Step > 0, oldest first
	// Calls is the increase of NAME_count over the window (the histogram's
	// own count for native histograms).
	Calls    float64
	Rate     float64 // mean calls per second over the window
	PeakRate float64 // largest PeakRange rate over the window; 0 = unknown
	Mean     float64 // mean latency in seconds from _sum / _count; NaN = unknown
	Err      error   // why the group has no histogram (an empty window)
	// Excluded counts the calls left out by reason (OTLP metrics whose
	// status the status rule leaves out); nil for Prometheus.
	Excluded map[string]int64
	// ServerEstimate is the server's own histogram_quantile of
	// Options.Quantile over the window, in seconds; NaN when not asked
	// (only VictoriaMetrics is, see Options.Quantile) or not answered.
	ServerEstimate float64
}

// Step is one step-long window ending at End.
type Step struct {
	End  time.Time
	Hist *histogram.Bucketed // nil when no call fell into the window
	// ServerEstimate is Group.ServerEstimate for this step.
	ServerEstimate float64
}

// SummarySeries is one quantile series of a summary.
type SummarySeries struct {
	Labels     string  // the series' labels without __name__ and quantile
	Quantile   float64 // the quantile label
	Seconds    float64 // the value at the end of the window
	MaxSeconds float64 // the largest value within the window
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// session is one Fetch: the client, the time and what was said.
type session struct {
	c       *client
	o       Options
	sel     string // inner matchers, without braces
	res     *Result
	seenMsg map[string]bool
	// labelSeen says which --by labels a series read so far had.
	labelSeen map[string]bool
	// groupLabels are the label values of each group, by its name.
	groupLabels map[string][]Label
}

// HistogramName is the histogram a metric name names: the name itself, or
// the histogram one of whose series it is (NAME_bucket, NAME_count,
// NAME_sum).
func HistogramName(metric string) string {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(metric, suffix); ok && base != "" {
			return base
		}
	}
	return metric
}

// Fetch reads the histogram of o.Metric from Prometheus.
func Fetch(ctx context.Context, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	c, err := connect(o.Connection)
	if err != nil {
		return nil, err
	}
	res := &Result{URL: c.display, At: o.At, Window: o.Window, Step: o.Step}
	s := &session{c: c, o: o, res: res, seenMsg: map[string]bool{}, labelSeen: map[string]bool{}, groupLabels: map[string][]Label{}}
	s.sel = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(o.Selector), "{"), "}"))

	name := HistogramName(o.Metric)
	if name != o.Metric {
		res.Notes = append(res.Notes, fmt.Sprintf("%s %s names one series of the histogram %s; reading %s.", usage.Metric, o.Metric, name, name))
	}
	res.Metric = name

	// What kind of metric is it? Classic buckets first: a server scraping
	// both (Prometheus 2.45+ with scrape_classic_histograms) keeps both,
	// and their le bounds are what people configured.
	n, err := s.count(ctx, s.series(name+"_bucket"))
	if err != nil {
		return nil, err
	}
	if n > 0 {
		res.Kind = Classic
	} else {
		// increase() keeps native histograms histograms (last_over_time
		// does not before Prometheus 2.50), and float series show their
		// labels, among them a summary's quantile.
		err := s.query(ctx, fmt.Sprintf("increase(%s[%s])", s.series(name), dur(o.Window)), onlyLabels("quantile"), func(smp *model.Sample) error {
			switch {
			case smp.Histogram != nil:
				res.Kind = Native
			case res.Kind == "" && smp.Metric["quantile"] != "":
				res.Kind = Summary
			case res.Kind == "":
				res.Kind = "other"
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	switch res.Kind {
	case "":
		return nil, s.noSeries(ctx, name)
	case "other":
		return nil, fmt.Errorf("%s is not a histogram: it has neither %s_bucket series nor native histogram samples in the %s window ending %s (a counter or gauge holds no latency distribution)",
			name, name, dur(o.Window), o.At.UTC().Format(time.RFC3339))
	}
	if res.Unit, res.UnitFrom, err = unitOf(name, o.Unit); err != nil {
		return nil, err
	}
	if o.DetectServer || o.Quantile > 0 {
		// After the first query: the server answers queries, so this costs
		// one or two GETs (never an error, see DetectServer).
		info := c.detect(ctx)
		res.Server, res.ServerVersion = info.Name, info.Version
	}
	switch res.Kind {
	case Classic:
		// A vmrange histogram too: classic tells them apart.
		return res, s.classic(ctx)
	case Native:
		return res, s.native(ctx)
	}
	return res, s.summary(ctx)
}

// Check reports every problem with o that shows before anything is sent
// and without reading a secret (Fetch reads them as it connects): --url,
// the auth flags that exclude each other, the -H headers, then the metric,
// selector, labels and durations. It fills in the defaults of Window,
// PeakRange and At. Fetch calls it first; a command line calls it to
// refuse bad flags before it connects. Errors name flags, never secrets.
func (o *Options) Check() error {
	return errors.Join(o.Connection.check(), o.check())
}

// check is Check for the fields of o outside its Connection.
func (o *Options) check() error {
	var errs []error
	if o.Metric == "" {
		errs = append(errs, usage.About(usage.Metric, fmt.Errorf("%s is required: the histogram's name, e.g. http_request_duration_seconds", usage.Metric)))
	} else if err := CheckMetric(usage.Metric.String(), o.Metric); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseSelector(o.Selector); err != nil {
		errs = append(errs, err)
	}
	for _, l := range o.By {
		if err := CheckBy(l); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Window < 0 {
		errs = append(errs, usage.About(usage.Window, fmt.Errorf("%s %v is negative", usage.Window, o.Window)))
	}
	if o.PeakRange <= 0 {
		o.PeakRange = DefaultPeakRange
	}
	switch {
	case o.Step < 0:
		errs = append(errs, usage.About(usage.Step, fmt.Errorf("%s %v is negative", usage.Step, o.Step)))
	case o.Step > 0 && o.Step > o.Window:
		errs = append(errs, usage.About(usage.Step, fmt.Errorf("%s %s is longer than %s %s", usage.Step, dur(o.Step), usage.Window, dur(o.Window))))
	case o.Step > 0 && o.Window/o.Step > maxSteps:
		errs = append(errs, usage.About(usage.Step, fmt.Errorf("%s %s makes %d steps in %s %s; at most %d", usage.Step, dur(o.Step), o.Window/o.Step, usage.Window, dur(o.Window), maxSteps)))
	}
	if math.IsNaN(o.Quantile) || o.Quantile < 0 || o.Quantile > 1 {
		errs = append(errs, fmt.Errorf("quantile %v is not between 0 and 1", o.Quantile))
	}
	if o.At.IsZero() {
		o.At = time.Now()
	}
	return errors.Join(errs...)
}

// UnitOf tells what one unit of the metric named lasts, from its name's
// suffix (_seconds, _milliseconds...); ok false without one.
func UnitOf(name string) (unit time.Duration, ok bool) {
	u, _, err := unitOf(name, 0)
	return u, err == nil
}

// unitOf tells what one unit of the metric lasts.
func unitOf(name string, flag time.Duration) (time.Duration, string, error) {
	if flag > 0 {
		return flag, usage.Unit.String(), nil
	}
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"_seconds", time.Second}, {"_milliseconds", time.Millisecond}, {"_microseconds", time.Microsecond}, {"_nanoseconds", time.Nanosecond}} {
		if strings.HasSuffix(name, u.suffix) {
			return u.d, "the name's suffix " + u.suffix, nil
		}
	}
	return 0, "", fmt.Errorf("cannot tell the unit of %s from its name (no _seconds or _milliseconds suffix): give %s s, ms or us", name, usage.Unit)
}

// series writes a series selector with the user's matchers.
func (s *session) series(name string) string {
	if s.sel == "" {
		return name
	}
	return name + "{" + s.sel + "}"
}

// seriesWith writes a series selector with the user's matchers and one more.
func (s *session) seriesWith(name, matcher string) string {
	if sel := strings.TrimSuffix(strings.TrimSpace(s.sel), ","); sel != "" {
		return name + "{" + sel + ", " + matcher + "}"
	}
	return name + "{" + matcher + "}"
}

// sumBy writes "sum by (labels) (expr)" or "sum(expr)".
func sumBy(labels []string, expr string) string {
	if len(labels) == 0 {
		return "sum(" + expr + ")"
	}
	return "sum by (" + strings.Join(labels, ", ") + ") (" + expr + ")"
}

// dur writes a duration the way PromQL reads it: 7d, 1h30m, 90s.
func dur(d time.Duration) string { return model.Duration(d).String() }

func (s *session) note(warns v1.Warnings, infos v1.Infos) {
	for _, w := range append(slices.Clone([]string(warns)), infos...) {
		w = s.c.secrets.clean(oneLine(w))
		if !s.seenMsg[w] {
			s.seenMsg[w] = true
			s.res.Warnings = append(s.res.Warnings, w)
		}
	}
}

// query runs an instant query at the window's end and hands each sample
// to each as it is decoded, with only the labels in keep: nothing holds
// the whole answer. An error each returns is returned as it is.
func (s *session) query(ctx context.Context, q string, keep labels, each func(*model.Sample) error) error {
	s.res.Queries = append(s.res.Queries, q)
	warns, infos, err := s.c.query(ctx, q, s.o.At, keep, each)
	s.note(warns, infos)
	return s.failed(err, q, "an instant vector")
}

// queryRange runs a range query over the window's steps and hands each
// series to each, in chunks of its points (see visitor.series).
func (s *session) queryRange(ctx context.Context, q string, keep labels, each func(*model.SampleStream) error) error {
	s.res.Queries = append(s.res.Queries, q)
	r := v1.Range{Start: s.o.At.Add(-s.o.Window + s.o.Step), End: s.o.At, Step: s.o.Step}
	warns, infos, err := s.c.queryRange(ctx, q, r, keep, each)
	s.note(warns, infos)
	return s.failed(err, q, "a range vector")
}

// failed explains a query's error, except the session's own.
func (s *session) failed(err error, q, want string) error {
	var own *consumerError
	var wt *wrongType
	switch {
	case err == nil:
		return nil
	case errors.As(err, &own):
		// The session's own errors quote labels the server sent, which
		// may echo a credential.
		return &cleanedError{msg: s.c.secrets.clean(own.err.Error()), err: own.err}
	case errors.As(err, &wt):
		return fmt.Errorf("Prometheus at %s answered %s with a %s, not %s", s.c.display, q, wt.got, want)
	}
	return s.c.explain(err, q)
}

// byLabels keeps the --by labels and extra ones.
func (s *session) byLabels(extra ...string) labels {
	return onlyLabels(append(slices.Clone(s.o.By), extra...)...)
}

// count returns how many series match within the window.
func (s *session) count(ctx context.Context, series string) (float64, error) {
	n, first := 0.0, true
	err := s.query(ctx, fmt.Sprintf("count(last_over_time(%s[%s]))", series, dur(s.o.Window)), onlyLabels(), func(smp *model.Sample) error {
		if first {
			n, first = float64(smp.Value), false
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// groupName names a series' group by the --by labels (GroupName), and
// keeps the label values it stands for (Group.Labels): the name is the
// key of the session's maps, and two different label sets never have the
// same one. "all" without --by.
func (s *session) groupName(m model.Metric) string {
	if len(s.o.By) == 0 {
		return "all"
	}
	var labels []Label
	for _, l := range s.o.By {
		// A label whose value is "" is one the series does not have:
		// Prometheus stores no empty label.
		if v := string(m[model.LabelName(l)]); v != "" {
			s.labelSeen[l] = true
			labels = append(labels, Label{Name: l, Value: v})
		}
	}
	name := GroupName(s.o.By, labels)
	if _, ok := s.groupLabels[name]; !ok {
		s.groupLabels[name] = labels
	}
	return name
}

// Label is one label of a group: its name and its value, never "".
type Label struct{ Name, Value string }

// GroupName is the name of the group of the label values labels, grouped
// by the labels by: the values in by's order, joined by spaces, "-" for a
// label the group's series do not have, as analyze names groups. A value
// that would make two groups one name, one with a space or a quote, one
// that is "-" (not a missing label), or that starts with a quote, is
// quoted with Go's escapes: {route="x y",method="z"} is `"x y" z`,
// {route="x",method="y z"} `x "y z"`, {route="-"} `"-"` and a series
// without route `-`. labels holds only labels that have a value. A name
// longer than names.MaxBytes is cut visibly with its hash (names.Cap), so
// that a megabyte-long label value is not repeated by every report, and
// two values that differ past the cut still name two groups.
func GroupName(by []string, labels []Label) string {
	if len(by) == 0 {
		return "all"
	}
	parts := make([]string, len(by))
	for i, l := range by {
		parts[i] = "-"
		for _, lv := range labels {
			if lv.Name == l {
				parts[i] = nameValue(lv.Value)
				break
			}
		}
	}
	return names.Cap(strings.Join(parts, " "))
}

// nameValue is a label value as GroupName writes it.
func nameValue(v string) string { return names.Value(v) }

// perGroup runs an instant query and adds up its values by group.
func (s *session) perGroup(ctx context.Context, q string) (map[string]float64, error) {
	out := map[string]float64{}
	err := s.query(ctx, q, s.byLabels(), func(smp *model.Sample) error {
		out[s.groupName(smp.Metric)] += float64(smp.Value)
		return nil
	})
	return out, err
}

// bucketLayout is how the bucket series of one kind of histogram read: a
// classic one's le bounds or VictoriaMetrics's vmrange ranges. Everything
// else (calls from _count, the mean from _sum, rates, steps) is shared.
type bucketLayout struct {
	kind  string // Classic or VMRange
	label string // the bucket label
	// check reads a label value as it is decoded; an error fails the Fetch.
	check func(model.LabelValue) error
	build func([]bucketSample, time.Duration) (*histogram.Bucketed, error)
}

// bucketSample is one bucket series' increase: its bucket label's value and
// the value.
type bucketSample struct {
	bound string
	value float64
}

var (
	leBuckets = bucketLayout{kind: Classic, label: "le",
		check: func(v model.LabelValue) error {
			if _, err := parseFloat(string(v)); err != nil {
				return fmt.Errorf("a bucket series has le=%q, which is not a number", v)
			}
			return nil
		},
		build: func(bs []bucketSample, unit time.Duration) (*histogram.Bucketed, error) {
			les := make([]LE, 0, len(bs))
			for _, b := range bs {
				le, _ := parseFloat(b.bound) // checked as decoded
				les = append(les, LE{Upper: le, Cumulative: b.value})
			}
			return FromClassic(les, unit)
		},
	}
	vmrangeBuckets = bucketLayout{kind: VMRange, label: "vmrange",
		check: func(model.LabelValue) error { return nil }, // FromVMRange tells every bad one
		build: func(bs []bucketSample, unit time.Duration) (*histogram.Bucketed, error) {
			rs := make([]VMBucket, 0, len(bs))
			for _, b := range bs {
				rs = append(rs, VMBucket{Range: b.bound, Count: b.value})
			}
			return FromVMRange(rs, unit)
		},
	}
)

// bucketIncrease writes sum by (label, by...) (increase(NAME_bucket[r])).
func (s *session) bucketIncrease(lay bucketLayout, r time.Duration) string {
	return sumBy(append([]string{lay.label}, s.o.By...), fmt.Sprintf("increase(%s[%s])", s.series(s.res.Metric+"_bucket"), dur(r)))
}

// windowBuckets reads the buckets' increase over the window by group, and
// the labels of a series without the layout's label (nil: none was).
func (s *session) windowBuckets(ctx context.Context, lay bucketLayout) (map[string][]bucketSample, model.Metric, error) {
	sets := map[string][]bucketSample{}
	var unlabelled model.Metric
	err := s.query(ctx, s.bucketIncrease(lay, s.o.Window), s.byLabels(lay.label), func(smp *model.Sample) error {
		v, ok := smp.Metric[model.LabelName(lay.label)]
		if !ok {
			if unlabelled == nil {
				unlabelled = smp.Metric
				if unlabelled == nil {
					unlabelled = model.Metric{}
				}
			}
			return nil
		}
		if err := lay.check(v); err != nil {
			return err
		}
		g := s.groupName(smp.Metric)
		sets[g] = append(sets[g], bucketSample{bound: string(v), value: float64(smp.Value)})
		return nil
	})
	return sets, unlabelled, err
}

// bucketsWithoutLE decides what bucket series without an le label are.
// VictoriaMetrics's vmrange buckets are read in their place when no series
// has an le label; beside le buckets they are told of and left out. Other
// series without le fail the Fetch, as they always did.
func (s *session) bucketsWithoutLE(ctx context.Context, les map[string][]bucketSample, unlabelled model.Metric) (bucketLayout, map[string][]bucketSample, error) {
	bucket := s.res.Metric + "_bucket"
	noLE := fmt.Errorf("a bucket series has no le label (nor a vmrange label, as VictoriaMetrics's histograms have): %s", unlabelled)
	if len(les) > 0 {
		n, err := s.count(ctx, s.seriesWith(bucket, `vmrange!=""`))
		if err != nil {
			return bucketLayout{}, nil, err
		}
		if n == 0 {
			return bucketLayout{}, nil, noLE
		}
		s.res.Notes = append(s.res.Notes, fmt.Sprintf(
			"%s has both le buckets and %s series of VictoriaMetrics's vmrange buckets; the le buckets are read, the vmrange ones left out (pick one with %s).",
			bucket, human.Number(n), usage.Selector))
		return leBuckets, les, nil
	}
	ranges, other, err := s.windowBuckets(ctx, vmrangeBuckets)
	if err != nil {
		return bucketLayout{}, nil, err
	}
	if len(ranges) == 0 {
		return bucketLayout{}, nil, noLE
	}
	if other != nil {
		s.res.Notes = append(s.res.Notes, fmt.Sprintf(
			"Some %s series have neither an le nor a vmrange label (such as %s); they are left out.", bucket, other))
	}
	return vmrangeBuckets, ranges, nil
}

// classic reads a bucketed histogram of NAME_bucket series: classic le
// buckets, or VictoriaMetrics's vmrange buckets when the series have no le.
func (s *session) classic(ctx context.Context) error {
	o, name := s.o, s.res.Metric
	lay := leBuckets
	sets, unlabelled, err := s.windowBuckets(ctx, lay)
	if err != nil {
		return err
	}
	if unlabelled != nil {
		if lay, sets, err = s.bucketsWithoutLE(ctx, sets, unlabelled); err != nil {
			return err
		}
	}
	s.res.Kind = lay.kind
	if len(sets) > 0 {
		if err := s.missingLabels(ctx, s.series(name+"_bucket")); err != nil {
			return err
		}
	}
	groups := map[string]*Group{}
	for g, set := range sets {
		h, err := lay.build(set, s.res.Unit)
		groups[g] = &Group{Name: g, Labels: s.groupLabels[g], Overall: h, Mean: math.NaN(), ServerEstimate: math.NaN(), Err: err}
	}
	if err := s.classicCalls(ctx, groups); err != nil {
		return err
	}
	s.span(ctx, s.series(name+"_count"))
	if err := s.rates(ctx, groups, fmt.Sprintf("rate(%s[%s])", s.series(name+"_count"), dur(o.PeakRange))); err != nil {
		return err
	}
	if o.Step > 0 {
		if err := s.classicSteps(ctx, groups, lay); err != nil {
			return err
		}
	}
	s.serverEstimates(ctx, groups, lay)
	return s.finish(groups)
}

// classicCalls reads the calls of each group over the window from
// _count (the buckets' total where it has none, or not a count) and
// their mean from _sum.
func (s *session) classicCalls(ctx context.Context, groups map[string]*Group) error {
	o, name := s.o, s.res.Metric
	w := dur(o.Window)
	calls, err := s.perGroup(ctx, sumBy(o.By, fmt.Sprintf("increase(%s[%s])", s.series(name+"_count"), w)))
	if err != nil {
		return err
	}
	total, err := s.perGroup(ctx, sumBy(o.By, fmt.Sprintf("increase(%s[%s])", s.series(name+"_sum"), w)))
	if err != nil {
		return err
	}
	badCount := 0
	for name, g := range groups {
		c, ok := calls[name]
		if ok && !(c >= 0 && !math.IsInf(c, 0)) {
			badCount++ // NaN, negative, infinite: no count of calls
			ok = false
		}
		if !ok && g.Overall != nil {
			c = g.Overall.Count // no _count series: the buckets say the same
		}
		g.Calls = c
		if sum, ok := total[name]; ok && c > 0 {
			g.Mean = sum / c * s.res.Unit.Seconds()
		}
		if math.IsNaN(g.Mean) || math.IsInf(g.Mean, 0) {
			g.Mean = math.NaN()
		}
		// Only a +Inf bucket: the mean tells which bounds to add.
		if oi := (*OnlyInfError)(nil); errors.As(g.Err, &oi) && oi.Advice == "" {
			oi.Advice = BoundsAdvice(g.Mean, s.res.Unit)
		}
	}
	if badCount > 0 {
		s.res.Notes = append(s.res.Notes, fmt.Sprintf("The increase of %s_count is not a count of calls (NaN, negative or infinite) for %s: the buckets' total stands in.", name, human.Plural(int64(badCount), "group")))
	}
	return nil
}

// classicSteps reads the buckets of each step (--step) of the window into
// the groups' Steps, in time order.
func (s *session) classicSteps(ctx context.Context, groups map[string]*Group, lay bucketLayout) error {
	o := s.o
	steps := map[string]map[model.Time][]bucketSample{}
	err := s.queryRange(ctx, s.bucketIncrease(lay, o.Step), s.byLabels(lay.label), func(ss *model.SampleStream) error {
		v, ok := ss.Metric[model.LabelName(lay.label)]
		if !ok {
			return nil // told of above
		}
		if err := lay.check(v); err != nil {
			return err
		}
		g := s.groupName(ss.Metric)
		if steps[g] == nil {
			steps[g] = map[model.Time][]bucketSample{}
		}
		for _, p := range ss.Values {
			steps[g][p.Timestamp] = append(steps[g][p.Timestamp], bucketSample{bound: string(v), value: float64(p.Value)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, byTime := range steps {
		g := groups[name]
		if g == nil {
			continue
		}
		times := mapsKeys(byTime)
		slices.Sort(times)
		for _, t := range times {
			h, err := lay.build(byTime[t], s.res.Unit)
			if err != nil {
				h = nil
			}
			g.Steps = append(g.Steps, Step{End: t.Time(), Hist: h, ServerEstimate: math.NaN()})
		}
	}
	return nil
}

// serverEstimates asks VictoriaMetrics for its own histogram_quantile of
// Options.Quantile per group and step, over the same buckets: it reads
// vmrange buckets (converting them to le, app/vmselect/promql/transform.go
// vmrangeBucketsToLE) and repairs inconsistent buckets otherwise than
// Prometheus does (fixBrokenBuckets: up to v1.101 it lowers a bucket above
// its upper neighbour, where Prometheus raises the one above; from v1.102
// it raises, too), so the two estimates can differ. A failed query leaves
// the estimates NaN and says so in a note: the run does not depend on it.
func (s *session) serverEstimates(ctx context.Context, groups map[string]*Group, lay bucketLayout) {
	o := s.o
	if !(o.Quantile > 0) || s.res.Server != ServerVictoriaMetrics {
		return
	}
	s.res.ServerAsked = true
	u := s.res.Unit.Seconds()
	phi := strconv.FormatFloat(o.Quantile, 'g', -1, 64)
	failed := func(err error) {
		s.res.Notes = append(s.res.Notes, fmt.Sprintf("VictoriaMetrics's own histogram_quantile could not be read: %v", err))
	}
	err := s.query(ctx, fmt.Sprintf("histogram_quantile(%s, %s)", phi, s.bucketIncrease(lay, o.Window)), s.byLabels(), func(smp *model.Sample) error {
		if g := groups[s.groupName(smp.Metric)]; g != nil {
			g.ServerEstimate = float64(smp.Value) * u
		}
		return nil
	})
	if err != nil {
		failed(err)
		return
	}
	if o.Step <= 0 {
		return
	}
	byTime := map[string]map[model.Time]float64{}
	err = s.queryRange(ctx, fmt.Sprintf("histogram_quantile(%s, %s)", phi, s.bucketIncrease(lay, o.Step)), s.byLabels(), func(ss *model.SampleStream) error {
		g := s.groupName(ss.Metric)
		if byTime[g] == nil {
			byTime[g] = map[model.Time]float64{}
		}
		for _, p := range ss.Values {
			byTime[g][p.Timestamp] = float64(p.Value) * u
		}
		return nil
	})
	if err != nil {
		failed(err)
		return
	}
	for name, g := range groups {
		for i := range g.Steps {
			if v, ok := byTime[name][model.TimeFromUnixNano(g.Steps[i].End.UnixNano())]; ok {
				g.Steps[i].ServerEstimate = v
			}
		}
	}
}

func mapsKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func parseFloat(s string) (float64, error) {
	var f model.SampleValue
	if err := f.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		return 0, err
	}
	return float64(f), nil
}

func (s *session) native(ctx context.Context) error {
	o, name := s.o, s.res.Metric
	groups := map[string]*Group{}
	err := s.query(ctx, sumBy(o.By, fmt.Sprintf("increase(%s[%s])", s.series(name), dur(o.Window))), s.byLabels(), func(smp *model.Sample) error {
		if smp.Histogram == nil {
			return nil
		}
		g := s.groupName(smp.Metric)
		h, err := FromNative(smp.Histogram, s.res.Unit)
		grp := &Group{Name: g, Labels: s.groupLabels[g], Overall: h, Mean: math.NaN(), ServerEstimate: math.NaN(), Err: err, Calls: float64(smp.Histogram.Count)}
		if c := grp.Calls; !(c >= 0 && !math.IsInf(c, 0)) && h != nil {
			grp.Calls = h.Count // a NaN count: the buckets' calls stand in
		}
		if c, m := float64(smp.Histogram.Count), float64(smp.Histogram.Sum)/float64(smp.Histogram.Count); c > 0 && !math.IsNaN(m) && !math.IsInf(m, 0) {
			grp.Mean = m * s.res.Unit.Seconds()
		}
		groups[g] = grp
		return nil
	})
	if err != nil {
		return err
	}
	if len(groups) > 0 {
		if err := s.missingLabels(ctx, s.series(name)); err != nil {
			return err
		}
	}
	s.span(ctx, s.series(name))
	if err := s.rates(ctx, groups, fmt.Sprintf("histogram_count(rate(%s[%s]))", s.series(name), dur(o.PeakRange))); err != nil {
		return err
	}
	if o.Step > 0 {
		err := s.queryRange(ctx, sumBy(o.By, fmt.Sprintf("increase(%s[%s])", s.series(name), dur(o.Step))), s.byLabels(), func(ss *model.SampleStream) error {
			g := groups[s.groupName(ss.Metric)]
			if g == nil {
				return nil
			}
			for _, p := range ss.Histograms {
				h, err := FromNative(p.Histogram, s.res.Unit)
				if err != nil {
					h = nil
				}
				g.Steps = append(g.Steps, Step{End: p.Timestamp.Time(), Hist: h, ServerEstimate: math.NaN()})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return s.finish(groups)
}

// rates fills the mean rate from the calls and the peak from the largest
// rate over the window (a subquery at the peak range's resolution).
//
// Where the data cover only part of the window (span), both are measured
// over that part: the mean over the seconds with data, not the window's,
// and the peak over the rate windows that lie wholly after the first
// sample (one that starts before it sees only some of its range's calls).
// Data shorter than one peak range have no such window: their mean stands
// in for the peak.
func (s *session) rates(ctx context.Context, groups map[string]*Group, rate string) error {
	o := s.o
	over, peakOver := o.Window, o.Window
	if !s.res.DataFrom.IsZero() {
		over = s.res.DataTo.Sub(s.res.DataFrom)
		peakOver = min(o.Window, o.At.Sub(s.res.DataFrom.Add(o.PeakRange))).Truncate(time.Second)
	}
	for _, g := range groups {
		g.Rate = g.Calls / o.Window.Seconds()
		if over > 0 {
			g.Rate = g.Calls / over.Seconds()
		}
	}
	if peakOver < o.PeakRange {
		for _, g := range groups {
			g.PeakRate = g.Rate
		}
		s.res.Notes = append(s.res.Notes, fmt.Sprintf(
			"The data span %s, less than one %s rate window after the first sample: the mean rate over them stands in for the peak.",
			human.ExactDuration(over, false), dur(o.PeakRange)))
		return nil
	}
	q := fmt.Sprintf("max_over_time(%s[%s:%s])", sumBy(o.By, rate), dur(peakOver), dur(o.PeakRange))
	peaks, err := s.perGroup(ctx, q)
	if err != nil {
		return err
	}
	missing := 0
	for name, g := range groups {
		if p, ok := peaks[name]; ok && !math.IsNaN(p) {
			g.PeakRate = p
		} else {
			missing++
		}
	}
	if missing > 0 {
		s.res.Notes = append(s.res.Notes, fmt.Sprintf(
			"No %s rate for %s: series scraped less often than every %s have fewer than two samples in it; the mean rate stands in for the peak.",
			dur(o.PeakRange), human.Plural(int64(missing), "group"), dur(o.PeakRange/2)))
	}
	return nil
}

// span finds when the data in the window begin and end (Result.DataFrom,
// DataTo) from the timestamps of the calls' series, to the second, and
// sets them when the data leave more than one peak range of the window
// without data at either end, with a note that says how much of the
// window has data. A server that cannot tell (an error, no answer) leaves
// them zero: the rates are then over the whole window, as before.
//
// timestamp() of a selector is its sample's time (PromQL's functions
// documentation), so in a subquery it gives, at each step, the time of the
// last sample at or before it. The last sample is the latest of those
// (at the window's end, or at the last step after the data end); the
// first is found in two passes: at the peak range's resolution over the
// window, then to the second within the step before.
func (s *session) span(ctx context.Context, series string) {
	o := s.o
	r := o.PeakRange
	one := func(q string, at time.Time) (time.Time, bool) {
		var v float64
		found := false
		s.res.Queries = append(s.res.Queries, q)
		_, _, err := s.c.query(ctx, q, at, onlyLabels(), func(smp *model.Sample) error {
			v, found = float64(smp.Value), !math.IsNaN(float64(smp.Value))
			return nil
		})
		if err != nil || !found {
			return time.Time{}, false
		}
		return time.Unix(0, int64(v*1e9)).Truncate(time.Second), true
	}
	last, ok := one(fmt.Sprintf("max(timestamp(%s)) or max(max_over_time(timestamp(%s)[%s:%s]))", series, series, dur(o.Window), dur(r)), o.At)
	if !ok {
		return
	}
	coarse, ok := one(fmt.Sprintf("min(min_over_time(timestamp(%s)[%s:%s]))", series, dur(o.Window), dur(r)), o.At)
	if !ok {
		return
	}
	// The first sample lies within r before coarse, at or before it.
	start := o.At.Add(-o.Window)
	if coarse.Sub(start) <= r && o.At.Sub(last) <= r {
		return // the window is covered
	}
	first, ok := one(fmt.Sprintf("min(min_over_time(timestamp(%s)[%s:1s]))", series, dur(r)), coarse)
	if !ok || first.After(coarse) {
		first = coarse
	}
	s.res.DataFrom, s.res.DataTo = first, last
	covered := last.Sub(first)
	s.res.Notes = append(s.res.Notes, fmt.Sprintf(
		"Only %s of the %s window has data (%s of it, from %s to %s): the rates are measured over that part.",
		human.ExactDuration(covered, false), human.ExactDuration(o.Window, true), human.Percent(covered.Seconds()/o.Window.Seconds()),
		first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339)))
}

// missingLabels fails when a --by label is on none of the series read:
// grouping by it would put every call in one group "-". The error names
// the labels the series have, as the server lists them (without it, the
// error says only that none has it). A wrong --by is a wrong command line.
func (s *session) missingLabels(ctx context.Context, series string) error {
	var missing []string
	for _, l := range s.o.By {
		if !s.labelSeen[l] {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s %s: no series of %s in the %s window ending %s has the label %s",
		usage.By, strings.Join(s.o.By, ","), series, dur(s.o.Window), s.o.At.UTC().Format(time.RFC3339), strings.Join(missing, ", "))
	var have []string
	_, _, err := s.c.labelNames(ctx, series, s.o.At.Add(-s.o.Window), s.o.At, func(v model.LabelValue) error {
		if n := string(v); n != model.MetricNameLabel && n != "le" && n != "vmrange" {
			have = append(have, n)
		}
		return nil
	})
	if err == nil && len(have) > 0 {
		slices.Sort(have)
		msg += "; their labels are " + strings.Join(have, ", ")
	}
	return &usage.Error{Err: errors.New(s.c.secrets.clean(msg))}
}

// finish sorts the groups and fails when none holds a call.
func (s *session) finish(groups map[string]*Group) error {
	for _, g := range groups {
		s.res.Groups = append(s.res.Groups, *g)
	}
	slices.SortFunc(s.res.Groups, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	for _, g := range s.res.Groups {
		if g.Err == nil {
			return nil
		}
	}
	if len(s.res.Groups) == 1 {
		return fmt.Errorf("%s: %w", s.res.Metric, s.res.Groups[0].Err)
	}
	return fmt.Errorf("%w: %s has series but no group had a call in the %s window ending %s", ErrEmptyWindow,
		s.res.Metric, dur(s.o.Window), s.o.At.UTC().Format(time.RFC3339))
}

func (s *session) summary(ctx context.Context) error {
	o, name := s.o, s.res.Metric
	// Every label but the name: the series are shown by their labels.
	keep := allLabels
	var last []*model.Sample
	err := s.query(ctx, fmt.Sprintf("last_over_time(%s[%s])", s.series(name), dur(o.Window)), keep, func(smp *model.Sample) error {
		last = append(last, smp)
		return nil
	})
	if err != nil {
		return err
	}
	key := func(m model.Metric) string {
		c := m.Clone()
		delete(c, model.MetricNameLabel)
		delete(c, "quantile")
		return model.LabelSet(c).String()
	}
	maxOf := map[string]float64{}
	err = s.query(ctx, fmt.Sprintf("max_over_time(%s[%s])", s.series(name), dur(o.Window)), keep, func(smp *model.Sample) error {
		maxOf[key(smp.Metric)+string(smp.Metric["quantile"])] = float64(smp.Value)
		return nil
	})
	if err != nil {
		return err
	}
	u := s.res.Unit.Seconds()
	for _, smp := range last {
		ql := string(smp.Metric["quantile"])
		if ql == "" {
			continue
		}
		q, err := parseFloat(ql)
		if err != nil {
			continue
		}
		k := key(smp.Metric)
		s.res.Summary = append(s.res.Summary, SummarySeries{
			Labels: k, Quantile: q, Seconds: float64(smp.Value) * u, MaxSeconds: maxOf[k+ql] * u,
		})
	}
	slices.SortFunc(s.res.Summary, func(a, b SummarySeries) int {
		if c := cmp.Compare(a.Labels, b.Labels); c != 0 {
			return c
		}
		return cmp.Compare(a.Quantile, b.Quantile)
	})
	return nil
}

// noSeries explains a metric without series and suggests similar names.
func (s *session) noSeries(ctx context.Context, name string) error {
	where := ""
	if s.sel != "" {
		where = " matching {" + s.sel + "}"
	}
	msg := fmt.Sprintf("no series of %s%s in the %s window ending %s", name, where, dur(s.o.Window), s.o.At.UTC().Format(time.RFC3339))
	// The names are ranked as they arrive: only the best are kept.
	sim := newSimilarity(name, 5)
	_, _, err := s.c.labelValues(ctx, model.MetricNameLabel, s.o.At.Add(-s.o.Window), s.o.At, func(v model.LabelValue) error {
		sim.add(string(v))
		return nil
	})
	if err != nil {
		return errors.New(s.c.secrets.clean(msg))
	}
	if similar := sim.best(); len(similar) > 0 {
		msg += "; similar metrics: " + strings.Join(similar, ", ")
	}
	return errors.New(s.c.secrets.clean(msg))
}

// Similar returns up to n of names that look like want, histograms first:
// the most shared words (split at "_"), then the closest in spelling.
func Similar(want string, names model.LabelValues, n int) []string {
	sim := newSimilarity(want, n)
	for _, lv := range names {
		sim.add(string(lv))
	}
	return sim.best()
}

// similarity ranks names by their likeness to want as they are added,
// keeping the n best.
type similarity struct {
	want  string
	words map[string]bool
	n     int
	top   []candidate // best first, distinct base names
}

type candidate struct {
	name   string
	shared int
	dist   int
}

func newSimilarity(want string, n int) *similarity {
	return &similarity{want: want, words: nameWords(want), n: n}
}

func nameWords(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Split(strings.ToLower(s), "_") {
		if len(w) >= 3 {
			m[w] = true
		}
	}
	return m
}

func (c candidate) compare(o candidate) int {
	if r := cmp.Compare(o.shared, c.shared); r != 0 {
		return r
	}
	if r := cmp.Compare(c.dist, o.dist); r != 0 {
		return r
	}
	return cmp.Compare(c.name, o.name)
}

// add ranks one name. A name already ranked, or dropped, ranks the same
// again: keeping the n best of the distinct names needs no other memory.
func (sim *similarity) add(nm string) {
	if sim.n <= 0 {
		return
	}
	base := nm
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if b, ok := strings.CutSuffix(nm, suffix); ok {
			base = b
			break
		}
	}
	if base == sim.want {
		return
	}
	shared := 0
	for w := range nameWords(base) {
		if sim.words[w] {
			shared++
		}
	}
	d := levenshtein(sim.want, base)
	if shared == 0 && d > len(sim.want)/3 {
		return
	}
	c := candidate{base, shared, d}
	i, found := slices.BinarySearchFunc(sim.top, c, candidate.compare)
	if found || i >= sim.n {
		return
	}
	sim.top = slices.Insert(sim.top, i, c)
	if len(sim.top) > sim.n {
		sim.top = sim.top[:sim.n]
	}
}

func (sim *similarity) best() []string {
	var out []string
	for _, c := range sim.top {
		out = append(out, c.name)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// cleanedError is an error whose text had secrets redacted; errors.Is and
// As still see the error it came from.
type cleanedError struct {
	msg string
	err error
}

func (e *cleanedError) Error() string { return e.msg }
func (e *cleanedError) Unwrap() error { return e.err }
