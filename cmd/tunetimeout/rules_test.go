package main

import (
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/promsource/promtest"
	"github.com/tunetimeout/tunetimeout/report"
)

// rulesReport writes a report as tunetimeout prometheus -o json writes it,
// by route: /api recommends 1s (a bucket bound), /slow 800ms (none).
func rulesReport(t *testing.T) string {
	t.Helper()
	pool, bulkhead := 200, 6
	r := report.Report{Prometheus: &report.PrometheusSource{
		Metric: "tt_request_duration_seconds", Kind: "classic", UnitSeconds: 1,
		At: "2026-11-02T12:00:00Z", WindowSeconds: 6 * 3600,
	}}
	for _, g := range []struct {
		name    string
		timeout float64
	}{{"/api", 1}, {"/slow", 0.8}} {
		r.Groups = append(r.Groups, report.Group{
			Name:           g.name,
			Recommendation: report.Recommendation{Quantile: 0.999, TimeoutSeconds: g.timeout},
			LittlesLaw:     report.LittlesLaw{Pool: &pool, Bulkhead: &bulkhead},
			Buckets:        &report.Buckets{Kind: "classic", BoundsSeconds: []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}},
		})
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record      string            `yaml:"record"`
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestRulesFromReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "rules.yaml")
	test := filepath.Join(dir, "tests", "rules.test.yaml")
	require.NoError(t, os.Mkdir(filepath.Dir(test), 0o755))
	dash := filepath.Join(dir, "dashboard.json")
	stdout, stderr, code := execute(t, "", "rules", "--report", rulesReport(t), "--by", "route", "--selector", `{job="api"}`,
		"--pool", "20", "--bulkhead", "30", "--runbook-url", "https://runbooks.example.com/timeouts", "--for", "2m",
		"--output", out, "--test-out", test, "--grafana", dash)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)

	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var f rulesFile
	require.NoError(t, yaml.Unmarshal(b, &f))
	require.Len(t, f.Groups, 3, "/api, /slow and the pool they share")
	assert.Equal(t, "tunetimeout:shared-pool", f.Groups[2].Name)
	assert.Equal(t, `(clamp_max(sum(rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])) * 1, 30) or vector(0)) + (clamp_max(sum(rate(tt_request_duration_seconds_count{job="api", route="/slow"}[5m])) * 0.8, 30) or vector(0)) > 20`, f.Groups[2].Rules[0].Expr)
	api := f.Groups[0]
	assert.Equal(t, "tunetimeout:/api", api.Name)
	assert.Equal(t, "tunetimeout:false_timeout:ratio_rate5m", api.Rules[0].Record)
	assert.Equal(t, `1 - (sum by (route) (rate(tt_request_duration_seconds_bucket{job="api", route="/api", le=~"1|1\\.0"}[5m])) / sum by (route) (rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])))`, api.Rules[0].Expr)
	alerts := map[string]int{}
	for _, r := range api.Rules {
		if r.Alert == "" {
			continue
		}
		alerts[r.Alert]++
		assert.Equal(t, "https://runbooks.example.com/timeouts", r.Annotations["runbook_url"])
		assert.Equal(t, "tt_request_duration_seconds, 6h ending 2026-11-02T12:00:00Z", r.Annotations["recommended_from"])
		switch r.Alert {
		case "TunetimeoutHangExhaustsPool":
			assert.Equal(t, `sum by (route) (rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])) * 1 > 20`, r.Expr, "--pool 20 overrides the report's 200")
			assert.Equal(t, "2m", r.For)
		case "TunetimeoutDemandNearBulkhead":
			assert.Equal(t, `sum by (route) (rate(tt_request_duration_seconds_sum{job="api", route="/api"}[5m])) > (0.8 * 30)`, r.Expr, "--bulkhead 30 overrides the report's 6")
		}
	}
	assert.Equal(t, map[string]int{"TunetimeoutFalseTimeoutBudgetBurn": 4, "TunetimeoutHangExhaustsPool": 1, "TunetimeoutDemandNearBulkhead": 1}, alerts, "the bulkhead of 30 is above the pool of 20: the hang alert stays")
	assert.Contains(t, string(b), `# The timeout 800ms is no bucket bound: the ratio counts the calls above the next bound, le="1", so it is a LOWER bound`)

	tb, err := os.ReadFile(test)
	require.NoError(t, err)
	assert.Contains(t, string(tb), "- ../rules.yaml", "the rules file as the test's directory names it")
	var d map[string]any
	db, err := os.ReadFile(dash)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(db, &d))
	assert.Equal(t, float64(39), d["schemaVersion"])

	bin := e2etest.RequireBinary(t, "promtool", "apt-get install prometheus")
	res, err := exec.Command(bin, "check", "rules", out).CombinedOutput()
	require.NoError(t, err, "%s", res)
	res, err = exec.Command(bin, "test", "rules", test).CombinedOutput()
	require.NoError(t, err, "%s\n%s", res, tb)
	assert.Contains(t, string(res), "SUCCESS")
}

