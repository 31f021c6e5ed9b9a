package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// PrometheusOptions are the choices that only `tunetimeout prometheus` has.
type PrometheusOptions struct {
	Source promsource.Options
	// Overall builds the recommendation on the whole window even with
	// Source.Step; by default it builds on the worst step, the window the
	// timeout must survive (docs/method.md#5-variation-over-time).
	Overall bool
}

// ErrSummary is returned (wrapped), with a report of the quantile series,
// when the metric is a summary.
var ErrSummary = errors.New("a summary's quantiles cannot give a timeout")

// RunPrometheus reads a histogram from Prometheus and returns the report:
// per group the recommendation built on the conservative reading of the
// buckets (every call at its bucket's upper bound), the bucket view beside
// it, and Little's law with the rates Prometheus measured. For a summary it
// returns a report of its quantile series together with ErrSummary.
func RunPrometheus(ctx context.Context, o Options, p PrometheusOptions) (*report.Report, error) {
	// Group names are the values of these labels, as of --by in files: a
	// method label sets each group's idempotency (methodOf).
	o.Ingest.By = p.Source.By
	// The quantile the timeout builds on: a server whose histogram_quantile
	// differs from Prometheus's (VictoriaMetrics) is asked for its own.
	p.Source.Quantile = 1 - o.Recommend.FalseTimeouts
	res, err := promsource.Fetch(ctx, p.Source)
	if err != nil {
		return nil, err
	}
	src := &report.PrometheusSource{
		URL:           res.URL,
		Metric:        res.Metric,
		Kind:          res.Kind,
		UnitSeconds:   res.Unit.Seconds(),
		UnitFrom:      res.UnitFrom,
		At:            res.At.UTC().Format(time.RFC3339),
		WindowSeconds: res.Window.Seconds(),
		Aggregate:     "overall",
		Queries:       res.Queries,
		Server:        res.Server,
		ServerVersion: res.ServerVersion,
		Warnings:      append([]string{}, res.Warnings...),
	}
	if res.Step > 0 {
		src.StepSeconds = ptr(res.Step.Seconds())
		if !p.Overall {
			src.Aggregate = "worst-step"
		}
	}
	r := &report.Report{
		Input: report.Input{
			Files:       []string{res.Metric + " at " + res.URL},
			BadExamples: []string{},
			Notes:       []string{},
			Findings:    []report.Finding{},
		},
		Groups:     []report.Group{},
		Prometheus: src,
	}
	for _, n := range res.Notes {
		r.Input.Note(finding.New(finding.PrometheusNote, nil, n))
	}
	if res.Kind == promsource.Summary {
		for _, s := range res.Summary {
			src.Summary = append(src.Summary, report.SummaryQuantile(s))
		}
		return r, fmt.Errorf("%s is a summary: %w. Its quantiles were computed by each instance over its own sliding window; they cannot be averaged or added across instances, and cannot tell what share of calls another timeout would cut off. Export a histogram (classic or native) to get a recommendation",
			res.Metric, ErrSummary)
	}

	if err := bucketedGroups(ctx, o, p, res, r, true); err != nil {
		return nil, err
	}
	return r, nil
}

// bucketedGroups analyses the groups of res into r, each on its buckets,
// and the pool they share; with countCalls their calls are r's records.
func bucketedGroups(ctx context.Context, o Options, p PrometheusOptions, res *promsource.Result, r *report.Report, countCalls bool) error {
	q := 1 - o.Recommend.FalseTimeouts
	var total float64
	for _, g := range res.Groups {
		if g.Err == nil {
			total += g.Calls
		}
	}
	if o.Rate > 0 && len(res.Groups) > 1 {
		r.Input.Note(finding.Newf(finding.RateShared, finding.Fields{"rate_per_second": o.Rate, "groups": len(res.Groups)},
			"The %s of %s calls/s is shared among the groups by their share of the calls.", usage.Rate, human.Number(o.Rate)))
	}
	var hangs []littleslaw.Result
	for _, g := range res.Groups {
		if err := ctx.Err(); err != nil {
			return err
		}
		if g.Err != nil {
			r.Input.Note(finding.Newf(finding.GroupFailed, finding.Fields{"group": g.Name, "error": g.Err.Error()},
				"Group %q: %v; it is left out.", g.Name, g.Err))
			continue
		}
		rg, ll, err := prometheusGroup(ctx, g, o, p, res, q, g.Calls/total)
		if err != nil {
			return fmt.Errorf("group %q: %w", g.Name, err)
		}
		hangs = append(hangs, ll)
		if countCalls {
			r.Input.Records += int64(math.Round(g.Calls))
		}
		r.Groups = append(r.Groups, rg)
	}
	r.SharedPool = advice.NewSharedPool(o.Pool, hangs)
	return nil
}

