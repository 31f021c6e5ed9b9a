package analysis

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/sqlsource"
)

// bucketsOf writes what tunetimeout clickhouse --window asks ClickHouse
// for, computed here from the calls: the buckets per window (window_start,
// bucket_us, calls) and the calls per second. Rows come in the engine's
// order (window, then bucket) unless shuffled.
func bucketsOf(t *testing.T, dir string, times []time.Time, lat []time.Duration, window int64, untimed int) (buckets, arrivals string) {
	t.Helper()
	type key struct{ ws, bucket int64 }
	rows := map[key]int64{}
	seconds := map[int64]int64{}
	for i, at := range times {
		sec := at.Unix()
		rows[key{sec / window * window, histogram.BucketLowerMicros(lat[i].Microseconds())}]++
		seconds[sec]++
	}
	keys := slices.SortedFunc(func(yield func(key) bool) {
		for k := range rows {
			if !yield(k) {
				return
			}
		}
	}, func(a, b key) int {
		if a.ws != b.ws {
			return int(a.ws - b.ws)
		}
		return int(a.bucket - b.bucket)
	})
	write := func(name string, f func(w *bufio.Writer)) string {
		path := filepath.Join(dir, name)
		file, err := os.Create(path)
		require.NoError(t, err)
		w := bufio.NewWriter(file)
		f(w)
		require.NoError(t, w.Flush())
		require.NoError(t, file.Close())
		return path
	}
	buckets = write("buckets.csv", func(w *bufio.Writer) {
		fmt.Fprintln(w, `"route","window_start","bucket_us","calls","censored"`)
		for _, k := range keys {
			fmt.Fprintf(w, "\"/api/items\",%d,%d,%d,0\n", k.ws, k.bucket, rows[k])
		}
		if untimed > 0 {
			fmt.Fprintf(w, "\"/api/items\",\\N,1000,%d,0\n", untimed)
		}
	})
	arrivals = write("arrivals.csv", func(w *bufio.Writer) {
		fmt.Fprintln(w, `"route","second","calls"`)
		for _, s := range slices.Sorted(func(yield func(int64) bool) {
			for s := range seconds {
				if !yield(s) {
					return
				}
			}
		}) {
			fmt.Fprintf(w, "\"/api/items\",%d,%d\n", s, seconds[s])
		}
	})
	return buckets, arrivals
}

// HDR buckets by window (tunetimeout clickhouse --window) fill the windows
// a local read of the calls fills: issue 31's week as buckets gives the
// CSV's windows, worst window, daily profile and recommendation, figure
// for figure.
func TestBucketWindowsEqualLocalRead(t *testing.T) {
	dir := t.TempDir()
	path, times, lat := profileCSV(t, dir, 1, 1500, 3000, 2, everyDay)
	buckets, arrivals := bucketsOf(t, dir, times, lat, 3600, 0)
	run := func(o Options) *report.Report {
		o.Recommend, o.Window = recommend.DefaultOptions(), time.Hour
		r, err := Run(context.Background(), o, nil)
		require.NoError(t, err)
		require.Len(t, r.Groups, 1)
		return r
	}
	want := run(Options{Inputs: []string{path}, Ingest: ingestBy("route")})
	got := run(Options{Inputs: []string{buckets, arrivals}})
	assert.Equal(t, want.Input.Records, got.Input.Records)
	w, g := want.Groups[0], got.Groups[0]
	require.Len(t, g.Windows, 168)
	assert.Equal(t, w.Windows, g.Windows)
	assert.Equal(t, w.WorstWindow, g.WorstWindow)
	require.NotNil(t, g.Profile)
	require.NotNil(t, g.Profile.WorstSlot)
	assert.Equal(t, "18:00-19:00", g.Profile.WorstSlot.Slot)
	assert.Equal(t, w.Profile, g.Profile)
	assert.Equal(t, w.Recommendation, g.Recommendation)
	assert.Equal(t, w.LittlesLaw, g.LittlesLaw)

	// In Asia/Kolkata (+05:30) the windows are still the epoch's hours,
	// the slots the zone's: 30-minute windows pooled into them.
	buckets30, arrivals30 := bucketsOf(t, t.TempDir(), times, lat, 1800, 0)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	o := Options{Recommend: recommend.DefaultOptions(), Window: 30 * time.Minute, WindowOptions: advice.WindowOptions{TZ: kolkata, Profile: advice.ProfileDaily}}
	o.Inputs, o.Ingest = []string{path}, ingestBy("route")
	wantTZ, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	o.Inputs, o.Ingest = []string{buckets30, arrivals30}, ingestBy()
	gotTZ, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Equal(t, "Asia/Kolkata", gotTZ.Groups[0].Profile.TZ)
	assert.Equal(t, wantTZ.Groups[0].Profile, gotTZ.Groups[0].Profile)
	assert.Equal(t, wantTZ.Groups[0].Windows, gotTZ.Groups[0].Windows)
}

// Rows without a time (window_start NULL) count in the whole period, not
// in a window; a bad window_start is a bad row, counted; buckets without
// the column cannot make windows; more windows than the cap are refused.
func TestBucketWindowsEdges(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	var lat []time.Duration
	for i := range 7200 {
		times = append(times, start.Add(time.Duration(i)*time.Second))
		lat = append(lat, time.Duration(1000+i)*time.Microsecond)
	}
	buckets, arrivals := bucketsOf(t, dir, times, lat, 3600, 5)
	raw, err := os.ReadFile(buckets)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(buckets, append(raw, "\"/api/items\",yesterday,1000,3,0\n"...), 0o644))
	r, err := Run(context.Background(), Options{Inputs: []string{buckets, arrivals}, Recommend: recommend.DefaultOptions(), Window: time.Hour}, nil)
	require.NoError(t, err)
	g := r.Groups[0]
	assert.EqualValues(t, 7205, g.Samples, "the untimed calls in the whole period")
	require.Len(t, g.Windows, 2)
	assert.EqualValues(t, 3600, g.Windows[0].Samples)
	assert.EqualValues(t, 3600, g.Windows[1].Samples)
	assert.EqualValues(t, 1, r.Input.BadRecords)
	assert.Contains(t, strings.Join(r.Input.BadExamples, "\n"), `column "window_start": "yesterday" is not a second of Unix time`)

	plain := filepath.Join(dir, "plain.csv")
	require.NoError(t, os.WriteFile(plain, []byte("bucket_us,calls\n1000,3\n"), 0o644))
	_, err = Run(context.Background(), Options{Inputs: []string{plain}, Recommend: recommend.DefaultOptions(), Window: time.Hour}, nil)
	assert.ErrorContains(t, err, "HDR buckets carry no times, which windows and interval histograms need")

	var many strings.Builder
	many.WriteString("window_start,bucket_us,calls\n")
	for i := range sqlsource.MaxWindows + 1 {
		fmt.Fprintf(&many, "%d,1000,1\n", 1_800_000_000+60*i)
	}
	tooMany := filepath.Join(dir, "many.csv")
	require.NoError(t, os.WriteFile(tooMany, []byte(many.String()), 0o644))
	_, err = Run(context.Background(), Options{Inputs: []string{tooMany}, Recommend: recommend.DefaultOptions(), Window: time.Minute}, nil)
	assert.ErrorContains(t, err, "more than 100,000 windows of 1m: give a longer --window")
}

func ingestBy(by ...string) ingest.Options { return ingest.Options{By: by} }
