package report

import (
	"bytes"
	"fmt"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText writes the report for people reading a terminal.
func WriteText(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	ew := &errWriter{w: &buf}
	writeInputText(ew, r)
	if len(r.Groups) > 1 {
		writeSummaryText(ew, r)
	}
	for _, g := range r.Groups {
		writeGroupText(ew, g)
	}
	// tabwriter pads empty trailing cells; nobody wants trailing blanks.
	out := trailingBlanks.ReplaceAll(buf.Bytes(), []byte("\n"))
	_, err := w.Write(out)
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

func writeSummaryText(w *errWriter, r *Report) {
	w.printf("\nSummary\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  group\tcalls\tp50\tp99.9\ttimeout\tpool during a hang\t\n")
	for _, g := range r.Groups {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t\n", g.Name, human.Count(g.Samples),
			human.Seconds(percentile(g, 0.5)), human.Seconds(percentile(g, 0.999)),
			human.Seconds(g.Recommendation.TimeoutSeconds), poolVerdict(g.LittlesLaw))
	}
	tw.Flush()
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

// poolVerdict is a short word on the pool for summary tables.
func poolVerdict(l LittlesLaw) string {
	switch {
	case l.PoolExhausted == nil:
		return "unknown"
	case *l.PoolExhausted:
		return fmt.Sprintf("exhausted after %ss", human.Number(*l.SecondsToExhaustion))
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
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(g.Excluded)) {
			parts = append(parts, fmt.Sprintf("%s %s", human.Count(g.Excluded[k]), k))
		}
		w.printf("; not counted: %s", strings.Join(parts, ", "))
	}
	w.printf(" ==\n")

	rec := g.Recommendation
	w.printf("\nLatency\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, p := range g.Percentiles {
		value := human.Seconds(p.Seconds)
		if p.LowerBound {
			value = ">= " + value
		}
		note := ""
		if p.Quantile == rec.Quantile {
			iv := rec.Interval
			hi := "beyond the largest sample"
			if iv.HighSeconds != nil {
				hi = human.Seconds(*iv.HighSeconds)
			}
			note = fmt.Sprintf("%s confidence: %s to %s; %s calls above", human.Percent(iv.Confidence), human.Seconds(iv.LowSeconds), hi, human.Count(iv.Above))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", human.Quantile(p.Quantile), value, note)
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

	w.printf("\nCandidates\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  timeout\tcut off\tin flight during a hang\tx pool\t\n")
	for _, c := range g.Candidates {
		inFlight, multiple := "-", "-"
		if c.InFlightDuringHang != nil {
			inFlight = human.Number(*c.InFlightDuringHang)
		}
		if c.PoolMultiple != nil {
			multiple = fmt.Sprintf("%.2f", *c.PoolMultiple)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", human.Seconds(c.TimeoutSeconds), human.Percent(c.CutOffFraction), inFlight, multiple)
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
	}
	return source
}
