package rules

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/report"
)

func intp(v int) *int { return &v }

// testReport is a report as tunetimeout prometheus writes it: per route,
// classic buckets in seconds; /api recommends 1s (a bound), /slow 800ms
// (within the bucket (500ms, 1s]).
func testReport(names ...string) *report.Report {
	r := &report.Report{Prometheus: &report.PrometheusSource{
		Metric: "tt_request_duration_seconds", Kind: "classic", UnitSeconds: 1,
		At: "2026-11-02T12:00:00Z", WindowSeconds: 6 * 3600,
	}}
	timeouts := []float64{1, 0.8}
	for i, n := range names {
		r.Groups = append(r.Groups, report.Group{
			Name:           n,
			Recommendation: report.Recommendation{Quantile: 0.999, TimeoutSeconds: timeouts[i%2]},
			LittlesLaw:     report.LittlesLaw{Pool: intp(200), Bulkhead: intp(6)},
			Buckets:        &report.Buckets{Kind: "classic", BoundsSeconds: []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}},
		})
	}
	return r
}

func byRoute() Options {
	o := DefaultOptions()
	o.By = []string{"route"}
	o.Selector = `{job="api"}`
	return o
}

func TestRatioExprs(t *testing.T) {
	rs, err := Build(testReport("/api", "/slow"), byRoute())
	require.NoError(t, err)
	require.Len(t, rs.Targets, 2)
	api, slow := rs.Targets[0], rs.Targets[1]

	// 1s is a bound: exact; a whole number is "1" or "1.0" depending on
	// the exposition, so both are matched.
	assert.True(t, api.Exact)
	assert.Equal(t, "1", api.LE)
	assert.Equal(t, `1 - (sum by (route) (rate(tt_request_duration_seconds_bucket{job="api", route="/api", le=~"1|1\\.0"}[5m])) / sum by (route) (rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])))`,
		RatioExpr(api, "tt_request_duration_seconds", []string{"route"}, 5*time.Minute))

	// 800ms is no bound: the next above, 1s, and the ratio is a lower bound.
	assert.False(t, slow.Exact)
	assert.True(t, slow.LowerBound)
	assert.Equal(t, "1", slow.LE)
	assert.Equal(t, "0.8", slow.AddLE)
	g := rs.File.Groups[1]
	assert.Equal(t, "tunetimeout:/slow", g.Name)
	var records []string
	for _, r := range g.Rules {
		if r.Record != "" {
			records = append(records, r.Record)
			assert.Equal(t, map[string]string{"group": "/slow", "timeout": "800ms"}, r.Labels)
		}
	}
	// The note, once above the first record, and in every burn alert.
	assert.Contains(t, g.Rules[0].Comment, `LOWER bound`)
	assert.Contains(t, g.Rules[0].Comment, `Add le="0.8"`)
	assert.Empty(t, g.Rules[1].Comment)
	assert.Contains(t, g.Rules[len(records)].Annotations["description"], `so it is a LOWER bound of the calls the timeout cuts off. Add le="0.8"`)
	assert.Equal(t, []string{"tunetimeout:false_timeout:ratio_rate5m", "tunetimeout:false_timeout:ratio_rate30m",
		"tunetimeout:false_timeout:ratio_rate1h", "tunetimeout:false_timeout:ratio_rate2h", "tunetimeout:false_timeout:ratio_rate6h",
		"tunetimeout:false_timeout:ratio_rate1d", "tunetimeout:false_timeout:ratio_rate3d"}, records)
	for _, r := range rs.File.Groups[0].Rules {
		assert.Empty(t, r.Comment, "exact ratio of /api: no note")
	}
}

