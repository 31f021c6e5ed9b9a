package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// PrometheusSource describes a report read live from Prometheus.
type PrometheusSource struct {
	URL         string  `json:"url"` // without credentials
	Metric      string  `json:"metric"`
	Kind        string  `json:"kind"` // "classic", "vmrange", "native", "summary"
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
	// Server is which server answered, told by its build information:
	// "Prometheus", "VictoriaMetrics", "Thanos", "Mimir", "Cortex" or
	// "unknown"; ServerVersion its version as it gave it ("" when unknown).
	Server        string `json:"server"`
	ServerVersion string `json:"server_version"`
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
	// EstimateSeconds is a linear interpolation within Bucket, computed the
	// way PromQL's histogram_quantile computes it, over the buckets as they
	// were read and repaired (Repairs), or the largest finite bound when
	// the quantile lies beyond it (BeyondLargestBound), which is no
	// measurement; null when there is none.
	EstimateSeconds *float64 `json:"estimate_seconds"`
	// EstimateBy says whose answer EstimateSeconds is: "histogram_quantile"
	// when it is what the server's histogram_quantile answers for the same
	// data, "tunetimeout" when a repair PromQL does not make changed the
	// buckets, or the server computes otherwise; EstimateNote says why.
	EstimateBy   string `json:"estimate_by"`
	EstimateNote string `json:"estimate_note"`
	// HistogramQuantileSeconds is what the server's own histogram_quantile
	// answers for the window: asked from the server when Server is set
	// (VictoriaMetrics computes it otherwise than Prometheus), else equal
	// to EstimateSeconds when EstimateBy is "histogram_quantile"; null when
	// unknown or NaN.
	HistogramQuantileSeconds *float64 `json:"histogram_quantile_seconds"`
	// Server is whose histogram_quantile HistogramQuantileSeconds is, when
	// it was asked: "VictoriaMetrics"; "" when it was computed here.
	Server             string `json:"histogram_quantile_server,omitempty"`
	BeyondLargestBound bool   `json:"beyond_largest_bound"`
	// SuggestedLE is a bucket bound to add near the estimate (in the
	// metric's unit, as the le label is written); "" for native histograms.
	SuggestedLE   string    `json:"suggested_le"`
	BoundsSeconds []float64 `json:"bounds_seconds"` // finite upper bounds; empty for native
	// MaxIsLastBound: the largest of BoundsSeconds is no bucket bound
	// but the calls' max (OTLP points carry it), which bounds the highest
	// bucket that holds calls.
	MaxIsLastBound bool     `json:"max_is_last_bound,omitempty"`
	Repairs        []string `json:"repairs"`
	// Steps holds the quantile per step (--step), oldest first.
	Steps []StepQuantile `json:"steps"`
	// WorstStep is the index into Steps of the step with the highest
	// quantile; null without steps.
	WorstStep *int `json:"worst_step"`
	// UsesWorstStep: the recommendation is built on the worst step.
	UsesWorstStep bool `json:"uses_worst_step"`
	// UsesWorstSlot names the profile's worst slot when the
	// recommendation is built on its steps pooled (docs/windows.md).
	UsesWorstSlot string `json:"uses_worst_slot,omitempty"`
}

// BucketRange is a bucket (low, high]; high is null for +Inf.
type BucketRange struct {
	LowSeconds  float64  `json:"low_seconds"`
	HighSeconds *float64 `json:"high_seconds"`
}

// StepQuantile is the quantile within one step-long window.
type StepQuantile struct {
	End    string      `json:"end"` // RFC 3339
	Calls  float64     `json:"calls"`
	Bucket BucketRange `json:"bucket"`
	// EstimateSeconds and HistogramQuantileSeconds are as in Buckets, for
	// this step; null when there is none.
	EstimateSeconds          *float64 `json:"estimate_seconds"`
	HistogramQuantileSeconds *float64 `json:"histogram_quantile_seconds"`
	BeyondLargestBound       bool     `json:"beyond_largest_bound"`
}

// Finite returns a pointer to x, or nil for NaN and infinities: JSON has no
// number for them, and a figure that is not one is unknown.
func Finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
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

// OTLPServer is PrometheusSource.Server for histograms read from OTLP
// metrics files.
const OTLPServer = "OTLP metrics"