// prometheusGroup analyses one group's buckets.
func prometheusGroup(ctx context.Context, g promsource.Group, o Options, p PrometheusOptions, res *promsource.Result, q, share float64) (report.Group, littleslaw.Result, error) {
	view := &report.Buckets{Kind: res.Kind, Quantile: q, Repairs: append([]string{}, finding.Messages(g.Overall.Repairs)...), BoundsSeconds: []float64{}, Steps: []report.StepQuantile{}}
	chosen, worstIndex := worstStep(view, g, res, q, p.Overall)
	// --step over days: the steps pooled by hour (docs/windows.md); the
	// worst slot told apart goes ahead of the worst step.
	var prof *report.Profile
	var slotHist *histogram.Bucketed
	if res.Step > 0 {
		conf := o.Recommend.Confidence
		if conf == 0 {
			conf = recommend.DefaultOptions().Confidence
		}
		var err error
		if prof, slotHist, err = advice.StepProfile(g, o.WindowOptions, o.Recommend, res.Step, q, conf, !p.Overall); err != nil {
			return report.Group{}, littleslaw.Result{}, err
		}
	}
	if slotHist != nil {
		chosen = slotHist
		view.UsesWorstStep, view.UsesWorstSlot = false, prof.WorstSlot.Slot
		view.Repairs = []string{}
	}
	pos := chosen.Locate(q)
	serverEstimate := g.ServerEstimate
	switch {
	case view.UsesWorstStep:
		serverEstimate = g.Steps[worstIndex].ServerEstimate
	case slotHist != nil:
		serverEstimate = math.NaN() // no server answered for the pooled slot
	}
	viewChosen(view, res, chosen, pos, serverEstimate)

	hg, quantile := advice.BucketGroup(g, chosen)
	if slotHist != nil {
		// Little's law at the slot's rate: its calls over its hour on
		// every day it occurred.
		rate := prof.Slots[slices.IndexFunc(prof.Slots, func(s report.ProfileSlot) bool { return s.Index == prof.WorstSlot.Index })].RatePerSecond
		hg.Measured.Rate, hg.Measured.PeakRate = rate, max(hg.Measured.PeakRate, rate)
		hg.Measured.Source = "the profile's slot"
	}
	lat := hg.Latency
	result, err := analyseGroup(ctx, hg, o, share, quantile)
	if err != nil {
		return report.Group{}, littleslaw.Result{}, err
	}
	bucketReasons(&result.Recommendation, lat, pos, chosen)
	rg := newBucketedGroup(result, g, chosen)
	rg.Buckets = view
	if res.Step > 0 {
		if err := stepWindows(&rg, g, o, res.Step, q, worstIndex, view.UsesWorstStep, view.UsesWorstSlot); err != nil {
			return report.Group{}, littleslaw.Result{}, err
		}
		rg.Profile = prof
	}
	return rg, result.LittlesLaw, nil
}

