package report

import "github.com/tunetimeout/tunetimeout/report/plot"

// The view model of the reports people read. A report is built once into a
// Document (sections.go): sections of blocks, every figure formatted into
// its cell or span there. The text, Markdown and HTML writers map the
// Document to their syntax and do nothing else: they format no number and
// choose no order, so the three say the same things in the same order, and
// a new section is one function in sections.go. JSON is the Report itself,
// the data the Document is built from: a machine reads fields, not
// layout.
//
// `check` is not a Document, by choice: its text is one finding a
// paragraph in the compiler's form "file:line: severity [CODE] object:
// message", which editors and CI logs jump to by its first word, and its
// Markdown one finding a table row for a pull-request comment. A Document
// would give both one shape (a section, a notice) and take the jump away;
// the two writers share what they say through Check's fields and
// checkVerdict, and SARIF and JSON read the same Check.

// Document is a whole report for people.
type Document struct {
	Title     string // the heading: "Timeout report"
	PageTitle string // the HTML page's title, naming the input
	// Head comes before any section: what was read, the live source,
	// the input's notes.
	Head     []Block
	Sections []Section
	Footer   string // HTML only: the page's closing line
}

// Section is a titled part of a document. Top-level sections are level 2
// (Markdown "##", HTML h2, text "== title =="); their Subsections level 3.
type Section struct {
	// ID is stable, never from the input: the HTML id, what the summary
	// links to, and what tests name a section by.
	ID    string
	Title string
	// Class styles the HTML section ("group").
	Class       string
	Blocks      []Block
	Subsections []Section
}

// Block is one block of a section: exactly one field is set.
type Block struct {
	Para   *Para
	Notice *Notice
	List   *List
	Table  *Table
	Steps  *Steps
	Code   *Code
	// Figure is a plot; only HTML draws it (the terminal and Markdown
	// have the tables that hold the same numbers).
	Figure *plot.Scene
}

// Para is a paragraph of spans. Class styles it: "muted", "headline",
// "verdict bad", "verdict ok", "verdict unknown".
type Para struct {
	Spans []Span
	Class string
}

// Span is a run of text in a paragraph, a list item or a table cell.
type Span struct {
	Text   string
	Strong bool
	Code   bool // a flag or a file name: usage.RTT as the CLI writes it
}

// Notice is a finding shown where it applies: its severity ("warning",
// "info"), its message and its code (docs/findings.md), "" when the report
// predates codes.
type Notice struct {
	Severity string
	Text     string
	Code     string
}

// List is a bulleted list. Class styles it in HTML ("bad-records").
type List struct {
	Items [][]Span
	Class string
}

// Table is a table of typed cells.
type Table struct {
	Class   string // the HTML class: "latency", "summary"
	Columns []Column
	Rows    []Row
	Legend  string // a paragraph under it: how to read it
}

// Column is one column of a table; Numeric right-aligns it.
type Column struct {
	Title   string
	Numeric bool
}

// Row is one row; Class styles it ("chosen": the recommended candidate;
// "risky": a group whose pool a hang exhausts).
type Row struct {
	Cells []Cell
	Class string
}

// Cell is one table cell. LowerBound marks a figure that is only a lower
// bound ("≥ 1s"); Link points the cell at a section of the same document
// (an ID); Class styles it in HTML ("verdict").
type Cell struct {
	Text       string
	LowerBound bool
	Strong     bool
	Link       string
	Class      string
}

// Steps is the step-by-step reasoning behind a figure: each rule with the
// value it gives and why.
type Steps struct {
	Rows []StepRow
}

// StepRow is one step.
type StepRow struct {
	Rule, Value, Reason string
}

// Code is a configuration to paste, or a block of text to keep as it is:
// File names it ("" for none), Target says whose syntax it is, Language
// is the Markdown fence's highlighting ("yaml").
type Code struct {
	File, Target, Language string
	Text                   string
}

// Helpers for the builders.

func para(class string, spans ...Span) Block { return Block{Para: &Para{Spans: spans, Class: class}} }

func text(s string) Span { return Span{Text: s} }

func strong(s string) Span { return Span{Text: s, Strong: true} }

func code(s string) Span { return Span{Text: s, Code: true} }

// textPara is a paragraph of plain text.
func textPara(s string) Block { return para("", text(s)) }

// plainList is a list of plain items.
func plainList(class string, items []string) Block {
	l := &List{Class: class}
	for _, it := range items {
		l.Items = append(l.Items, []Span{text(it)})
	}
	return Block{List: l}
}