func TestChooseLE(t *testing.T) {
	bounds := []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
	for _, tc := range []struct {
		name           string
		timeout        time.Duration
		unit           float64
		le, add        string
		exact, lower   bool
		wantNoteSubstr string
	}{
		{"a bound", 250 * time.Millisecond, 1, "0.25", "0.25", true, false, ""},
		{"between bounds", 300 * time.Millisecond, 1, "0.5", "0.3", false, true, "LOWER bound"},
		{"milliseconds", 250 * time.Millisecond, 0.001, "250", "250", true, false, ""},
		{"beyond the largest", 5 * time.Second, 1, "2.5", "5", false, false, "UPPER bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := Target{Kind: "classic", Timeout: tc.timeout, UnitSeconds: tc.unit}
			chooseLE(&tg, bounds)
			assert.Equal(t, tc.le, tg.LE)
			assert.Equal(t, tc.add, tg.AddLE)
			assert.Equal(t, tc.exact, tg.Exact)
			assert.Equal(t, tc.lower, tg.LowerBound)
			if tc.wantNoteSubstr != "" {
				assert.Contains(t, exactnessNote(tg), tc.wantNoteSubstr)
			}
		})
	}
}

func TestLE(t *testing.T) {
	assert.Equal(t, "0.25", LE(0.25, 1))
	assert.Equal(t, "250", LE(0.25, 0.001), "not 249.99999999999997")
	assert.Equal(t, "1e-05", LE(0.00001, 1), "as client_golang writes it")
	assert.Equal(t, "2.5", LE(2.5, 1))
	assert.Equal(t, `le="0.25"`, leMatcher("0.25"))
	assert.Equal(t, `le=~"250|250\\.0"`, leMatcher("250"))
	assert.Equal(t, `le="1e-05"`, leMatcher("1e-05"))
}

func TestBurnAlerts(t *testing.T) {
	rs, err := Build(testReport("/api"), byRoute())
	require.NoError(t, err)
	var burns []Rule
	for _, r := range rs.File.Groups[0].Rules {
		if r.Alert == BurnAlert {
			burns = append(burns, r)
		}
	}
	// The SRE workbook's pairs ("Alerting on SLOs", table 5-8): pages on
	// 1h/5m at 14.4 and 6h/30m at 6, tickets on 1d/2h at 3 and 3d/6h at 1.
	require.Len(t, burns, 4)
	var pairs []string
	for _, b := range burns {
		pairs = append(pairs, b.Labels["long"]+"/"+b.Labels["short"]+":"+b.Labels["severity"])
	}
	assert.Equal(t, []string{"1h/5m:page", "6h/30m:page", "1d/2h:ticket", "3d/6h:ticket"}, pairs)
	assert.Contains(t, burns[2].Expr, "> (3 * 0.001)")
	assert.Contains(t, burns[3].Expr, "> (1 * 0.001)")
	// budget = 1 - 0.999 = 0.001, written as such, not 0.0010000000000000009
	assert.Equal(t, `tunetimeout:false_timeout:ratio_rate1h{group="/api", timeout="1s"} > (14.4 * 0.001) and tunetimeout:false_timeout:ratio_rate5m{group="/api", timeout="1s"} > (14.4 * 0.001)`, burns[0].Expr)
	assert.Equal(t, map[string]string{"severity": "page", "long": "1h", "short": "5m", "group": "/api", "timeout": "1s"}, burns[0].Labels)
	assert.Equal(t, `tunetimeout:false_timeout:ratio_rate6h{group="/api", timeout="1s"} > (6 * 0.001) and tunetimeout:false_timeout:ratio_rate30m{group="/api", timeout="1s"} > (6 * 0.001)`, burns[1].Expr)
	assert.Equal(t, "page", burns[1].Labels["severity"], "the workbook pages on 6h/30m")
	assert.Contains(t, burns[0].Annotations["description"], "exceeds 1.44 % (burn rate 14.4 x the budget of 0.1 %)")
	assert.Equal(t, "tt_request_duration_seconds, 6h ending 2026-11-02T12:00:00Z", burns[0].Annotations["recommended_from"])

	// --false-timeouts overrides the report's quantile.
	o := byRoute()
	o.FalseTimeouts = 0.01
	rs, err = Build(testReport("/api"), o)
	require.NoError(t, err)
	var burnExprs []string
	for _, r := range rs.File.Groups[0].Rules {
		if r.Alert == BurnAlert {
			burnExprs = append(burnExprs, r.Expr)
		}
	}
	assert.Contains(t, burnExprs[0], "> (14.4 * 0.01)")
}

