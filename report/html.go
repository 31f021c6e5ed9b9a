package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WriteHTML writes the report as one self-contained HTML page: no script,
// no font, no image and no style sheet from anywhere else, so it opens
// offline and can be attached to an incident. Its Content-Security-Policy
// forbids loading anything, and it carries no script at all.
//
// Per group: the HdrHistogram-style percentile plot with the recommended
// timeout, the candidates and the confidence interval of the chosen
// quantile; the latency histogram on a log time axis with the share beyond
// the timeout; the Little's law bar; the tables and the step-by-step
// reasoning of the text report; the call policy and its simulation when
// present. Then the snippets the report carries (--emit).
//
// The page comes from html/template, which escapes every text and
// attribute from the input in its context; the plots are SVG written by
// the same template (html_plot.go), never strings pasted into it.
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	if err := htmlTemplate.Execute(&b, newHTMLPage(forPeople(r))); err != nil {
		return err
	}
	_, err := io.WriteString(w, escape.Lines(b.String()))
	return err
}

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"sec":      human.Seconds,
	"pct":      human.Percent,
	"count":    human.Count,
	"num":      human.Number,
	"quantile": human.Quantile,
	"success":  successText,
	"plural":   plural,
	"f2":       func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"deref":    func(p *float64) float64 { return *p },
	"count64":  func(n int) string { return human.Count(int64(n)) },
}).Parse(htmlSource))

// htmlPage is what the template reads.
type htmlPage struct {
	Title string
	Input Input
	// Source describes a live source (Prometheus) as the text report
	// does; "" for files.
	Source   string
	Unusable string // "; 9 could not be used (75 %)"
	More     string // "... and 8 more" bad records
	Summary  []htmlSummaryRow
	Legend   string
	Groups   []htmlGroup
	Snippets []Snippet
	Sections []Section // sections (section.go)
}

type htmlSummaryRow struct {
	SummaryRow
	ID          string
	Uncertainty string
	Risky       bool
}

// htmlGroup is one group with what the template cannot compute itself.
type htmlGroup struct {
	Group
	ID          string            // "g1": ids never hold input
	Excluded    string            // "961 status 5xx"
	Percentiles []percentileCells // a lower bound's Value marked "≥ "
	Interval    string
	Plots       []scene
	RateText    string
	// Buckets is the bucket view of bucketed data (Prometheus) as the
	// text report writes it; "" for calls read one by one.
	Buckets string
	// VerdictClass styles Little's law's verdict: "bad" when a hang
	// exhausts the pool, "ok" when it fits, "unknown" otherwise.
	VerdictClass string
	Bulkhead     string
	ShowPolicy   bool
	PolicyHead   string
	PolicyFacts  []string
	Candidates   []candidateCells
}

func newHTMLPage(r *Report) htmlPage {
	p := htmlPage{
		Title:    "Timeout report: " + strings.Join(r.Input.Files, ", "),
		Input:    r.Input,
		Snippets: r.Snippets,
		Sections: sections(r),
	}
	p.Source = sourceText(r)
	in := r.Input
	if in.BadRecords > 0 {
		p.Unusable = fmt.Sprintf("; %s could not be used (%s)", human.Count(in.BadRecords), human.Percent(float64(in.BadRecords)/float64(in.Records)))
	}
	if shown := int64(len(in.BadExamples)); in.BadRecords > shown && shown > 0 {
		p.More = fmt.Sprintf("... and %s more", human.Count(in.BadRecords-shown))
	}
	ids := make([]string, len(r.Groups))
	for i := range r.Groups {
		ids[i] = fmt.Sprintf("g%d", i+1)
	}
	if len(r.Groups) > 1 {
		p.Legend = summaryLegend(r)
		for _, s := range Summarize(r) {
			p.Summary = append(p.Summary, htmlSummaryRow{SummaryRow: s, ID: ids[s.Index],
				Uncertainty: UncertaintyText(s.Uncertainty), Risky: s.exhausted()})
		}
	}
	for i, g := range r.Groups {
		p.Groups = append(p.Groups, newHTMLGroup(ids[i], g))
	}
	return p
}

// bucketsText is the text report's bucket view of a group, without its
// title; "" when the group has none.
func bucketsText(g Group) string {
	var b strings.Builder
	writeBucketsText(&errWriter{w: &b}, g)
	_, body, _ := strings.Cut(strings.TrimLeft(b.String(), "\n"), "\n")
	return body
}

// sourceText is the text report's description of a live source; "" for
// files.
func sourceText(r *Report) string {
	var b strings.Builder
	writePrometheusText(&errWriter{w: &b}, r)
	return b.String()
}

func newHTMLGroup(id string, g Group) htmlGroup {
	h := htmlGroup{Group: g, ID: id, ShowPolicy: policyAsked(g.Policy)}
	h.Excluded = strings.Join(excludedParts(g, nil), ", ") // escaped by the template
	for _, p := range percentileRows(g) {
		if p.LowerBound {
			p.Value = "≥ " + p.Value
		}
		h.Percentiles = append(h.Percentiles, p)
	}
	h.Candidates = candidateRows(g)
	h.Plots = append(h.Plots, percentilePlot(id, g))
	if s, ok := histogramPlot(id, g); ok {
		h.Plots = append(h.Plots, s)
	}
	if s, ok := littlesLawBar(id, g); ok {
		h.Plots = append(h.Plots, s)
	}
	h.Buckets = bucketsText(g)
	h.RateText = littlesLawRateText(g.LittlesLaw)
	h.VerdictClass = "unknown"
	if e := g.LittlesLaw.PoolExhausted; e != nil {
		h.VerdictClass = map[bool]string{true: "bad", false: "ok"}[*e]
	}
	h.Bulkhead = bulkheadText(g.LittlesLaw)
	if h.ShowPolicy {
		h.PolicyHead = policyHeadline(g.Policy)
		h.PolicyFacts = policyFacts(g)
	}
	return h
}