// serverName names the server as the report's first line does:
// "Prometheus" when it is one or cannot be told apart (the API is
// Prometheus's), else the server, with its version when known.
func serverName(p *PrometheusSource) string {
	switch p.Server {
	case "", "unknown":
		return "Prometheus"
	}
	if p.ServerVersion != "" {
		return p.Server + " " + p.ServerVersion
	}
	return p.Server
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

// histogramQuantileName names whose histogram_quantile answered: the
// server's when it was asked, else Prometheus's (computed here as PromQL
// does).
func histogramQuantileName(server string) string {
	if server == "" {
		return "Prometheus's histogram_quantile"
	}
	return server + "'s histogram_quantile"
}

// bucketsSection shows where the quantile lies in the buckets of bucketed
// data (Prometheus); nil for calls read one by one.
func bucketsSection(g Group) *Section {
	b := g.Buckets
	if b == nil {
		return nil
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	q := human.Quantile(b.Quantile)
	if b.BeyondLargestBound {
		add("%s lies in the bucket %s, beyond the largest finite bound: how long those calls took is unknown.", q, b.Bucket)
		if b.HistogramQuantileSeconds != nil {
			add("%s would answer %s, the largest finite bound: that is no measurement.", histogramQuantileName(b.Server), human.Seconds(*b.HistogramQuantileSeconds))
		}
	} else {
		add("%s lies in the bucket %s; the timeout builds on %s, its upper bound (conservative).", q, b.Bucket, human.Seconds(*b.Bucket.HighSeconds))
		switch {
		case b.EstimateSeconds == nil:
		case b.EstimateBy == "histogram_quantile" && b.Server == "":
			add("Prometheus's histogram_quantile (a linear estimate within the bucket): %s.", human.Seconds(*b.EstimateSeconds))
		case b.EstimateBy == "histogram_quantile":
			add("%s (asked from the server; a linear estimate within the bucket): %s, as tunetimeout's own interpolation.",
				histogramQuantileName(b.Server), human.Seconds(*b.EstimateSeconds))
		default:
			s := "tunetimeout's interpolation over the buckets it kept: " + human.Seconds(*b.EstimateSeconds)
			if b.EstimateNote != "" {
				s += " (" + b.EstimateNote + ")"
			}
			add("%s.", s)
			if b.HistogramQuantileSeconds != nil {
				add("%s answers %s.", histogramQuantileName(b.Server), human.Seconds(*b.HistogramQuantileSeconds))
			}
		}
	}
	switch {
	case b.SuggestedLE == "":
	case b.Kind == "explicit": // OTLP
		add("Add %s to the histogram's explicit bucket boundaries (an SDK View's) to sharpen the next measurement.", b.SuggestedLE)
	default:
		add("Add a bucket bound le=%q to sharpen the next measurement.", b.SuggestedLE)
	}
	if len(b.BoundsSeconds) > 0 {
		bounds := make([]string, len(b.BoundsSeconds))
		for i, s := range b.BoundsSeconds {
			bounds[i] = human.Seconds(s)
		}
		inf := ", +Inf"
		if b.MaxIsLastBound {
			inf = " (the last is the calls' max, not a bucket bound)"
		}
		add("Bounds: %s%s", strings.Join(bounds, " "), inf)
	}
	if len(b.Steps) > 0 && b.WorstStep != nil {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range b.Steps {
			if s.EstimateSeconds != nil {
				lo, hi = math.Min(lo, *s.EstimateSeconds), math.Max(hi, *s.EstimateSeconds)
			}
		}
		worst := b.Steps[*b.WorstStep]
		estimates := "the estimated " + q
		if b.EstimateBy == "histogram_quantile" && b.Server == "" {
			estimates = "histogram_quantile's " + q
		}
		if lo <= hi {
			add("Per step (%d with calls): %s from %s to %s; the worst step, ending %s, lies in %s.",
				len(b.Steps), estimates, human.Seconds(lo), human.Seconds(hi), worst.End, worst.Bucket)
		} else {
			add("Per step (%d with calls): the worst step, ending %s, lies in %s.", len(b.Steps), worst.End, worst.Bucket)
		}
		switch {
		case b.UsesWorstSlot != "":
			add("The recommendation builds on the profile's worst hour, %s, its steps pooled (%s calls); %s overall uses the whole window.", b.UsesWorstSlot, human.Number(b.Calls), usage.Aggregate)
		case b.UsesWorstStep:
			add("The recommendation builds on the worst step (%s calls); %s overall uses the whole window.", human.Number(worst.Calls), usage.Aggregate)
		default:
			add("The recommendation builds on the whole window (%s overall); the worst step needs %s.", usage.Aggregate, worst.Bucket)
		}
	}
	for _, s := range b.Repairs {
		add("Repaired: %s.", s)
	}
	return &Section{ID: "buckets", Title: fmt.Sprintf("Buckets (%s histogram: every call counts at its bucket's upper bound)", b.Kind),
		Blocks: []Block{plainList("buckets", lines)}}
}