func TestLittlesLawAlerts(t *testing.T) {
	o := byRoute()
	o.Pool = 20
	o.Bulkhead = 30 // above the pool: a hang can still exhaust it
	rs, err := Build(testReport("/api"), o)
	require.NoError(t, err)
	rules := rs.File.Groups[0].Rules
	hang, demand := rules[len(rules)-2], rules[len(rules)-1]
	assert.Equal(t, HangAlert, hang.Alert)
	assert.Equal(t, `sum by (route) (rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])) * 1 > 20`, hang.Expr)
	assert.Equal(t, "5m", hang.For)
	assert.Equal(t, map[string]string{"severity": "ticket", "group": "/api", "timeout": "1s", "pool": "20"}, hang.Labels)
	assert.Equal(t, DemandAlert, demand.Alert)
	assert.Contains(t, hang.Annotations["description"], "The bulkhead of 30 is above the pool")
	assert.Equal(t, `sum by (route) (rate(tt_request_duration_seconds_sum{job="api", route="/api"}[5m])) > (0.8 * 30)`, demand.Expr)

	// The report's bulkhead of 6 caps the calls a hang holds at 6, within
	// the pool of 20: the hang alert would fire for ever at 20 calls/s
	// while the bulkhead protects the pool, so there is none, and a note
	// says why.
	o.Bulkhead = 0
	rs, err = Build(testReport("/api"), o)
	require.NoError(t, err)
	rules = rs.File.Groups[0].Rules
	for _, ru := range rules {
		assert.NotEqual(t, HangAlert, ru.Alert)
	}
	demand = rules[len(rules)-1]
	// rate x mean latency = rate(_sum): the bulkhead 6 from the report
	assert.Equal(t, `sum by (route) (rate(tt_request_duration_seconds_sum{job="api", route="/api"}[5m])) > (0.8 * 6)`, demand.Expr)
	assert.Contains(t, strings.Join(rs.File.Groups[0].Notes, "\n"), "No TunetimeoutHangExhaustsPool alert: the bulkhead of 6 caps the calls a hang holds within the pool of 20")

	// Milliseconds: rate(_sum) is in ms, converted.
	r := testReport("all")
	r.Prometheus.UnitSeconds = 0.001
	rs, err = Build(r, DefaultOptions())
	require.NoError(t, err)
	rules = rs.File.Groups[0].Rules
	assert.Equal(t, `sum(rate(tt_request_duration_seconds_sum[5m])) * 0.001 > (0.8 * 6)`, rules[len(rules)-1].Expr)
	assert.Contains(t, rules[0].Expr, `le=~"1000|1000\\.0"`)

	// Without pool or bulkhead, no such alert, and a note says so.
	r = testReport("all")
	r.Groups[0].LittlesLaw = report.LittlesLaw{}
	rs, err = Build(r, DefaultOptions())
	require.NoError(t, err)
	for _, ru := range rs.File.Groups[0].Rules {
		assert.NotContains(t, []string{HangAlert, DemandAlert}, ru.Alert)
	}
	assert.Len(t, rs.File.Groups[0].Notes, 3, "the pool's, the bulkhead's and the requests metric's")
}

