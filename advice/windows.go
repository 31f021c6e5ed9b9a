package advice

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// DefaultWindowPrecision is how wide a window's confidence interval of
// the quantile may be, as a share of the quantile, for the window to be
// ranked (--window-precision): wider, it has too few calls to tell.
const DefaultWindowPrecision = 0.5

// WindowOptions are how a group's windows are read (docs/windows.md):
// WindowForAll keeps the whole period's recommendation (--for all) where
// the worst window's would be the group's; WindowPrecision is the widest
// a window's interval of the quantile may be, as a share of it, for the
// window to be ranked (0: DefaultWindowPrecision). Profile pools the
// windows by hour of the day (ProfileDaily) or of the week
// (ProfileWeekly) in TZ (nil: UTC); ProfileAuto, or "", pools them daily
// when they span at least three days and are an hour or shorter;
// ProfileNone never.
type WindowOptions struct {
	WindowForAll    bool
	WindowPrecision float64
	Profile         string
	TZ              *time.Location
}

// windowing is what the windows' code reads: the options, and the
// recommendation's for each window and slot.
type windowing struct {
	WindowOptions
	Recommend recommend.Options
}

// windowQuantiles are the percentiles each window reports, beside the
// recommendation's quantile.
var windowQuantiles = []float64{0.5, 0.99, 0.999}

// windowPercentiles are the percentiles a window or a profile's slot
// reports over lat: windowQuantiles, and rec's quantile among them, a
// lower bound where rec's is.
func windowPercentiles(lat *histogram.Latency, rec recommend.Recommendation) []report.Percentile {
	qs := windowQuantiles
	if !slices.Contains(qs, rec.Quantile) {
		qs = append(slices.Clone(qs), rec.Quantile)
		slices.Sort(qs)
	}
	out := make([]report.Percentile, 0, len(qs))
	for _, q := range qs {
		out = append(out, report.Percentile{Quantile: q, Seconds: lat.Quantile(q).Seconds(),
			LowerBound: q == rec.Quantile && rec.LowerBound})
	}
	return out
}

// windowsOf analyses each of a group's windows alone (the calls of its
// cell): its percentiles, the recommendation's quantile with its interval,
// the timeout it would get, its rate. It returns them in time order with
// two candidates for the worst, each with its cell: byLow, among the
// windows worse beyond the noise (their quantile's lower confidence bound
// above the upper bound of the other windows pooled, however few their
// calls), the one with the highest lower bound (ties: the earliest), -1
// when no window is; and highest, the highest quantile among the windows
// whose interval is within the precision, -1 when none is. restHi is, for
// byLow, the other windows' upper bound. whole is the group's latency, the
// sum of its windows'. The cells are taken as they are read
// (Windows.Take): a week of minutes does not keep both its cells and its
// rows.
func windowsOf(ctx context.Context, name string, whole *histogram.Latency, cells histogram.Windows, length time.Duration, o windowing, prof *profiler) (out []report.Window, lows []float64, byLow, highest int, restHi float64, lowCell, highCell *histogram.Cell, err error) {
	precision := precisionOf(o)
	out = make([]report.Window, 0, len(cells.Starts))
	byLow, highest = -1, -1
	for i := range cells.Starts {
		if err := ctx.Err(); err != nil {
			return nil, nil, -1, -1, 0, nil, nil, err
		}
		c := cells.Take(i)
		g := windowGroup(name, c, length)
		start := time.Unix(c.Start, 0).UTC()
		w := report.Window{Start: start, End: start.Add(length), Samples: g.Latency.Count(), Percentiles: []report.Percentile{},
			RatePerSecond: float64(g.Arrivals.Count()) / length.Seconds()}
		if g.Measured != nil {
			w.RatePerSecond = g.Measured.Rate
		}
		if w.Samples > 0 {
			rec, err := recommend.RecommendMeasured(g.Latency, recommend.Measured{ConnectTimes: g.Connect}, o.Recommend)
			if err != nil {
				return nil, nil, -1, -1, 0, nil, nil, fmt.Errorf("window %s: %w", start.Format(time.RFC3339), err)
			}
			w.Percentiles = windowPercentiles(g.Latency, rec)
			w.QuantileSeconds, w.TimeoutSeconds = rec.Base.Seconds(), rec.Timeout.Seconds()
			w.Interval = newInterval(rec.Interval)
			if hi := w.Interval.HighSeconds; hi != nil {
				w.EnoughData = *hi-w.Interval.LowSeconds <= precision*w.QuantileSeconds
			}
			// Ranked by a lower bound that holds for all the windows
			// at once (Bonferroni: each at 1 - (1-confidence)/windows),
			// so that one of 168 alike does not clear the rest's bound
			// by chance; told apart when it lies above the upper bound
			// of the other windows pooled (docs/windows.md).
			low := g.Latency.QuantileInterval(rec.Quantile, familyConfidence(rec.Interval.Confidence, len(cells.Starts))).Lo.Seconds()
			if rest, ok := restInterval(whole, g.Latency, rec.Quantile, rec.Interval.Confidence); ok && rest.HiKnown && low > rest.Hi.Seconds() &&
				(byLow < 0 || low > lows[byLow]) {
				byLow, lowCell, restHi = len(out), c, rest.Hi.Seconds()
			}
			lows = append(lows, low)
		} else {
			lows = append(lows, 0)
		}
		if w.EnoughData && (highest < 0 || w.QuantileSeconds > out[highest].QuantileSeconds) {
			highest, highCell = len(out), c
		}
		if prof != nil {
			peak := w.RatePerSecond
			if g.Arrivals.Count() > 0 {
				peak = BusiestMinuteRate(g.Arrivals)
			}
			prof.add(c, peak)
		}
		out = append(out, w)
	}
	return out, lows, byLow, highest, restHi, lowCell, highCell, nil
}

