package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/report/plot"
)

// Building the Document of a report (document.go): every figure is
// formatted here, once, and the sections come in the order all the formats
// show them. Adding a section is one function in reportSections (a
// section of the whole report) or groupSections (one of each group), and
// its golden files.

// reportSections are the sections of a whole report after its head, in
// order; a function returns nil when its section does not apply. The
// groups' own sections follow them, then the snippets.
var reportSections = []func(r *Report) *Section{
	summaryQuantilesSection,
	sharedPoolSection,
	callGraphSection,
	summarySection,
	herdSection,
}

// reportPlots put the plots of a section of the whole report (HTML) into
// its blocks, as withBoundaryPlot does for a group's: the sections are
// built without them, which only the HTML draws.
func reportPlots(r *Report, s *Section) {
	if s.ID == "herd" {
		s.Blocks = withHerdPlot(r, s.Blocks)
	}
}

// groupSections are the subsections of each group's section, in order,
// after the recommendation that opens it; nil when one does not apply.
var groupSections = []func(g Group) *Section{
	windowsSection,
	profileSection,
	stepsSection,
	bucketsSection,
	latencySection,
	candidatesSection,
	littlesLawSection,
	askedPolicySection,
	askedSimulationSection,
	metastabilitySection,
}

// newDocument builds the document of a report; figures adds the plots,
// which only HTML draws (and which hold much of a large report's memory).
// r is taken as it is: the writers pass it through forPeople first.
func newDocument(r *Report, figures bool) *Document {
	d := &Document{
		Title:     "Timeout report",
		PageTitle: "Timeout report: " + strings.Join(r.Input.Files, ", "),
		Head:      headBlocks(r),
		Footer:    "Written by tunetimeout. This page is self-contained: it loads nothing from anywhere.",
	}
	for _, f := range reportSections {
		if s := f(r); s != nil {
			if figures {
				reportPlots(r, s)
			}
			d.Sections = append(d.Sections, *s)
		}
	}
	for i, g := range r.Groups {
		d.Sections = append(d.Sections, groupSection(groupID(i), g, figures))
	}
	if s := snippetsSection(r); s != nil {
		d.Sections = append(d.Sections, *s)
	}
	return d
}

// newPolicyDocument builds the document of `tunetimeout simulate`: the
// input, then each group's call policy and its simulation.
func newPolicyDocument(r *Report) *Document {
	d := &Document{Title: "Call policy", PageTitle: "Call policy: " + strings.Join(r.Input.Files, ", "), Head: headBlocks(r)}
	if s := herdSection(r); s != nil {
		reportPlots(r, s)
		d.Sections = append(d.Sections, *s)
	}
	for i, g := range r.Groups {
		s := Section{ID: groupID(i), Title: g.Name, Class: "group", Blocks: []Block{para("muted", text(human.Calls(g.Samples)+"."))}}
		if g.Policy == nil {
			s.Blocks = append(s.Blocks, textPara("No call policy."))
		} else {
			for _, f := range []func(Group) *Section{policySection, simulationSection, metastabilitySection} {
				if sub := f(g); sub != nil {
					sub.ID = s.ID + "-" + sub.ID
					s.Subsections = append(s.Subsections, *sub)
				}
			}
		}
		d.Sections = append(d.Sections, s)
	}
	return d
}

// groupID is the id of the i-th group's section: ids never hold input.
func groupID(i int) string { return fmt.Sprintf("g%d", i+1) }

