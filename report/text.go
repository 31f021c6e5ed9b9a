package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WriteText writes the report for people reading a terminal.
func WriteText(w io.Writer, r *Report) error {
	return writeDocumentText(w, newDocument(forPeople(r), false))
}

// WritePolicyText writes the call policy and its simulation of every group,
// the report of `tunetimeout simulate`.
func WritePolicyText(w io.Writer, r *Report) error {
	return writeDocumentText(w, newPolicyDocument(forPeople(r)))
}

// textWidth is the width the text report wraps its paragraphs to.
const textWidth = 100

// writeDocumentText lays a document out for a terminal: the head, then
// each section under "== title ==", its subsections under their title with
// their blocks indented by two spaces. Tables are aligned in columns,
// numbers to the right; figures are left to the HTML report (the tables
// hold the same numbers).
func writeDocumentText(w io.Writer, d *Document) error {
	var b bytes.Buffer
	for _, bl := range d.Head {
		writeBlockText(&b, bl, "", 0) // file names and bad lines, whole
	}
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "\n== %s ==\n", s.Title)
		for i, bl := range s.Blocks {
			// A blank line before each paragraph and before the first
			// notice after one: notices run together under what they
			// qualify.
			if i > 0 && (bl.Para != nil || bl.Notice != nil && s.Blocks[i-1].Para != nil) {
				b.WriteString("\n")
			}
			writeBlockText(&b, bl, "", textWidth)
		}
		for _, sub := range s.Subsections {
			fmt.Fprintf(&b, "\n%s\n", sub.Title)
			for _, bl := range sub.Blocks {
				writeBlockText(&b, bl, "  ", textWidth)
			}
		}
	}
	return writeLines(w, b.Bytes())
}

// writeLines writes a text document: without trailing blanks (padded
// cells; nobody wants them), and with any control character that got past
// forPeople escaped all the same.
func writeLines(w io.Writer, doc []byte) error {
	out := trailingBlanks.ReplaceAll(doc, []byte("\n"))
	_, err := io.WriteString(w, escape.Lines(string(out)))
	return err
}

var trailingBlanks = regexp.MustCompile(`[ \t]+\n`)

// writeBlockText writes one block, its lines starting with indent and
// wrapped to width columns (0: not wrapped).
func writeBlockText(b *bytes.Buffer, bl Block, indent string, width int) {
	switch {
	case bl.Para != nil:
		b.WriteString(wrapSpans(bl.Para.Spans, indent, indent, width))
	case bl.Notice != nil:
		b.WriteString(wrapSpans([]Span{text(noticeLabel(bl.Notice) + ": " + bl.Notice.Text)}, indent, indent+"  ", width))
	case bl.List != nil:
		for _, it := range bl.List.Items {
			b.WriteString(wrapSpans(it, indent+"- ", indent+"  ", width))
		}
	case bl.Table != nil:
		writeTableText(b, bl.Table, indent, width)
	case bl.Steps != nil:
		rows := make([][]string, len(bl.Steps.Rows))
		for i, s := range bl.Steps.Rows {
			rows[i] = []string{strconv.Itoa(i+1) + ". " + s.Rule, s.Value, s.Reason}
		}
		writeColumns(b, rows, []bool{false, false, false}, indent)
	case bl.Code != nil:
		b.WriteString(bl.Code.Text)
		if !strings.HasSuffix(bl.Code.Text, "\n") {
			b.WriteString("\n")
		}
	}
}

// noticeLabel is how a notice starts: "Warning [TT-FEW-ABOVE]".
func noticeLabel(n *Notice) string {
	label := "Warning"
	switch n.Severity {
	case "info":
		label = "Note"
	case "error":
		label = "Error"
	}
	if n.Code != "" {
		label += " [" + n.Code + "]"
	}
	return label
}

// writeTableText writes a table as aligned columns under a header; a
// lower bound reads ">= 1s".
func writeTableText(b *bytes.Buffer, t *Table, indent string, width int) {
	rows := [][]string{make([]string, len(t.Columns))}
	numeric := make([]bool, len(t.Columns))
	for i, c := range t.Columns {
		rows[0][i], numeric[i] = c.Title, c.Numeric
	}
	for _, r := range t.Rows {
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = c.Text
			if c.LowerBound {
				cells[i] = ">= " + c.Text
			}
		}
		rows = append(rows, cells)
	}
	writeColumns(b, rows, numeric, indent)
	if t.Legend != "" {
		b.WriteString("\n" + wrapSpans([]Span{text(t.Legend)}, indent, indent, width))
	}
}

// writeColumns aligns rows in columns two spaces apart, the right ones to
// the right; a row has at most as many cells as right.
func writeColumns(b *bytes.Buffer, rows [][]string, right []bool, indent string) {
	width := make([]int, len(right))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		line := indent
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line += "  "
			}
			if right[i] {
				line += pad + c
			} else {
				line += c + pad
			}
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
}

// wrapSpans breaks spans into lines of at most width columns (0: one
// line): the first starts with first, the others with rest. A code span (a file name, a bad
// line) is never broken and keeps its spaces.
func wrapSpans(spans []Span, first, rest string, width int) string {
	// A code span's blanks become NULs, which forPeople leaves in no text
	// (it writes control characters as escapes), so that splitting at
	// blanks keeps the span whole; they are blanks again when written.
	var all strings.Builder
	for _, s := range spans {
		if s.Code {
			all.WriteString(strings.Map(func(r rune) rune {
				if r == ' ' || r == '\t' {
					return 0
				}
				return r
			}, s.Text))
		} else {
			all.WriteString(s.Text)
		}
	}
	words := strings.Fields(all.String())
	for i, w := range words {
		words[i] = strings.ReplaceAll(w, "\x00", " ")
	}
	var b strings.Builder
	line, start := first, first
	for _, word := range words {
		if width > 0 && line != start && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			b.WriteString(line + "\n")
			line, start = rest, rest
		}
		if line != start {
			line += " "
		}
		line += word
	}
	return b.String() + line + "\n"
}

// wrap breaks text into lines of at most width columns, each starting with
// indent and ending with a line break.
func wrap(s, indent string, width int) string {
	return wrapSpans([]Span{text(s)}, indent, indent, width)
}

// percentile returns the seconds at quantile q, 0 when the group lacks it.
func percentile(g Group, q float64) float64 {
	for _, p := range g.Percentiles {
		if p.Quantile == q {
			return p.Seconds
		}
	}
	return 0
}

// poolVerdict is a short word on the pool for summary tables; shared says
// the groups share the pool, so a group's own hang is not the whole story
// (Report.SharedPool is).
func poolVerdict(l LittlesLaw, shared bool) string {
	switch {
	case l.PoolExhausted == nil:
		return "unknown"
	case *l.PoolExhausted:
		return fmt.Sprintf("exhausted after %ss", human.Number(*l.SecondsToExhaustion))
	case shared:
		return "fits alone"
	default:
		return "fits"
	}
}

// successText shows a success share like human.Percent, except that a
// share short of 1 never reads "100 %": 0.99998 -> "99.998 %".
func successText(frac float64) string {
	s := human.Percent(frac)
	if frac >= 1 || s != "100 %" {
		return s
	}
	if t := strconv.FormatFloat(100*frac, 'f', 3, 64); t != "100.000" {
		return t + " %"
	}
	return "> 99.999 %"
}