// windowGroup is the group of one window's calls. The intervals of other
// tools' logs count no arrivals (readLog): such a window's rate is its
// calls over its length, its busiest minute unknown within it.
func windowGroup(name string, c *histogram.Cell, length time.Duration) *histogram.Group {
	g := histogram.CellGroup(name, c)
	if calls := g.Latency.Count() + total(g.Excluded); g.Arrivals.Count() == 0 && calls > 0 {
		rate := float64(calls) / length.Seconds()
		g.Measured = &histogram.Measured{Rate: rate, PeakRate: rate, Source: "interval counts"}
	}
	return g
}

// Windows adds the windows of length to a group's result: with --for
// worst-window (the default) the group is analysed again (analyse) from
// its worst window's calls alone, so that its recommendation, candidates,
// Little's law (that window's rate) and policy are the window's; with
// --for all they stay the whole period's. Either way the report says
// which window is the worst and how it differs from the whole. rec is the
// recommendation's options, for each window's timeout.
func Windows(ctx context.Context, whole report.Group, g *histogram.Group, cells histogram.Windows, length time.Duration,
	wo WindowOptions, rec recommend.Options, analyse func(context.Context, *histogram.Group) (Result, error)) (report.Group, error) {
	o := windowing{WindowOptions: wo, Recommend: rec}
	prof, err := newProfiler(o, cells.Starts, length, whole.Recommendation.Quantile)
	if err != nil {
		return report.Group{}, err
	}
	windows, lows, byLow, highest, restHi, lowCell, highCell, err := windowsOf(ctx, g.Name, g.Latency, cells, length, o, prof)
	if err != nil {
		return report.Group{}, err
	}
	var profile *report.Profile
	var slotGroup *histogram.Group
	if prof != nil {
		from, to := windows[0].Start, windows[len(windows)-1].End
		if profile, slotGroup, err = prof.finish(ctx, g.Name, g.Latency, whole, from, to, o); err != nil {
			return report.Group{}, fmt.Errorf("group %q: %w", g.Name, err)
		}
	}
	slotUsed := profile != nil && profile.WorstSlot != nil && profile.WorstSlot.Used
	if slotUsed && byLow >= 0 {
		slotUsed = slotAheadOfWindow(profile, lows[byLow])
	}
	// Worse beyond the noise: a window whose quantile's lower bound lies
	// above the upper bound of the other windows pooled, however few its
	// calls; of those the one with the highest lower bound. Else the
	// highest window whose own interval is narrow enough, shown but not
	// used.
	worst, worstCell := highest, highCell
	significant := byLow >= 0
	if significant {
		worst, worstCell = byLow, lowCell
	}
	out := whole
	if worst >= 0 {
		w := windows[worst]
		ww := worstWindow(windows, worst, significant, lows, restHi, whole, o)
		q := human.Quantile(whole.Recommendation.Quantile)
		if slotUsed && ww.Used {
			ww.Used = false
			ww.Reason += fmt.Sprintf(" The recommendation below is the profile's worst hour's instead (%s %s): it repeats, and rests on %s calls.",
				profile.WorstSlot.Slot, profile.TZ, human.Count(profile.WorstSlot.Samples))
		}
		if !significant {
			median := medianCalls(windows, func(w report.Window) int64 { return w.Samples })
			var above float64
			out.WindowCallsNeeded, above = windowCallsNeeded(g.Latency, whole, len(windows), median)
			ww.Reason += needPhrase("window", out.WindowCallsNeeded, median, above, q, "longer windows, or a daily profile, would tell")
		}
		if ww.Used {
			ww.Reason += fmt.Sprintf(" The recommendation, the candidates, Little's law (at that window's rate) and the call policy below are that window's (%s all: the whole period's).", usage.For)
			wg := windowGroup(g.Name, worstCell, length)
			wg.Methods = g.Methods // the route's methods: what its requests are, whenever they came
			res, err := analyse(ctx, wg)
			if err != nil {
				return report.Group{}, fmt.Errorf("group %q, window %s: %w", g.Name, w.Start.Format(time.RFC3339), err)
			}
			out = NewGroup(res)
		} else if o.WindowForAll {
			ww.Reason += fmt.Sprintf(" The recommendation below is the whole period's (%s all).", usage.For)
		}
		out.WorstWindow = ww
	} else if g.Latency != nil && g.Latency.Count() > 0 {
		out.WindowCallsNeeded, _ = windowCallsNeeded(g.Latency, whole, len(windows), 0)
	}
	if slotUsed {
		slotGroup.Methods = g.Methods
		res, err := analyse(ctx, slotGroup)
		if err != nil {
			return report.Group{}, fmt.Errorf("group %q, slot %s: %w", g.Name, profile.WorstSlot.Slot, err)
		}
		ww, need := out.WorstWindow, out.WindowCallsNeeded
		out = NewGroup(res)
		out.WorstWindow, out.WindowCallsNeeded = ww, need
	}
	out.Profile = profile
	out.Windows = windows
	return out, nil
}

