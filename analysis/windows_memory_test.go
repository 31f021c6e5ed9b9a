package analysis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/report"
)

// weekCSV is a week of calls to 10 routes, spread evenly in time, with
// the worked example's latencies.
func weekCSV(calls int) []byte {
	lat := mixture.Default().Generate(7, calls)
	var b bytes.Buffer
	b.WriteString("timestamp,route,status,latency_us\n")
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC).Unix()
	week := int64(7 * 24 * 3600)
	for i := range calls {
		fmt.Fprintf(&b, "%d,/api/r%d,200,%d\n", start+int64(i)*week/int64(calls), i%10, lat[i].Microseconds())
	}
	return b.Bytes()
}

// TestWindowMemoryStaysFlat is issue 20's budget: a week in 10 groups
// costs the same with 1-hour windows as without, and at 1-minute windows
// (100,800 of them, 10 calls each) under 1 KB a window and less than the
// JSON the windows take in the report: every cell but a few per group is
// frozen while reading and freed once its row is made (one packed
// histogram per window took 1.6 KB a window). Memory cannot stay quite
// constant: a report lists each group's windows together, a log
// interleaves the groups in time, so one pass over the log holds every
// group's windows until the report is made.
func TestWindowMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a week of 1,000,000 generated calls three times")
	}
	path := filepath.Join(t.TempDir(), "week.csv")
	require.NoError(t, os.WriteFile(path, weekCSV(1_000_000), 0o644))
	run := func(window time.Duration) (uint64, *report.Report) {
		var r *report.Report
		peak := peakHeap(t, func() {
			o := options(path)
			o.Ingest.By = []string{"route"}
			o.Window = window
			var err error
			r, err = Run(context.Background(), o, nil)
			require.NoError(t, err)
			require.Len(t, r.Groups, 10)
			if window > 0 {
				require.Len(t, r.Groups[0].Windows, int(7*24*time.Hour/window))
			}
		})
		return peak, r
	}
	none, _ := run(0)
	hour, _ := run(time.Hour)
	minute, r := run(time.Minute)
	t.Logf("peak heap: %.1f MB without windows, %.1f MB with 1-hour windows, %.1f MB with 1-minute windows",
		float64(none)/1e6, float64(hour)/1e6, float64(minute)/1e6)
	assert.Less(t, float64(hour), float64(none)*1.5+8e6, "memory grows with 1-hour windows")
	perWindow := (float64(minute) - float64(none)) / 100_800
	var out bytes.Buffer
	require.NoError(t, report.WriteJSON(&out, r))
	jsonPerWindow := float64(out.Len()) / 100_800
	t.Logf("%.0f bytes a window; the JSON report takes %.0f a window", perWindow, jsonPerWindow)
	assert.Less(t, perWindow, 1000.0, "memory grows with the windows")
	assert.Less(t, perWindow, jsonPerWindow, "memory grows faster than the report")
}

// TestProfileMemoryStaysFlat is issue 31's budget: four weeks at 1-minute
// windows in 10 groups (403,200 windows) cost about the same with the
// daily profile as without: a profile keeps 24 pooled cells a group and a
// number per hour of the period, whatever the period's length.
func TestProfileMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("reads four weeks of 2,000,000 generated calls twice")
	}
	const calls = 2_000_000
	lat := mixture.Default().Generate(7, calls)
	var b bytes.Buffer
	b.WriteString("timestamp,route,status,latency_us\n")
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC).Unix()
	span := int64(28 * 24 * 3600)
	for i := range calls {
		fmt.Fprintf(&b, "%d,/api/r%d,200,%d\n", start+int64(i)*span/calls, i%10, lat[i].Microseconds())
	}
	path := filepath.Join(t.TempDir(), "weeks.csv")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	b = bytes.Buffer{}
	run := func(profile string) uint64 {
		return peakHeap(t, func() {
			o := options(path)
			o.Ingest.By = []string{"route"}
			o.Window, o.Profile = time.Minute, profile
			r, err := Run(context.Background(), o, nil)
			require.NoError(t, err)
			require.Len(t, r.Groups, 10)
			if profile == advice.ProfileDaily {
				require.NotNil(t, r.Groups[0].Profile)
				require.Len(t, r.Groups[0].Profile.Cells, 28*24)
			}
		})
	}
	none := run(advice.ProfileNone)
	daily := run(advice.ProfileDaily)
	t.Logf("peak heap, four weeks at 1-minute windows in 10 groups: %.1f MB without a profile, %.1f MB with the daily profile (%+.1f MB)",
		float64(none)/1e6, float64(daily)/1e6, (float64(daily)-float64(none))/1e6)
	// The peak is sampled while the GC runs on its own schedule: two runs
	// of the same work differ by a few percent, more on a busy machine
	// (297.6 MB against 275 MB once, with other builds running). A profile
	// that kept a histogram per hour of the period would add hundreds of
	// MB.
	assert.Less(t, float64(daily), float64(none)*1.10+8e6, "the profile grows with the period")
}