// worstStep lists in view the quantile q of each of the group's steps
// and marks the worst, the one whose bucket, then estimate, is highest.
// It returns the buckets to recommend from, the worst step's (and their
// repairs in view) unless overall (PrometheusOptions.Overall) or there
// is none, else the whole window's; and the worst step's index in
// g.Steps, -1 when there is none.
func worstStep(view *report.Buckets, g promsource.Group, res *promsource.Result, q float64, overall bool) (*histogram.Bucketed, int) {
	chosen := g.Overall
	worstKey := [2]float64{math.Inf(-1), math.Inf(-1)}
	worstIndex := -1
	for i, st := range g.Steps {
		if st.Hist == nil {
			continue
		}
		pos := st.Hist.Locate(q)
		sq := report.StepQuantile{
			End:                st.End.UTC().Format(time.RFC3339),
			Calls:              st.Hist.Count,
			Bucket:             report.NewBucketRange(pos.Bucket.Lo, pos.Bucket.Hi),
			EstimateSeconds:    report.Finite(pos.Estimate),
			BeyondLargestBound: pos.InInf,
		}
		sq.HistogramQuantileSeconds = serverAnswer(res, st.Hist, pos, st.ServerEstimate)
		view.Steps = append(view.Steps, sq)
		if key := [2]float64{pos.Bucket.Hi, pos.Estimate}; key[0] > worstKey[0] || (key[0] == worstKey[0] && key[1] > worstKey[1]) {
			worstKey = key
			worstIndex = i
			view.WorstStep = ptr(len(view.Steps) - 1)
			if !overall {
				chosen = st.Hist
			}
		}
	}
	if view.WorstStep != nil && !overall {
		view.UsesWorstStep = true
		view.Repairs = append([]string{}, finding.Messages(chosen.Repairs)...)
	}
	return chosen, worstIndex
}

// viewChosen describes in view the buckets the recommendation builds on,
// chosen, and pos, the quantile's position in them; serverEstimate is
// what the server answered for them, NaN when none did (serverAnswer).
func viewChosen(view *report.Buckets, res *promsource.Result, chosen *histogram.Bucketed, pos histogram.Position, serverEstimate float64) {
	view.Calls = chosen.Count
	view.Bucket = report.NewBucketRange(pos.Bucket.Lo, pos.Bucket.Hi)
	view.EstimateSeconds = report.Finite(pos.Estimate)
	view.BeyondLargestBound = pos.InInf
	view.HistogramQuantileSeconds = serverAnswer(res, chosen, pos, serverEstimate)
	view.EstimateBy, view.EstimateNote = estimateBy(res, chosen, view.EstimateSeconds, view.HistogramQuantileSeconds)
	if res.ServerAsked {
		view.Server = res.Server
	}
	if res.Kind == promsource.Classic || res.Kind == promsource.OTLPExplicit {
		view.BoundsSeconds = chosen.Bounds()
		// FromClassic ends with the +Inf bucket: a finite last bucket is
		// the OTLP points' max (promsource, otlpPoint.histogram).
		view.MaxIsLastBound = len(chosen.Buckets) > 0 && !math.IsInf(chosen.Buckets[len(chosen.Buckets)-1].Hi, 1)
		view.SuggestedLE = suggestLE(pos, chosen, res.Unit)
	}
}

// newBucketedGroup is the report's group of a result built on the
// buckets chosen of g: with g's labels, the buckets' repairs, the mean
// the server measured, and percentiles read from the buckets.
func newBucketedGroup(result advice.Result, g promsource.Group, chosen *histogram.Bucketed) report.Group {
	rg := advice.NewGroup(result)
	if len(g.Labels) > 0 {
		rg.Labels = map[string]string{}
		for _, l := range g.Labels {
			rg.Labels[l.Name] = l.Value
		}
	}
	// The repairs of the buckets the recommendation builds on, as findings
	// too (TT-BUCKET-REPAIR), beside the buckets view's repairs.
	rg.Findings = append(rg.Findings, finding.Clone(chosen.Repairs)...)
	if g.Mean > 0 {
		rg.MeanSeconds = g.Mean
	}
	// A percentile is a lower bound only beyond the largest finite bound:
	// below it the bucket is known even where censored calls share the
	// HDR value of the largest bound.
	for i := range rg.Percentiles {
		d, lower := chosen.Upper(rg.Percentiles[i].Quantile)
		rg.Percentiles[i].Seconds, rg.Percentiles[i].LowerBound = d.Seconds(), lower
	}
	return rg
}

