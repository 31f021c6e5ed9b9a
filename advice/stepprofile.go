package advice

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/promsource"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// bucketPool adds up the buckets of histograms read in steps: a slot's,
// an hour's, the whole period's. Buckets are keyed by their bounds; steps
// whose buckets overlap without being equal (native histograms whose
// schema changed) cannot be added, and the pool says so.
type bucketPool struct {
	counts  map[[2]float64]float64
	kind    string
	overlap bool
}

func (p *bucketPool) add(h *histogram.Bucketed) {
	if p.counts == nil {
		p.counts, p.kind = map[[2]float64]float64{}, h.Kind
	}
	for _, b := range h.Buckets {
		p.counts[[2]float64{b.Lo, b.Hi}] += b.Count
	}
}

// without is p less o's buckets (o within p): the rest.
func (p *bucketPool) without(o *bucketPool) *bucketPool {
	r := &bucketPool{counts: map[[2]float64]float64{}, kind: p.kind}
	for k, n := range p.counts {
		r.counts[k] = max(n-o.counts[k], 0)
	}
	return r
}

// hist is the pool as a histogram, nil when its buckets overlap.
func (p *bucketPool) hist() *histogram.Bucketed {
	h := &histogram.Bucketed{Kind: p.kind}
	for k, n := range p.counts {
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: k[0], Hi: k[1], Count: n})
	}
	slices.SortFunc(h.Buckets, func(a, b histogram.Bucket) int {
		if a.Hi != b.Hi {
			return cmpFloat(a.Hi, b.Hi)
		}
		return cmpFloat(a.Lo, b.Lo)
	})
	for i := range h.Buckets {
		if i > 0 && h.Buckets[i].Lo < h.Buckets[i-1].Hi {
			return nil
		}
		h.Count += h.Buckets[i].Count
		h.Buckets[i].Cumulative = h.Count
	}
	return h
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bucketAtRank is the bucket of h holding the call of rank r (1 to Count,
// by cumulative count).
func bucketAtRank(h *histogram.Bucketed, r float64) histogram.Bucket {
	i, _ := slices.BinarySearchFunc(h.Buckets, r, func(b histogram.Bucket, r float64) int {
		if b.Cumulative < r {
			return -1
		}
		return 1
	})
	return h.Buckets[min(i, len(h.Buckets)-1)]
}

// bucketInterval is the confidence interval of the q-quantile over h's
// calls by order statistics (histogram.Latency.QuantileInterval's ranks),
// read from buckets: the lower bound is the lower bound of the bucket
// holding the lower rank (the call lies above it, where in the bucket
// nobody knows), the upper bound the upper bound of the bucket holding the
// upper rank; hiKnown false when that rank lies beyond the calls or in the
// +Inf bucket.
func bucketInterval(h *histogram.Bucketed, q, confidence float64) (lo, hi float64, hiKnown bool) {
	if h == nil {
		return 0, math.Inf(1), false
	}
	n := math.Round(h.Count)
	if len(h.Buckets) == 0 || n < 1 {
		return 0, math.Inf(1), false
	}
	z := math.Sqrt2 * math.Erfinv(min(max(confidence, 0), 1))
	half := z * math.Sqrt(n*q*(1-q))
	loRank, hiRank := math.Floor(n*q-half+1e-9), math.Ceil(n*q+half-1e-9)+1
	if loRank >= 1 {
		lo = bucketAtRank(h, loRank).Lo
	}
	if hiRank > n {
		return max(lo, 0), math.Inf(1), false
	}
	hi = bucketAtRank(h, hiRank).Hi
	return max(lo, 0), hi, !math.IsInf(hi, 1)
}

// StepProfile pools --step's steps by the hour they start in, as
// profiler pools windows (docs/windows.md): per slot its buckets added up,
// its percentiles and quantile at their bucket's upper bound, the
// quantile's interval by order statistics read from the buckets, and the
// timeout the slot alone gives. A slot is worse beyond the noise when its
// lower bound (for all the slots at once) lies at or above the upper
// bound of the other slots pooled: the slot's call lies above its
// bucket's lower bound, the rest's at or below its bucket's upper bound.
// With use (--aggregate worst, the default) the worst slot's buckets are
// returned for the recommendation to build on, ahead of the worst step: it
// repeats, and rests on the calls of every day. nil when no profile
// applies (--profile, auto's three days).
func StepProfile(g promsource.Group, wo WindowOptions, rec recommend.Options, step time.Duration, q, confidence float64, use bool) (*report.Profile, *histogram.Bucketed, error) {
	o := windowing{WindowOptions: wo, Recommend: rec}
	var starts []int64
	for _, st := range g.Steps {
		if st.Hist != nil {
			starts = append(starts, st.End.Add(-step).Unix())
		}
	}
	if len(starts) == 0 {
		return nil, nil, nil
	}
	p, err := newProfiler(o, starts, step, q)
	if p == nil || err != nil {
		return nil, nil, err
	}
	pools := poolSteps(g, p, step)
	if pools.whole.hist() == nil {
		return nil, nil, nil // buckets that cannot be added up: no profile
	}
	from, to := time.Unix(starts[0], 0), time.Unix(starts[len(starts)-1], 0).Add(step)
	of := p.occurrences(from, to)
	prof := &report.Profile{Kind: p.kind, TZ: p.loc.String(), Quantile: q, SlotSeconds: slotLength.Seconds(), Slots: []report.ProfileSlot{}, Cells: pools.cells(q)}
	used := 0
	for _, s := range pools.slots {
		if s.counts != nil {
			used++
		}
	}
	worst, worstHist := -1, (*histogram.Bucketed)(nil)
	for i := range pools.slots {
		if pools.slots[i].counts == nil {
			continue
		}
		h := pools.slots[i].hist()
		if h == nil {
			return nil, nil, nil
		}
		ps := report.ProfileSlot{Slot: p.slotName(i), Index: i, Days: p.slots[i].days, Of: of[i], Samples: int64(math.Round(h.Count)),
			RatePerSecond: h.Count / (float64(p.slots[i].days) * slotLength.Seconds()), Percentiles: []report.Percentile{}}
		if ps.Samples > 0 {
			rest := pools.whole.without(&pools.slots[i]).hist()
			if err := bucketSlot(&ps, g, h, rest, q, confidence, used, o.Recommend); err != nil {
				return nil, nil, err
			}
			if ps.Significant && (worst < 0 || ps.FamilyLowSeconds > prof.Slots[worst].FamilyLowSeconds ||
				ps.FamilyLowSeconds == prof.Slots[worst].FamilyLowSeconds && ps.QuantileSeconds > prof.Slots[worst].QuantileSeconds) {
				worst, worstHist = len(prof.Slots), h
			}
		}
		prof.Slots = append(prof.Slots, ps)
	}
	explainSteps(prof, p, worst, q, confidence, used, use)
	if worst < 0 || !use {
		return prof, nil, nil
	}
	return prof, worstHist, nil
}

// stepPools are the buckets of a group's steps added up: per slot of the
// profile, over the whole period, and per hour, in the order the steps
// start in.
type stepPools struct {
	slots []bucketPool
	whole bucketPool
	hours []hourPool
}

// hourPool is the buckets of the steps that start in the hour at.
type hourPool struct {
	at   time.Time
	pool bucketPool
}

// poolSteps adds up the buckets of g's steps, each of length step, by
// when they start; it counts on p's slots the days each slot occurs on.
func poolSteps(g promsource.Group, p *profiler, step time.Duration) stepPools {
	pools := stepPools{slots: make([]bucketPool, len(p.slots))}
	for _, st := range g.Steps {
		if st.Hist == nil {
			continue
		}
		at := st.End.Add(-step)
		slot, day := p.slotOf(at)
		pools.slots[slot].add(st.Hist)
		pools.whole.add(st.Hist)
		s := &p.slots[slot]
		if s.days == 0 || s.lastDay != day {
			s.days, s.lastDay = s.days+1, day
		}
		lt := at.In(p.loc)
		hour := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, 0, p.loc)
		if len(pools.hours) == 0 || !pools.hours[len(pools.hours)-1].at.Equal(hour) {
			pools.hours = append(pools.hours, hourPool{at: hour})
		}
		pools.hours[len(pools.hours)-1].pool.add(st.Hist)
	}
	return pools
}

