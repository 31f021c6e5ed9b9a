package report

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// PrometheusSource describes a report read live from Prometheus.
type PrometheusSource struct {
	URL         string  `json:"url"` // without credentials
	Metric      string  `json:"metric"`
	Kind        string  `json:"kind"` // "classic", "native", "summary"
	UnitSeconds float64 `json:"unit_seconds"`
	UnitFrom    string  `json:"unit_from"`
	At          string  `json:"at"` // end of the window, RFC 3339
	// WindowSeconds is the window the histograms cover, ending At.
	WindowSeconds float64  `json:"window_seconds"`
	StepSeconds   *float64 `json:"step_seconds"` // null without --step
	// Aggregate is what the recommendation builds on with --step:
	// "worst-step" or "overall".
	Aggregate string   `json:"aggregate"`
	Queries   []string `json:"queries"`
	// Warnings are Prometheus's own warnings and infos.
	Warnings []string `json:"warnings"`
	// Summary holds the quantile series of a summary; absent otherwise.
	Summary []SummaryQuantile `json:"summary,omitempty"`
}

// SummaryQuantile is one precomputed quantile series of a summary.
type SummaryQuantile struct {
	Labels     string  `json:"labels"`
	Quantile   float64 `json:"quantile"`
	Seconds    float64 `json:"seconds"`     // at the end of the window
	MaxSeconds float64 `json:"max_seconds"` // the largest value within it
}

// Buckets is the bucket view of one group: bucketed data only says which
// bucket a quantile lies in.
type Buckets struct {
	Kind string `json:"kind"` // "classic", "native"
	// Calls is the increase of the calls over the window the recommendation
	// uses (Prometheus extrapolates, so it may be fractional).
	Calls    float64 `json:"calls"`
	Quantile float64 `json:"quantile"`
	// Bucket holds the quantile; the recommendation builds on its upper bound.
	Bucket BucketRange `json:"bucket"`
	// HistogramQuantileSeconds is what histogram_quantile answers: a linear
	// interpolation within Bucket, or the largest finite bound when the
	// quantile lies beyond it (BeyondLargestBound), which is no measurement.
	HistogramQuantileSeconds float64 `json:"histogram_quantile_seconds"`
	BeyondLargestBound       bool    `json:"beyond_largest_bound"`
	// SuggestedLE is a bucket bound to add near the estimate (in the
	// metric's unit, as the le label is written); "" for native histograms.
	SuggestedLE   string    `json:"suggested_le"`
	BoundsSeconds []float64 `json:"bounds_seconds"` // finite upper bounds; empty for native
	Repairs       []string  `json:"repairs"`
	// Steps holds the quantile per step (--step), oldest first.
	Steps []StepQuantile `json:"steps"`
	// WorstStep is the index into Steps of the step with the highest
	// quantile; null without steps.
	WorstStep *int `json:"worst_step"`
	// UsesWorstStep: the recommendation is built on the worst step.
	UsesWorstStep bool `json:"uses_worst_step"`
}

// BucketRange is a bucket (low, high]; high is null for +Inf.
type BucketRange struct {
	LowSeconds  float64  `json:"low_seconds"`
	HighSeconds *float64 `json:"high_seconds"`
}

// StepQuantile is the quantile within one step-long window.
type StepQuantile struct {
	End                      string      `json:"end"` // RFC 3339
	Calls                    float64     `json:"calls"`
	Bucket                   BucketRange `json:"bucket"`
	HistogramQuantileSeconds float64     `json:"histogram_quantile_seconds"`
	BeyondLargestBound       bool        `json:"beyond_largest_bound"`
}

// NewBucketRange returns (lo, hi], with +Inf as a null high.
func NewBucketRange(lo, hi float64) BucketRange {
	b := BucketRange{LowSeconds: lo}
	if !math.IsInf(hi, 1) {
		b.HighSeconds = ptr(hi)
	}
	return b
}

// String writes the bucket as people read it: (500ms, 1s].
func (b BucketRange) String() string {
	if b.HighSeconds == nil {
		return fmt.Sprintf("(%s, +Inf)", human.Seconds(b.LowSeconds))
	}
	return fmt.Sprintf("(%s, %s]", human.Seconds(b.LowSeconds), human.Seconds(*b.HighSeconds))
}

