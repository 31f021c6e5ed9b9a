package report

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WriteMarkdown writes the report as GitHub-flavoured Markdown, for pull
// requests and incident documents: the summary of several groups, then per
// group the recommendation with its warnings, the step-by-step reasoning
// and the tables of the text report, and the snippets when the report
// carries them. Every text from the input is escaped (md), so a route named
// <script> or *bold* reads as itself.
func WriteMarkdown(w io.Writer, r *Report) error {
	r = forPeople(r)
	var buf bytes.Buffer
	m := &errWriter{w: &buf}
	m.printf("# Timeout report\n\n")
	writeInputMarkdown(m, r)
	for _, s := range sections(r) {
		writeSectionMarkdown(m, s)
	}
	if len(r.Groups) > 1 {
		m.printf("\n## Summary\n\n")
		m.printf("| group | calls | p50 | p99.9 | uncertainty | timeout | pool during a hang |\n")
		m.printf("|---|--:|--:|--:|--:|--:|---|\n")
		for _, s := range Summarize(r) {
			m.printf("| %s | %s | %s | %s | %s | %s | %s |\n", md(s.Group), human.Count(s.Samples),
				human.Seconds(s.P50Seconds), human.Seconds(s.P999Seconds), md(UncertaintyText(s.Uncertainty)),
				human.Seconds(s.TimeoutSeconds), md(s.PoolVerdict))
		}
		m.printf("\n%s\n", md(summaryLegend(r)))
	}
	for _, g := range r.Groups {
		writeGroupMarkdown(m, g)
	}
	if len(r.Snippets) > 0 {
		m.printf("\n## Client configuration\n")
		for _, s := range r.Snippets {
			m.printf("\n### %s (%s)\n\n", md(s.File), md(s.Target))
			for _, n := range s.Notes {
				m.printf("- %s\n", md(n))
			}
			if len(s.Notes) > 0 {
				m.printf("\n")
			}
			fence := codeFence(s.Text)
			m.printf("%s%s\n%s", fence, fenceLanguage(s.File), s.Text)
			if !strings.HasSuffix(s.Text, "\n") {
				m.printf("\n")
			}
			m.printf("%s\n", fence)
		}
	}
	if m.err != nil {
		return m.err
	}
	_, err := io.WriteString(w, escape.Lines(buf.String()))
	return err
}

func writeInputMarkdown(m *errWriter, r *Report) {
	in := r.Input
	files := make([]string, len(in.Files))
	for i, f := range in.Files {
		files[i] = "`" + codeSpan(f) + "`"
	}
	m.printf("Read %s records from %s", human.Count(in.Records), strings.Join(files, ", "))
	if in.BadRecords > 0 {
		m.printf("; %s could not be used (%s)", human.Count(in.BadRecords), human.Percent(float64(in.BadRecords)/float64(in.Records)))
	}
	m.printf(".\n")
	if src := sourceText(r); src != "" {
		m.printf("\n%s%s%s", codeFence(src), "\n", src)
		m.printf("%s\n", codeFence(src))
	}
	if len(in.BadExamples) > 0 {
		m.printf("\n")
		for _, e := range in.BadExamples {
			m.printf("- %s\n", md(e))
		}
		if shown := int64(len(in.BadExamples)); in.BadRecords > shown {
			m.printf("- ... and %s more\n", human.Count(in.BadRecords-shown))
		}
	}
	if len(in.Notes) > 0 {
		m.printf("\n")
		for _, n := range in.Notes {
			m.printf("- %s\n", md(n))
		}
	}
}

