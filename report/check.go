package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Check is what `tunetimeout check` found: the configs' values held
// against the data, each finding at the config's file and line
// (docs/check.md).
type Check struct {
	Input   Input    `json:"input"`
	Configs []string `json:"configs"`
	// Findings are in the order of the configs' files and lines.
	Findings []CheckFinding `json:"findings"`
	// UnmatchedConfig are the config objects no group of the data maps
	// to; UnmatchedGroups the groups no config object maps to. Neither is
	// dropped silently: --map sends one to the other.
	UnmatchedConfig []ConfigObject `json:"unmatched_config"`
	UnmatchedGroups []string       `json:"unmatched_groups"`
	// Notes say what was read and not checked: the messages of
	// NoteFindings, in order (Note adds both).
	Notes []string `json:"notes"`
	// NoteFindings are the notes as findings, with their codes and
	// numbers (docs/findings.md): a config reader's note on an object, a
	// config with no policy, configs that retry without --chain.
	NoteFindings []Finding `json:"note_findings"`
	// ToolVersion is the version of tunetimeout that checked, which the
	// SARIF log names (WriteCheckSARIF); "" is "dev". The command sets it:
	// report cannot know it.
	ToolVersion string `json:"-"`
}

// CheckFinding is one finding of check: a finding code (docs/findings.md),
// where in the config, which object and group, and its numbers (Measured;
// timeout findings carry configured_seconds, cut_off_fraction,
// recommended_seconds and in_flight_during_hang).
type CheckFinding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Target   string `json:"target"`
	Object   string `json:"object"`
	Group    string `json:"group"`
	// Groups are all the groups the value affects, each with its own
	// figure ("/api/search 1.07 %"), when there are several; Group and
	// Measured are then the worst one's.
	Groups   []string       `json:"groups,omitempty"`
	Message  string         `json:"message"`
	Measured finding.Fields `json:"measured"`
	// Baseline: the finding is in the --baseline check given, accepted
	// as known; it never fails the check.
	Baseline bool `json:"baseline,omitempty"`
	// Fix is the edit that brings the value to the recommendation
	// (--suggest); nil when there is none to make in the file.
	Fix *Fix `json:"fix,omitempty"`
}

// Note adds f to the check's note findings and its message to the notes.
func (c *Check) Note(f Finding) {
	c.NoteFindings = append(c.NoteFindings, f)
	c.Notes = append(c.Notes, f.Message)
}

// ConfigObject names a config object.
type ConfigObject struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Target string `json:"target"`
	Kind   string `json:"kind"`
	Object string `json:"object"`
}

// Counts returns how many findings there are of each severity, the
// baseline's left out, and how many of the baseline there are.
func (c *Check) Counts() (bySeverity map[string]int, baseline int) {
	out := map[string]int{}
	for _, f := range c.Findings {
		if f.Baseline {
			baseline++
			continue
		}
		out[f.Severity]++
	}
	return out, baseline
}

// AtLeast reports whether a finding not in the baseline is at or above
// severity (info, warning, error).
func (c *Check) AtLeast(severity string) bool {
	rank := map[string]int{string(finding.Info): 0, string(finding.Warning): 1, string(finding.Error): 2}
	for _, f := range c.Findings {
		if !f.Baseline && rank[f.Severity] >= rank[severity] {
			return true
		}
	}
	return false
}

// WriteCheckJSON writes the check as JSON.
func WriteCheckJSON(w io.Writer, c *Check) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return err
	}
	_, err := w.Write(escape.JSON(b.Bytes()))
	return err
}

// WriteCheckText writes the check for a terminal, one finding a paragraph
// as compilers write them: "file:line: severity [CODE] object (group):
// message". Names from the configs and the data are shown with their
// control characters escaped.
func WriteCheckText(w io.Writer, c *Check) error {
	v := escape.Visible
	var b strings.Builder
	fmt.Fprintf(&b, "Read %s records from %s; checked %s.\n", human.Count(c.Input.Records), v(strings.Join(c.Input.Files, ", ")), v(strings.Join(c.Configs, ", ")))
	for _, n := range c.Notes {
		b.WriteString(v(n) + "\n")
	}
	for _, f := range c.Findings {
		head := fmt.Sprintf("%s:%d: %s [%s] %s", v(f.File), f.Line, f.Severity, f.Code, v(f.Object))
		if f.Group != "" {
			head += " (" + v(f.Group) + ")"
		}
		if f.Baseline {
			head += " [baseline]"
		}
		b.WriteString("\n" + wrap(head+": "+v(f.Message), "", textWidth))
	}
	if len(c.UnmatchedConfig) > 0 {
		fmt.Fprintf(&b, "\nConfig with no data (give %s OBJECT=GROUP, or data grouped by route):\n", usage.Map)
		for _, o := range c.UnmatchedConfig {
			fmt.Fprintf(&b, "  %s:%d: %s %s\n", v(o.File), o.Line, v(o.Kind), v(o.Object))
		}
	}
	if len(c.UnmatchedGroups) > 0 {
		b.WriteString("\nGroups no config object covers:\n")
		for _, g := range c.UnmatchedGroups {
			b.WriteString("  " + v(g) + "\n")
		}
	}
	b.WriteString("\n" + checkVerdict(c) + ".\n")
	_, err := io.WriteString(w, escape.Lines(b.String()))
	return err
}