func TestRulesTimeoutAndKind(t *testing.T) {
	stdout, stderr, code := execute(t, "", "rules", "--report", rulesReport(t), "--by", "route", "--timeout", "300ms",
		"--false-timeouts", "1%", "--windows", "2h/10m:10:page", "--kind", "prometheusrule", "--name", "api-timeouts",
		"--namespace", "monitoring", "--label", "release=kube-prometheus-stack")
	require.Equal(t, 0, code, stderr)
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string            `yaml:"name"`
			Namespace string            `yaml:"namespace"`
			Labels    map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec rulesFile `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(stdout), &pr))
	assert.Equal(t, "monitoring.coreos.com/v1", pr.APIVersion)
	assert.Equal(t, "PrometheusRule", pr.Kind)
	assert.Equal(t, "api-timeouts", pr.Metadata.Name)
	assert.Equal(t, "monitoring", pr.Metadata.Namespace)
	assert.Equal(t, map[string]string{"release": "kube-prometheus-stack"}, pr.Metadata.Labels)
	g := pr.Spec.Groups[0]
	// 300ms is no bound: the next one above, 0.5, a lower bound.
	assert.Contains(t, g.Rules[0].Expr, `le="0.5"`)
	assert.Equal(t, "300ms", g.Rules[0].Labels["timeout"])
	assert.Contains(t, stdout, `Add le="0.3" to the histogram`)
	// Two windows, one pair: burn 10 x the budget of --false-timeouts 1%.
	assert.Equal(t, "tunetimeout:false_timeout:ratio_rate10m", g.Rules[0].Record)
	assert.Equal(t, "tunetimeout:false_timeout:ratio_rate2h", g.Rules[1].Record)
	assert.Equal(t, `tunetimeout:false_timeout:ratio_rate2h{group="/api", timeout="300ms"} > (10 * 0.01) and tunetimeout:false_timeout:ratio_rate10m{group="/api", timeout="300ms"} > (10 * 0.01)`, g.Rules[2].Expr)
}

func TestRulesCommandLine(t *testing.T) {
	rep := rulesReport(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad windows", []string{"--report", rep, "--by", "route", "--windows", "5m/1h:2"}, 2, "--windows: \"5m/1h:2\": the short window 1h must be shorter"},
		{"bad kind", []string{"--report", rep, "--kind", "helm"}, 2, `--kind "helm": want rules or prometheusrule`},
		{"test-out without output", []string{"--report", rep, "--test-out", "t.yaml"}, 2, "--test-out needs --output"},
		{"both sources", []string{"--report", rep, "--url", "http://127.0.0.1:1"}, 2, "give --report or --url, not both"},
		{"arguments", []string{"report.json"}, 2, "rules reads no files"},
		{"no url", []string{"--metric", "x_seconds"}, 2, "--url is required"},
		{"groups without --by", []string{"--report", rep}, 1, `give --by as the prometheus run had it`},
		{"bad label", []string{"--report", rep, "--label", "release"}, 2, `--label "release" is not KEY=VALUE`},
		{"burn beyond 1", []string{"--report", rep, "--by", "route", "--windows", "1h/5m:2000"}, 1, "burn rate 2000 x budget 0.001 is at least 1"},
		// Issue 30, item 13: what is written into PromQL is PromQL, or a
		// usage error; promtool refused the file before.
		{"metric not a name", []string{"--report", rep, "--by", "route", "--metric", "rpc seconds"}, 2, `--metric "rpc seconds" is not a Prometheus metric name`},
		{"metric smuggling PromQL", []string{"--report", rep, "--by", "route", "--metric", `x) or vector(1`}, 2, `--metric "x) or vector(1" is not a Prometheus metric name`},
		{"by not a label", []string{"--report", rep, "--by", "http.route"}, 2, `--by "http.route" is not a Prometheus label name`},
		{"by the histogram's label", []string{"--report", rep, "--by", "le"}, 2, `--by le: cannot group by the histogram's own label`},
		{"selector without braces", []string{"--report", rep, "--by", "route", "--selector", `job="api"`}, 2, `--selector "job=\"api\"": must be label matchers in braces`},
		{"selector ending early", []string{"--report", rep, "--by", "route", "--selector", `{job="api"} or vector(1) or {a="b"}`}, 2, `expected , or } after the matcher of job`},
		{"selector quote unclosed", []string{"--report", rep, "--by", "route", "--selector", `{job="api}`}, 2, `the value of job: the quote does not close`},
		{"selector bad regex", []string{"--report", rep, "--by", "route", "--selector", `{code=~"5(("}`}, 2, `the value of code is not a regular expression`},
		{"selector bad operator", []string{"--report", rep, "--by", "route", "--selector", `{job=="api"}`}, 2, `the value of job: expected a quoted string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := execute(t, "", append([]string{"rules"}, tc.args...)...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
		})
	}
}

// Issue 30, item 11, through the commands: groups with different label
// sets stay apart in the report, and the rules select each by its own
// labels (route="-" and route="" were one group "-", whose rules selected
// only the series without route).
func TestRulesSelectEachGroupByItsLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		by   string
		sets []map[string]string
		want map[string]string // group -> its matchers in the recording rule
	}{
		{"spaces in values", "route,method", []map[string]string{{"route": "x y", "method": "z"}, {"route": "x", "method": "y z"}},
			map[string]string{`"x y" z`: `route="x y", method="z"`, `x "y z"`: `route="x", method="y z"`}},
		{"a value - and a missing label", "route", []map[string]string{{"route": "-"}, {"job": "api"}},
			map[string]string{`"-"`: `route="-"`, `-`: `route=""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(promtest.Labelled(tc.sets))
			defer srv.Close()
			out, errOut, code := execute(t, "", "prometheus", "--url", srv.URL, "--metric", "tt_request_duration_seconds",
				"--window", "1h", "--at", "1800000000", "--by", tc.by, "-o", "json")
			require.Equal(t, 0, code, errOut)
			var r report.Report
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			var names []string
			for _, g := range r.Groups {
				names = append(names, g.Name)
				assert.Positive(t, g.Samples)
			}
			assert.ElementsMatch(t, slices.Collect(maps.Keys(tc.want)), names, "one group per label set")
			assert.NotEqual(t, r.Groups[0].Samples, r.Groups[1].Samples, "each its own calls, none added up")

			rep := filepath.Join(t.TempDir(), "report.json")
			require.NoError(t, os.WriteFile(rep, []byte(out), 0o644))
			rules, errOut, code := execute(t, "", "rules", "--report", rep, "--by", tc.by)
			require.Equal(t, 0, code, errOut)
			var f rulesFile
			require.NoError(t, yaml.Unmarshal([]byte(rules), &f))
			found := 0
			for _, g := range f.Groups {
				for _, rule := range g.Rules {
					grp, ok := rule.Labels["group"]
					if rule.Record == "" || !ok {
						continue
					}
					want, ok := tc.want[strings.Trim(grp, `'`)]
					if !ok {
						want = tc.want[grp]
					}
					require.NotEmpty(t, want, "group %q", grp)
					assert.Contains(t, rule.Expr, "{"+want+"}", "group %q", grp)
					found++
				}
			}
			assert.Positive(t, found)
		})
	}
}