// headBlocks say what was read: the records, the bad ones, the live
// source, the input's notes.
func headBlocks(r *Report) []Block {
	in := r.Input
	if len(in.Files) == 0 && r.Herd != nil {
		return []Block{textPara("No data read: the herd alone, from its flags.")}
	}
	spans := []Span{text("Read " + human.Count(in.Records) + " records from ")}
	for i, f := range in.Files {
		if i > 0 {
			spans = append(spans, text(", "))
		}
		spans = append(spans, code(f))
	}
	tail := "."
	if in.BadRecords > 0 {
		tail = fmt.Sprintf("; %s could not be used (%s).", human.Count(in.BadRecords), human.Percent(float64(in.BadRecords)/float64(in.Records)))
	}
	blocks := []Block{para("", append(spans, text(tail))...)}
	if len(in.BadExamples) > 0 {
		l := &List{Class: "bad-records"}
		for _, e := range in.BadExamples {
			l.Items = append(l.Items, []Span{code(e)})
		}
		if shown := int64(len(in.BadExamples)); in.BadRecords > shown {
			l.Items = append(l.Items, []Span{text("... and " + human.Count(in.BadRecords-shown) + " more")})
		}
		blocks = append(blocks, Block{List: l})
	}
	blocks = append(blocks, sourceBlocks(r)...)
	if len(in.Notes) > 0 {
		blocks = append(blocks, plainList("notes", in.Notes))
	}
	return blocks
}

// sourceBlocks describe a live source (Prometheus) and its warnings;
// none for files.
func sourceBlocks(r *Report) []Block {
	p := r.Prometheus
	if p == nil {
		return nil
	}
	s := fmt.Sprintf("%s at %s: %s %s, in %s (%s), %s window ending %s",
		serverName(p), p.URL, p.Kind, kindNoun(p.Kind), unitName(p.UnitSeconds), p.UnitFrom, human.Seconds(p.WindowSeconds), p.At)
	if p.StepSeconds != nil {
		s += fmt.Sprintf(", per %s step", human.Seconds(*p.StepSeconds))
	}
	blocks := []Block{para("source", text(s+"."))}
	for _, w := range p.Warnings {
		blocks = append(blocks, Block{Notice: &Notice{Severity: "warning", Text: serverName(p) + " warns: " + w, Code: string(finding.ServerWarning)}})
	}
	return blocks
}

// summaryQuantilesSection shows the quantile series of a summary metric:
// each instance computed its own, so they are shown, not merged.
func summaryQuantilesSection(r *Report) *Section {
	p := r.Prometheus
	if p == nil || len(p.Summary) == 0 {
		return nil
	}
	t := &Table{Class: "summary-quantiles", Columns: []Column{{Title: "series"}, {Title: "quantile"}, {Title: "at the end", Numeric: true}, {Title: "largest in the window", Numeric: true}}}
	for _, s := range p.Summary {
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: s.Labels}, {Text: human.Quantile(s.Quantile)}, {Text: human.Seconds(s.Seconds)}, {Text: human.Seconds(s.MaxSeconds)}}})
	}
	return &Section{ID: "summary-quantiles", Title: "Summary quantiles of " + p.Metric,
		Blocks: []Block{textPara("Computed by each instance; not a histogram."), {Table: t}}}
}

// sharedPoolSection is the hang of the whole dependency when its groups
// share one pool (SharedPool).
func sharedPoolSection(r *Report) *Section {
	sp := r.SharedPool
	if sp == nil {
		return nil
	}
	return &Section{
		ID:    "shared-pool",
		Title: fmt.Sprintf("Shared pool (%s, shared by %d groups)", human.Count(int64(sp.Pool)), sp.Groups),
		Blocks: []Block{
			para("verdict "+verdictClass(sp.PoolExhausted), text(sp.Verdict)),
		},
	}
}

// summarySection is the table of the groups, riskiest first, when there
// are several.
func summarySection(r *Report) *Section {
	if len(r.Groups) < 2 {
		return nil
	}
	t := &Table{Class: "summary", Legend: summaryLegend(r), Columns: []Column{
		{Title: "group"}, {Title: "calls", Numeric: true}, {Title: "p50", Numeric: true}, {Title: "p99.9", Numeric: true},
		{Title: "uncertainty", Numeric: true}, {Title: "timeout", Numeric: true}, {Title: "pool during a hang"},
	}}
	for _, s := range Summarize(r) {
		row := Row{Cells: []Cell{
			{Text: s.Group, Link: groupID(s.Index)}, {Text: human.Count(s.Samples)}, {Text: human.Seconds(s.P50Seconds)},
			{Text: human.Seconds(s.P999Seconds)}, {Text: UncertaintyText(s.Uncertainty)}, {Text: human.Seconds(s.TimeoutSeconds)},
			{Text: s.PoolVerdict, Class: "verdict"},
		}}
		if s.exhausted() {
			row.Class = "risky"
		}
		t.Rows = append(t.Rows, row)
	}
	return &Section{ID: "summary", Title: "Summary", Blocks: []Block{{Table: t}}}
}

