package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// TestSectionsInEveryRenderer: a section is one function, in reportSections
// for the whole report or in groupSections for each group; text, Markdown
// and HTML all write it, its texts escaped each its own way, its table laid
// out each its own way, with nothing else to change.
func TestSectionsInEveryRenderer(t *testing.T) {
	savedReport, savedGroup := reportSections, groupSections
	t.Cleanup(func() { reportSections, groupSections = savedReport, savedGroup })
	reportSections = append(append([]func(*Report) *Section{}, savedReport...), func(r *Report) *Section {
		return &Section{ID: "extra", Title: "Extra <b>section</b>", Blocks: []Block{
			para("note", text("First *paragraph* <i>")), textPara("Second.")}}
	})
	groupSections = append([]func(Group) *Section{func(g Group) *Section {
		return &Section{ID: "calls", Title: "Calls of " + g.Name, Blocks: []Block{{Table: &Table{Class: "calls",
			Columns: []Column{{Title: "what"}, {Title: "how many", Numeric: true}},
			Rows:    []Row{{Cells: []Cell{{Text: "samples | all"}, {Text: "1,000"}}}, {Cells: []Cell{{Text: "slow"}, {Text: "5", LowerBound: true}}}}}}}}
	}}, savedGroup...)
	r := unknowns()
	var text, markdown, html bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	require.NoError(t, WriteMarkdown(&markdown, r))
	require.NoError(t, WriteHTML(&html, r))
	assert.Contains(t, text.String(), "\n== Extra <b>section</b> ==\nFirst *paragraph* <i>\n\nSecond.\n")
	assert.Contains(t, markdown.String(), "\n## Extra \\<b\\>section\\</b\\>\n\nFirst \\*paragraph\\* \\<i\\>\n\nSecond.\n")
	assert.Contains(t, html.String(), "<section id=\"extra\">\n<h2>Extra &lt;b&gt;section&lt;/b&gt;</h2>\n<p class=\"note\">First *paragraph* &lt;i&gt;</p>\n<p>Second.</p>\n</section>")

	assert.Contains(t, text.String(), "\nCalls of all\n  what           how many\n  samples | all     1,000\n  slow               >= 5\n\nHow the timeout was chosen\n")
	assert.Contains(t, markdown.String(), "\n### Calls of all\n\n| what | how many |\n|---|--:|\n| samples \\| all | 1,000 |\n| slow | ≥ 5 |\n\n### How the timeout was chosen\n")
	assert.Contains(t, html.String(), "<section id=\"g1-calls\">\n<h3>Calls of all</h3>\n<table class=\"calls\">\n"+
		"<thead><tr><th>what</th><th class=\"n\">how many</th></tr></thead>\n<tbody>\n"+
		"<tr><td>samples | all</td><td class=\"n\">1,000</td></tr>\n<tr><td>slow</td><td class=\"n\">≥ 5</td></tr>\n</tbody>\n</table>\n</section>\n"+
		"<section id=\"g1-steps\">")
	// The report's section before the groups, in each.
	for name, c := range map[string]struct{ out, group string }{
		"text": {text.String(), "\n== all =="}, "markdown": {markdown.String(), "\n## all\n"}, "html": {html.String(), "<h2>all</h2>"},
	} {
		i, j := strings.Index(c.out, "Extra"), strings.Index(c.out, c.group)
		require.GreaterOrEqual(t, i, 0, name)
		require.GreaterOrEqual(t, j, 0, name)
		assert.Greater(t, j, i, "%s: the section comes before the groups", name)
	}
}

// TestWarningCodesByPlace: a warning takes the code of its own finding,
// found by its place among the group's findings, never by its words: a
// warning whose text is escaped for people (a group name with a control
// character) keeps its code, and a policy warning worded as a
// recommendation's takes the policy's code.
func TestWarningCodesByPlace(t *testing.T) {
	r := unknowns()
	g := &r.Groups[0]
	g.Recommendation.Warnings = []string{"too few calls of /a\x1b[2J"}
	g.Policy = &Policy{Attempts: 2, RequestedAttempts: 2, Warnings: []string{"same words"}}
	g.Findings = []Finding{
		finding.New(finding.FewSamples, nil, "too few calls of /a\x1b[2J"),
		finding.New(finding.NoRetriesFit, nil, "same words"),
		finding.New(finding.TimeoutInversion, nil, "same words"),
	}
	rec, policy := g.warningFindings()
	assert.Equal(t, []Finding{g.Findings[0]}, rec)
	assert.Equal(t, []Finding{g.Findings[1]}, policy, "the policy's own, not the call graph's of the same words")

	var text bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	assert.Contains(t, text.String(), "\nWarning [TT-FEW-SAMPLES]: too few calls of /a\\x1b[2J\n", "the escaped warning keeps its code")
	assert.Contains(t, text.String(), "  Warning [TT-NO-RETRIES-FIT]: same words\n")
	assert.NotContains(t, text.String(), "[TT-TIMEOUT-INVERSION]: same words")

	// A report written before findings existed: no codes.
	g.Findings = nil
	text.Reset()
	require.NoError(t, WriteText(&text, r))
	assert.Contains(t, text.String(), "  Warning: same words\n")
	assert.Len(t, notices([]string{"a", "b"}, []Finding{finding.New(finding.FewAbove, nil, "a")}), 2, "too few findings: the warnings, without codes")
	assert.Empty(t, notices([]string{"a", "b"}, []Finding{finding.New(finding.FewAbove, nil, "a")})[0].Notice.Code)
}