// TestRulesMetastable: --requests-metric adds, per group, the alerts of a
// metastable state with their runbook; promtool accepts them and their
// unit test, where they fire at 1.5 attempts per request and goodput at
// 75 % of the requests, and do not at one attempt per request.
func TestRulesMetastable(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "rules.yaml")
	test := filepath.Join(dir, "rules.test.yaml")
	_, stderr, code := execute(t, "", "rules", "--report", rulesReport(t), "--by", "route", "--selector", `{job="api"}`,
		"--requests-metric", "tt_requests_total", "--output", out, "--test-out", test)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var f rulesFile
	require.NoError(t, yaml.Unmarshal(b, &f))
	found := map[string]string{}
	for _, r := range f.Groups[0].Rules {
		if r.Alert == "TunetimeoutRetryStorm" || r.Alert == "TunetimeoutGoodputBehindDemand" {
			found[r.Alert] = r.Expr
			assert.Equal(t, "5m", r.For)
			assert.Contains(t, r.Annotations["runbook"], "Turn retries off")
		}
	}
	assert.Equal(t, `(sum by (route) (rate(tt_request_duration_seconds_count{job="api", route="/api"}[5m])) / sum by (route) (rate(tt_requests_total{job="api", route="/api"}[5m]))) > 1.1`, found["TunetimeoutRetryStorm"])
	assert.Contains(t, found["TunetimeoutGoodputBehindDemand"], `< (0.99 * sum by (route) (rate(tt_requests_total{job="api", route="/api"}[5m])))`)
	tb, err := os.ReadFile(test)
	require.NoError(t, err)
	assert.Contains(t, string(tb), `tt_requests_total{job="api",route="/api"}`)
	bin := e2etest.RequireBinary(t, "promtool", "apt-get install prometheus")
	res, err := exec.Command(bin, "check", "rules", out).CombinedOutput()
	require.NoError(t, err, "%s", res)
	res, err = exec.Command(bin, "test", "rules", test).CombinedOutput()
	require.NoError(t, err, "%s\n%s", res, tb)
	assert.Contains(t, string(res), "SUCCESS")

	_, stderr, code = execute(t, "", "rules", "--report", rulesReport(t), "--requests-metric", "a b")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--requests-metric")
}