// groupSection is one group: how many calls, the recommendation with its
// warnings, the plots when figures, then groupSections.
func groupSection(id string, g Group, figures bool) Section {
	s := Section{ID: id, Title: g.Name, Class: "group"}
	calls := human.Calls(g.Samples)
	if g.Censored > 0 {
		calls += fmt.Sprintf(", %s of them censored (took at least their recorded time)", human.Count(g.Censored))
	}
	if len(g.Excluded) > 0 {
		calls += "; not counted: " + strings.Join(excludedParts(g), ", ")
	}
	rec := g.Recommendation
	s.Blocks = append(s.Blocks, para("muted", text(calls+".")))
	headline := []Span{text("Recommended timeout: "), strong(human.Seconds(rec.TimeoutSeconds)),
		text(fmt.Sprintf(" (%s; cuts off at most %s of these calls).", human.Quantile(rec.Quantile), human.Percent(rec.CutOffFraction)))}
	if rec.ConnectTimeoutSeconds != nil {
		headline = append(headline, text(" Connect timeout: "), strong(human.Seconds(*rec.ConnectTimeoutSeconds)), text("."))
	}
	s.Blocks = append(s.Blocks, para("headline", headline...))
	switch {
	case rec.ConnectTimeoutSeconds == nil && rec.ReusedConnects > 0:
		s.Blocks = append(s.Blocks, para("muted", text(fmt.Sprintf("Connect timeout: not recommended: no connect times. All %s measured were 0, requests on reused keepalive connections that connected nothing; give the round-trip time (",
			human.Count(rec.ReusedConnects))), code(usage.RTT.String()), text(").")))
	case rec.ConnectTimeoutSeconds == nil:
		s.Blocks = append(s.Blocks, para("muted", text("Connect timeout: not recommended without a round-trip time ("),
			code(usage.RTT.String()), text(") or measured connect times.")))
	}
	recFindings, _ := g.warningFindings()
	s.Blocks = append(s.Blocks, notices(rec.Warnings, recFindings)...)
	if figures {
		for _, f := range groupPlots(id, g) {
			s.Blocks = append(s.Blocks, Block{Figure: &f})
		}
	}
	for _, f := range groupSections {
		if sub := f(g); sub != nil {
			sub.ID = id + "-" + sub.ID
			if figures && sub.ID == id+"-metastability" {
				sub.Blocks = withBoundaryPlot(id, g, sub.Blocks)
			}
			s.Subsections = append(s.Subsections, *sub)
		}
	}
	return s
}

// notices are warnings as notices, each with the code and severity of its
// finding: findings are the warnings' own, one for each, in order (the
// warnings are their messages, escaped for people), never found by their
// words. With no findings (a report written before findings existed) the
// warnings have no code.
func notices(messages []string, findings []Finding) []Block {
	var out []Block
	for i, m := range messages {
		n := &Notice{Severity: "warning", Text: m}
		if len(findings) == len(messages) {
			n.Code, n.Severity = string(findings[i].Code), string(findings[i].Severity)
		}
		out = append(out, Block{Notice: n})
	}
	return out
}

// warningFindings are the findings of g's recommendation and of its call
// policy, one for each of their warnings: Group.Findings holds them first,
// the recommendation's then the policy's (advice.NewGroup), before the
// findings later analyses add (the call graph's, the deadline's). Either is
// nil when the report holds too few findings for it (a report written
// before findings existed).
func (g Group) warningFindings() (rec, policy []Finding) {
	nr, np := len(g.Recommendation.Warnings), 0
	if g.Policy != nil {
		np = len(g.Policy.Warnings)
	}
	if len(g.Findings) >= nr {
		rec = g.Findings[:nr]
	}
	if len(g.Findings) >= nr+np {
		policy = g.Findings[nr : nr+np]
	}
	return rec, policy
}

