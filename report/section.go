package report

import (
	"fmt"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// A Section is a part of a report that the text, Markdown and HTML
// renderers write alike from the same content, each in its own syntax:
// adding one is a function in reportSections, nothing in the renderers.
type Section struct {
	ID    string // stable: the HTML id, and what tests name it by
	Title string
	// TextTitle is the text report's heading, when it says more than
	// Title (the terminal has no room for a paragraph of context).
	TextTitle  string
	Paragraphs []Paragraph
}

// Paragraph is one paragraph of a section. Class styles it in HTML
// ("verdict bad": a hang exhausts the pool).
type Paragraph struct {
	Text  string
	Class string
}

// reportSections are the sections of a whole report, in order, after its
// input and source and before the summary of the groups; a function
// returns nil when its section does not apply.
var reportSections = []func(r *Report) *Section{
	sharedPoolSection,
}

// sections returns the report's sections that apply.
func sections(r *Report) []Section {
	var out []Section
	for _, f := range reportSections {
		if s := f(r); s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// sharedPoolSection is the hang of the whole dependency when its groups
// share one pool (SharedPool).
func sharedPoolSection(r *Report) *Section {
	sp := r.SharedPool
	if sp == nil {
		return nil
	}
	class := "verdict "
	if e := sp.PoolExhausted; e != nil {
		class += map[bool]string{true: "bad", false: "ok"}[*e]
	}
	return &Section{
		ID:         "shared-pool",
		Title:      "Shared pool",
		TextTitle:  fmt.Sprintf("Shared pool (%s, shared by %d groups)", human.Count(int64(sp.Pool)), sp.Groups),
		Paragraphs: []Paragraph{{Text: sp.Verdict, Class: class}},
	}
}

// writeSectionText writes s for a terminal: its heading, then each
// paragraph wrapped to 100 columns and indented.
func writeSectionText(w *errWriter, s Section) {
	title := s.TextTitle
	if title == "" {
		title = s.Title
	}
	w.printf("\n%s\n", title)
	for _, p := range s.Paragraphs {
		w.printf("%s", wrap(p.Text, "  ", 100))
	}
}

// writeSectionMarkdown writes s as a level-2 section, its texts escaped.
func writeSectionMarkdown(m *errWriter, s Section) {
	m.printf("\n## %s\n", md(s.Title))
	for _, p := range s.Paragraphs {
		m.printf("\n%s\n", md(p.Text))
	}
}