// stepWindows writes the steps of --step as the windows analyze --window
// reports (report.Window, report.WorstWindow), so that both read alike:
// each step's calls, its quantile at its bucket's upper bound (what the
// timeout builds on) and the bucket as the interval (the quantile lies in
// it for sure: confidence 1), and the timeout the step alone gives. The
// worst step is the worst window; it is significant when its bucket lies
// above the whole window's. slot names the profile's worst slot when the
// recommendation is its.
func stepWindows(rg *report.Group, g promsource.Group, o Options, step time.Duration, q float64, worst int, used bool, slot string) error {
	overall := g.Overall.Locate(q)
	for i, st := range g.Steps {
		if st.Hist == nil {
			continue
		}
		pos := st.Hist.Locate(q)
		w := report.Window{Start: st.End.Add(-step).UTC(), End: st.End.UTC(), Samples: int64(math.Round(st.Hist.Count)), Percentiles: []report.Percentile{},
			Interval: report.Interval{Confidence: 1, LowSeconds: pos.Bucket.Lo, HighSeconds: report.Finite(pos.Bucket.Hi)}}
		if st.Hist.Count > 0 {
			hg, quantile := advice.BucketGroup(g, st.Hist)
			if hg.Latency.Count() > 0 {
				rec, err := recommend.RecommendMeasured(hg.Latency, recommend.Measured{Quantile: quantile}, o.Recommend)
				if err != nil {
					return fmt.Errorf("step ending %s: %w", st.End.UTC().Format(time.RFC3339), err)
				}
				w.TimeoutSeconds = rec.Timeout.Seconds()
			}
			for _, pq := range []float64{0.5, 0.99, 0.999} {
				d, lower := st.Hist.Upper(pq)
				w.Percentiles = append(w.Percentiles, report.Percentile{Quantile: pq, Seconds: d.Seconds(), LowerBound: lower})
			}
			d, _ := st.Hist.Upper(q)
			w.QuantileSeconds = d.Seconds()
			w.EnoughData = !pos.InInf
		}
		rg.Windows = append(rg.Windows, w)
		if i == worst {
			ww := &report.WorstWindow{Start: w.Start, End: w.End, QuantileSeconds: w.QuantileSeconds, TimeoutSeconds: w.TimeoutSeconds,
				WholeTimeoutSeconds: rg.Recommendation.TimeoutSeconds, Used: used, Significant: pos.Bucket.Lo >= overall.Bucket.Hi}
			if used || slot != "" {
				// The group's recommendation is the worst step's (or
				// slot's) already.
				ww.WholeTimeoutSeconds = 0
				if hg, quantile := advice.BucketGroup(g, g.Overall); hg.Latency.Count() > 0 {
					if rec, err := recommend.RecommendMeasured(hg.Latency, recommend.Measured{Quantile: quantile}, o.Recommend); err == nil {
						ww.WholeTimeoutSeconds = rec.Timeout.Seconds()
					}
				}
			}
			ww.Reason = fmt.Sprintf("The worst step ends %s: %s lies in %s over %s calls (%s %s).", w.End.Format(time.RFC3339),
				human.Quantile(q), bucketText(pos.Bucket.Lo, pos.Bucket.Hi), human.Count(w.Samples), usage.Step, human.Duration(step))
			if slot != "" {
				ww.Reason += fmt.Sprintf(" The recommendation is the profile's worst hour's instead (%s): it repeats, and rests on the calls of every day.", slot)
			}
			rg.WorstWindow = ww
		}
	}
	return nil
}

// bucketText is a bucket as people read it: "(250ms, 500ms]".
func bucketText(lo, hi float64) string {
	h := "+Inf"
	if !math.IsInf(hi, 1) {
		h = human.Seconds(hi)
	}
	return "(" + human.Seconds(lo) + ", " + h + "]"
}

// serverAnswer is what the server's histogram_quantile answers for h: the
// answer it gave when it was asked (VictoriaMetrics computes otherwise than
// Prometheus), else Locate's estimate when it reads the buckets as PromQL
// does; nil when unknown or NaN.
func serverAnswer(res *promsource.Result, h *histogram.Bucketed, pos histogram.Position, asked float64) *float64 {
	if res.ServerAsked {
		return report.Finite(asked)
	}
	// Native and OTLP exponential buckets: Prometheus 3 interpolates
	// within them exponentially, not linearly.
	if h.Divergence == "" && res.Kind != promsource.VMRange && res.Kind != promsource.OTLPExponential && (res.Kind != promsource.Native || prometheus2(res)) {
		return report.Finite(pos.Estimate)
	}
	return nil
}