// writePrometheusText describes the live source under the input line.
func writePrometheusText(w *errWriter, r *Report) {
	p := r.Prometheus
	if p == nil {
		return
	}
	w.printf("Prometheus at %s: %s %s, in %s (%s), %s window ending %s",
		p.URL, p.Kind, kindNoun(p.Kind), unitName(p.UnitSeconds), p.UnitFrom, human.Seconds(p.WindowSeconds), p.At)
	if p.StepSeconds != nil {
		w.printf(", per %s step", human.Seconds(*p.StepSeconds))
	}
	w.printf(".\n")
	for _, s := range p.Warnings {
		w.printf("Prometheus warns: %s\n", s)
	}
	if len(p.Summary) > 0 {
		w.printf("\nSummary quantiles of %s (computed by each instance; not a histogram)\n", p.Metric)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  series\tquantile\tat the end\tlargest in the window\n")
		for _, s := range p.Summary {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Labels, human.Quantile(s.Quantile), human.Seconds(s.Seconds), human.Seconds(s.MaxSeconds))
		}
		tw.Flush()
	}
}

func unitName(seconds float64) string {
	switch seconds {
	case 1:
		return "seconds"
	case 1e-3:
		return "milliseconds"
	case 1e-6:
		return "microseconds"
	case 1e-9:
		return "nanoseconds"
	}
	return "units of " + human.Seconds(seconds)
}

func kindNoun(kind string) string {
	if kind == "summary" {
		return "metric"
	}
	return "histogram"
}

// writeBucketsText shows where the quantile lies in the buckets.
func writeBucketsText(w *errWriter, g Group) {
	b := g.Buckets
	if b == nil {
		return
	}
	q := human.Quantile(b.Quantile)
	w.printf("\nBuckets (%s histogram: every call counts at its bucket's upper bound)\n", b.Kind)
	if b.BeyondLargestBound {
		w.printf("  %s lies in the bucket %s, beyond the largest finite bound: how long those calls took is unknown.\n", q, b.Bucket)
		w.printf("  histogram_quantile would answer %s, the largest finite bound: that is no measurement.\n", human.Seconds(b.HistogramQuantileSeconds))
	} else {
		w.printf("  %s lies in the bucket %s; the timeout builds on %s, its upper bound (conservative).\n", q, b.Bucket, human.Seconds(*b.Bucket.HighSeconds))
		w.printf("  histogram_quantile's linear estimate: %s.\n", human.Seconds(b.HistogramQuantileSeconds))
	}
	if b.SuggestedLE != "" {
		w.printf("  Add a bucket bound le=%q to sharpen the next measurement.\n", b.SuggestedLE)
	}
	if len(b.BoundsSeconds) > 0 {
		bounds := make([]string, len(b.BoundsSeconds))
		for i, s := range b.BoundsSeconds {
			bounds[i] = human.Seconds(s)
		}
		w.printf("  Bounds: %s, +Inf\n", strings.Join(bounds, " "))
	}
	if len(b.Steps) > 0 && b.WorstStep != nil {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range b.Steps {
			lo, hi = math.Min(lo, s.HistogramQuantileSeconds), math.Max(hi, s.HistogramQuantileSeconds)
		}
		worst := b.Steps[*b.WorstStep]
		w.printf("  Per step (%d with calls): histogram_quantile's %s from %s to %s; the worst step, ending %s, lies in %s.\n",
			len(b.Steps), q, human.Seconds(lo), human.Seconds(hi), worst.End, worst.Bucket)
		if b.UsesWorstStep {
			w.printf("  The recommendation builds on the worst step (%s calls); --aggregate overall uses the whole window.\n", human.Number(worst.Calls))
		} else {
			w.printf("  The recommendation builds on the whole window (--aggregate overall); the worst step needs %s.\n", worst.Bucket)
		}
	}
	for _, s := range b.Repairs {
		w.printf("  Repaired: %s.\n", s)
	}
}
