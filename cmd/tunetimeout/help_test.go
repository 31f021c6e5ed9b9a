package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// allCommands are the command paths of every command, cobra's completion
// commands and help included, without the root's name.
func allCommands(t *testing.T) [][]string {
	t.Helper()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	root := newRoot(nil, nil, nil)
	root.InitDefaultHelpCmd()
	walk(root, nil)
	require.Greater(t, len(paths), 10, "the commands, completion's four and help")
	return paths
}

// TestHelpWidth: no line of any command's --help is wider than 80
// columns, tabs counted to the next multiple of 8 as a terminal shows them.
func TestHelpWidth(t *testing.T) {
	for _, path := range allCommands(t) {
		out, errOut, code := execute(t, "", append(path, "--help")...)
		require.Equal(t, 0, code, errOut)
		for i, line := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, columns(line), helpWidth, "tunetimeout %s --help, line %d:\n%s", strings.Join(path, " "), i+1, line)
		}
	}
}

// columns is how many columns line takes on a terminal.
func columns(line string) int {
	n := 0
	for _, r := range line {
		if r == '\t' {
			n += 8 - n%8
			continue
		}
		n++
	}
	return n
}

// TestHelpDefaults: defaults read as people write them: no Go "1m0s", no
// "[]" after a list that has none, a Prometheus window in days.
func TestHelpDefaults(t *testing.T) {
	out, _, code := execute(t, "", "summarize", "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "(default 1m)")
	assert.NotContains(t, out, "1m0s")
	out, _, _ = execute(t, "", "analyze", "--help")
	assert.NotContains(t, out, "(default [])")
	assert.Contains(t, out, "--candidates durations")
	out, _, _ = execute(t, "", "prometheus", "--help")
	assert.Contains(t, out, "--window duration")
	assert.Contains(t, out, "(default 7d)")
	assert.Contains(t, out, "(default 1m)") // --peak-range
	assert.Contains(t, out, "(default 30s)")
	assert.NotContains(t, out, "m0s")
}

// flat is s with its runs of white space, line breaks included, as one
// space: what --help says, however it is wrapped.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestHelpOffersWhatIsAccepted: -o in --help lists what the command
// writes, and each listed format is accepted.
func TestHelpOffersWhatIsAccepted(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string
	}{
		{"analyze", "output format: html, json, markdown, text"},
		{"prometheus", "output format: html, json, markdown, text"},
		{"simulate", "output format: json, text"},
	} {
		out, _, code := execute(t, "", tc.cmd, "--help")
		require.Equal(t, 0, code)
		assert.True(t, strings.Contains(flat(out), tc.want), "%s --help does not say %q", tc.cmd, tc.want)
	}
	for _, format := range []string{"json", "text"} {
		_, errOut, code := execute(t, "", "simulate", mixture, "--requests", "100", "-o", format)
		assert.Equal(t, 0, code, "%s: %s", format, errOut)
	}
	_, errOut, code := execute(t, "", "simulate", mixture, "-o", "html")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown output format "html" (known: json, text)`)
}

// TestCompletion asks cobra's __complete, as the shells do, for the
// values of the enumerated flags.
func TestCompletion(t *testing.T) {
	lines := func(args ...string) []string {
		t.Helper()
		out, errOut, code := execute(t, "", append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, code, errOut)
		ls := strings.Split(strings.TrimSpace(out), "\n")
		return ls[:len(ls)-1] // the last line is the directive
	}
	directive := func(args ...string) string {
		out, _, _ := execute(t, "", append([]string{"__complete"}, args...)...)
		ls := strings.Split(strings.TrimSpace(out), "\n")
		return ls[len(ls)-1]
	}
	assert.Equal(t, ingest.FormatNames(), lines("analyze", "--input", ""))
	assert.Equal(t, []string{"envoy", "envoy-json"}, lines("analyze", "--input", "env"))
	assert.Equal(t, ":4", directive("analyze", "--input", ""), "no file names")
	assert.Equal(t, []string{"json", "text"}, lines("simulate", "-o", ""))
	assert.Equal(t, []string{"html", "json", "markdown", "text"}, lines("analyze", "--format", ""))
	assert.Equal(t, append(targets.Names(), "all"), lines("snippet", "--emit", ""))
	assert.Equal(t, []string{"envoy,grpc"}, lines("analyze", "--emit", "envoy,gr"))
	assert.NotContains(t, lines("analyze", "--emit", "envoy,"), "envoy,envoy", "a target given is not offered again")
	assert.Equal(t, ":6", directive("snippet", "--emit", "envoy,"), "no file names, no space after a list")
	assert.Equal(t, []string{"full", "equal", "decorrelated"}, lines("simulate", "--jitter", ""))
	assert.Equal(t, []string{"worst", "overall"}, lines("prometheus", "--aggregate", ""))
	assert.Equal(t, []string{"ns", "us", "ms", "s"}, lines("analyze", "--unit", ""))
	assert.Equal(t, []string{"ms"}, lines("prometheus", "--unit", "m"))
	assert.Equal(t, []string{"datacenter", "region", "internet", "mobile"}, lines("analyze", "--network-allowance", ""))
	assert.Equal(t, []string{"upstream", "upstream-last", "upstream-header"}, lines("summarize", "--latency", "up"))
	assert.Equal(t, ingest.LatencyNames(), lines("analyze", "--latency", ""), "the registry's measures")
	assert.Equal(t, []string{"route,method", "route,status_class", "route,status", "route,upstream", "route,host", "route,caller", "route,callee"}, lines("analyze", "--by", "route,"))
	assert.Equal(t, []string{"standard", "experimental"}, lines("snippet", "--gateway-api-channel", ""))
	assert.Contains(t, lines("analyze", "--linkerd-resource", ""), "serviceprofile")
	assert.Equal(t, []string{"formats\tEvery input format, its fields, CSV columns", "findings\tWhat check compares, each finding it makes"},
		lines("help", "f"), "the help topics too")
	assert.Contains(t, lines("help", ""), "analyze\tRecommend a timeout from measured latencies (CSV or access logs)")
}

// TestFlagValuesCheckedFirst: a bad flag value is a usage error (exit 2)
// that names the flag and the value, before any input is read: the input
// here is a file that does not exist, which would be exit 1.
func TestFlagValuesCheckedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist.csv")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "--input", "ngnix"}, `--input "ngnix": unknown input format (known: auto, alb,`},
		{[]string{"summarize", "--input", "ngnix"}, `--input "ngnix": unknown input format`},
		{[]string{"analyze", "--confidence", "95"}, "--confidence 95: confidence 95 must lie between 0 and 1"},
		{[]string{"analyze", "--min", "2s", "--max", "1s"}, "--min 2s, --max 1s: minimum 2s is above maximum 1s"},
		{[]string{"analyze", "--rtt", "5ms", "--tight-tail", "-1"}, "--tight-tail -1: tight-tail ratio -1"},
		{[]string{"simulate", "--max", "500us"}, "--max 500µs: maximum 500µs is below 1ms"},
		{[]string{"simulate", "-o", "markdown"}, `unknown output format "markdown" (known: json, text)`},
		// --latency: the measures of the format, of every format for auto
		// (ingest.CheckLatency), as --help and completion list them; a log
		// format given under auto names the server (ingest.ImpliedFormat).
		{[]string{"analyze", "--latency", "upstreem"},
			`--latency: unknown latency measure "upstreem": want request, upstream, upstream-last, upstream-header`},
		{[]string{"analyze", "--nginx-conf", "../../testdata/nginx/nginx.conf", "--log-format-name", "timing", "--latency", "upstreem"},
			`--latency: unknown latency measure "upstreem" for nginx logs: want request, upstream, upstream-last, upstream-header`},
		{[]string{"analyze", "--log-format", "%h %D %>s", "--latency", "upstream"}, `--latency: unknown latency measure "upstream" for apache logs: want request`},
		{[]string{"analyze", "--input", "envoy", "--latency", "upstream-last"}, `--latency: unknown latency measure "upstream-last" for envoy logs: want request, upstream`},
		{[]string{"summarize", "--input", "apache", "--latency", "upstream"}, `--latency: unknown latency measure "upstream" for apache logs: want request`},
		{[]string{"simulate", "--input", "csv", "--latency", "upstream"}, `--latency: csv inputs have one latency, no measure to choose`},
	} {
		_, errOut, code := execute(t, "", append(tc.args, missing)...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, tc.args)
		assert.NotContains(t, errOut, "does-not-exist", "checked before the input is opened")
	}
	// The prometheus command checks them before it connects: nothing
	// listens on port 1.
	_, errOut, code := execute(t, "", "prometheus", "--url", "http://127.0.0.1:1", "--metric", "x_seconds", "--confidence", "95")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "--confidence 95: ")
	// Valid values still run.
	_, errOut, code = execute(t, "", "analyze", "--confidence", "0.99", "--min", "1s", "--max", "2s", mixture)
	assert.Equal(t, 0, code, errOut)
	_, errOut, code = execute(t, "", "analyze", "--nginx-conf", "../../testdata/nginx/nginx.conf", "--log-format-name", "timing",
		"--latency", "upstream-last", "../../testdata/nginx/access.log")
	assert.Equal(t, 0, code, errOut)
	require.NoFileExists(t, missing)
	_, err := os.Stat(mixture)
	require.NoError(t, err)
}

// TestHelpGroups: --help lists the flags by purpose (flagGroups), the
// common ones first in at most one screen (40 lines), every flag once
// and in a group of its own, none left under "Other flags".
func TestHelpGroups(t *testing.T) {
	for _, path := range allCommands(t) {
		out, _, code := execute(t, "", append(path, "--help")...)
		require.Equal(t, 0, code)
		assert.NotContains(t, out, "Other flags:", "tunetimeout %s: a flag in no group", strings.Join(path, " "))
		lines := strings.Split(out, "\n")
		start := slices.Index(lines, "Flags:")
		if start < 0 {
			continue
		}
		n := 0
		for _, l := range lines[start+1:] {
			if l == "" {
				break
			}
			n++
		}
		assert.LessOrEqual(t, n, 40, "tunetimeout %s: the common flags take more than a screen", strings.Join(path, " "))
	}
	out, _, _ := execute(t, "", "analyze", "--help")
	out = out[strings.Index(out, "\nFlags:\n"):] // the Long text and examples name flags too
	for _, heading := range []string{"\nFlags:\n", "\nInput flags", "\nAnalysis flags", "\nRetry policy and simulation flags:\n", "\nSnippet flags"} {
		assert.Contains(t, out, heading)
	}
	assert.Less(t, strings.Index(out, "--pool int"), strings.Index(out, "Input flags"), "--pool is common")
	assert.Greater(t, strings.Index(out, "--backoff-cap"), strings.Index(out, "Retry policy"), "--backoff-cap is policy")
	root := newRoot(nil, nil, nil)
	cmd, _, err := root.Find([]string{"analyze"})
	require.NoError(t, err)
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			n := 0
			for _, l := range strings.Split(out, "\n") {
				if len(l)-len(strings.TrimLeft(l, " ")) > 6 {
					continue // a usage's continuation
				}
				l = strings.TrimSpace(l)
				if len(l) > 4 && l[0] == '-' && l[1] != '-' && l[2] == ',' {
					l = strings.TrimSpace(l[3:]) // -o, --format
				}
				if l == "--"+f.Name || strings.HasPrefix(l, "--"+f.Name+" ") {
					n++
				}
			}
			assert.Equal(t, 1, n, "--%s once", f.Name)
		}
	})
}

// helpScreen is the most lines --help may print before the first list
// of flags or of subcommands: one terminal screen.
const helpScreen = 24

// TestHelpFitsAScreen: every command's --help, usage line included, takes
// at most one screen before its first flag group (or, for a command with
// subcommands, their list: what the root shows first); the reference
// material is in help topics, each listed by the root's help, named at the
// end of the help of the commands it is about, and printed by `tunetimeout
// help TOPIC`.
func TestHelpFitsAScreen(t *testing.T) {
	headings := []string{"Available Commands:", "Other flags:", "Global Flags:"}
	for _, g := range flagGroups {
		headings = append(headings, g.title+":")
	}
	root := newRoot(nil, nil, nil)
	root.InitDefaultHelpCmd()
	for _, path := range allCommands(t) {
		c, _, err := root.Find(path)
		require.NoError(t, err)
		if c.IsAdditionalHelpTopicCommand() {
			continue // a page of reference, not a command
		}
		name := strings.TrimSpace("tunetimeout " + strings.Join(path, " "))
		out, _, code := execute(t, "", append(path, "--help")...)
		require.Equal(t, 0, code)
		lines := strings.Split(out, "\n")
		first := slices.IndexFunc(lines, func(l string) bool { return slices.Contains(headings, l) })
		require.GreaterOrEqual(t, first, 0, "%s --help: no flags", name)
		assert.LessOrEqual(t, first, helpScreen, "%s --help: %d lines before %q", name, first, lines[first])
		assert.Contains(t, lines[:first], "Usage:", "%s --help: the usage line within the first screen", name)
	}

	require.NotEmpty(t, helpTopics)
	out, _, code := execute(t, "", "--help")
	require.Equal(t, 0, code)
	_, listed, ok := strings.Cut(out, "\nAdditional help topics:\n")
	require.True(t, ok, "the root's help lists the help topics")
	named := map[string]bool{}
	for _, path := range allCommands(t) {
		c, _, _ := root.Find(path)
		for _, topic := range topicsOf(c) {
			named[topic.name] = true
		}
	}
	for _, topic := range helpTopics {
		assert.Contains(t, flat(listed), "tunetimeout help "+topic.name+" "+flat(topic.short), "the root lists %s", topic.name)
		assert.True(t, named[topic.name], "no command names the help topic %s", topic.name)
		out, errOut, code := execute(t, "", "help", topic.name)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, strings.TrimSpace(topic.long), strings.TrimSpace(out), "tunetimeout help %s", topic.name)
	}

	// A command names its topics at the end of its help.
	for _, tc := range []struct {
		cmd    string
		topics []string
	}{
		{"analyze", []string{"formats", "status", "timeout", "policy", "targets"}},
		{"check", []string{"findings", "formats"}},
		{"watch", []string{"endpoints", "histograms"}},
		{"snippet", []string{"targets"}},
	} {
		out, _, code := execute(t, "", tc.cmd, "--help")
		require.Equal(t, 0, code)
		_, end, ok := strings.Cut(out, "\nAdditional help topics:\n")
		require.True(t, ok, "%s --help names its help topics", tc.cmd)
		for _, topic := range tc.topics {
			assert.Contains(t, end, "tunetimeout help "+topic+" ", "%s --help", tc.cmd)
		}
	}
}

// TestHelpTopicsKeepTheReference: the reference the commands' help held
// before it moved to the topics is still there, whole.
func TestHelpTopicsKeepTheReference(t *testing.T) {
	for _, tc := range []struct {
		topic string
		want  []string
	}{
		{"formats", []string{"Input formats (--input; the default, auto,", "ingress-nginx", "otlp-metrics",
			"CSV: the latency column is --column", "routes are normalized (/users/42 -> /users/{id}) unless --route-pattern matches"}},
		{"status", []string{"1xx-4xx count, 5xx are left out (--include-errors keeps them)", "--strict makes the first one fatal"}},
		{"timeout", []string{"Network allowance presets: datacenter (0s), region (10ms), internet (300ms), mobile (1s).",
			"a bare 0.1 is refused as ambiguous"}},
		{"policy", []string{"--deadline bounds the whole call and --attempts the attempts within it",
			"RFC 9110 section 9.2.2", "400, 401, 403, 404 and 422 are never retried", "The same --seed gives the same figures."}},
		{"targets", []string{"gRPC's JSON cannot hold comments", "resilience4j", `under a "# ---" line`}},
		{"findings", []string{"--map OBJECT=GROUP", "a connect timeout longer than analyze's rule allows",
			"--suggest writes the edits", "Exit codes: 0 when no finding is at or above --fail-on"}},
		{"histograms", []string{"sum by (le) (increase(NAME_bucket[WINDOW])) at --at", "vmrange", "--aggregate overall"}},
		{"alerting", []string{"tunetimeout:false_timeout:ratio_rateW", "histogram_fraction", "--test-out a promtool unit test"}},
		{"endpoints", []string{"/-/ready       200 once a run has succeeded, 503 before", "tunetimeout_last_run_success to 0",
			"the exit code is then 130"}},
		{"servers", []string{"never appear in output or errors", "one that answers that many is split in two halves",
			"larger than --max-response-bytes (256MiB) fails its query", "--basic-auth-password-file"}},
		{"database", []string{"--input buckets", "a floating-point column can put a value one microsecond off",
			"route_target column", "have ClickHouse make the routes itself"}},
		{"interval-logs", []string{"in microseconds, with the group in its Tag=", "since the Unix epoch",
			"merges one-minute summaries into one file"}},
	} {
		out, errOut, code := execute(t, "", "help", tc.topic)
		require.Equal(t, 0, code, errOut)
		for _, want := range tc.want {
			assert.Contains(t, flat(out), flat(want), "tunetimeout help %s", tc.topic)
		}
	}
}
