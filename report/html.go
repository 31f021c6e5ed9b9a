package report

import (
	_ "embed"
	"html/template"
	"io"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

// WriteHTML writes the report as one self-contained HTML page: no script,
// no font, no image and no style sheet from anywhere else, so it opens
// offline and can be attached to an incident. Its Content-Security-Policy
// forbids loading anything, and it carries no script at all.
//
// The page is the document of the report (sections.go), with the plots
// that only HTML draws: per group the HdrHistogram-style percentile plot
// with the recommended timeout, the candidates and the confidence interval
// of the chosen quantile; the latency histogram on a log time axis with
// the share beyond the timeout; the Little's law bar; with --trigger, the
// stability boundary's grid (report/plot).
//
// The page comes from html/template, which escapes every text and
// attribute from the input in its context; the plots are SVG written by
// the same template, never strings pasted into it.
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, newDocument(forPeople(r), true)); err != nil {
		return err
	}
	_, err := io.WriteString(w, escape.Lines(b.String()))
	return err
}

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"notice": noticeLabelWord,
}).Parse(htmlSource))
