package advice

import (
	"context"
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// The kinds of --profile.
const (
	ProfileAuto   = "auto"
	ProfileDaily  = "daily"
	ProfileWeekly = "weekly"
	ProfileNone   = "none"
)

// ProfileKinds are the values --profile takes.
var ProfileKinds = []string{ProfileAuto, ProfileDaily, ProfileWeekly, ProfileNone}

// profileMinSpan is how long a period must be for auto to pool its hours:
// an hour that occurs on fewer days does not repeat enough to be a pattern.
const profileMinSpan = 3 * 24 * time.Hour

// slotLength is a slot's length: the hour. Shorter windows are pooled to
// their hour; longer ones cannot be.
const slotLength = time.Hour

// profiler pools a group's windows, read once in time order, into slots:
// one cell per hour of the day (24) or of the week (168), so that its
// memory does not grow with the period. Beside them it keeps, for the
// heat map, the quantile of every hour of every day (a number each): the
// hour being read is one cell, turned into its number when the next hour
// starts.
type profiler struct {
	kind   string
	loc    *time.Location
	q      float64
	slots  []slotAcc
	cur    *histogram.Cell // the hour of the day being read
	curKey int64           // its start, Unix seconds
	curAt  time.Time
	cells  []report.ProfileCell
}

type slotAcc struct {
	cell    *histogram.Cell
	days    int
	lastDay int // the local day (year*1000+yday) last counted
	peak    float64
}

// newProfiler returns the profiler of o.Profile for windows of length
// starting at starts, nil when there is none: --profile none, or auto on
// a period shorter than profileMinSpan or windows that are not within an
// hour. An explicit daily or weekly that cannot be is an error.
func newProfiler(o windowing, starts []int64, length time.Duration, q float64) (*profiler, error) {
	kind := o.Profile
	if kind == "" {
		kind = ProfileAuto
	}
	if kind == ProfileNone || len(starts) == 0 {
		return nil, nil
	}
	loc := o.TZ
	if loc == nil {
		loc = time.UTC
	}
	explicit := kind != ProfileAuto
	if slotLength%length != 0 {
		if explicit {
			return nil, usage.About(usage.Profile, usage.Errorf("%s %s pools windows into hours: %s %s does not divide an hour", usage.Profile, kind, usage.Window, human.Duration(length)))
		}
		return nil, nil
	}
	// Windows start at multiples of their length in UTC; a zone whose
	// offset is not a multiple of it (+05:30 with 1h windows) cuts them.
	for _, s := range []int64{starts[0], starts[len(starts)-1]} {
		_, off := time.Unix(s, 0).In(loc).Zone()
		if time.Duration(off)*time.Second%length != 0 {
			if explicit {
				return nil, usage.About(usage.Profile, usage.Errorf("%s %s: windows of %s straddle the hours of %s (UTC offset %s): use %s %s or shorter",
					usage.Profile, kind, human.Duration(length), loc, time.Duration(off)*time.Second, usage.Window, human.Duration(gcdDuration(length, time.Duration(abs(off))*time.Second))))
			}
			return nil, nil
		}
	}
	if kind == ProfileAuto {
		if time.Duration(starts[len(starts)-1]-starts[0])*time.Second+length < profileMinSpan {
			return nil, nil
		}
		kind = ProfileDaily
	}
	n := 24
	if kind == ProfileWeekly {
		n = 7 * 24
	}
	return &profiler{kind: kind, loc: loc, q: q, slots: make([]slotAcc, n), curKey: -1}, nil
}

func abs(n int) int { return max(n, -n) }

func gcdDuration(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// slotOf is the slot of a time: its hour of the day, or of the week from
// Monday 00:00; and its local day.
func (p *profiler) slotOf(t time.Time) (slot, day int) {
	lt := t.In(p.loc)
	slot = lt.Hour()
	if p.kind == ProfileWeekly {
		slot += weekday(lt) * 24
	}
	return slot, lt.Year()*1000 + lt.YearDay()
}

// weekday is Monday 0 to Sunday 6.
func weekday(t time.Time) int { return (int(t.Weekday()) + 6) % 7 }

// add pools one window's cell, whose busiest minute ran at peak calls a
// second. The cell's arrivals are left out: a slot's rate is its calls
// over its length (finish), and arrivals by the second would grow with
// the period.
func (p *profiler) add(c *histogram.Cell, peak float64) {
	at := time.Unix(c.Start, 0)
	slot, day := p.slotOf(at)
	lat := *c
	lat.Seconds, lat.Calls = nil, nil
	s := &p.slots[slot]
	if s.cell == nil {
		s.cell = histogram.NewCell(0)
	}
	s.cell.Merge(&lat)
	if s.days == 0 || s.lastDay != day {
		s.days, s.lastDay = s.days+1, day
	}
	s.peak = max(s.peak, peak)

	lt := at.In(p.loc)
	hour := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, 0, p.loc)
	if key := hour.Unix(); key != p.curKey {
		p.flush()
		p.cur, p.curKey, p.curAt = histogram.NewCell(0), key, hour
	}
	p.cur.Merge(&lat)
}

// flush turns the hour being read into its heat map cell.
func (p *profiler) flush() {
	if p.cur == nil {
		return
	}
	g := histogram.CellGroup("", p.cur)
	cell := report.ProfileCell{Day: p.curAt.Format("2006-01-02"), Hour: p.curAt.Hour(), Weekday: weekday(p.curAt), Samples: g.Latency.Count()}
	if cell.Samples > 0 {
		cell.QuantileSeconds = g.Latency.Quantile(p.q).Seconds()
	}
	p.cells = append(p.cells, cell)
	p.cur = nil
}

// slotName is a slot as people read it: "18:00-19:00", "Mon 18:00-19:00".
func (p *profiler) slotName(i int) string {
	h := i % 24
	name := fmt.Sprintf("%02d:00-%02d:00", h, (h+1)%24)
	if p.kind == ProfileWeekly {
		name = [...]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}[i/24] + " " + name
	}
	return name
}