func TestSharedPool(t *testing.T) {
	o := byRoute()
	o.Pool = 20
	rs, err := Build(testReport("/api", "/slow"), o)
	require.NoError(t, err)
	require.Len(t, rs.File.Groups, 3, "the groups', then the shared pool's")
	shared := rs.File.Groups[2]
	assert.Equal(t, "tunetimeout:shared-pool", shared.Name)
	require.Len(t, shared.Rules, 1)
	// Each group's rate x its own timeout (1s, 800ms), at most its
	// bulkhead (6 each), added up.
	assert.Equal(t, `(clamp_max(sum(rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])) * 1, 6) or vector(0)) + (clamp_max(sum(rate(tt_request_duration_seconds_count{job="api", route="/slow"}[5m])) * 0.8, 6) or vector(0)) > 20`, shared.Rules[0].Expr)
	assert.Equal(t, SharedHangAlert, shared.Rules[0].Alert)
	out, err := Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	checkRules(t, out)

	// One group: no shared pool.
	rs, err = Build(testReport("/api"), o)
	require.NoError(t, err)
	assert.Len(t, rs.File.Groups, 1)
}

func TestNative(t *testing.T) {
	r := testReport("all")
	r.Prometheus.Kind = "native"
	r.Groups[0].Buckets = &report.Buckets{Kind: "native"}
	o := DefaultOptions()
	o.Bulkhead = 300 // above the pool of 200: the hang alert is written
	rs, err := Build(r, o)
	require.NoError(t, err)
	rules := rs.File.Groups[0].Rules
	assert.Equal(t, `1 - histogram_fraction(0, 1, sum(rate(tt_request_duration_seconds[5m])))`, rules[0].Expr)
	assert.Contains(t, rules[0].Comment, "histogram_fraction interpolates")
	assert.Equal(t, `histogram_count(sum(rate(tt_request_duration_seconds[5m]))) * 1 > 200`, rules[len(rules)-2].Expr)
	out, err := Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	checkRules(t, out)
}

func TestGroupLabels(t *testing.T) {
	name := func(n string) report.Group { return report.Group{Name: n} }
	got, err := groupLabels(name("GET /api"), []string{"method", "route"})
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"method", "GET"}, {"route", "/api"}}, got)
	got, err = groupLabels(name("-"), []string{"route"})
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"route", ""}}, got, "a missing label")
	_, err = groupLabels(name("/api"), nil)
	assert.ErrorContains(t, err, "give --by")
	_, err = groupLabels(name("a b c"), []string{"method", "route"})
	assert.Error(t, err)

	// Issue 30, item 11: the groups promsource keeps apart stay apart.
	// From the report's labels (its identity):
	for _, tc := range []struct {
		g    report.Group
		by   []string
		want [][2]string
	}{
		{report.Group{Name: `"x y" z`, Labels: map[string]string{"route": "x y", "method": "z"}}, []string{"route", "method"}, [][2]string{{"route", "x y"}, {"method", "z"}}},
		{report.Group{Name: `x "y z"`, Labels: map[string]string{"route": "x", "method": "y z"}}, []string{"route", "method"}, [][2]string{{"route", "x"}, {"method", "y z"}}},
		{report.Group{Name: `"-"`, Labels: map[string]string{"route": "-"}}, []string{"route"}, [][2]string{{"route", "-"}}},
		{report.Group{Name: `/a -`, Labels: map[string]string{"route": "/a"}}, []string{"route", "method"}, [][2]string{{"route", "/a"}, {"method", ""}}},
		// and from names alone, as promsource.GroupName writes them:
		{name(`"x y" z`), []string{"route", "method"}, [][2]string{{"route", "x y"}, {"method", "z"}}},
		{name(`x "y z"`), []string{"route", "method"}, [][2]string{{"route", "x"}, {"method", "y z"}}},
		{name(`"-"`), []string{"route"}, [][2]string{{"route", "-"}}},
		{name(`- "a\"b"`), []string{"route", "method"}, [][2]string{{"route", ""}, {"method", `a"b`}}},
	} {
		got, err := groupLabels(tc.g, tc.by)
		require.NoError(t, err, tc.g.Name)
		assert.Equal(t, tc.want, got, tc.g.Name)
		var names []string
		var labels []promsource.Label
		for _, l := range got {
			names = append(names, l[0])
			if l[1] != "" {
				labels = append(labels, promsource.Label{Name: l[0], Value: l[1]})
			}
		}
		assert.Equal(t, tc.g.Name, promsource.GroupName(names, labels), "the name round-trips")
	}
	_, err = groupLabels(report.Group{Name: "x", Labels: map[string]string{"job": "x"}}, []string{"route"})
	assert.ErrorContains(t, err, "the report grouped by the label job, not in --by route")
	_, err = groupLabels(name(`"x"y z`), []string{"route", "method"})
	assert.Error(t, err)
}