// excludedParts lists what a group did not count, "961 status 5xx", by
// reason.
func excludedParts(g Group) []string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g.Excluded)) {
		parts = append(parts, human.Count(g.Excluded[k])+" "+k)
	}
	return parts
}

// stepsSection is how the timeout was chosen, rule by rule.
func stepsSection(g Group) *Section {
	return &Section{ID: "steps", Title: "How the timeout was chosen", Blocks: []Block{stepsBlock(g.Recommendation.Steps)}}
}

func stepsBlock(steps []Step) Block {
	st := &Steps{}
	for _, s := range steps {
		st.Rows = append(st.Rows, StepRow{Rule: s.Rule, Value: human.Seconds(s.Seconds), Reason: s.Reason})
	}
	return Block{Steps: st}
}

// latencySection is the measured percentiles and the mean; the chosen
// quantile carries its confidence interval.
func latencySection(g Group) *Section {
	rec := g.Recommendation
	t := &Table{Class: "latency", Columns: []Column{{Title: "percentile"}, {Title: "latency", Numeric: true}, {Title: ""}}}
	for _, p := range g.Percentiles {
		row := Row{Cells: []Cell{{Text: human.Quantile(p.Quantile)}, {Text: human.Seconds(p.Seconds), LowerBound: p.LowerBound}, {}}}
		if p.Quantile == rec.Quantile {
			row.Class, row.Cells[2].Text = "chosen", intervalText(rec)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: "mean"}, {Text: human.Seconds(g.MeanSeconds)}, {}}})
	return &Section{ID: "latency", Title: "Latency", Blocks: []Block{{Table: t}}}
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

// candidatesSection is the timeouts around the recommendation and what
// each costs.
func candidatesSection(g Group) *Section {
	t := &Table{Class: "candidates", Columns: []Column{{Title: "timeout", Numeric: true}, {Title: "cut off (at most)", Numeric: true},
		{Title: "in flight during a hang", Numeric: true}, {Title: "x pool", Numeric: true}}}
	for _, c := range g.Candidates {
		row := Row{Cells: []Cell{{Text: human.Seconds(c.TimeoutSeconds)}, {Text: human.Percent(c.CutOffFraction)}, {Text: "-"}, {Text: "-"}}}
		if c.InFlightDuringHang != nil {
			row.Cells[2].Text = human.Number(*c.InFlightDuringHang)
		}
		if c.PoolMultiple != nil {
			row.Cells[3].Text = fmt.Sprintf("%.2f", *c.PoolMultiple)
		}
		if c.TimeoutSeconds == g.Recommendation.TimeoutSeconds {
			row.Class = "chosen"
			row.Cells[0].Strong = true
		}
		t.Rows = append(t.Rows, row)
	}
	return &Section{ID: "candidates", Title: "Candidates", Blocks: []Block{{Table: t}}}
}

// littlesLawSection is what a hang holds in flight, and the bulkhead.
func littlesLawSection(g Group) *Section {
	ll := g.LittlesLaw
	s := &Section{ID: "littles-law", Title: "Little's law"}
	if rate := littlesLawRateText(ll); rate != "" {
		s.Blocks = append(s.Blocks, textPara(rate))
	}
	s.Blocks = append(s.Blocks, para("verdict "+verdictClass(ll.PoolExhausted), text(ll.Verdict)))
	if b := bulkheadText(ll); b != "" {
		s.Blocks = append(s.Blocks, textPara(b))
	}
	return s
}

// verdictClass styles a pool verdict: "bad" when a hang exhausts the pool,
// "ok" when it fits, "unknown" without a rate or a pool.
func verdictClass(exhausted *bool) string {
	switch {
	case exhausted == nil:
		return "unknown"
	case *exhausted:
		return "bad"
	}
	return "ok"
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
		s += ", busiest second " + human.NumberOf(*ll.BusiestSecond, "call")
	}
	return s + "."
}

