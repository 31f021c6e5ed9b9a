package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSectionsInEveryRenderer: a section is one function in
// reportSections; text, Markdown and HTML all write it, its texts escaped
// each its own way, with nothing else to change.
func TestSectionsInEveryRenderer(t *testing.T) {
	saved := reportSections
	t.Cleanup(func() { reportSections = saved })
	reportSections = append(append([]func(*Report) *Section{}, saved...), func(r *Report) *Section {
		return &Section{ID: "extra", Title: "Extra <b>section</b>", Paragraphs: []Paragraph{
			{Text: "First *paragraph* <i>", Class: "note"}, {Text: "Second."}}}
	})
	r := unknowns()
	var text, markdown, html bytes.Buffer
	require.NoError(t, WriteText(&text, r))
	require.NoError(t, WriteMarkdown(&markdown, r))
	require.NoError(t, WriteHTML(&html, r))
	assert.Contains(t, text.String(), "\nExtra <b>section</b>\n  First *paragraph* <i>\n  Second.\n")
	assert.Contains(t, markdown.String(), "\n## Extra \\<b\\>section\\</b\\>\n\nFirst \\*paragraph\\* \\<i\\>\n\nSecond.\n")
	assert.Contains(t, html.String(), "<section id=\"extra\">\n<h2>Extra &lt;b&gt;section&lt;/b&gt;</h2>\n<p class=\"note\">First *paragraph* &lt;i&gt;</p>\n<p>Second.</p>\n</section>")
	// Before the groups, in each.
	for name, c := range map[string]struct{ out, group string }{
		"text": {text.String(), "\n== all:"}, "markdown": {markdown.String(), "\n## all:"}, "html": {html.String(), "<h2>all</h2>"},
	} {
		i, j := strings.Index(c.out, "Extra"), strings.Index(c.out, c.group)
		require.GreaterOrEqual(t, i, 0, name)
		require.GreaterOrEqual(t, j, 0, name)
		assert.Greater(t, j, i, "%s: the section comes before the groups", name)
	}
}
