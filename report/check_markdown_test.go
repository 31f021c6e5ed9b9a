package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckMarkdown: the verdict counts the findings, each is one row at
// its file:line with its code linked to docs/findings.md, and the config
// and groups that met nothing follow.
func TestCheckMarkdown(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteCheckMarkdown(&b, checkSample()))
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "## tunetimeout check\n\n**2 errors, 3 warnings, 2 info.** Checked "), out)
	assert.Contains(t, out, "against 200,961 records from testdata/mixture.csv.")
	assert.Contains(t, out, "| **error** | analysis/testdata/check/envoy-250ms.yaml:21 | local\\_route/backend/route 1 | all | "+
		"[TT-CHECK-TIMEOUT-CUTS-OFF](https://github.com/tunetimeout/tunetimeout/blob/main/docs/findings.md#tt-check-timeout-cuts-off): the timeout of 250ms cuts off")
	assert.Contains(t, out, "| warning | analysis/testdata/check/envoy-3-attempts.yaml:24 | local\\_route/backend/route 1 | | [TT-CHECK-RETRY-LAYERS]",
		"no group: an empty cell")
	assert.Contains(t, out, "| ./analysis/testdata/check/grpc-3-attempts.json:4 | method | shop.Orders |")
	assert.Contains(t, out, "| warning | /etc/envoy/my envoy.yaml | backend |", "no line: the file alone")
	assert.Contains(t, out, "\nGroups no config object covers: GET /health.\n")
	assert.Contains(t, out, "\nNote: empty.yaml: no timeout or retry policy found (read as envoy).\n")
	assert.Equal(t, len(checkSample().Findings), strings.Count(out, "](https://github.com/tunetimeout/tunetimeout/blob/main/docs/findings.md#"))

	for _, tt := range []struct {
		sev  []string
		want string
	}{
		{nil, "No findings"},
		{[]string{"error"}, "1 error"},
		{[]string{"warning", "info", "info"}, "1 warning, 2 info"},
		{[]string{"info", "error", "warning", "warning"}, "1 error, 2 warnings, 1 info"},
	} {
		c := &Check{}
		for _, s := range tt.sev {
			c.Findings = append(c.Findings, CheckFinding{Severity: s})
		}
		assert.Equal(t, tt.want, checkVerdict(c), "%v", tt.sev)
	}
}

// TestCheckMarkdownHostile: names from configs and data that hold HTML,
// pipes, backticks, emphasis or line breaks read as themselves: no raw
// HTML, no code span or cell they open or close, no line they start.
func TestCheckMarkdownHostile(t *testing.T) {
	c := checkSample()
	evil := "<script>alert(1)</script> a|b `x` *y*\n| forged | row |"
	c.Findings[0].Object = evil
	c.Findings[0].Group = "`|`"
	c.Findings[1].Message = "the object " + evil + " has no timeout"
	c.Findings[2].File = "conf|ig `x`.conf"
	c.UnmatchedConfig[0].Object = evil
	c.UnmatchedGroups = []string{"# heading", "1. list", "<img src=x onerror=alert(1)>"}
	c.Notes = []string{"- " + evil}
	var b bytes.Buffer
	require.NoError(t, WriteCheckMarkdown(&b, c))
	out := b.String()

	assert.Contains(t, out, "| \\<script\\>alert(1)\\</script\\> a\\|b \\`x\\` \\*y\\* \\| forged \\| row \\| | \\`\\|\\` | ")
	assert.Contains(t, out, "| conf\\|ig \\`x\\`.conf:6 |")
	assert.Contains(t, out, "covers: # heading, 1. list, \\<img src=x onerror=alert(1)\\>.\n")
	for i, line := range strings.Split(out, "\n") {
		assert.NotRegexp(t, `(^|[^\\])<[a-zA-Z/]`, line, "raw HTML: %q", line)
		if i == 0 || strings.HasPrefix(line, "Config with no data") {
			continue // the heading; the one code span, ours
		}
		assert.NotRegexp(t, "(^|[^\\\\])`", line, "an unescaped backtick opens a code span: %q", line)
		assert.NotRegexp(t, `^(#|\d+\.|[-+*] |>)`, line, "a name starts a line: %q", line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| severity ") || strings.HasPrefix(line, "| where ") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(line, -1)) - 1
		if strings.Contains(line, "](https://") {
			assert.Equal(t, 5, cells, "a finding row keeps its five cells: %q", line)
		} else {
			assert.Equal(t, 3, cells, "an unmatched row keeps its three cells: %q", line)
		}
	}
}

// TestCheckTextVerdict: the text ends with the verdict Markdown gives,
// each count with its noun in the number it takes: "1 error", not
// "1 findings: 1 errors" (issue 29).
func TestCheckTextVerdict(t *testing.T) {
	for _, tt := range []struct {
		sev  []string
		want string
	}{
		{nil, "\n\nNo findings.\n"},
		{[]string{"error"}, "\n\n1 error.\n"},
		{[]string{"warning", "info", "info"}, "\n\n1 warning, 2 info.\n"},
		{[]string{"error", "error", "warning", "warning"}, "\n\n2 errors, 2 warnings.\n"},
	} {
		c := &Check{}
		for _, s := range tt.sev {
			c.Findings = append(c.Findings, CheckFinding{Severity: s})
		}
		var b bytes.Buffer
		require.NoError(t, WriteCheckText(&b, c))
		assert.True(t, strings.HasSuffix(b.String(), tt.want), "%v: %q", tt.sev, b.String())
	}
}
