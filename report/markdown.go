package report

import (
	"io"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

// WriteMarkdown writes the report as GitHub-flavoured Markdown, for pull
// requests and incident documents: the document of the report (sections.go)
// with its sections as "##" and "###" headings, its tables as pipe tables
// and its snippets in fenced code blocks. Every text from the input is
// escaped (md), so a route named <script> or *bold* reads as itself.
func WriteMarkdown(w io.Writer, r *Report) error {
	d := newDocument(forPeople(r), false)
	var b strings.Builder
	b.WriteString("# " + md(d.Title) + "\n")
	writeBlocksMarkdown(&b, d.Head)
	for _, s := range d.Sections {
		b.WriteString("\n## " + md(s.Title) + "\n")
		writeBlocksMarkdown(&b, s.Blocks)
		for _, sub := range s.Subsections {
			b.WriteString("\n### " + md(sub.Title) + "\n")
			writeBlocksMarkdown(&b, sub.Blocks)
		}
	}
	_, err := io.WriteString(w, escape.Lines(b.String()))
	return err
}

// writeBlocksMarkdown writes blocks, each after a blank line; figures are
// left to HTML.
func writeBlocksMarkdown(b *strings.Builder, blocks []Block) {
	for _, bl := range blocks {
		switch {
		case bl.Para != nil:
			b.WriteString("\n" + spansMarkdown(bl.Para.Spans) + "\n")
		case bl.Notice != nil:
			label := "**" + noticeLabelWord(bl.Notice) + "**"
			if bl.Notice.Code != "" {
				label += " `" + bl.Notice.Code + "`"
			}
			b.WriteString("\n> " + label + ": " + md(bl.Notice.Text) + "\n")
		case bl.List != nil:
			b.WriteString("\n")
			for _, it := range bl.List.Items {
				b.WriteString("- " + spansMarkdown(it) + "\n")
			}
		case bl.Table != nil:
			writeTableMarkdown(b, bl.Table)
		case bl.Steps != nil:
			b.WriteString("\n| # | rule | value | reason |\n|--:|---|--:|---|\n")
			for i, s := range bl.Steps.Rows {
				b.WriteString("| " + strconv.Itoa(i+1) + " | " + md(s.Rule) + " | " + md(s.Value) + " | " + md(s.Reason) + " |\n")
			}
		case bl.Code != nil:
			fence := codeFence(bl.Code.Text)
			b.WriteString("\n" + fence + bl.Code.Language + "\n" + bl.Code.Text)
			if !strings.HasSuffix(bl.Code.Text, "\n") {
				b.WriteString("\n")
			}
			b.WriteString(fence + "\n")
		}
	}
}

// noticeLabelWord names a notice's severity: Warning, Note, Error.
func noticeLabelWord(n *Notice) string {
	switch n.Severity {
	case "info":
		return "Note"
	case "error":
		return "Error"
	}
	return "Warning"
}

// spansMarkdown writes spans: strong as **, code as `...`, the rest
// escaped.
func spansMarkdown(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		switch {
		case s.Code:
			b.WriteString("`" + codeSpan(s.Text) + "`")
		case s.Strong:
			b.WriteString("**" + md(s.Text) + "**")
		default:
			b.WriteString(md(s.Text))
		}
	}
	return b.String()
}

// writeTableMarkdown writes a pipe table, numeric columns right-aligned; a
// lower bound reads "≥ 1s".
func writeTableMarkdown(b *strings.Builder, t *Table) {
	b.WriteString("\n|")
	for _, c := range t.Columns {
		b.WriteString(" " + cell(md(c.Title)) + "|")
	}
	b.WriteString("\n|")
	for _, c := range t.Columns {
		if c.Numeric {
			b.WriteString("--:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("|")
		for _, c := range r.Cells {
			v := md(c.Text)
			if c.LowerBound {
				v = "≥ " + v
			}
			if c.Strong && v != "" {
				v = "**" + v + "**"
			}
			b.WriteString(" " + cell(v) + "|")
		}
		b.WriteString("\n")
	}
	if t.Legend != "" {
		b.WriteString("\n" + md(t.Legend) + "\n")
	}
}

// mdSpecial are the characters md escapes: those that start emphasis,
// code, links, HTML or entities, or end a table cell, wherever they stand.
// Line-start syntax (#, -, 1.) cannot arise: md never starts a line.
const mdSpecial = "\\`*_[]<>|&~"

// md escapes text from the input for Markdown: a backslash before every
// character of mdSpecial (CommonMark and GitHub read "\<" as "<"), and line
// breaks as spaces so that a table row stays one row.
func md(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r < 128 && strings.ContainsRune(mdSpecial, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cell is a table cell's text followed by its space: "" stays "".
func cell(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// codeSpan makes s safe inside a one-backtick code span.
func codeSpan(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
}

// codeFence returns a backtick fence longer than any run of backticks in
// text, so the text cannot close it.
func codeFence(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
