package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

// TestCheckWritersEscape: names from the data and the configs (a bidi
// override, NEL, ESC, BEL) reach no check output raw; JSON and SARIF keep
// them as \uXXXX escapes, so the document decodes to the same names.
// check -o json once wrote them raw in unmatched_groups.
func TestCheckWritersEscape(t *testing.T) {
	hostile := "/admin\u202e/gpj.exe\u0085\x1b[31m\x07"
	c := &Check{
		Input:           Input{Files: []string{"calls" + hostile + ".csv"}},
		Configs:         []string{"envoy" + hostile + ".yaml"},
		UnmatchedGroups: []string{hostile},
		UnmatchedConfig: []ConfigObject{{File: "envoy.yaml", Line: 3, Target: "envoy", Kind: "route", Object: "route " + hostile}},
		Notes:           []string{"note " + hostile},
		Findings: []CheckFinding{{Code: "TT-CHECK-TIMEOUT-CUTS-OFF", Severity: "error", File: "envoy.yaml", Line: 9, Target: "envoy",
			Object: "route " + hostile, Group: hostile, Message: "cuts off " + hostile}},
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"json":     func(b *bytes.Buffer) error { return WriteCheckJSON(b, c) },
		"sarif":    func(b *bytes.Buffer) error { return WriteCheckSARIF(b, c) },
		"text":     func(b *bytes.Buffer) error { return WriteCheckText(b, c) },
		"markdown": func(b *bytes.Buffer) error { return WriteCheckMarkdown(b, c) },
	} {
		var b bytes.Buffer
		require.NoError(t, write(&b), name)
		for _, r := range b.String() {
			if r == '\n' || (r == '\t' && name == "text") {
				continue
			}
			require.False(t, escape.Unsafe(r), "%s: %U raw in the output:\n%s", name, r, b.String())
		}
		if name == "json" {
			var back Check
			require.NoError(t, json.Unmarshal(b.Bytes(), &back))
			assert.Equal(t, []string{hostile}, back.UnmatchedGroups)
			assert.Equal(t, hostile, back.Findings[0].Group)
		}
	}
}