func rateSourceText(source string) string {
	switch source {
	case "measured":
		return "measured from timestamps"
	case "flag":
		return "from " + usage.Rate.String()
	case "prometheus":
		return "from Prometheus, the increase of _count"
	case "otlp":
		return "from the histograms' counts over their window"
	case "the profile's slot":
		return "in the profile's worst hour (its calls over that hour on every day it occurred)"
	}
	return source
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

// policyAsked reports whether the full report shows the call policy: when a
// deadline or retries were asked for, or it was simulated. One attempt at
// the recommended timeout without a deadline adds nothing to the report.
func policyAsked(p *Policy) bool {
	return p != nil && (p.DeadlineSeconds != nil || p.RequestedAttempts > 1 || p.Simulation != nil)
}

// askedPolicySection is the call policy in the full report, when it was
// asked for (policyAsked).
func askedPolicySection(g Group) *Section {
	if !policyAsked(g.Policy) {
		return nil
	}
	return policySection(g)
}

// askedSimulationSection is the simulation in the full report, beside
// the call policy it replays.
func askedSimulationSection(g Group) *Section {
	if !policyAsked(g.Policy) {
		return nil
	}
	return simulationSection(g)
}

// policySection is the call policy: attempts, per-try timeout, its steps,
// what is retried, the budget, the amplification and its warnings.
func policySection(g Group) *Section {
	p := g.Policy
	if p == nil {
		return nil
	}
	title := "Call policy (no deadline)"
	if p.DeadlineSeconds != nil {
		title = fmt.Sprintf("Call policy (deadline %s)", human.Seconds(*p.DeadlineSeconds))
	}
	s := &Section{ID: "policy", Title: title, Blocks: []Block{textPara(policyHeadline(p)), stepsBlock(p.Steps), plainList("notes", policyFacts(g))}}
	_, policyFindings := g.warningFindings()
	s.Blocks = append(s.Blocks, notices(p.Warnings, policyFindings)...)
	return s
}

// policyHeadline is the first line of a call policy: attempts, per-try
// timeout, cut off and the worst case.
func policyHeadline(p *Policy) string {
	s := fmt.Sprintf("%s of %s", human.Plural(int64(p.Attempts), "attempt"), human.Seconds(p.PerTryTimeoutSeconds))
	if p.RequestedAttempts != p.Attempts {
		s += fmt.Sprintf(" (%d asked)", p.RequestedAttempts)
	}
	return s + fmt.Sprintf(", each cutting off at most %s of calls; at most %s in all.", human.Percent(p.CutOffFraction), human.Seconds(p.WorstCaseSeconds))
}

// idempotence says whether the calls are idempotent and what says so.
func idempotence(p *Policy) string {
	idem := "not idempotent"
	if p.Idempotent {
		idem = "idempotent"
	}
	methods := strings.Join(p.Methods, ", ")
	switch p.IdempotentSource {
	case "method":
		if p.Method != nil {
			return fmt.Sprintf("%s: %s", idem, *p.Method) // one of RFC 9110's methods (analysis.methodOf)
		}
	case "methods":
		if p.Idempotent {
			return fmt.Sprintf("%s: every call is %s", idem, orList(p.Methods))
		}
		return fmt.Sprintf("%s: the calls are %s", idem, methods)
	case "flag":
		return idem + ": " + usage.Idempotent.String()
	}
	return idem
}

// orList joins "GET", "GET or HEAD", "GET, HEAD or PUT".
func orList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
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
	idem := idempotence(p)
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
			p.Attempts, human.Plural(int64(p.Layers), "layer"), human.Count(int64(p.Amplification))))
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