func writeGroupMarkdown(m *errWriter, g Group) {
	m.printf("\n## %s: %s calls", md(g.Name), human.Count(g.Samples))
	if g.Censored > 0 {
		m.printf(", %s censored", human.Count(g.Censored))
	}
	m.printf("\n\n")
	if len(g.Excluded) > 0 {
		m.printf("Not counted: %s.", strings.Join(excludedParts(g, md), ", "))
		if g.Censored > 0 {
			m.printf(" Censored calls took at least their recorded time.")
		}
		m.printf("\n\n")
	} else if g.Censored > 0 {
		m.printf("Censored calls took at least their recorded time.\n\n")
	}

	rec := g.Recommendation
	m.printf("**Recommended timeout: %s** (%s; cuts off %s of these calls). ",
		human.Seconds(rec.TimeoutSeconds), human.Quantile(rec.Quantile), human.Percent(rec.CutOffFraction))
	if rec.ConnectTimeoutSeconds != nil {
		m.printf("**Connect timeout: %s.**\n", human.Seconds(*rec.ConnectTimeoutSeconds))
	} else {
		m.printf("Connect timeout: not recommended without a round-trip time (`--rtt`) or measured connect times.\n")
	}
	if len(rec.Warnings) > 0 {
		m.printf("\n")
		for i, s := range rec.Warnings {
			if i > 0 {
				m.printf(">\n")
			}
			m.printf("> **Warning:** %s\n", md(s))
		}
	}

	m.printf("\n| # | rule | value | reason |\n|--:|---|--:|---|\n")
	for i, s := range rec.Steps {
		m.printf("| %d | %s | %s | %s |\n", i+1, md(s.Rule), human.Seconds(s.Seconds), md(s.Reason))
	}

	if b := bucketsText(g); b != "" {
		m.printf("\n### Buckets\n\n%s\n%s%s\n", codeFence(b), b, codeFence(b))
	}

	m.printf("\n### Latency\n\n| percentile | latency | |\n|---|--:|---|\n")
	for _, p := range percentileRows(g) {
		value := p.Value
		if p.LowerBound {
			value = "≥ " + value
		}
		m.printf("| %s | %s | %s|\n", p.Name, value, cell(md(p.Note)))
	}
	m.printf("| mean | %s | |\n", human.Seconds(g.MeanSeconds))

	m.printf("\n### Candidates\n\n| timeout | cut off | in flight during a hang | x pool |\n|--:|--:|--:|--:|\n")
	for _, c := range candidateRows(g) {
		timeout := c.Timeout
		if c.Chosen {
			timeout = "**" + timeout + "**"
		}
		m.printf("| %s | %s | %s | %s |\n", timeout, md(c.CutOff), c.InFlight, c.Multiple)
	}

	ll := g.LittlesLaw
	m.printf("\n### Little's law\n\n")
	if rate := littlesLawRateText(ll); rate != "" {
		m.printf("%s\n\n", md(rate))
	}
	m.printf("%s\n", md(ll.Verdict))
	if b := bulkheadText(ll); b != "" {
		m.printf("\n%s\n", md(b))
	}

	if policyAsked(g.Policy) {
		writePolicyMarkdown(m, g)
	}
}

// intervalText describes the confidence interval of the chosen quantile.
func intervalText(rec Recommendation) string {
	iv := rec.Interval
	hi := "beyond the largest sample"
	if iv.HighSeconds != nil {
		hi = human.Seconds(*iv.HighSeconds)
	}
	return fmt.Sprintf("%s confidence: %s to %s; %s above", human.Percent(iv.Confidence), human.Seconds(iv.LowSeconds), hi, human.Calls(iv.Above))
}

// littlesLawRateText says which rate Little's law used; "" when unknown.
func littlesLawRateText(ll LittlesLaw) string {
	if ll.RatePerSecond == nil {
		return ""
	}
	s := fmt.Sprintf("Rate %s calls/s %s", human.Number(*ll.RatePerSecond), rateSourceText(ll.RateSource))
	if ll.PeakRatePerSecond != nil {
		s += fmt.Sprintf(", busiest minute %s calls/s", human.Number(*ll.PeakRatePerSecond))
	}
	if ll.BusiestSecond != nil {
		s += fmt.Sprintf(", busiest second %s calls", human.Number(*ll.BusiestSecond))
	}
	return s + "."
}

// bulkheadText explains the bulkhead; "" when there is none.
func bulkheadText(ll LittlesLaw) string {
	if ll.Bulkhead == nil || ll.HystrixBulkhead == nil {
		return ""
	}
	return fmt.Sprintf("Bulkhead: %d. At the peak rate normal demand is %s calls in flight on average (Poisson); "+
		"%d is its 99.9th percentile, so about 0.1 %% of calls would be turned away on a normal day. "+
		"Hystrix's rule of thumb (peak rate x p99 + breathing room) gives %d.",
		*ll.Bulkhead, human.Number(*ll.InFlightPeak), *ll.Bulkhead, *ll.HystrixBulkhead)
}