// estimateBy labels the estimate: histogram_quantile's when it is the
// server's answer, else tunetimeout's, with why.
func estimateBy(res *promsource.Result, h *histogram.Bucketed, est, server *float64) (by, note string) {
	switch {
	case res.ServerAsked && est != nil && server != nil && math.Abs(*est-*server) <= 1e-9*math.Abs(*server):
		return "histogram_quantile", ""
	case res.ServerAsked:
		return "tunetimeout", fmt.Sprintf("%s's histogram_quantile computes otherwise", res.Server)
	case h.Divergence != "":
		return "tunetimeout", h.Divergence
	case res.Kind == promsource.Native && !prometheus2(res):
		// Prometheus 3 interpolates within an exponential bucket on a log
		// scale; Locate is linear, as Prometheus 2 is.
		return "tunetimeout", "linear within the bucket, as Prometheus 2's histogram_quantile computes it; Prometheus 3 interpolates native buckets exponentially"
	case res.Kind == promsource.VMRange:
		// VictoriaMetrics's layout, read with its rule, from a server
		// whose histogram_quantile reads only le buckets.
		return "tunetimeout", "histogram_quantile reads le buckets, not vmrange ones; the ranges are read as VictoriaMetrics reads them"
	}
	return "histogram_quantile", ""
}

// notForBuckets are the findings of recommend.Recommend that do not fit
// bucketed data:
//
//   - a pile-up at the maximum (CensoredPileUp, LowerBoundPileUp):
//     recommend reads a spike of calls at the largest value as an existing
//     timeout, but bucketed data always piles up at bucket bounds;
//   - LowerBound and Censored: they explain censoring by timeouts and 504s,
//     where here the censored calls are the +Inf bucket; bucketReasons says
//     so instead (BucketInf, BucketBeyond24h, BucketCensored).
var notForBuckets = []finding.Code{finding.CensoredPileUp, finding.LowerBoundPileUp, finding.LowerBound, finding.Censored}