func TestParseWindows(t *testing.T) {
	// Without a severity: the workbook pages on long windows up to 6h,
	// tickets on longer ones.
	ws, err := ParseWindows("1h/5m:14.4,6h/30m:6,1d/2h:3,3d/6h:1")
	require.NoError(t, err)
	assert.Equal(t, []Window{{time.Hour, 5 * time.Minute, 14.4, "page"}, {6 * time.Hour, 30 * time.Minute, 6, "page"},
		{24 * time.Hour, 2 * time.Hour, 3, "ticket"}, {72 * time.Hour, 6 * time.Hour, 1, "ticket"}}, ws)
	ws, err = ParseWindows("3d/6h:1:low")
	require.NoError(t, err)
	assert.Equal(t, "low", ws[0].Severity)
	for _, bad := range []string{"1h:14.4", "5m/1h:2", "1h/5m:0", "1h/5m:x", "1h/5m", "1h/5m:2:"} {
		_, err := ParseWindows(bad)
		assert.Error(t, err, bad)
	}
}

// A name from the data with quotes, backslashes, a template and a line
// break survives YAML, PromQL and Prometheus's templates.
const nasty = "a\"b\\c {{ .x }} d\ne"

func TestEscaping(t *testing.T) {
	o := byRoute()
	rs, err := Build(testReport(nasty), o)
	require.NoError(t, err)
	out, err := Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	var back File
	require.NoError(t, yaml.Unmarshal(out, &back))
	assert.Equal(t, "tunetimeout:"+nasty, back.Groups[0].Name)
	assert.Equal(t, nasty, back.Groups[0].Rules[0].Labels["group"])
	assert.Contains(t, back.Groups[0].Rules[0].Expr, `route="a\"b\\c {{ .x }} d\ne"`)
	assert.Equal(t, `a"b\c {{ "{{" }} .x }} d`+"\ne", back.Groups[0].Rules[7].Labels["group"], "alert labels are templates")
	checkRules(t, out)
}

func TestPrometheusRule(t *testing.T) {
	rs, err := Build(testReport("/api", "/slow"), byRoute())
	require.NoError(t, err)
	out, err := Marshal(rs, KindPrometheusRule, Meta{Name: "api-timeouts", Labels: map[string]string{"release": "kube-prometheus-stack"}})
	require.NoError(t, err)
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec File `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(out, &pr))
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "PrometheusRule", pr.Kind)
	assert.Equal(t, "api-timeouts", pr.Metadata.Name)
	assert.Equal(t, "kube-prometheus-stack", pr.Metadata.Labels["release"])
	require.Len(t, pr.Spec.Groups, 2)
	assert.Contains(t, string(out), "# The timeout 800ms is no bucket bound")
	// The spec is a rules file: promtool checks it.
	spec, err := yaml.Marshal(pr.Spec)
	require.NoError(t, err)
	checkRules(t, spec)
}

func TestRulesFileComments(t *testing.T) {
	rs, err := Build(testReport("/api", "/slow"), byRoute())
	require.NoError(t, err)
	out, err := Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	s := string(out)
	assert.True(t, strings.HasPrefix(s, "# Generated by tunetimeout rules from tt_request_duration_seconds, 6h ending 2026-11-02T12:00:00Z"), s)
	assert.Contains(t, s, `# The timeout 800ms is no bucket bound: the ratio counts the calls above the next bound, le="1", so it is a LOWER bound`)
	checkRules(t, out)
}

