package rules

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/tunetimeout/tunetimeout/promsource"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	yaml "go.yaml.in/yaml/v3"
)

// The promtool unit test file (promtool test rules): its format, as
// Prometheus's cmd/promtool/unittest.go reads it.
type unitFile struct {
	RuleFiles          []string   `yaml:"rule_files"`
	EvaluationInterval string     `yaml:"evaluation_interval"`
	Tests              []unitTest `yaml:"tests"`
}

type unitTest struct {
	Name        string      `yaml:"name"`
	Interval    string      `yaml:"interval"`
	InputSeries []inputSer  `yaml:"input_series"`
	AlertTests  []alertTest `yaml:"alert_rule_test"`
}

type inputSer struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertTest struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []expAlert `yaml:"exp_alerts"`
}

type expAlert struct {
	Labels      map[string]string `yaml:"exp_labels"`
	Annotations map[string]string `yaml:"exp_annotations"`
}

// UnitTest writes a promtool unit test of the rules (promtool test rules)
// for the first group on classic buckets: one test whose input crosses
// every threshold, where every alert of the group fires, and one that
// stays below them all, where none does. rulesPath is the rules file as
// the test file names it (relative to the test file's directory).
func UnitTest(r *Rules, o Options, metric, selector, rulesPath string) ([]byte, error) {
	var t *Target
	var g *Group
	for i := range r.Targets {
		if r.Targets[i].Kind == "classic" {
			t, g = &r.Targets[i], &r.File.Groups[i]
			break
		}
	}
	if t == nil {
		return nil, errors.New("a unit test needs a group on classic buckets")
	}
	labels, err := testLabels(t, selector)
	if err != nil {
		return nil, err
	}
	levels, history, err := testLevels(t, o)
	if err != nil {
		return nil, err
	}
	// The metastable alerts: where they fire, 1.5 attempts per request
	// and half the calls cut off (testLevels), so goodput is 0.75 of the
	// requests; where none fires, one attempt per request and at most
	// 0.5 % cut off.
	perRequest := []float64{1, 1}
	if o.RequestsMetric != "" {
		perRequest = []float64{1.5, 1}
	}
	step, eval := testStep(o, history)
	n := int(eval/step) + 1
	le := t.LE
	f := unitFile{RuleFiles: []string{rulesPath}, EvaluationInterval: dur(step)}
	for i, lv := range levels {
		perStep := lv.rate * step.Seconds()
		below := perStep * (1 - lv.ratio)
		// Little's law: the calls in flight are rate(_sum), in the metric's unit.
		sum := lv.fight * step.Seconds() / t.UnitSeconds
		ut := unitTest{Name: fmt.Sprintf("%s: %s cut off at %s, %s calls/s", lv.name, num(lv.ratio), dur(t.Timeout), num(lv.rate)), Interval: dur(step)}
		ut.InputSeries = []inputSer{
			{seriesString(metric+"_bucket", labels, "le", le), counter(below, n)},
			{seriesString(metric+"_bucket", labels, "le", "+Inf"), counter(perStep, n)},
			{seriesString(metric+"_count", labels, "", ""), counter(perStep, n)},
			{seriesString(metric+"_sum", labels, "", ""), counter(sum, n)},
		}
		if o.RequestsMetric != "" {
			ut.InputSeries = append(ut.InputSeries, inputSer{seriesString(o.RequestsMetric, labels, "", ""), counter(perStep/perRequest[i], n)})
		}
		ut.AlertTests = alertTests(g, t, dur(eval), lv.fires)
		f.Tests = append(f.Tests, ut)
	}
	var buf bytes.Buffer
	buf.WriteString("# promtool test rules for the rules of group " + strconv.Quote(t.Group) + ", written by tunetimeout rules " + usage.TestOut.String() + ".\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// testLabels are the labels of the test's series: the selector's, and
// the group's own.
func testLabels(t *Target, selector string) (map[string]string, error) {
	sel, err := selectorLabels(selector)
	if err != nil {
		return nil, fmt.Errorf("a unit test writes series the selector matches: %w", err)
	}
	labels := map[string]string{}
	for _, l := range sel {
		labels[l[0]] = l[1]
	}
	for _, l := range t.Labels {
		if l[1] != "" {
			labels[l[0]] = l[1]
		}
	}
	return labels, nil
}

// testLevel is one test of the series at a level: the share cut off, the
// calls per second, the calls in flight, and whether every alert fires.
type testLevel struct {
	name               string
	ratio, rate, fight float64
	fires              bool
}

// testLevels are the two levels tested, where every alert fires and where
// none does, and the history the series need.
func testLevels(t *Target, o Options) ([]testLevel, time.Duration, error) {
	// Thresholds: the ratio crosses twice the highest, stays at a quarter
	// of the lowest; the rate and the mean likewise around the pool and
	// the bulkhead.
	hiT, loT := 0.0, math.Inf(1)
	// The series are evaluated over the longest short window (and the
	// demand range), not the longest long one: the ratios are constant, and
	// rate() over a range longer than the history reads the same ratio from
	// the samples it has (both series share their sample times, so their
	// extrapolation is the same), while evaluating 3d at a 1m step would take
	// promtool a minute.
	history := o.DemandRange
	for _, w := range o.Windows {
		th := w.Burn * t.Budget
		hiT, loT = math.Max(hiT, th), math.Min(loT, th)
		history = max(history, w.Short)
	}
	if 2*hiT >= 1 {
		return nil, 0, fmt.Errorf("the highest threshold %s cannot be crossed twice over", num(hiT))
	}
	secs := t.Timeout.Seconds()
	rateHi, rateLo := 100.0, 100.0
	if t.Pool > 0 {
		rateHi, rateLo = math.Max(rateHi, 2*float64(t.Pool)/secs), math.Min(rateLo, 0.25*float64(t.Pool)/secs)
	}
	near := o.NearBulkhead * float64(t.Bulkhead)
	inflightHi, inflightLo := 2*near, 0.25*near
	if t.Bulkhead == 0 {
		inflightHi, inflightLo = 1, 1
	}
	levels := []testLevel{
		{"every alert fires", 2 * hiT, rateHi, inflightHi, true},
		{"no alert fires", loT / 4, rateLo, inflightLo, false},
	}
	// The metastable alerts fire with half the calls cut off; none with
	// at most 0.5 %.
	if o.RequestsMetric != "" {
		levels[0].ratio = max(levels[0].ratio, 0.5)
		levels[1].ratio = min(levels[1].ratio, 0.005)
	}
	return levels, history, nil
}

// testStep is the step of the samples and evaluations, often enough for
// the shortest range (a rate needs two samples within it), and the time
// the alerts are evaluated at, after history and the alerts' for.
func testStep(o Options, history time.Duration) (step, eval time.Duration) {
	step = time.Minute
	for _, w := range append(windows(o.Windows), o.DemandRange) {
		step = min(step, w/5)
	}
	step = max(step.Truncate(time.Second), time.Second)
	eval = history + o.For + 10*time.Minute
	if o.RequestsMetric != "" {
		eval = history + max(o.For, MetastableFor) + 10*time.Minute
	}
	return step, eval
}

// alertTests are the tests of g's alerts at eval: fires, each with the
// alert expected, labelled and annotated as the rule and t say; else none
// expected.
func alertTests(g *Group, t *Target, eval string, fires bool) []alertTest {
	var tests []alertTest
	for _, rule := range g.Rules {
		if rule.Alert == "" {
			continue
		}
		at := alertTest{EvalTime: eval, Alertname: rule.Alert, ExpAlerts: []expAlert{}}
		if fires {
			exp := expAlert{Labels: map[string]string{}, Annotations: map[string]string{}}
			for _, l := range t.Labels {
				if l[1] != "" {
					exp.Labels[l[0]] = l[1]
				}
			}
			exp.Labels["group"], exp.Labels["timeout"] = t.Group, dur(t.Timeout)
			for k, v := range rule.Labels {
				exp.Labels[k] = unliteral(v)
			}
			for k, v := range rule.Annotations {
				exp.Annotations[k] = unliteral(v)
			}
			at.ExpAlerts = append(at.ExpAlerts, exp)
		}
		// The burn alerts share a name: one test per name, every pair.
		if i := indexAlert(tests, rule.Alert); i >= 0 {
			tests[i].ExpAlerts = append(tests[i].ExpAlerts, at.ExpAlerts...)
			continue
		}
		tests = append(tests, at)
	}
	return tests
}

func indexAlert(ts []alertTest, name string) int {
	for i, t := range ts {
		if t.Alertname == name {
			return i
		}
	}
	return -1
}

// unliteral is what Prometheus makes of literal(s): s.
func unliteral(s string) string { return strings.ReplaceAll(s, `{{ "{{" }}`, "{{") }

// counter is a counter growing by per each step, n samples, in promtool's
// expanding notation.
func counter(per float64, n int) string {
	return "0+" + num(per) + "x" + strconv.Itoa(n-1)
}

// seriesString writes a series in PromQL's notation, labels sorted, with
// one more label when extra is set.
func seriesString(name string, labels map[string]string, extra, value string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	if extra != "" {
		parts = append(parts, extra+"="+strconv.Quote(value))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// selectorLabels reads a selector of equality matchers into label pairs;
// any other matcher is an error (no series can be written for it here).
func selectorLabels(s string) ([][2]string, error) {
	ms, err := promsource.ParseSelector(s)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, m := range ms {
		if m.Op != "=" {
			return nil, fmt.Errorf("selector %s: only = matchers can be written as series, not %s%s", s, m.Name, m.Op)
		}
		out = append(out, [2]string{m.Name, m.Value})
	}
	return out, nil
}