// bucketReasons rewrites the quantile step and the warnings of a
// recommendation built on bucketed data so that they say what buckets can
// and cannot say.
func bucketReasons(rec *recommend.Recommendation, h *histogram.Latency, pos histogram.Position, hist *histogram.Bucketed) {
	name := human.Quantile(rec.Quantile)
	// beyond: in +Inf, or in a bucket bounded beyond 24h (MaxBound); the
	// base is then the largest bound within, a lower bound.
	base, beyond := hist.Upper(rec.Quantile)
	largest := human.Duration(histogram.Seconds(hist.LargestUsable()))
	for i := range rec.Steps {
		if rec.Steps[i].Rule != "quantile" {
			continue
		}
		switch {
		case pos.InInf:
			rec.Steps[i].Reason = fmt.Sprintf("%s of %s calls lies in the +Inf bucket, beyond the largest finite bound %s: those calls took longer, by how much the histogram cannot say, so %s is a lower bound, not a measurement",
				name, human.Number(hist.Count), largest, largest)
		case beyond:
			rec.Steps[i].Reason = fmt.Sprintf("%s of %s calls lies in the bucket (%s, %s], bounded beyond 24h, the longest latency tunetimeout reads: those calls took longer than %s, by how much the histogram cannot say, so %s is a lower bound, not a measurement",
				name, human.Number(hist.Count), human.Seconds(pos.Bucket.Lo), human.Seconds(pos.Bucket.Hi), largest, largest)
		default:
			rec.Steps[i].Reason = fmt.Sprintf("%s of %s calls lies in the bucket (%s, %s]; bucketed data cannot say where within it, so the bucket's upper bound %s is used (conservative; the linear estimate within the bucket is %s)",
				name, human.Number(hist.Count), human.Seconds(pos.Bucket.Lo), human.Seconds(pos.Bucket.Hi),
				human.Seconds(pos.Bucket.Hi), human.Seconds(pos.Estimate))
		}
		rec.Base, rec.Steps[i].Value = base, base
		break
	}
	var fs []finding.Finding
	if hist.Negative > 0 {
		total := hist.Count + hist.Negative
		fs = append(fs, finding.Newf(finding.NegativeLatency, finding.Fields{"calls": hist.Negative, "total": total, "fraction": hist.Negative / total},
			"%s of %s calls (%s) were counted below zero latency (negative buckets or le bounds), which no call can take: the exporter has a bug (a clock that went backwards, a wrong offset or unit); they are left out, and the other buckets may be as wrong",
			human.Number(hist.Negative), human.Number(total), human.Percent(hist.Negative/total)))
	}
	if beyond {
		code, where := finding.BucketInf, "in the +Inf bucket, beyond the largest finite bound"
		if !pos.InInf {
			code, where = finding.BucketBeyond24h, "in a bucket bounded beyond 24h"
		}
		fs = append(fs, finding.Newf(code, finding.Fields{"quantile": rec.Quantile, "at_least_seconds": hist.LargestUsable()},
			"the true %s is at least %s, not measured: it lies %s; add bucket bounds above %s to see the tail",
			name, largest, where, largest))
	}
	fs = append(fs, finding.Without(rec.Findings, notForBuckets...)...)
	if c := h.Censored(); c > 0 {
		frac := float64(c) / float64(h.Count())
		share := human.Percent(frac)
		which := "the largest finite bound %s (the +Inf bucket)"
		beyond24h := hist.LargestUsable() < hist.LargestFinite()
		if beyond24h {
			which = "%s, the largest bound within 24h (the +Inf bucket and the buckets bounded beyond 24h)"
		}
		fs = append(fs, finding.Newf(finding.BucketCensored,
			finding.Fields{"calls": c, "fraction": frac, "bound_seconds": hist.LargestUsable(), "beyond_24h_buckets": beyond24h},
			"%s (%s) took longer than "+fmt.Sprintf(which, largest)+"; %s as taking at least %s, so a timeout above %s cuts off anywhere between 0 %% and %s of calls: the data cannot say",
			human.Calls(c), share, countAs(c), largest, largest, share))
	}
	rec.LowerBound = beyond
	rec.Findings = fs
	rec.Warnings = finding.Messages(fs)
}

// countAs is the verb of censored calls that count as taking at least a
// bound: "it counts" for one, "they count" for more.
func countAs(calls int64) string {
	if calls == 1 {
		return "it counts"
	}
	return "they count"
}

// suggestLE proposes a bucket bound near histogram_quantile's estimate, as
// the le label would be written, so that the next measurement can tell the
// quantile more sharply: a value people write (recommend.RoundUp) strictly
// inside the bucket; beyond the largest finite bound, twice that bound. ""
// when the bucket has no room for one.
func suggestLE(pos histogram.Position, h *histogram.Bucketed, unit time.Duration) string {
	var v time.Duration
	if pos.InInf {
		v, _ = recommend.RoundUp(histogram.Seconds(2 * h.LargestFinite()))
	} else {
		est := histogram.Seconds(pos.Estimate)
		lo, hi := histogram.Seconds(pos.Bucket.Lo), histogram.Seconds(pos.Bucket.Hi)
		var step time.Duration
		v, step = recommend.RoundUp(est)
		if v >= hi && step > 0 {
			v = est / step * step
		}
		if v <= lo || v >= hi {
			return ""
		}
	}
	return promsource.FormatLE(v.Seconds(), unit.Seconds())
}

func ptr[T any](v T) *T { return &v }

// prometheus2 tells whether the server is Prometheus 2, whose
// histogram_quantile interpolates native buckets linearly, as Locate does.
func prometheus2(res *promsource.Result) bool {
	major, _, _ := strings.Cut(strings.TrimPrefix(res.ServerVersion, "v"), ".")
	return res.Server == promsource.ServerPrometheus && major == "2"
}