// cells are the profile's cells, an hour each: its calls and their
// q-quantile at its bucket's upper bound (no calls where the hour's
// buckets cannot be added up).
func (pools *stepPools) cells(q float64) []report.ProfileCell {
	cells := []report.ProfileCell{}
	for _, h := range pools.hours {
		hh := h.pool.hist()
		cell := report.ProfileCell{Day: h.at.Format("2006-01-02"), Hour: h.at.Hour(), Weekday: weekday(h.at)}
		if hh != nil {
			cell.Samples = int64(math.Round(hh.Count))
			if cell.Samples > 0 {
				d, _ := hh.Upper(q)
				cell.QuantileSeconds = d.Seconds()
			}
		}
		cells = append(cells, cell)
	}
	return cells
}

// bucketSlot fills in ps, a slot with calls, from h, its buckets: its
// percentiles and q-quantile at their bucket's upper bound, the
// quantile's interval, its lower bound for all used slots at once
// (familyConfidence), whether that lies at or above the upper bound of
// rest, the other slots pooled (Significant), and the timeout the slot
// alone gives.
func bucketSlot(ps *report.ProfileSlot, g promsource.Group, h, rest *histogram.Bucketed, q, confidence float64, used int, rec recommend.Options) error {
	for _, pq := range []float64{0.5, 0.99, 0.999} {
		d, lower := h.Upper(pq)
		ps.Percentiles = append(ps.Percentiles, report.Percentile{Quantile: pq, Seconds: d.Seconds(), LowerBound: lower})
	}
	d, _ := h.Upper(q)
	ps.QuantileSeconds = d.Seconds()
	lo, hi, known := bucketInterval(h, q, confidence)
	ps.Interval = report.Interval{Confidence: confidence, LowSeconds: lo}
	if known {
		ps.Interval.HighSeconds = &hi
	}
	ps.FamilyLowSeconds, _, _ = bucketInterval(h, q, familyConfidence(confidence, used))
	if _, restHi, ok := bucketInterval(rest, q, confidence); ok {
		ps.RestHighSeconds = &restHi
		ps.Significant = ps.FamilyLowSeconds >= restHi
	}
	hg, quantile := BucketGroup(g, h)
	if hg.Latency.Count() > 0 {
		r, err := recommend.RecommendMeasured(hg.Latency, recommend.Measured{Quantile: quantile}, rec)
		if err != nil {
			return fmt.Errorf("slot %s: %w", ps.Slot, err)
		}
		ps.TimeoutSeconds = r.Timeout.Seconds()
	}
	return nil
}

