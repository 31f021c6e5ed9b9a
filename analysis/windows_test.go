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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// peakWeek writes a week of an nginx log (combined + $request_time
// $upstream_response_time) whose every 18:00 hour is busy (20,000 calls)
// and twice as slow, and whose other hours hold 2,000 calls each; it
// returns the file and every call's time and latency, for exact checks.
func peakWeek(t *testing.T, dir string) (string, []time.Time, []time.Duration) {
	t.Helper()
	return peakWeekOf(t, dir, 2000, 20000, 2)
}

// peakWeekOf is peakWeek with normal calls in each hour and peak calls in
// each 18:00 hour, slower times as slow.
func peakWeekOf(t *testing.T, dir string, normal, peak int, slower float64) (string, []time.Time, []time.Duration) {
	t.Helper()
	path := filepath.Join(dir, "week.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(20, 21))
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	var lat []time.Duration
	for h := range 7 * 24 {
		hour := start.Add(time.Duration(h) * time.Hour)
		n, slow := normal, 1.0
		if hour.Hour() == 18 {
			n, slow = peak, slower
		}
		for i := range n {
			at := hour.Add(time.Duration(i) * time.Hour / time.Duration(n))
			// Lognormal around 20 ms: p99.9 near 20 ms x e^(3.09 x 0.8).
			ms := math.Round(20 * math.Exp(0.8*r.NormFloat64()) * slow) // whole ms: $request_time has three decimals
			d := time.Duration(ms) * time.Millisecond
			times, lat = append(times, at), append(lat, d)
			fmt.Fprintf(w, "10.0.0.1 - - [%s] \"GET /api/items/%d HTTP/1.1\" 200 512 \"-\" \"curl/8\" %.3f %.3f\n",
				at.Format("02/Jan/2006:15:04:05 -0700"), i%50, d.Seconds(), d.Seconds())
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path, times, lat
}

// Issue 20's done-when: --window 1h names a peak hour, its recommendation
// cuts off at most 0.1 % of that hour's calls (counted exactly), while
// the whole week's cuts off more there; every window's percentiles are
// those of an exact computation over its calls, within the histogram's
// precision; and three hosts' summaries give the same windows.
func TestWindowsNameThePeakHour(t *testing.T) {
	dir := t.TempDir()
	path, times, lat := peakWeek(t, dir)
	run := func(o Options) *report.Report {
		o.Recommend = recommend.DefaultOptions()
		o.Profile = advice.ProfileNone // the windows alone: TestProfileNamesThePeakHour pools them
		r, err := Run(context.Background(), o, nil)
		require.NoError(t, err)
		require.Len(t, r.Groups, 1)
		return r
	}
	whole := run(Options{Inputs: []string{path}})
	windowed := run(Options{Inputs: []string{path}, Window: time.Hour})
	g := windowed.Groups[0]
	require.Len(t, g.Windows, 7*24)
	ww := g.WorstWindow
	require.NotNil(t, ww)
	assert.Equal(t, 18, ww.Start.Hour(), "a peak hour: %s", ww.Reason)
	assert.True(t, ww.Significant && ww.Used, ww.Reason)
	assert.Equal(t, whole.Groups[0].Recommendation.TimeoutSeconds, ww.WholeTimeoutSeconds)

	// Exactly: the calls of that hour above each timeout.
	var hour []time.Duration
	for i, at := range times {
		if !at.Before(ww.Start) && at.Before(ww.End) {
			hour = append(hour, lat[i])
		}
	}
	require.Len(t, hour, 20000)
	above := func(timeout float64) int {
		n := 0
		for _, d := range hour {
			if d.Seconds() > timeout {
				n++
			}
		}
		return n
	}
	assert.Equal(t, ww.TimeoutSeconds, g.Recommendation.TimeoutSeconds, "the group's recommendation is the window's")
	assert.LessOrEqual(t, above(g.Recommendation.TimeoutSeconds), 20, "at most 0.1 % of the hour's 20,000 calls")
	wholeT := whole.Groups[0].Recommendation.TimeoutSeconds
	assert.Greater(t, above(wholeT), 20, "the whole week's %v cuts off more than 0.1 %% of the peak hour", wholeT)
	t.Logf("peak hour %s: the window's timeout %vs cuts off %d of 20,000; the week's %vs cuts off %d",
		ww.Start.Format(time.RFC3339), g.Recommendation.TimeoutSeconds, above(g.Recommendation.TimeoutSeconds), wholeT, above(wholeT))

	// Every window against an exact computation over its calls.
	byHour := map[int64][]time.Duration{}
	for i, at := range times {
		byHour[at.Truncate(time.Hour).Unix()] = append(byHour[at.Truncate(time.Hour).Unix()], lat[i])
	}
	for _, w := range g.Windows {
		calls := byHour[w.Start.Unix()]
		slices.Sort(calls)
		require.EqualValues(t, len(calls), w.Samples, w.Start)
		for _, p := range w.Percentiles {
			rank := int(math.Ceil(p.Quantile * float64(len(calls))))
			exact := calls[max(rank, 1)-1].Seconds()
			assert.InEpsilon(t, exact, p.Seconds, 0.001, "%s p%v", w.Start, p.Quantile*100)
		}
	}

	// --for all: the same windows, the whole week's recommendation.
	all := run(Options{Inputs: []string{path}, Window: time.Hour, WindowOptions: advice.WindowOptions{WindowForAll: true}})
	assert.Equal(t, g.Windows, all.Groups[0].Windows)
	assert.Equal(t, wholeT, all.Groups[0].Recommendation.TimeoutSeconds)
	assert.False(t, all.Groups[0].WorstWindow.Used)

	// Three hosts (every third line), each summarised by the hour: the
	// same windows and the same worst window as the whole log.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var hosts []string
	lines := splitLines(raw)
	for h := range 3 {
		part := filepath.Join(dir, fmt.Sprintf("host%d.log", h))
		var b []byte
		for i, l := range lines {
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
	assert.Equal(t, g.Windows, merged.Groups[0].Windows)
	assert.Equal(t, g.WorstWindow, merged.Groups[0].WorstWindow)
	assert.Equal(t, g.Recommendation, merged.Groups[0].Recommendation)
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := slices.Index(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i])
		b = b[i+1:]
	}
	return out
}

// A window as long as the whole period is no window: the report lists
// none and says why; one short enough to cut the period lists them all.
func TestOneWindowIsNoWindows(t *testing.T) {
	for _, tc := range []struct {
		window  time.Duration
		windows int
	}{{time.Hour, 0}, {time.Minute, 9}} {
		o := options("../testdata/mixture.csv")
		o.Window = tc.window
		r, err := Run(context.Background(), o, nil)
		require.NoError(t, err)
		assert.Len(t, r.Groups[0].Windows, tc.windows)
		assert.Equal(t, tc.windows == 0, r.Groups[0].WorstWindow == nil)
		var codes []finding.Code
		for _, f := range r.Input.Findings {
			codes = append(codes, f.Code)
		}
		assert.Equal(t, tc.windows == 0, slices.Contains(codes, finding.OneWindow), "%s: %v", tc.window, codes)
	}

	// Calls without times have no window at all, which the note says.
	path := filepath.Join(t.TempDir(), "untimed.csv")
	require.NoError(t, os.WriteFile(path, []byte("latency_ms\n10\n20\n30\n"), 0o644))
	o := options(path)
	o.Window = time.Hour
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Groups[0].Windows)
	require.NotEmpty(t, r.Input.Findings)
	f := r.Input.Findings[len(r.Input.Findings)-1]
	assert.Equal(t, finding.OneWindow, f.Code)
	assert.Equal(t, int64(0), f.Fields["windows"])
	assert.Contains(t, f.Message, "No call has a time")
}

// Windows are counted over all groups: two groups of one hour each, in
// different hours, are two windows.
func TestWindowsOfGroupsApart(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp,route,status,latency_us\n")
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC).Unix()
	for i := range 2000 {
		route, at := "/a", start+int64(i%1000)
		if i >= 1000 {
			route, at = "/b", start+3600+int64(i%1000)
		}
		fmt.Fprintf(&b, "%d,%s,200,%d\n", at, route, 1000+i)
	}
	path := filepath.Join(t.TempDir(), "two.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	o := options(path)
	o.Ingest.By = []string{"route"}
	o.Window = time.Hour
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	require.Len(t, r.Groups, 2)
	for _, g := range r.Groups {
		assert.Len(t, g.Windows, 1, g.Name)
	}
	for _, f := range r.Input.Findings {
		assert.NotEqual(t, finding.OneWindow, f.Code)
	}
}

// TestWindowsPeakAtRealVolumes (issue 31, item 1): at 1,500 calls an hour
// and 3,000 in a daily peak twice as slow, every window's own p99.9
// interval was too wide to rank it, and the whole week's timeout cut off
// 1.2 % of the peak hours' calls. A window is worse beyond the noise when
// its lower bound lies above the whole period's upper bound, however wide
// its interval: the worst is an 18:00 hour, and its recommendation cuts
// off at most 0.1 % of all the week's peak-hour calls (counted exactly);
// the whole week's (--for all) cuts off more of them.
func TestWindowsPeakAtRealVolumes(t *testing.T) {
	path, times, lat := peakWeekOf(t, t.TempDir(), 1500, 3000, 2)
	run := func(forAll bool) report.Group {
		r, err := Run(context.Background(), Options{Inputs: []string{path}, Window: time.Hour, WindowOptions: advice.WindowOptions{WindowForAll: forAll, Profile: advice.ProfileNone}, Recommend: recommend.DefaultOptions()}, nil)
		require.NoError(t, err)
		require.Len(t, r.Groups, 1)
		return r.Groups[0]
	}
	g := run(false)
	ww := g.WorstWindow
	require.NotNil(t, ww, "a worst window is named")
	assert.Equal(t, 18, ww.Start.Hour())
	assert.True(t, ww.Significant)
	assert.True(t, ww.Used)
	assert.Contains(t, ww.Reason, "worse beyond the noise")
	tooWide := 0
	for _, w := range g.Windows {
		if !w.EnoughData {
			tooWide++
		}
	}
	assert.Greater(t, tooWide, 160, "most windows alone are too few to place their p99.9")

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
	require.Equal(t, 7*3000, peak)
	assert.LessOrEqual(t, float64(cut), 0.001*float64(peak), "%d of %d peak-hour calls cut off at %vs", cut, peak, g.Recommendation.TimeoutSeconds)
	all := run(true)
	cutAll, _ := cutOff(all.Recommendation.TimeoutSeconds)
	assert.Greater(t, cutAll, cut, "the whole week's timeout (%vs) cuts off more peak-hour calls", all.Recommendation.TimeoutSeconds)
	t.Logf("worst %s; timeout %vs cuts off %d of %d peak-hour calls; the whole week's %vs cuts off %d",
		ww.Start, g.Recommendation.TimeoutSeconds, cut, peak, all.Recommendation.TimeoutSeconds, cutAll)
}

// TestWindowsNoPatternNamesNone (issue 31, items 1 and 5): a week of 1,500
// calls an hour, every hour alike: 168 windows ranked by their lower
// bounds would name one by chance at 95 % each; the bound that holds for
// all of them at once names none, and the report says how many calls a
// window would need.
func TestWindowsNoPatternNamesNone(t *testing.T) {
	path, _, _ := peakWeekOf(t, t.TempDir(), 1500, 1500, 1)
	r, err := Run(context.Background(), Options{Inputs: []string{path}, Window: time.Hour, Recommend: recommend.DefaultOptions()}, nil)
	require.NoError(t, err)
	g := r.Groups[0]
	if g.WorstWindow != nil {
		assert.False(t, g.WorstWindow.Significant, g.WorstWindow.Reason)
		assert.False(t, g.WorstWindow.Used)
	}
	assert.EqualValues(t, 17471, g.WindowCallsNeeded, "to tell a window a fifth above the rest")
	var b bytes.Buffer
	require.NoError(t, report.WriteText(&b, r))
	assert.Contains(t, b.String(), "To tell a window whose p99.9 is a fifth above the rest's\n  from the noise, it would need about 17,471 calls, against the 1,500 of the median window")
	assert.Contains(t, b.String(), "too few to tell", "no window is told apart")
	assert.NotContains(t, b.String(), "wide interval")
	// The same week's profile: seven hours pooled hold 10,500 calls,
	// enough to tell a slot 21.7 % above the rest's, not quite 20 %.
	require.NotNil(t, g.Profile)
	assert.Nil(t, g.Profile.WorstSlot)
	assert.EqualValues(t, 12706, g.Profile.CallsNeeded)
	assert.Contains(t, g.Profile.Reason, "With the median slot's 10,500 calls, a slot is told apart when its p99.9 lies 21.7 % or more above the rest's. To tell one whose p99.9 is 20 % above the rest's, a slot would need about 12,706 calls, 2,206 more than the median slot holds: a longer period would tell.")
}