func promtool(t *testing.T) string {
	return e2etest.RequireBinary(t, "promtool", "apt-get install prometheus (Debian's package has promtool)")
}

// checkRules runs promtool check rules on a rules file.
func checkRules(t *testing.T, rules []byte) {
	t.Helper()
	bin := promtool(t)
	p := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(p, rules, 0o644))
	out, err := exec.Command(bin, "check", "rules", p).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s\n%s", out, rules)
	assert.Contains(t, string(out), "SUCCESS")
}

func TestUnitTestPasses(t *testing.T) {
	bin := promtool(t)
	for _, tc := range []struct {
		name string
		r    *report.Report
		o    func(*Options)
	}{
		{"exact le", testReport("/api"), func(*Options) {}},
		{"bulkhead above the pool", testReport("/api"), func(o *Options) { o.Bulkhead = 300 }},
		{"lower bound le, escaping", testReport(nasty, "/slow"), func(o *Options) { o.For = time.Minute }},
		{"metastable alerts", testReport("/api"), func(o *Options) { o.RequestsMetric = "tt_requests_total" }},
		{"metastable alerts, lower bound le, short for", testReport(nasty, "/slow"), func(o *Options) {
			o.RequestsMetric = "tt_requests_total"
			o.For = time.Minute
		}},
		{"no pool", func() *report.Report {
			r := testReport("/api")
			r.Groups[0].LittlesLaw = report.LittlesLaw{}
			return r
		}(), func(o *Options) { o.Windows = []Window{{2 * time.Hour, 10 * time.Minute, 10, "page"}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := byRoute()
			tc.o(&o)
			rs, err := Build(tc.r, o)
			require.NoError(t, err)
			out, err := Marshal(rs, KindRules, Meta{})
			require.NoError(t, err)
			test, err := UnitTest(rs, o, "tt_request_duration_seconds", o.Selector, "rules.yaml")
			require.NoError(t, err)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yaml"), test, 0o644))
			res, err := exec.Command(bin, "test", "rules", filepath.Join(dir, "test.yaml")).CombinedOutput()
			require.NoError(t, err, "promtool test rules:\n%s\n%s\n%s", res, test, out)
			assert.Contains(t, string(res), "SUCCESS")
			// The test asserts firing alerts, not only silence.
			assert.Contains(t, string(test), "exp_labels:")
			assert.Contains(t, string(test), "severity: page")
		})
	}
}

// The unit test fails when a rule is wrong: a threshold one burn rate off.
func TestUnitTestCatchesWrongThreshold(t *testing.T) {
	bin := promtool(t)
	o := byRoute()
	rs, err := Build(testReport("/api"), o)
	require.NoError(t, err)
	test, err := UnitTest(rs, o, "tt_request_duration_seconds", o.Selector, "rules.yaml")
	require.NoError(t, err)
	for i, r := range rs.File.Groups[0].Rules {
		if r.Alert == BurnAlert {
			rs.File.Groups[0].Rules[i].Expr = strings.ReplaceAll(r.Expr, "(14.4 * 0.001)", "(144 * 0.001)")
		}
	}
	out, err := Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yaml"), test, 0o644))
	res, err := exec.Command(bin, "test", "rules", filepath.Join(dir, "test.yaml")).CombinedOutput()
	assert.Error(t, err, "promtool test rules should fail:\n%s", res)
}

func TestUnitTestSelector(t *testing.T) {
	_, err := selectorLabels(`{job=~"a.*"}`)
	assert.ErrorContains(t, err, "only = matchers")
	got, err := selectorLabels(`{job="api", env="a,\"b"}`)
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"job", "api"}, {"env", `a,"b`}}, got)
}