// simulationSection is the call policy replayed over the measured
// latency, scenario by scenario.
func simulationSection(g Group) *Section {
	if g.Policy == nil || g.Policy.Simulation == nil {
		return nil
	}
	sim := g.Policy.Simulation
	t := &Table{Class: "simulation", Columns: []Column{{Title: "scenario"}, {Title: "budget"}, {Title: "succeed", Numeric: true},
		{Title: "attempts per request", Numeric: true}, {Title: "p50", Numeric: true}, {Title: "p99", Numeric: true}}}
	for _, s := range sim.Scenarios {
		budget := "no"
		if s.WithBudget {
			budget = "yes"
		}
		p50, p99 := "-", "-"
		if s.SuccessFraction > 0 {
			p50, p99 = human.Seconds(s.P50Seconds), human.Seconds(s.P99Seconds)
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{{Text: s.Name}, {Text: budget}, {Text: successText(s.SuccessFraction)},
			{Text: fmt.Sprintf("%.2f", s.AttemptsPerRequest)}, {Text: p50}, {Text: p99}}})
	}
	return &Section{ID: "simulation", Title: "Simulation", Blocks: []Block{
		textPara(fmt.Sprintf("%s requests per scenario, seed %d.", human.Count(int64(sim.Requests)), sim.Seed)), {Table: t}}}
}

// snippetsSection is the client configuration the report carries
// (--emit), one subsection per file.
func snippetsSection(r *Report) *Section {
	if len(r.Snippets) == 0 {
		return nil
	}
	s := &Section{ID: "snippets", Title: "Client configuration"}
	for i, sn := range r.Snippets {
		sub := Section{ID: fmt.Sprintf("snippet-%d", i+1), Title: sn.File + " (" + sn.Target + ")"}
		if len(sn.Notes) > 0 {
			sub.Blocks = append(sub.Blocks, plainList("notes", sn.Notes))
		}
		sub.Blocks = append(sub.Blocks, Block{Code: &Code{File: sn.File, Target: sn.Target, Language: sn.Language, Text: sn.Text}})
		s.Subsections = append(s.Subsections, sub)
	}
	return s
}

// groupPlots are the HTML plots of a group.
func groupPlots(id string, g Group) []plot.Scene {
	in := plotGroup(g)
	out := []plot.Scene{plot.Percentiles(id, in)}
	if s, ok := plot.Histogram(id, in); ok {
		out = append(out, s)
	}
	if s, ok := windowsPlot(id, g); ok {
		out = append(out, s)
	}
	if s, ok := profilePlot(id, g); ok {
		out = append(out, s)
	}
	if s, ok := plot.InFlight(id, in); ok {
		out = append(out, s)
	}
	return out
}

// plotGroup is what the plots of g draw.
func plotGroup(g Group) plot.Group {
	rec := g.Recommendation
	out := plot.Group{
		Name: g.Name, Samples: g.Samples,
		Recommendation: plot.Recommendation{Quantile: rec.Quantile, TimeoutSeconds: rec.TimeoutSeconds, CutOffFraction: rec.CutOffFraction,
			Interval: plot.Interval{Confidence: rec.Interval.Confidence, LowSeconds: rec.Interval.LowSeconds, HighSeconds: rec.Interval.HighSeconds}},
		LittlesLaw: plot.LittlesLaw{InFlightNormal: g.LittlesLaw.InFlightNormal, InFlightDuringHang: g.LittlesLaw.InFlightDuringHang,
			Bulkhead: g.LittlesLaw.Bulkhead, Pool: g.LittlesLaw.Pool, PoolExhausted: g.LittlesLaw.PoolExhausted},
	}
	for _, p := range g.Percentiles {
		out.Percentiles = append(out.Percentiles, plot.Percentile{Quantile: p.Quantile, Seconds: p.Seconds, LowerBound: p.LowerBound})
	}
	for _, c := range g.Candidates {
		out.Candidates = append(out.Candidates, plot.Candidate{TimeoutSeconds: c.TimeoutSeconds, CutOffFraction: c.CutOffFraction})
	}
	if d := g.Distribution; d != nil {
		pd := &plot.Distribution{LowestSeconds: d.LowestSeconds}
		for _, b := range d.Bins {
			pd.Bins = append(pd.Bins, plot.Bin{UpperSeconds: b.UpperSeconds, Count: b.Count})
		}
		out.Distribution = pd
	}
	if p := g.Policy; p != nil && p.Attempts > 1 && slices.Contains(p.RetryOn, "timeout") {
		out.HangAttempts = p.Attempts
	}
	return out
}