func writePolicyMarkdown(m *errWriter, g Group) {
	p := g.Policy
	sec := human.Seconds
	m.printf("\n### Call policy")
	if p.DeadlineSeconds != nil {
		m.printf(" (deadline %s)", sec(*p.DeadlineSeconds))
	} else {
		m.printf(" (no deadline)")
	}
	m.printf("\n\n%s\n", md(policyHeadline(p)))
	m.printf("\n| # | rule | value | reason |\n|--:|---|--:|---|\n")
	for i, s := range p.Steps {
		m.printf("| %d | %s | %s | %s |\n", i+1, md(s.Rule), sec(s.Seconds), md(s.Reason))
	}
	m.printf("\n")
	for _, s := range policyFacts(g) {
		m.printf("- %s\n", md(s))
	}
	for _, s := range p.Warnings {
		m.printf("\n> **Warning:** %s\n", md(s))
	}
	sim := p.Simulation
	if sim == nil {
		return
	}
	m.printf("\n### Simulation\n\n%s requests per scenario, seed %d.\n\n", human.Count(int64(sim.Requests)), sim.Seed)
	m.printf("| scenario | budget | succeed | attempts per request | p50 | p99 |\n|---|---|--:|--:|--:|--:|\n")
	for _, s := range sim.Scenarios {
		budget := "no"
		if s.WithBudget {
			budget = "yes"
		}
		p50, p99 := "-", "-"
		if s.SuccessFraction > 0 {
			p50, p99 = sec(s.P50Seconds), sec(s.P99Seconds)
		}
		m.printf("| %s | %s | %s | %.2f | %s | %s |\n", md(s.Name), budget, md(successText(s.SuccessFraction)), s.AttemptsPerRequest, p50, p99)
	}
}

// policyHeadline is the first line of a call policy: attempts, per-try
// timeout, cut off and the worst case.
func policyHeadline(p *Policy) string {
	s := fmt.Sprintf("%s of %s", plural(p.Attempts, "attempt"), human.Seconds(p.PerTryTimeoutSeconds))
	if p.RequestedAttempts != p.Attempts {
		s += fmt.Sprintf(" (%d asked)", p.RequestedAttempts)
	}
	return s + fmt.Sprintf(", each cutting off %s of calls; at most %s in all.", human.Percent(p.CutOffFraction), human.Seconds(p.WorstCaseSeconds))
}

// policyFacts are the sentences of a call policy after its steps: what is
// retried, the budget, the amplification, what a hang holds.
func policyFacts(g Group) []string {
	p := g.Policy
	sec := human.Seconds
	var out []string
	retryOn := "nothing"
	if len(p.RetryOn) > 0 {
		retryOn = strings.Join(p.RetryOn, ", ")
	}
	idem := "not idempotent"
	if p.Idempotent {
		idem = "idempotent"
	}
	if p.Attempts > 1 {
		out = append(out, fmt.Sprintf("Retry on: %s (%s). Backoff: %s jitter from %s, capped at %s.",
			retryOn, idem, p.Jitter, sec(p.BackoffBaseSeconds), sec(p.BackoffCapSeconds)))
	} else {
		out = append(out, "No retries: one attempt per request.")
	}
	if p.RetryBudget != nil && p.Attempts > 1 {
		out = append(out, fmt.Sprintf("Retry budget: %s of requests (a token bucket: each request earns %s token, at most 10 kept; each retry spends 1).",
			human.Percent(*p.RetryBudget), human.Number(*p.RetryBudget)))
	} else if p.Attempts > 1 {
		out = append(out, "Retry budget: none.")
	}
	if p.Layers > 1 || p.Attempts > 1 {
		out = append(out, fmt.Sprintf("Amplification: %d attempts ^ %s = up to %s calls to the bottom layer per request.",
			p.Attempts, plural(p.Layers, "layer"), human.Count(int64(p.Amplification))))
	}
	if hd := p.Hedge; hd != nil {
		out = append(out, fmt.Sprintf("Hedging: another request when none has answered after %s (%s), up to %d in all: p99 %s, p99.9 %s, for %s more requests (attempts assumed independent).",
			sec(hd.DelaySeconds), human.Quantile(hd.Quantile), hd.Attempts, sec(hd.P99Seconds), sec(hd.P999Seconds), human.Percent(hd.ExtraLoadFraction)))
	}
	if p.InFlightDuringHang != nil {
		s := fmt.Sprintf("During a hang: %s calls in flight", human.Number(*p.InFlightDuringHang))
		if pool := g.LittlesLaw.Pool; pool != nil && *pool > 0 {
			s += fmt.Sprintf(", %.1f x the pool of %s", *p.InFlightDuringHang/float64(*pool), human.Count(int64(*pool)))
		}
		out = append(out, s+".")
	}
	return out
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

// fenceLanguage names the language of a snippet file for highlighting.
func fenceLanguage(file string) string {
	switch path.Ext(file) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".conf":
		return "nginx"
	}
	return ""
}