func TestDashboard(t *testing.T) {
	out, err := Dashboard(DefaultOptions().Windows, "")
	require.NoError(t, err)
	var d struct {
		SchemaVersion int `json:"schemaVersion"`
		Panels        []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(out, &d))
	assert.Equal(t, 39, d.SchemaVersion)
	var exprs []string
	for _, p := range d.Panels {
		assert.Contains(t, []string{"timeseries", "stat"}, p.Type, p.Title)
		assert.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, m := range []string{"tunetimeout:false_timeout:ratio_rate5m", "tunetimeout:false_timeout:ratio_rate6h",
		WatchRecommended, WatchQuantile, WatchQuantileLower, WatchQuantileUpper, WatchCutOff, WatchInFlightHang,
		WatchPoolExhausted, WatchLastRun, WatchLastSuccess} {
		assert.Contains(t, all, m)
	}
	// Every expression parses with Prometheus's own parser: each as a
	// recording rule of a file promtool checks.
	f := File{Groups: []Group{{Name: "dashboard"}}}
	for i, e := range DashboardExprs(DefaultOptions().Windows) {
		f.Groups[0].Rules = append(f.Groups[0].Rules, Rule{Record: "dashboard:expr_" + strconv.Itoa(i), Expr: e})
	}
	b, err := yaml.Marshal(f)
	require.NoError(t, err)
	checkRules(t, b)
}

// TestMetastableAlerts: with the callers' requests, each group alerts on
// more than 1.1 attempts per request and on calls answered within the
// timeout below 99 % of the requests, both for 5 minutes, with the
// runbook; without, a note says why not. promtool's unit test fails when
// the attempts threshold is wrong.
func TestMetastableAlerts(t *testing.T) {
	o := byRoute()
	rs, err := Build(testReport("/api"), o)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(rs.File.Groups[0].Notes, "\n"), "No TunetimeoutRetryStorm or TunetimeoutGoodputBehindDemand alert: no --requests-metric")

	o.RequestsMetric = "tt_requests_total"
	rs, err = Build(testReport("/api"), o)
	require.NoError(t, err)
	byName := map[string]Rule{}
	for _, r := range rs.File.Groups[0].Rules {
		byName[r.Alert] = r
	}
	storm, good := byName[RetryStormAlert], byName[GoodputAlert]
	assert.Equal(t, `(sum by (route) (rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])) / sum by (route) (rate(tt_requests_total{job="api", route="/api"}[5m]))) > 1.1`, storm.Expr)
	assert.Equal(t, `sum by (route) (rate(tt_request_duration_seconds_bucket{job="api", route="/api", le=~"1|1\\.0"}[5m])) < (0.99 * sum by (route) (rate(tt_requests_total{job="api", route="/api"}[5m])))`, good.Expr)
	for _, r := range []Rule{storm, good} {
		assert.Equal(t, "5m", r.For)
		assert.Equal(t, "page", r.Labels["severity"])
		assert.Contains(t, r.Annotations["runbook"], "Shed load")
		assert.Contains(t, r.Annotations["runbook"], "Turn retries off")
	}
	out, err := Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	checkRules(t, out)

	o.RequestsMetric = "bad name{"
	_, err = Build(testReport("/api"), o)
	assert.ErrorContains(t, err, "--requests-metric")

	// A wrong threshold fails the unit test.
	bin := promtool(t)
	o.RequestsMetric = "tt_requests_total"
	rs, err = Build(testReport("/api"), o)
	require.NoError(t, err)
	test, err := UnitTest(rs, o, "tt_request_duration_seconds", o.Selector, "rules.yaml")
	require.NoError(t, err)
	for i, r := range rs.File.Groups[0].Rules {
		if r.Alert == RetryStormAlert {
			rs.File.Groups[0].Rules[i].Expr = strings.Replace(r.Expr, "> 1.1", "> 2", 1)
		}
	}
	out, err = Marshal(rs, KindRules, Meta{})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yaml"), test, 0o644))
	res, err := exec.Command(bin, "test", "rules", filepath.Join(dir, "test.yaml")).CombinedOutput()
	assert.Error(t, err, "promtool test rules should fail:\n%s", res)
	assert.Contains(t, string(res), RetryStormAlert)
}