// explainSteps gives prof its reason: that no hour is worse beyond the
// noise (worst < 0), else its worst slot, prof.Slots[worst], and whether
// the recommendation builds on it (use).
func explainSteps(prof *report.Profile, p *profiler, worst int, q, confidence float64, used int, use bool) {
	qs := human.Quantile(q)
	if worst < 0 {
		prof.Reason = fmt.Sprintf("No hour of the %s is worse beyond the noise: no slot's lower bound of its %s (the lower bound of the bucket holding it, %s confidence over the %s slots at once) lies at or above the upper bound of the other slots pooled.",
			p.period(), qs, human.Percent(confidence), human.Count(int64(used)))
		return
	}
	s := prof.Slots[worst]
	prof.WorstSlot = &report.WorstSlot{Slot: s.Slot, Index: s.Index, Days: s.Days, Of: s.Of, Samples: s.Samples, QuantileSeconds: s.QuantileSeconds,
		TimeoutSeconds: s.TimeoutSeconds, Used: use}
	prof.WorstSlot.Reason = fmt.Sprintf("The worst hour of the %s is %s %s on %s of %s %s: %s at most %s over %s calls pooled from the steps, so a timeout of %s. It is worse beyond the noise: the lower bound of its %s, %s (the lower bound of the bucket holding it, %s confidence over the %s slots at once), lies at or above the upper bound of the other slots pooled, %s.",
		p.period(), s.Slot, p.loc, human.Count(int64(s.Days)), human.Count(int64(s.Of)), p.unit(), qs, human.Seconds(s.QuantileSeconds), human.Count(s.Samples),
		human.Seconds(s.TimeoutSeconds), qs, human.Seconds(s.FamilyLowSeconds), human.Percent(confidence), human.Count(int64(used)), human.Seconds(*s.RestHighSeconds))
	if use {
		prof.WorstSlot.Reason += fmt.Sprintf(" The recommendation, the candidates, Little's law (at the slot's rate, %s calls over %s) and the call policy below are that slot's, ahead of the worst step: it repeats, and rests on the calls of every day it occurred (%s overall: the whole window's).",
			human.Count(s.Samples), human.Duration(time.Duration(s.Days)*slotLength), usage.Aggregate)
	} else {
		prof.WorstSlot.Reason += fmt.Sprintf(" The recommendation below is the whole window's (%s overall).", usage.Aggregate)
	}
	prof.Reason = prof.WorstSlot.Reason
}

// BucketGroup is the group Analyse reads for bucketed data: every
// call at its bucket's upper bound (chosen.Latency, whole calls), the rates
// and the mean Prometheus measured; and the quantiles the timeout builds
// on, from the unrounded counts (histogram.Bucketed.Upper).
func BucketGroup(g promsource.Group, chosen *histogram.Bucketed) (*histogram.Group, func(float64) time.Duration) {
	hg := &histogram.Group{
		Name:     g.Name,
		Latency:  chosen.Latency(),
		Excluded: map[string]int64{},
		Arrivals: histogram.NewArrivals(),
		Measured: &histogram.Measured{Rate: g.Rate, PeakRate: g.PeakRate, Source: "prometheus"},
	}
	if chosen.Kind == promsource.OTLPExplicit || chosen.Kind == promsource.OTLPExponential {
		hg.Measured.Source = "otlp"
	}
	for reason, n := range g.Excluded {
		hg.Excluded[reason] += n
	}
	if g.Mean > 0 {
		hg.Measured.Mean = histogram.Seconds(g.Mean)
	}
	if n := int64(math.Round(chosen.Negative)); n > 0 {
		hg.Excluded["negative"] = n
	}
	quantile := func(q float64) time.Duration {
		d, _ := chosen.Upper(q)
		return d
	}
	return hg, quantile
}