// slotAheadOfWindow reports whether the profile's worst slot, used, goes
// ahead of the window worst beyond the noise, whose lower bound is low:
// it does unless that window is worse than the slot itself beyond the
// noise, its lower bound (for all the windows at once) above the slot's
// upper bound, a one-off worse than the hour that repeats; then the slot
// is no longer used, and its reason says why.
func slotAheadOfWindow(profile *report.Profile, low float64) bool {
	hi := profile.Slots[slotIndex(profile)].Interval.HighSeconds
	if hi == nil || !(low > *hi) {
		return true
	}
	profile.WorstSlot.Used = false
	profile.WorstSlot.Reason += fmt.Sprintf(" But one window is worse still beyond the noise: its lower bound of %s lies above the slot's upper bound of %s, so the recommendation is that window's (Windows).",
		human.Seconds(low), human.Seconds(*hi))
	profile.Reason = profile.WorstSlot.Reason
	return false
}

// worstWindow is the report of the worst window, windows[worst], beside
// the whole period's result: worse beyond the noise when significant
// (its lower bound lows[worst] above restHi, the upper bound of the other
// windows pooled), else only the highest, and then not used; the reason
// says so, and how many windows have too few calls to place their
// quantile closely.
func worstWindow(windows []report.Window, worst int, significant bool, lows []float64, restHi float64, whole report.Group, o windowing) *report.WorstWindow {
	tooFew := 0
	for _, w := range windows {
		if w.Samples > 0 && !w.EnoughData {
			tooFew++
		}
	}
	w := windows[worst]
	if significant && !w.EnoughData {
		tooFew--
	}
	ww := &report.WorstWindow{Start: w.Start, End: w.End, QuantileSeconds: w.QuantileSeconds, TimeoutSeconds: w.TimeoutSeconds,
		WholeTimeoutSeconds: whole.Recommendation.TimeoutSeconds, TooFew: tooFew, Used: !o.WindowForAll}
	if significant {
		ww.LowSeconds, ww.RestHighSeconds = &lows[worst], &restHi
	}
	q := human.Quantile(whole.Recommendation.Quantile)
	ww.Significant = significant
	which := "worst"
	if !ww.Significant {
		which = "highest"
	}
	ww.Reason = fmt.Sprintf("The %s window is %s: %s %s over %s calls, against %s over the whole period (%s calls), so a timeout of %s against %s.",
		which, windowPhrase(w.Start, w.End), q, human.Seconds(w.QuantileSeconds), human.Count(w.Samples), human.Seconds(whole.Recommendation.BaseSeconds),
		human.Count(whole.Samples), human.Seconds(w.TimeoutSeconds), human.Seconds(whole.Recommendation.TimeoutSeconds))
	if significant {
		ww.Reason += fmt.Sprintf(" It is worse beyond the noise: the lower bound of its %s, %s (%s confidence over the %s windows at once), lies above the upper bound of the other windows pooled, %s (%s calls), and is the highest lower bound of the windows that are.",
			q, human.Seconds(lows[worst]), human.Percent(w.Interval.Confidence), human.Count(int64(len(windows))), human.Seconds(restHi), human.Count(whole.Samples-w.Samples))
	}
	if tooFew > 0 && significant {
		ww.Reason += fmt.Sprintf(" Windows are ranked by that lower bound: %s of the %s have too few calls above %s to place it closely (their %s interval is wider than %s of the value), which does not keep them from being told apart.",
			human.Count(int64(tooFew)), human.Count(int64(len(windows))), q, human.Percent(w.Interval.Confidence), human.Percent(precisionOf(o)))
	} else if tooFew > 0 {
		ww.Reason += fmt.Sprintf(" %s of the %s windows have too few calls above %s to tell (their %s interval is wider than %s of the value) and are not ranked.",
			human.Count(int64(tooFew)), human.Count(int64(len(windows))), q, human.Percent(w.Interval.Confidence), human.Percent(precisionOf(o)))
	}
	// Worse beyond the noise: the window's interval lies above the
	// whole period's. Otherwise the highest window is one of many
	// alike, and the whole period, with more calls, says it better.
	if !ww.Significant && ww.Used {
		ww.Used = false
		ww.Reason += fmt.Sprintf(" Its interval (%s to %s) reaches into the whole period's: no window is worse beyond the noise, so the recommendation below is the whole period's.",
			human.Seconds(w.Interval.LowSeconds), human.Seconds(*w.Interval.HighSeconds))
	}
	return ww
}

