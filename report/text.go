package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WriteText writes the report for people reading a terminal.
func WriteText(w io.Writer, r *Report) error {
	r = forPeople(r)
	var buf bytes.Buffer
	ew := &errWriter{w: &buf}
	writeInputText(ew, r)
	writePrometheusText(ew, r)
	for _, s := range sections(r) {
		writeSectionText(ew, s)
	}
	if len(r.Groups) > 1 {
		writeSummaryText(ew, r)
	}
	for _, g := range r.Groups {
		writeGroupText(ew, g)
	}
	return writeLines(w, buf.Bytes())
}

// writeLines writes a text document: without trailing blanks (tabwriter
// pads empty trailing cells; nobody wants them), and with any control
// character that got past forPeople escaped all the same.
func writeLines(w io.Writer, doc []byte) error {
	out := trailingBlanks.ReplaceAll(doc, []byte("\n"))
	_, err := io.WriteString(w, escape.Lines(string(out)))
	return err
}

var trailingBlanks = regexp.MustCompile(`[ \t]+\n`)

// errWriter keeps the first write error so the writers above stay readable.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

func writeInputText(w *errWriter, r *Report) {
	in := r.Input
	w.printf("Read %s records from %s", human.Count(in.Records), strings.Join(in.Files, ", "))
	if in.BadRecords > 0 {
		w.printf("; %s could not be used (%s)", human.Count(in.BadRecords), human.Percent(float64(in.BadRecords)/float64(in.Records)))
	}
	w.printf(".\n")
	for _, e := range in.BadExamples {
		w.printf("  %s\n", e)
	}
	if shown := int64(len(in.BadExamples)); in.BadRecords > shown {
		w.printf("  ... and %s more\n", human.Count(in.BadRecords-shown))
	}
	for _, n := range in.Notes {
		w.printf("%s\n", n)
	}
}

// writeSummaryText writes the summary table, riskiest group first
// (Summarize).
func writeSummaryText(w *errWriter, r *Report) {
	w.printf("\nSummary\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  group\tcalls\tp50\tp99.9\tuncertainty\ttimeout\tpool during a hang\t\n")
	for _, s := range Summarize(r) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Group, human.Count(s.Samples),
			human.Seconds(s.P50Seconds), human.Seconds(s.P999Seconds), UncertaintyText(s.Uncertainty),
			human.Seconds(s.TimeoutSeconds), s.PoolVerdict)
	}
	tw.Flush()
	w.printf("%s", wrap(summaryLegend(r), "  ", 100))
}

// wrap breaks text into lines of at most width columns, each starting with
// indent and ending with a line break.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if line != indent && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	return b.String() + line + "\n"
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

func writeGroupText(w *errWriter, g Group) {
	w.printf("\n== %s: %s calls", g.Name, human.Count(g.Samples))
	if g.Censored > 0 {
		w.printf(", %s of them censored (took at least their recorded time)", human.Count(g.Censored))
	}
	if len(g.Excluded) > 0 {
		w.printf("; not counted: %s", strings.Join(excludedParts(g, nil), ", "))
	}
	w.printf(" ==\n")

	rec := g.Recommendation
	w.printf("\nLatency\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range percentileRows(g) {
		value := p.Value
		if p.LowerBound {
			value = ">= " + value
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, value, p.Note)
	}
	fmt.Fprintf(tw, "  mean\t%s\t\n", human.Seconds(g.MeanSeconds))
	tw.Flush()

	w.printf("\nRecommended timeout: %s (%s; cuts off %s of these calls)\n",
		human.Seconds(rec.TimeoutSeconds), human.Quantile(rec.Quantile), human.Percent(rec.CutOffFraction))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range rec.Steps {
		fmt.Fprintf(tw, "  %d. %s\t%s\t%s\n", i+1, s.Rule, human.Seconds(s.Seconds), s.Reason)
	}
	tw.Flush()
	if rec.ConnectTimeoutSeconds != nil {
		w.printf("Connect timeout: %s\n", human.Seconds(*rec.ConnectTimeoutSeconds))
	} else {
		w.printf("Connect timeout: not recommended without a round-trip time (--rtt) or measured connect times.\n")
	}

	writeBucketsText(w, g)

	w.printf("\nCandidates\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  timeout\tcut off\tin flight during a hang\tx pool\t\n")
	for _, c := range candidateRows(g) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", c.Timeout, c.CutOff, c.InFlight, c.Multiple)
	}
	tw.Flush()

	ll := g.LittlesLaw
	w.printf("\nLittle's law")
	if ll.RatePerSecond != nil {
		w.printf(" (rate %s calls/s %s", human.Number(*ll.RatePerSecond), rateSourceText(ll.RateSource))
		if ll.PeakRatePerSecond != nil {
			w.printf(", busiest minute %s calls/s", human.Number(*ll.PeakRatePerSecond))
		}
		if ll.BusiestSecond != nil {
			w.printf(", busiest second %s calls", human.Number(*ll.BusiestSecond))
		}
		w.printf(")")
	}
	w.printf("\n  %s\n", ll.Verdict)
	if ll.Bulkhead != nil && ll.HystrixBulkhead != nil {
		w.printf("  Bulkhead: %d. At the peak rate normal demand is %s calls in flight on average (Poisson);\n"+
			"  %d is its 99.9th percentile, so about 0.1 %% of calls would be turned away on a normal day.\n"+
			"  Hystrix's rule of thumb (peak rate x p99 + breathing room) gives %d.\n",
			*ll.Bulkhead, human.Number(*ll.InFlightPeak), *ll.Bulkhead, *ll.HystrixBulkhead)
	}

	if policyAsked(g.Policy) {
		writePolicyText(w, g)
	}

	if len(rec.Warnings) > 0 {
		w.printf("\nWarnings\n")
		for _, s := range rec.Warnings {
			w.printf("  - %s\n", s)
		}
	}
}

