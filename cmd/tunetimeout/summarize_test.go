package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The per-host workflow of the README on the command line: summarise two
// halves of the worked example's CSV, analyse the summaries together, get
// the worked example's report (the first line, which names the inputs,
// aside).
func TestSummarizeThenAnalyze(t *testing.T) {
	data, err := os.ReadFile(mixture)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	header, rows := lines[0], lines[1:]
	dir := t.TempDir()
	var hlogs []string
	for i, part := range [][]string{rows[:len(rows)/3], rows[len(rows)/3:]} {
		csv := filepath.Join(dir, "host"+string(rune('a'+i))+".csv")
		require.NoError(t, os.WriteFile(csv, []byte(header+strings.Join(part, "")), 0o644))
		hlog := strings.TrimSuffix(csv, ".csv") + ".hlog"
		_, errOut, code := execute(t, "", "summarize", csv, "--interval", "10s", "--output", hlog)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, hlog+": ")
		hlogs = append(hlogs, hlog)
	}
	// Summaries are analysed window by window at their interval, as the
	// raw rows are with that --window; --window 0 analyses neither.
	want, errOut, code := execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200", "--window", "10s")
	require.Equal(t, 0, code, errOut)
	got, errOut, code := execute(t, "", append([]string{"analyze", "--rate", "400", "--pool", "200"}, hlogs...)...)
	require.Equal(t, 0, code, errOut)
	cut := func(s string) string { return s[strings.Index(s, "\n"):] }
	note := "\n- Every input is an interval log: each window of 10s, their interval, is analysed too, as with --window 10s (--window sets another length, --window 0 none).\n"
	assert.Contains(t, got, note)
	assert.Equal(t, cut(want), strings.Replace(cut(got), note, "\n", 1))
	assert.Contains(t, got, "\nWindows\n")
	assert.Regexp(t, `\n  p99.9 +792ms  95 %`, got)

	want, errOut, code = execute(t, "", "analyze", mixture, "--rate", "400", "--pool", "200")
	require.Equal(t, 0, code, errOut)
	got, errOut, code = execute(t, "", append([]string{"analyze", "--rate", "400", "--pool", "200", "--window", "0"}, hlogs...)...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, cut(want), cut(got))

	// Standard output when no file is named, and the interval log is
	// detected by its first line whatever the file's name.
	out, errOut, code := execute(t, "", "summarize", "--interval", "1h", mixture)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "#[tunetimeout interval log 1"), out[:80])
	stdin, _, code := execute(t, out, "analyze", "--rate", "400", "--pool", "200", "-")
	require.Equal(t, 0, code)
	assert.Equal(t, cut(want), cut(stdin))
}

func TestSummarizeUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"summarize", "--interval", "1500ms", mixture}, "want whole seconds"},
		{[]string{"summarize", "--interval", "0s", mixture}, "want whole seconds"},
		{[]string{"summarize", "--from", "yesterday", mixture}, `--from: "yesterday" is neither`},
		{[]string{"analyze", "--from", "2026-11-02T11:00:00Z", "--to", "2026-11-02T10:00:00Z", mixture}, "is not before --to"},
	} {
		_, errOut, code := execute(t, "", tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errOut, tc.want)
	}
	// Nothing to summarise: exit 1, and no file left behind.
	out := filepath.Join(t.TempDir(), "empty.hlog")
	empty := filepath.Join(t.TempDir(), "empty.csv")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, errOut, code := execute(t, "", "summarize", "--output", out, empty)
	assert.Equal(t, 1, code, errOut)
	assert.NoFileExists(t, out)
}

// -o, which names the output format in analyze, simulate and prometheus,
// still names summarize's output file, with a warning.
func TestSummarizeOldShorthand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "all.hlog")
	_, errOut, code := execute(t, "", "summarize", "--interval", "1h", "-o", out, mixture)
	require.Equal(t, 0, code, errOut)
	assert.FileExists(t, out)
	assert.True(t, strings.HasPrefix(errOut, "Flag shorthand -o has been deprecated, use --output"), errOut)
}
