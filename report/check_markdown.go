package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// WriteCheckMarkdown writes the check as GitHub-flavoured Markdown for a
// pull-request comment: a heading, the verdict ("2 errors, 1 warning"),
// one table row a finding (severity, file:line, object, group, the code
// linked to its section of docs/findings.md and the message), then the
// config objects and groups that met nothing, and the notes. Every text
// from the configs and the data is escaped (md), so an object named
// <script> or a|b reads as itself and keeps its row's columns.
func WriteCheckMarkdown(w io.Writer, c *Check) error {
	var b strings.Builder
	b.WriteString("## tunetimeout check\n\n")
	fmt.Fprintf(&b, "**%s.** Checked %s against %s records from %s.\n", checkVerdict(c), mdList(c.Configs),
		human.Count(c.Input.Records), mdList(c.Input.Files))
	if len(c.Findings) > 0 {
		b.WriteString("\n| severity | where | object | group | finding |\n|---|---|---|---|---|\n")
		for _, f := range c.Findings {
			sev := f.Severity
			if sev == "error" {
				sev = "**error**"
			}
			if f.Baseline {
				sev += " (baseline)"
			}
			finding := "[" + md(f.Code) + "](" + FindingHelpURI(f.Code) + "): " + md(f.Message)
			b.WriteString("| " + sev + " | " + mdWhere(f.File, f.Line) + " | " + cell(md(f.Object)) + "| " +
				cell(md(f.Group)) + "| " + finding + " |\n")
		}
	}
	if len(c.UnmatchedConfig) > 0 {
		fmt.Fprintf(&b, "\nConfig with no data (give `%s OBJECT=GROUP`, or data grouped by route):\n\n| where | kind | object |\n|---|---|---|\n", usage.Map)
		for _, o := range c.UnmatchedConfig {
			b.WriteString("| " + mdWhere(o.File, o.Line) + " | " + cell(md(o.Kind)) + "| " + cell(md(o.Object)) + "|\n")
		}
	}
	// Names from the data never start a line, where they could be read as
	// a heading or a list ("# x", "1. x").
	if len(c.UnmatchedGroups) > 0 {
		b.WriteString("\nGroups no config object covers: " + mdList(c.UnmatchedGroups) + ".\n")
	}
	for _, n := range c.Notes {
		b.WriteString("\nNote: " + md(n) + "\n")
	}
	_, err := io.WriteString(w, escape.Lines(b.String()))
	return err
}

// checkVerdict counts the findings by severity, the worst first, leaving
// out the severities none has: "2 errors, 1 warning"; "No findings".
func checkVerdict(c *Check) string {
	n, known := c.Counts()
	var parts []string
	for _, s := range []struct{ severity, one, many string }{
		{"error", "error", "errors"}, {"warning", "warning", "warnings"}, {"info", "info", "info"},
	} {
		switch k := n[s.severity]; k {
		case 0:
		case 1:
			parts = append(parts, "1 "+s.one)
		default:
			parts = append(parts, strconv.Itoa(k)+" "+s.many)
		}
	}
	verdict := strings.Join(parts, ", ")
	if len(parts) == 0 {
		verdict = "No findings"
	}
	if known > 0 {
		verdict += fmt.Sprintf(" (and %d known from the baseline)", known)
	}
	return verdict
}

// mdList is names from the input, escaped, separated by commas.
func mdList(names []string) string {
	var out []string
	for _, n := range names {
		out = append(out, md(n))
	}
	return strings.Join(out, ", ")
}

// mdWhere is file:line, escaped; the file alone when the line is unknown.
func mdWhere(file string, line int) string {
	if line < 1 {
		return md(file)
	}
	return md(file) + ":" + strconv.Itoa(line)
}