// occurrences counts, per slot, the days (weeks) of [from, to) its hour
// lies in, wholly or in part.
func (p *profiler) occurrences(from, to time.Time) []int {
	of := make([]int, len(p.slots))
	lf := from.In(p.loc)
	t := time.Date(lf.Year(), lf.Month(), lf.Day(), lf.Hour(), 0, 0, 0, p.loc)
	seen := map[[2]int]bool{}
	for ; t.Before(to); t = t.Add(slotLength) {
		slot, day := p.slotOf(t)
		if !seen[[2]int{slot, day}] {
			seen[[2]int{slot, day}] = true
			of[slot]++
		}
	}
	return of
}

// finish judges the slots as windows are judged (docs/windows.md): each
// slot's calls alone give its quantile with its interval and its timeout;
// a slot is worse beyond the noise when its lower bound, at the confidence
// that holds for all the slots at once (Bonferroni), lies above the upper
// bound of the other slots pooled (the whole period less the slot); the
// worst is the one with the highest such bound. It returns the profile and the worst slot's group, nil when
// none is told apart.
func (p *profiler) finish(ctx context.Context, name string, wholeLatency *histogram.Latency, whole report.Group, from, to time.Time, o windowing) (*report.Profile, *histogram.Group, error) {
	p.flush()
	of := p.occurrences(from, to)
	prof := &report.Profile{Kind: p.kind, TZ: p.loc.String(), Quantile: p.q, SlotSeconds: slotLength.Seconds(),
		Slots: []report.ProfileSlot{}, Cells: p.cells}
	used := 0
	for _, s := range p.slots {
		if s.cell != nil && s.cell.Latency.TotalCount() > 0 {
			used++
		}
	}
	conf := whole.Recommendation.Interval.Confidence
	worst := -1
	var worstGroup *histogram.Group
	for i, s := range p.slots {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if s.cell == nil {
			continue
		}
		g := p.slotGroup(name, s)
		ps := report.ProfileSlot{Slot: p.slotName(i), Index: i, Days: s.days, Of: of[i], Samples: g.Latency.Count(),
			RatePerSecond: g.Measured.Rate, Percentiles: []report.Percentile{}}
		if ps.Samples > 0 {
			rec, err := recommend.RecommendMeasured(g.Latency, recommend.Measured{ConnectTimes: g.Connect}, o.Recommend)
			if err != nil {
				return nil, nil, fmt.Errorf("slot %s: %w", ps.Slot, err)
			}
			ps.Percentiles = windowPercentiles(g.Latency, rec)
			ps.QuantileSeconds, ps.TimeoutSeconds = rec.Base.Seconds(), rec.Timeout.Seconds()
			ps.Interval = newInterval(rec.Interval)
			ps.FamilyLowSeconds = g.Latency.QuantileInterval(rec.Quantile, familyConfidence(rec.Interval.Confidence, used)).Lo.Seconds()
			if rest, ok := restInterval(wholeLatency, g.Latency, rec.Quantile, rec.Interval.Confidence); ok && rest.HiKnown {
				hi := rest.Hi.Seconds()
				ps.RestHighSeconds = &hi
				ps.Significant = ps.FamilyLowSeconds > hi
			}
			if ps.Significant && (worst < 0 || ps.FamilyLowSeconds > prof.Slots[worst].FamilyLowSeconds) {
				worst, worstGroup = len(prof.Slots), g
			}
		}
		prof.Slots = append(prof.Slots, ps)
	}
	q := human.Quantile(whole.Recommendation.Quantile)
	zone := p.loc.String()
	if worst < 0 {
		median := medianCalls(prof.Slots, func(s report.ProfileSlot) int64 { return s.Samples })
		var above float64
		prof.CallsNeeded, above = windowCallsNeeded(wholeLatency, whole, used, median)
		prof.Reason = fmt.Sprintf("No hour of the %s is worse beyond the noise: no slot's lower bound of its %s (%s confidence over the %s slots at once) lies above the upper bound of the other slots pooled.",
			p.period(), q, human.Percent(conf), human.Count(int64(used)))
		prof.Reason += needPhrase("slot", prof.CallsNeeded, median, above, q, "a longer period would tell")
		return prof, nil, nil
	}
	s := prof.Slots[worst]
	ws := &report.WorstSlot{Slot: s.Slot, Index: s.Index, Days: s.Days, Of: s.Of, Samples: s.Samples, QuantileSeconds: s.QuantileSeconds,
		TimeoutSeconds: s.TimeoutSeconds, WholeTimeoutSeconds: whole.Recommendation.TimeoutSeconds, Used: !o.WindowForAll}
	ws.Reason = fmt.Sprintf("The worst hour of the %s is %s %s on %s of %s %s: %s %s over %s calls pooled, against %s over the whole period, so a timeout of %s against %s. It is worse beyond the noise: the lower bound of its %s, %s (%s confidence over the %s slots at once), lies above the upper bound of the other slots pooled, %s (%s calls), and is the highest lower bound of the slots that are.",
		p.period(), s.Slot, zone, human.Count(int64(s.Days)), human.Count(int64(s.Of)), p.unit(), q, human.Seconds(s.QuantileSeconds), human.Count(s.Samples),
		human.Seconds(whole.Recommendation.BaseSeconds), human.Seconds(s.TimeoutSeconds), human.Seconds(whole.Recommendation.TimeoutSeconds),
		q, human.Seconds(s.FamilyLowSeconds), human.Percent(conf), human.Count(int64(used)), human.Seconds(*s.RestHighSeconds), human.Count(wholeLatency.Count()-s.Samples))
	if ws.Used {
		ws.Reason += fmt.Sprintf(" The recommendation, the candidates, Little's law (at the slot's rate, %s calls over %s) and the call policy below are that slot's, ahead of any single window: it repeats, and rests on the calls of every day it occurred (%s all: the whole period's).",
			human.Count(s.Samples), human.Duration(time.Duration(s.Days)*slotLength), usage.For)
	} else {
		ws.Reason += fmt.Sprintf(" The recommendation below is the whole period's (%s all).", usage.For)
	}
	prof.WorstSlot = ws
	prof.Reason = ws.Reason
	return prof, worstGroup, nil
}

// slotGroup is the group of a slot's calls; its rate is its calls over
// its hour on every day it occurred, its busiest minute the busiest of its
// windows'.
func (p *profiler) slotGroup(name string, s slotAcc) *histogram.Group {
	g := histogram.CellGroup(name, s.cell)
	rate := float64(s.cell.Count()) / (float64(s.days) * slotLength.Seconds())
	g.Measured = &histogram.Measured{Rate: rate, PeakRate: max(s.peak, rate), Source: "the profile's slot"}
	return g
}

func (p *profiler) period() string {
	if p.kind == ProfileWeekly {
		return "week"
	}
	return "day"
}

func (p *profiler) unit() string {
	if p.kind == ProfileWeekly {
		return "weeks"
	}
	return "days"
}
