package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with the golden file testdata/golden/name, or rewrites
// it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/tunetimeout -update to create it")
	assert.Equal(t, string(want), string(got))
}

// execute runs one command line in-process.
func execute(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

const mixture = "../../testdata/mixture.csv"

// TestGoldenReports pins the text and JSON reports of the README's worked example.
func TestGoldenReports(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "-o", format)
			require.Equal(t, 0, code, errOut)
			golden(t, "analyze-mixture."+format, []byte(out))
		})
	}
	t.Run("nginx by route", func(t *testing.T) {
		out, errOut, code := execute(t, "", "analyze", "--nginx-conf", "../../testdata/nginx/nginx.conf",
			"--log-format-name", "timing", "--by", "route", "--pool", "64", "../../testdata/nginx/access.log")
		require.Equal(t, 0, code, errOut)
		golden(t, "analyze-nginx-by-route.text", []byte(out))
	})
	t.Run("by route", func(t *testing.T) {
		out, errOut, code := execute(t, "", "analyze", mixture, "--by", "route", "--pool", "200", "--rtt", "2ms")
		require.Equal(t, 0, code, errOut)
		golden(t, "analyze-mixture-by-route.text", []byte(out))
	})
}

// TestJSONContract checks the field names other tools rely on.
func TestJSONContract(t *testing.T) {
	out, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	groups := doc["groups"].([]any)
	require.Len(t, groups, 1)
	g := groups[0].(map[string]any)
	for _, k := range []string{"name", "samples", "censored", "excluded", "percentiles", "recommendation", "candidates", "littles_law"} {
		assert.Contains(t, g, k)
	}
	rec := g["recommendation"].(map[string]any)
	for _, k := range []string{"quantile", "timeout_seconds", "connect_timeout_seconds", "steps", "warnings"} {
		assert.Contains(t, rec, k)
	}
	assert.Nil(t, rec["connect_timeout_seconds"], "no --rtt: the connect timeout is unknown")
	step := rec["steps"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"rule", "seconds", "reason"}, keys(step))
	cand := g["candidates"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"timeout_seconds", "cut_off_fraction", "in_flight_during_hang", "pool_multiple"}, keys(cand))
	ll := g["littles_law"].(map[string]any)
	for _, k := range []string{"rate_per_second", "peak_rate_per_second", "pool", "in_flight_normal", "in_flight_during_hang", "pool_exhausted", "seconds_to_exhaustion", "bulkhead"} {
		assert.Contains(t, ll, k)
	}
	assert.Equal(t, 400.0, ll["rate_per_second"])
	assert.Equal(t, true, ll["pool_exhausted"])
	var qs []float64
	for _, p := range g["percentiles"].([]any) {
		qs = append(qs, p.(map[string]any)["quantile"].(float64))
	}
	assert.Subset(t, qs, []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1})
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestExitCodes runs the real binary: exit codes are API.
func TestExitCodes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tunetimeout")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	empty := filepath.Join(t.TempDir(), "empty.csv")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"success", []string{"analyze", mixture, "-o", "json"}, 0, ""},
		{"version", []string{"version"}, 0, ""},
		{"missing file", []string{"analyze", "does-not-exist.csv"}, 1, "does-not-exist.csv: no such file or directory"},
		{"empty file", []string{"analyze", empty}, 1, "empty input"},
		{"unknown flag", []string{"analyze", "--no-such-flag", mixture}, 2, "unknown flag: --no-such-flag"},
		{"bad percentage", []string{"analyze", "--false-timeouts", "abc", mixture}, 2, "--false-timeouts"},
		{"unknown output", []string{"analyze", "-o", "yaml", mixture}, 2, `unknown output format "yaml"`},
		{"file name as format", []string{"analyze", "-o", "report.json", mixture}, 2, `unknown output format "report.json" (known: html, json, markdown, text): -o is the format; did you mean --output report.json?`},
		{"file name as check format", []string{"check", "x.yaml", "--data", mixture, "-o", "out/check.sarif"}, 2, `did you mean --output out/check.sarif?`},
		{"bad network preset", []string{"analyze", "--network-allowance", "satellite", mixture}, 2, "--network-allowance"},
		// Every wrong command line is 2, whichever part of it is wrong:
		// for check, 1 is "findings", and a typo must not read as a
		// failed gate in CI.
		{"unknown command", []string{"analyse", mixture}, 2, `unknown command "analyse" for "tunetimeout"; did you mean analyze?`},
		{"unknown help topic", []string{"help", "nope"}, 2, `unknown help topic "nope"`},
		{"unknown command, no suggestion", []string{"frobnicate"}, 2, `unknown command "frobnicate" for "tunetimeout"; the commands are analyze, check,`},
		{"check without configs", []string{"check", "--data", mixture}, 2, "check: name the config files to check"},
		{"check with no arguments", []string{"check"}, 2, "check: name the config files to check"},
		{"snippet given a file", []string{"snippet", "rep.json"}, 2, `snippet reads no files (got "rep.json"): give --report rep.json`},
		{"version given a file", []string{"version", "x"}, 2, `version takes no arguments (got "x")`},
		{"unknown flag of check", []string{"check", "envoy.yaml", "--data", mixture, "--fail-on-error"}, 2, "unknown flag: --fail-on-error"},
		{"bad flag value of check", []string{"check", "envoy.yaml", "--data", mixture, "--pool", "many"}, 2, `invalid argument "many" for "--pool"`},
		{"--by field no log has", []string{"analyze", "--nginx-conf", "../../testdata/nginx/nginx.conf", "--log-format-name", "timing",
			"--by", "rout", "../../testdata/nginx/access.log"}, 2, `cannot group by "rout": log formats group by route, method,`},
		{"--by column the CSV lacks", []string{"analyze", "--by", "rout", mixture}, 2, `--by column "rout" not found; the columns are`},
		{"check --data with a --by no log has", []string{"check", "../../testdata/nginx/nginx.conf", "--data", "../../testdata/nginx/access.log",
			"--nginx-conf", "../../testdata/nginx/nginx.conf", "--log-format-name", "timing", "--by", "rout"}, 2, `cannot group by "rout"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantCode, code, stderr.String())
			if tt.wantErr != "" {
				assert.Contains(t, stderr.String(), tt.wantErr)
				assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "a runtime error is one line, not the usage: %q", stderr.String())
				assert.NotContains(t, stderr.String(), `\x09`, "cobra's own text is not data: its tabs are not escapes")
			}
		})
	}
}

// TestHelpHasExamples: every command documents itself with examples.
func TestHelpHasExamples(t *testing.T) {
	root := newRoot(nil, nil, nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.IsAdditionalHelpTopicCommand() {
			return
		}
		assert.NotEmpty(t, c.Example, "command %q has no Examples block", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out, _, code := execute(t, "", "analyze", "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "Examples:")
	assert.Contains(t, out, "--false-timeouts")
}

// TestReadmeExamples: the README shows the real output of its worked
// example, and docs/input.md that of its nginx example, as pinned by the
// golden files (from the line after "Read ... from <file>", whose path
// differs).
func TestReadmeExamples(t *testing.T) {
	for _, tt := range []struct{ doc, golden string }{
		{"README.md", "analyze-mixture.text"},
		{filepath.Join("docs", "input.md"), "analyze-nginx-by-route.text"},
	} {
		doc, err := os.ReadFile(filepath.Join("..", "..", tt.doc))
		require.NoError(t, err)
		g, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", tt.golden))
		require.NoError(t, err)
		_, body, ok := strings.Cut(string(g), "\n")
		require.True(t, ok)
		assert.Contains(t, string(doc), body, "%s is out of date with %s", tt.doc, tt.golden)
	}
}

// TestQuantileCutsOffAtMostTheShare: `seq 1 1600 | tunetimeout analyze
// --unit ms -` takes as p99.9 the 1,599th call (rank ceil(0.999 x 1600)),
// with 1 call above it, not the 1,598th (rank round(0.999 x 1600)), which
// would cut off 2 (0.125 %, more than the 0.1 % asked for).
func TestQuantileCutsOffAtMostTheShare(t *testing.T) {
	var in strings.Builder
	for i := 1; i <= 1600; i++ {
		fmt.Fprintf(&in, "%d\n", i)
	}
	out, stderr, code := execute(t, in.String(), "analyze", "--unit", "ms", "-o", "json", "-")
	require.Equal(t, 0, code, stderr)
	var r struct {
		Groups []struct {
			Recommendation struct {
				BaseSeconds float64 `json:"base_seconds"`
				Interval    struct {
					SamplesAbove int64 `json:"samples_above"`
				} `json:"interval"`
				Steps []struct {
					Reason string `json:"reason"`
				} `json:"steps"`
			} `json:"recommendation"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.Groups, 1)
	rec := r.Groups[0].Recommendation
	assert.EqualValues(t, 1, rec.Interval.SamplesAbove)
	assert.InDelta(t, 1.599, rec.BaseSeconds, 1.599/1024, "the 1,599th call, within HDR precision")
	assert.Greater(t, rec.BaseSeconds, 1.5985, "not the 1,598th")
	assert.Contains(t, rec.Steps[0].Reason, "1 call slower (0.0625 %; at most the 0.1 % asked for)")
}

// userDocs returns the README and the documents of docs/ (not the
// generated CLI reference) as one text: the examples they show are the
// real output, pinned by the golden files.
func userDocs() ([]byte, error) {
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	var all []byte
	for _, f := range append([]string{filepath.Join("..", "..", "README.md")}, docs...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(append(all, b...), '\n')
	}
	return all, nil
}

// TestStdinNotice: analyze, simulate and summarize with no file (or "-")
// say on standard error that they read standard input when it is a
// terminal, and only then: piped input is read without a word.
func TestStdinNotice(t *testing.T) {
	const notice = "tunetimeout: reading standard input; Ctrl-D ends it\n"
	in := "100\n200\n300\n"
	for _, args := range [][]string{
		{"analyze", "--unit", "ms"},
		{"analyze", "--unit", "ms", "-"},
		{"simulate", "--unit", "ms", "--requests", "100"},
		{"summarize", "--input", "csv", "--unit", "ms"},
	} {
		_, errOut, code := execute(t, in, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.NotContains(t, errOut, "standard input", "%v: not a terminal", args)
	}
	orig := isTerminalInput
	t.Cleanup(func() { isTerminalInput = orig })
	isTerminalInput = func(io.Reader) bool { return true }
	for _, args := range [][]string{
		{"analyze", "--unit", "ms"},
		{"analyze", "--unit", "ms", "-"},
		{"simulate", "--unit", "ms", "--requests", "100"},
		{"summarize", "--input", "csv", "--unit", "ms"},
	} {
		_, errOut, code := execute(t, in, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		assert.True(t, strings.HasPrefix(errOut, notice), "%v: %q", args, errOut)
	}
	_, errOut, code := execute(t, in, "analyze", mixture)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "standard input", "a file named: nothing read from the terminal")
}