func rateSourceText(source string) string {
	switch source {
	case "measured":
		return "measured from timestamps"
	case "flag":
		return "from --rate"
	case "prometheus":
		return "from Prometheus, the increase of _count"
	}
	return source
}

// WritePolicyText writes the call policy and its simulation of every group,
// the report of `tunetimeout simulate`.
func WritePolicyText(w io.Writer, r *Report) error {
	r = forPeople(r)
	var buf bytes.Buffer
	ew := &errWriter{w: &buf}
	writeInputText(ew, r)
	for _, g := range r.Groups {
		ew.printf("\n== %s: %s calls ==\n", g.Name, human.Count(g.Samples))
		if g.Policy == nil {
			ew.printf("\nNo call policy.\n")
			continue
		}
		writePolicyText(ew, g)
	}
	return writeLines(w, buf.Bytes())
}

// policyAsked reports whether the full report shows the call policy: when a
// deadline or retries were asked for, or it was simulated. One attempt at
// the recommended timeout without a deadline adds nothing to the report.
func policyAsked(p *Policy) bool {
	return p != nil && (p.DeadlineSeconds != nil || p.RequestedAttempts > 1 || p.Simulation != nil)
}

// writePolicyText writes the "Call policy" section of one group.
func writePolicyText(w *errWriter, g Group) {
	p := g.Policy
	sec := human.Seconds
	w.printf("\nCall policy")
	if p.DeadlineSeconds != nil {
		w.printf(" (deadline %s)", sec(*p.DeadlineSeconds))
	} else {
		w.printf(" (no deadline)")
	}
	w.printf("\n  %s of %s", plural(p.Attempts, "attempt"), sec(p.PerTryTimeoutSeconds))
	if p.RequestedAttempts != p.Attempts {
		w.printf(" (%d asked)", p.RequestedAttempts)
	}
	w.printf(", each cutting off %s of calls; at most %s in all\n", human.Percent(p.CutOffFraction), sec(p.WorstCaseSeconds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range p.Steps {
		fmt.Fprintf(tw, "  %d. %s\t%s\t%s\n", i+1, s.Rule, sec(s.Seconds), s.Reason)
	}
	tw.Flush()

	for _, f := range policyFacts(g) {
		w.printf("  %s\n", f)
	}
	if len(p.Warnings) > 0 {
		w.printf("  Warnings\n")
		for _, s := range p.Warnings {
			w.printf("    - %s\n", s)
		}
	}

	sim := p.Simulation
	if sim == nil {
		return
	}
	w.printf("\nSimulation (%s requests per scenario, seed %d)\n", human.Count(int64(sim.Requests)), sim.Seed)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  scenario\tbudget\tsucceed\tattempts per request\tp50\tp99\t\n")
	for _, s := range sim.Scenarios {
		budget := "no"
		if s.WithBudget {
			budget = "yes"
		}
		p50, p99 := "-", "-"
		if s.SuccessFraction > 0 {
			p50, p99 = sec(s.P50Seconds), sec(s.P99Seconds)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.2f\t%s\t%s\t\n", s.Name, budget, successText(s.SuccessFraction), s.AttemptsPerRequest, p50, p99)
	}
	tw.Flush()
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

// plural writes n with a noun: "1 attempt", "3 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
