package analysis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// profileCSV writes weeks of CSV as issue 31 tells it: normal calls in
// every hour, peak calls in each 18:00 UTC hour of the days peakDay
// says, slower times as slow there. Latencies are lognormal with p99 at
// 0.5 s and p99.9 at 0.8 s (median 120 ms, sigma 0.615); the peak's
// twice that. It returns the file and each call's time and latency.
func profileCSV(t *testing.T, dir string, weeks, normal, peak int, slower float64, peakDay func(time.Time) bool) (string, []time.Time, []time.Duration) {
	t.Helper()
	path := filepath.Join(dir, "weeks.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "timestamp,route,status,latency_us")
	r := rand.New(rand.NewPCG(31, 18))
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	var times []time.Time
	var lat []time.Duration
	for h := range weeks * 7 * 24 {
		hour := start.Add(time.Duration(h) * time.Hour)
		n, slow := normal, 1.0
		if hour.Hour() == 18 && peakDay(hour) {
			n, slow = peak, slower
		}
		for i := range n {
			at := hour.Add(time.Duration(i) * time.Hour / time.Duration(n))
			d := time.Duration(120*math.Exp(0.615*r.NormFloat64())*slow*1000) * time.Microsecond
			times, lat = append(times, at), append(lat, d)
			fmt.Fprintf(w, "%d,/api/items,200,%d\n", at.Unix(), d.Microseconds())
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path, times, lat
}

func everyDay(time.Time) bool { return true }

func weekdays(t time.Time) bool { return t.Weekday() != time.Saturday && t.Weekday() != time.Sunday }

// TestProfileNamesThePeakHour is issue 31's done-when on a week of CSV:
// --window 1h pools the seven 18:00 hours into one slot, told apart from
// the whole week; its timeout cuts off at most 0.1 % of the week's 21,000
// peak-hour calls (counted exactly) while the whole week's cuts off more;
// every slot's figures are those of an exact computation over its calls;
// three hosts' summaries give the same profile.
func TestProfileNamesThePeakHour(t *testing.T) {
	dir := t.TempDir()
	path, times, lat := profileCSV(t, dir, 1, 1500, 3000, 2, everyDay)
	run := func(o Options) report.Group {
		o.Recommend = recommend.DefaultOptions()
		r, err := Run(context.Background(), o, nil)
		require.NoError(t, err)
		require.Len(t, r.Groups, 1)
		return r.Groups[0]
	}
	g := run(Options{Inputs: []string{path}, Window: time.Hour})
	p := g.Profile
	require.NotNil(t, p, "auto pools a week")
	assert.Equal(t, "daily", p.Kind)
	assert.Equal(t, "UTC", p.TZ)
	require.Len(t, p.Slots, 24)
	require.NotNil(t, p.WorstSlot, p.Reason)
	assert.Equal(t, "18:00-19:00", p.WorstSlot.Slot)
	assert.Equal(t, 7, p.WorstSlot.Days)
	assert.Equal(t, 7, p.WorstSlot.Of)
	assert.True(t, p.WorstSlot.Used)
	assert.Contains(t, p.WorstSlot.Reason, "18:00-19:00 UTC on 7 of 7 days")
	assert.Equal(t, p.WorstSlot.TimeoutSeconds, g.Recommendation.TimeoutSeconds, "the group's recommendation is the slot's")
	require.NotNil(t, g.LittlesLaw)
	require.NotNil(t, g.LittlesLaw.RatePerSecond)
	assert.InDelta(t, 21000.0/(7*3600), *g.LittlesLaw.RatePerSecond, 1e-9, "Little's law at the slot's rate")
	assert.Len(t, p.Cells, 7*24, "one heat map cell per day and hour")

	cutOff := func(timeout float64) (cut, peak int) {
		for i, at := range times {
			if at.Hour() == 18 {
				peak++
				if lat[i].Seconds() > timeout {
					cut++
				}
			}
		}
		return cut, peak
	}
	cut, peak := cutOff(g.Recommendation.TimeoutSeconds)
	require.Equal(t, 21000, peak)
	all := run(Options{Inputs: []string{path}, Window: time.Hour, WindowOptions: advice.WindowOptions{WindowForAll: true}})
	cutAll, _ := cutOff(all.Recommendation.TimeoutSeconds)
	t.Logf("slot timeout %vs cuts off %d of %d peak-hour calls; the whole week's (--for all) %vs cuts off %d",
		g.Recommendation.TimeoutSeconds, cut, peak, all.Recommendation.TimeoutSeconds, cutAll)
	assert.Equal(t, 15, cut, "calls of the week's peak hours above the slot's timeout")
	assert.LessOrEqual(t, cut, 21, "at most 0.1 %")
	assert.Greater(t, cutAll, 21, "the whole week's timeout cuts off more than 0.1 %% of the peak hours")
	assert.False(t, all.Profile.WorstSlot.Used)
	assert.Equal(t, p.Slots, all.Profile.Slots)

	// Every slot against an exact computation over its calls.
	bySlot := make([][]time.Duration, 24)
	for i, at := range times {
		bySlot[at.Hour()] = append(bySlot[at.Hour()], lat[i])
	}
	for _, s := range p.Slots {
		calls := bySlot[s.Index]
		slices.Sort(calls)
		require.EqualValues(t, len(calls), s.Samples, s.Slot)
		assert.InDelta(t, float64(len(calls))/(7*3600), s.RatePerSecond, 1e-9, s.Slot)
		for _, pc := range s.Percentiles {
			rank := int(math.Ceil(pc.Quantile * float64(len(calls))))
			assert.InEpsilon(t, calls[max(rank, 1)-1].Seconds(), pc.Seconds, 0.001, "%s p%v", s.Slot, pc.Quantile*100)
		}
	}

	// Three hosts (every third line), each summarised by the hour: the
	// same profile as the whole log.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := splitLines(raw)
	var hosts []string
	for h := range 3 {
		part := filepath.Join(dir, fmt.Sprintf("host%d.csv", h))
		b := append(append([]byte{}, lines[0]...), '\n')
		for i, l := range lines[1:] {
			if i%3 == h {
				b = append(append(b, l...), '\n')
			}
		}
		require.NoError(t, os.WriteFile(part, b, 0o644))
		hlog := filepath.Join(dir, fmt.Sprintf("host%d.hlog", h))
		f, err := os.Create(hlog)
		require.NoError(t, err)
		_, err = Summarize(context.Background(), Options{Inputs: []string{part}, Recommend: recommend.DefaultOptions()}, time.Hour, nil, f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		hosts = append(hosts, hlog)
	}
	merged := run(Options{Inputs: hosts, Window: time.Hour})
	require.NotNil(t, merged.Profile)
	assert.Equal(t, p.Slots, merged.Profile.Slots)
	assert.Equal(t, p.Cells, merged.Profile.Cells)
	assert.Equal(t, p.WorstSlot, merged.Profile.WorstSlot)
	assert.Equal(t, g.Recommendation.TimeoutSeconds, merged.Recommendation.TimeoutSeconds)
}

// TestProfileWeekly: two weeks whose 18:00 peak comes on weekdays only;
// --profile weekly names a weekday's 18:00 slot, on 2 of 2 weeks, and
// tells every weekday's 18:00 apart from the rest and no weekend hour;
// each slot's figures are the exact order statistics of its calls; the
// daily profile of the same data, which pools the weekend's quiet 18:00
// hours with the weekdays', still names 18:00.
func TestProfileWeekly(t *testing.T) {
	path, times, lat := profileCSV(t, t.TempDir(), 2, 1500, 3000, 2, weekdays)
	run := func(kind string) *report.Profile {
		r, err := Run(context.Background(), Options{Inputs: []string{path}, Window: time.Hour, WindowOptions: advice.WindowOptions{Profile: kind}, Recommend: recommend.DefaultOptions()}, nil)
		require.NoError(t, err)
		return r.Groups[0].Profile
	}
	p := run(advice.ProfileWeekly)
	require.NotNil(t, p)
	assert.Equal(t, "weekly", p.Kind)
	require.Len(t, p.Slots, 7*24)
	require.NotNil(t, p.WorstSlot, p.Reason)
	assert.Equal(t, "Fri 18:00-19:00", p.WorstSlot.Slot, "the weekday 18:00 with the highest lower bound")
	assert.Equal(t, 2, p.WorstSlot.Days)
	assert.Equal(t, 2, p.WorstSlot.Of)
	assert.EqualValues(t, 6000, p.WorstSlot.Samples)
	assert.Contains(t, p.WorstSlot.Reason, "Fri 18:00-19:00 UTC on 2 of 2 weeks")
	var told []string
	for _, s := range p.Slots {
		if s.Significant {
			told = append(told, s.Slot)
		}
	}
	assert.Equal(t, []string{"Mon 18:00-19:00", "Tue 18:00-19:00", "Wed 18:00-19:00", "Thu 18:00-19:00", "Fri 18:00-19:00"}, told)

	bySlot := make([][]time.Duration, 7*24)
	for i, at := range times {
		k := (int(at.Weekday())+6)%7*24 + at.Hour() // Monday first
		bySlot[k] = append(bySlot[k], lat[i])
	}
	for _, s := range p.Slots {
		calls := bySlot[s.Index]
		slices.Sort(calls)
		require.EqualValues(t, len(calls), s.Samples, s.Slot)
		for _, pc := range s.Percentiles {
			rank := int(math.Ceil(pc.Quantile * float64(len(calls))))
			assert.InEpsilon(t, calls[max(rank, 1)-1].Seconds(), pc.Seconds, 0.001, "%s p%v", s.Slot, pc.Quantile*100)
		}
	}

	d := run(advice.ProfileDaily)
	require.NotNil(t, d.WorstSlot, d.Reason)
	assert.Equal(t, "18:00-19:00", d.WorstSlot.Slot)
}

// TestProfileNoPattern: a week with every hour alike names no slot, and
// the report says how many calls a slot would need.
func TestProfileNoPattern(t *testing.T) {
	path, _, _ := profileCSV(t, t.TempDir(), 1, 1500, 1500, 1, everyDay)
	r, err := Run(context.Background(), Options{Inputs: []string{path}, Window: time.Hour, Recommend: recommend.DefaultOptions()}, nil)
	require.NoError(t, err)
	g := r.Groups[0]
	p := g.Profile
	require.NotNil(t, p)
	assert.Nil(t, p.WorstSlot, p.Reason)
	for _, s := range p.Slots {
		assert.False(t, s.Significant, s.Slot)
	}
	// A slot holds enough calls to tell one a fifth worse than the rest:
	// the hours are alike; a window alone would need more than it holds
	// (the bound there holds for 168 windows at once, not 24 slots).
	assert.EqualValues(t, 6620, p.CallsNeeded)
	assert.Contains(t, p.Reason, "With the median slot's 10,500 calls, a slot is told apart when its p99.9 lies 17.1 % or more above the rest's. That is enough to tell one 20 % above the rest's (about 6,620 calls would do), and none is: the slots are alike.")
	assert.EqualValues(t, 8827, g.WindowCallsNeeded, "a window alone would need more than its 1,500")
	var b bytes.Buffer
	require.NoError(t, report.WriteText(&b, r))
	assert.Contains(t, b.String(), "Daily profile")
	assert.Contains(t, b.String(), "No hour of the day is worse beyond the noise")
}

// TestProfileFromSpans (issue 31, item 4): the same week as OTLP/JSON
// client spans gives the profile the CSV gives, slot for slot: spans'
// windows are pooled by the same code.
func TestProfileFromSpans(t *testing.T) {
	dir := t.TempDir()
	csv, times, lat := profileCSV(t, dir, 1, 1500, 3000, 2, everyDay)
	path := filepath.Join(dir, "spans.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	for i := 0; i < len(times); i += 1000 {
		w.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"frontend"}}]},"scopeSpans":[{"spans":[`)
		for j := i; j < min(i+1000, len(times)); j++ {
			if j > i {
				w.WriteByte(',')
			}
			s := times[j].UnixNano()
			fmt.Fprintf(w, `{"traceId":"%032x","spanId":"%016x","name":"GET","kind":3,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"peer.service","value":{"stringValue":"items"}}]}`,
				j+1, j+1, s, s+int64(lat[j]))
		}
		w.WriteString("]}]}]}\n")
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	run := func(in string) report.Group {
		r, err := Run(context.Background(), Options{Inputs: []string{in}, Window: time.Hour, Recommend: recommend.DefaultOptions()}, nil)
		require.NoError(t, err)
		require.Len(t, r.Groups, 1)
		return r.Groups[0]
	}
	want, got := run(csv), run(path)
	require.NotNil(t, got.Profile)
	require.NotNil(t, got.Profile.WorstSlot, got.Profile.Reason)
	assert.Equal(t, "18:00-19:00", got.Profile.WorstSlot.Slot)
	assert.Equal(t, want.Profile.Slots, got.Profile.Slots)
	assert.Equal(t, want.Profile.Cells, got.Profile.Cells)
	assert.Equal(t, want.Recommendation.TimeoutSeconds, got.Recommendation.TimeoutSeconds)
}