// slotIndex is the index in profile.Slots of its worst slot.
func slotIndex(profile *report.Profile) int {
	return slices.IndexFunc(profile.Slots, func(s report.ProfileSlot) bool { return s.Index == profile.WorstSlot.Index })
}

// restInterval is the interval of the q-quantile of whole's calls less
// part's (the other windows, or slots, pooled), at confidence; false when
// part is not within whole.
func restInterval(whole, part *histogram.Latency, q, confidence float64) (histogram.Interval, bool) {
	if whole == nil || part == nil {
		return histogram.Interval{}, false
	}
	return whole.QuantileIntervalWithout(part, q, confidence)
}

// familyConfidence is the confidence of each of k intervals for all k to
// hold at once with the confidence asked (Bonferroni).
func familyConfidence(confidence float64, k int) float64 {
	return 1 - (1-confidence)/float64(max(k, 1))
}

// worseBy is how much worse than the rest a window's (or slot's)
// quantile is taken to be when the report says how many calls it would
// need to be told apart: a fifth above the rest's. A timeout a fifth short
// of a window's quantile cuts off several times the share asked for there;
// issue 31's daily peak is twice the rest.
const worseBy = 0.2

// callsToTell is about how many calls a window (or slot) would need to be
// told apart from the rest by the rule of docs/windows.md, were its latency
// shaped as whole's but worseBy slower: the fewest n for which the lower
// bound of its q-quantile, at confidence (the one that holds for all the
// windows at once), lies above restHi, the rest's upper bound. The lower
// bound is QuantileInterval's rank among n calls, floor(n*q - z*sqrt(n*q*(1-q))),
// read off whole's distribution. It is found by bisection up to the
// whole period's count; -1 when even that many would not do.
func callsToTell(whole *histogram.Latency, q, confidence, restHi float64) int64 {
	total := whole.Count()
	if total == 0 || !(restHi > 0) {
		return -1
	}
	told := func(n int64) bool { return toldAbove(whole, q, confidence, restHi, n) < worseBy }
	if !told(total) {
		return -1
	}
	lo, hi := int64(1), total // told(hi)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if told(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

// toldAbove is the share by which the q-quantile of a window of n calls
// shaped as whole's must lie above the rest's for its lower bound (at
// confidence) to clear restHi, the rest's upper bound: the width of the
// interval below the quantile, against the rest's. +Inf when n calls give
// no lower bound.
func toldAbove(whole *histogram.Latency, q, confidence, restHi float64, n int64) float64 {
	z := math.Sqrt2 * math.Erfinv(min(max(confidence, 0), 1))
	nf := float64(n)
	lo := math.Floor(nf*q - z*math.Sqrt(nf*q*(1-q)) + 1e-9)
	if lo < 1 || n <= 0 {
		return math.Inf(1)
	}
	return restHi/whole.Quantile(lo/nf).Seconds() - 1
}

// windowCallsNeeded is callsToTell for one of k windows (or slots) of the
// period whole: the rest's upper bound is about the whole period's, its
// lower bound at the confidence that holds for all k at once.
// It returns also toldAbove for median calls.
func windowCallsNeeded(lat *histogram.Latency, whole report.Group, k int, median int64) (need int64, above float64) {
	hi := whole.Recommendation.Interval.HighSeconds
	if hi == nil {
		return -1, math.Inf(1)
	}
	q, conf := whole.Recommendation.Quantile, familyConfidence(whole.Recommendation.Interval.Confidence, k)
	return callsToTell(lat, q, conf, *hi), toldAbove(lat, q, conf, *hi, median)
}

// medianCalls is the median of the windows' (or slots') calls, those
// with any.
func medianCalls[T any](ws []T, calls func(T) int64) int64 {
	var ns []int64
	for _, w := range ws {
		if n := calls(w); n > 0 {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return 0
	}
	slices.Sort(ns)
	return ns[len(ns)/2]
}

// needPhrase says, when no window (slot) is told apart, how far above
// the rest's its quantile would have to lie to be, with the median calls
// (above), and how many more calls it would need to tell one worseBy
// above; or that it holds enough, and none is that much worse.
func needPhrase(what string, need, median int64, above float64, q, longer string) string {
	out := ""
	if !math.IsInf(above, 1) && median > 0 {
		out = fmt.Sprintf(" With the median %s's %s calls, a %s is told apart when its %s lies %s or more above the rest's.",
			what, human.Count(median), what, q, human.Percent(max(above, 0)))
	}
	switch {
	case need < 0:
		return out + fmt.Sprintf(" Even with all the period's calls a %s whose %s were %s above the rest's could not be told apart from it.", what, q, human.Percent(worseBy))
	case median >= need:
		return out + fmt.Sprintf(" That is enough to tell one %s above the rest's (about %s calls would do), and none is: the %ss are alike.",
			human.Percent(worseBy), human.Count(need), what)
	}
	return out + fmt.Sprintf(" To tell one whose %s is %s above the rest's, a %s would need about %s calls, %s more than the median %s holds: %s.",
		q, human.Percent(worseBy), what, human.Count(need), human.Count(need-median), what, longer)
}

// precisionOf is --window-precision, or its default.
func precisionOf(o windowing) float64 {
	if o.WindowPrecision == 0 {
		return DefaultWindowPrecision
	}
	return o.WindowPrecision
}

// windowPhrase is a window in words: "2026-11-02 18:00 to 19:00 UTC".
func windowPhrase(start, end time.Time) string {
	s, e := start.UTC(), end.UTC()
	if s.Truncate(24 * time.Hour).Equal(e.Add(-time.Nanosecond).Truncate(24 * time.Hour)) {
		return s.Format("2006-01-02 15:04:05") + " to " + e.Format("15:04:05") + " UTC"
	}
	return s.Format("2006-01-02 15:04:05") + " to " + e.Format("2006-01-02 15:04:05") + " UTC"
}
