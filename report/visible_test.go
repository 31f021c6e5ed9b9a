package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

// controls are names seen to drive a terminal or forge report lines: an SGR
// colour and a screen clear, an OSC 52 clipboard write, an 8-bit CSI, a
// bidi override, and a newline inside a quoted CSV group.
var controls = []string{
	"/a\x1b[31mred\x1b[2J",
	"\x1b]52;c;ZWNobyBoaQ==\x07",
	"/x\u009b2J",
	"/admin\u202e/gpj.exe",
	"/ok\n\n== evil: 1 calls ==\n",
}

// controlReport is hostile() with control characters in every text from
// the input.
func controlReport() *Report {
	r := hostile()
	r.Input.Files = []string{controls[0]}
	r.Input.Notes = []string{controls[4]}
	r.Input.BadExamples = []string{controls[1]}
	for i := range r.Groups {
		p := controls[i%len(controls)]
		g := &r.Groups[i]
		g.Name = p
		g.Excluded = map[string]int64{p: 1}
		g.Recommendation.Warnings = []string{p}
		g.LittlesLaw.Verdict = p
		g.Policy.Warnings = []string{p}
		g.Policy.Steps = []Step{{Rule: "hang", Reason: p}}
	}
	r.Groups = append(r.Groups, r.Groups[0])
	r.Groups[len(r.Groups)-1].Name = controls[4]
	r.SharedPool = &SharedPool{Pool: 4, Groups: 2, Verdict: controls[2]}
	r.Snippets = nil
	return r
}

// TestNamesFromDataEscaped: in every output format a name from the data
// shows its control and bidirectional characters as visible escapes, never
// raw, and a newline in one cannot start a line of the report; JSON keeps
// the names exact (they decode to what was read) in its own escapes.
func TestNamesFromDataEscaped(t *testing.T) {
	r := controlReport()
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			w, err := Lookup(format)
			require.NoError(t, err)
			var b bytes.Buffer
			require.NoError(t, w(&b, r))
			out := b.String()
			for _, c := range out {
				if c != '\n' && c != '\t' {
					require.False(t, escape.Unsafe(c), "%q raw in the %s report", c, format)
				}
			}
			assert.NotContains(t, out, "\n== evil", "a newline in a name forged a line")
			if format == "json" {
				var back Report
				require.NoError(t, json.Unmarshal(b.Bytes(), &back))
				assert.Equal(t, controls[0], back.Groups[0].Name, "JSON keeps the name")
				assert.Equal(t, controls[2], back.SharedPool.Verdict)
				assert.Contains(t, out, `\u009b`)
				return
			}
			shown := func(s string) string {
				if format == "markdown" {
					return md(s) // whose backslashes are escaped in turn
				}
				return s
			}
			assert.Contains(t, out, shown(`\x1b[31mred`), "ESC shown as \\x1b")
			assert.Contains(t, out, shown(`\u202e`), "the bidi override shown")
			assert.Contains(t, out, shown(`/ok\x0a\x0a== evil`), "the newline shown, on the name's own line")
			assert.Equal(t, strings.Count(r.Groups[0].Name, "\x1b"), 2, "the report itself is left alone")
		})
	}
	var b bytes.Buffer
	require.NoError(t, WritePolicyText(&b, r))
	assert.NotContains(t, b.String(), "\x1b")
	assert.Contains(t, b.String(), `\x1b[31mred`)
}

// FuzzRenderers puts any text where the data put names, files, notes and
// bad examples, and renders every format, the policy formats among them:
// no control or bidirectional character reaches the output raw, HTML shows
// a tag in a name as text, and JSON decodes back to the names as read.
func FuzzRenderers(f *testing.F) {
	for _, c := range controls {
		f.Add(c, "x")
	}
	f.Add("<x-fuzz>a</x-fuzz>", "\r\n\x00")
	f.Add("\xff\xfe", "\u2066\u2069")
	f.Fuzz(func(t *testing.T, name, other string) {
		r := controlReport()
		r.Input.Files = []string{other}
		r.Input.Notes = []string{name + other}
		r.Input.BadExamples = []string{other + name}
		for i := range r.Groups {
			g := &r.Groups[i]
			g.Name = []string{name, other, name + other}[i%3]
			g.Excluded = map[string]int64{other: 1}
			g.Recommendation.Warnings = []string{name}
			g.Policy.Steps = []Step{{Rule: "hang", Reason: other}}
		}
		r.Groups[0].Name = "<x-fuzz>" + name
		for _, lookup := range []func(string) (Writer, error){Lookup, LookupPolicy} {
			for _, format := range Formats() {
				w, err := lookup(format)
				if err != nil {
					continue
				}
				var b bytes.Buffer
				if err := w(&b, r); err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				out := b.String()
				for _, c := range out {
					if c != '\n' && c != '\t' && escape.Unsafe(c) {
						t.Fatalf("%U raw in the %s report", c, format)
					}
				}
				switch format {
				case "html":
					if strings.Contains(out, "<x-fuzz>") {
						t.Fatalf("a tag in a name reached the HTML raw")
					}
				case "json":
					var back Report
					if err := json.Unmarshal(b.Bytes(), &back); err != nil {
						t.Fatalf("the JSON does not decode: %v", err)
					}
					if want := "<x-fuzz>" + name; utf8.ValidString(want) && back.Groups[0].Name != want {
						t.Fatalf("JSON name %q, read %q", back.Groups[0].Name, want)
					}
				}
			}
		}
	})
}
