package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// Issue 31 on ClickHouse: four days of calls with a daily 18:00 peak
// (1,500 calls an hour on /api/items, 3,000 twice as slow at 18:00 UTC;
// 200 an hour on /api/health, flat; a few 504s censored and 503s left
// out), loaded into a real ClickHouse and written as CSV.
// `tunetimeout clickhouse --window 1h` has ClickHouse group the rows by
// window and bucket; its JSON and text reports are analyze --window 1h's of the CSV
// but for the input section: every window's calls and percentiles, the
// worst window, the daily profile slot by slot (samples, quantiles,
// intervals, timeouts) and its worst slot, the recommendation built on
// it. The same with the profile's hours in Europe/Berlin and weekly.
func TestClickHouseWindowsEqualLocalRead(t *testing.T) {
	chs := startClickHouse(t, "")
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "days.csv")
	f, err := os.Create(csvPath)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "timestamp,route,status,latency_us")
	var tsv bytes.Buffer
	r := rand.New(rand.NewPCG(31, 4))
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	const days = 4
	rows, peakCalls := 0, 0
	perWindow := map[int64]int{} // /api/items calls per hour, statuses all
	for h := range days * 24 {
		hour := start.Add(time.Duration(h) * time.Hour)
		for _, route := range []string{"/api/items", "/api/health"} {
			n, slow := 1500, 1.0
			if route == "/api/health" {
				n = 200
			} else if hour.Hour() == 18 {
				n, slow = 3000, 2
			}
			for i := range n {
				at := hour.Add(time.Duration(i) * time.Hour / time.Duration(n)).Unix()
				us := int64(120_000 * math.Exp(0.615*r.NormFloat64()) * slow)
				status := 200
				switch {
				case rows%997 == 5:
					status = 504
				case rows%1009 == 7:
					status = 503
				}
				fmt.Fprintf(w, "%d,%s,%d,%d\n", at, route, status, us)
				fmt.Fprintf(&tsv, "%d\t%s\t%d\t%d\n", at, route, status, us)
				rows++
				if route == "/api/items" {
					perWindow[at/3600*3600]++
					if hour.Hour() == 18 {
						peakCalls++
					}
				}
			}
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	// The time as Unix seconds, made a DateTime by ClickHouse itself: no
	// server time zone in between.
	chs.query("CREATE TABLE raw (ts UInt32, route String, status Int32, latency_us UInt64) ENGINE = Memory", nil)
	chs.query("INSERT INTO raw FORMAT TabSeparated", &tsv)
	chs.query("CREATE TABLE calls (ts DateTime, route String, status Int32, latency_us UInt64) ENGINE = MergeTree ORDER BY ts", nil)
	chs.query("INSERT INTO calls SELECT toDateTime(ts), route, status, latency_us FROM raw", nil)
	n, err := strconv.Atoi(strings.TrimSpace(string(chs.query("SELECT count() FROM calls", nil))))
	require.NoError(t, err)
	require.Equal(t, rows, n)
	first := strings.TrimSpace(string(chs.query("SELECT min(toUnixTimestamp(ts)) FROM calls", nil)))
	require.Equal(t, strconv.FormatInt(start.Unix(), 10), first)

	base := []string{"--by", "route", "--pool", "200", "--window", "1h", "-o", "json"}
	both := func(extra ...string) (local, remote string) {
		t.Helper()
		args := append(append([]string{}, base...), extra...)
		local, errOut, code := runTool(t, append([]string{"analyze", csvPath}, args...)...)
		require.Equal(t, 0, code, errOut)
		remote, errOut, code = runTool(t, append([]string{"clickhouse", "--url", chs.base, "--table", "calls",
			"--latency", "latency_us", "--unit", "us", "--status-column", "status", "--time", "ts"}, args...)...)
		require.Equal(t, 0, code, errOut)
		return local, remote
	}
	decode := func(s string) *report.Report {
		t.Helper()
		var rep report.Report
		require.NoError(t, json.Unmarshal([]byte(s), &rep))
		return &rep
	}
	local, remote := both()
	assert.Equal(t, withoutInput(t, "json", local), withoutInput(t, "json", remote), "the report but its input")
	want, got := decode(local), decode(remote)
	assert.EqualValues(t, rows, got.Input.Records)
	require.Len(t, got.Groups, 2)
	// Groups in name order: /api/health, then /api/items.
	health, items := got.Groups[0], got.Groups[1]
	require.Equal(t, "/api/items", items.Name)
	require.Len(t, items.Windows, days*24)
	for i, win := range items.Windows {
		lw := want.Groups[1].Windows[i]
		assert.Equal(t, lw.Start, win.Start)
		assert.Equal(t, lw.Samples, win.Samples, "window %s", win.Start)
		assert.Equal(t, lw.Percentiles, win.Percentiles, "window %s", win.Start)
		// Every call of the hour but those left out (503s).
		assert.InDelta(t, perWindow[win.Start.Unix()], win.Samples, 3, "window %s", win.Start)
	}
	p := items.Profile
	require.NotNil(t, p, "four days: the daily profile by default")
	assert.Equal(t, "daily", p.Kind)
	assert.Equal(t, "UTC", p.TZ)
	require.Len(t, p.Slots, 24)
	require.NotNil(t, p.WorstSlot, p.Reason)
	assert.Equal(t, "18:00-19:00", p.WorstSlot.Slot)
	assert.Equal(t, days, p.WorstSlot.Days)
	assert.True(t, p.WorstSlot.Used)
	assert.Contains(t, p.WorstSlot.Reason, fmt.Sprintf("18:00-19:00 UTC on %d of %d days", days, days))
	assert.InDelta(t, peakCalls, p.WorstSlot.Samples, float64(peakCalls)/500, "the peak hours' calls, but the 503s")
	lp := want.Groups[1].Profile
	require.NotNil(t, lp)
	for i, s := range p.Slots {
		assert.Equal(t, lp.Slots[i].Samples, s.Samples, s.Slot)
		assert.Equal(t, lp.Slots[i].Percentiles, s.Percentiles, s.Slot)
		assert.Equal(t, lp.Slots[i].Interval, s.Interval, s.Slot)
		assert.Equal(t, lp.Slots[i].TimeoutSeconds, s.TimeoutSeconds, s.Slot)
	}
	assert.Equal(t, *lp.WorstSlot, *p.WorstSlot)
	assert.Equal(t, p.WorstSlot.TimeoutSeconds, items.Recommendation.TimeoutSeconds, "the recommendation is the slot's")
	require.NotNil(t, health.Profile)
	assert.Nil(t, health.Profile.WorstSlot, "the flat route has no worse hour")
	t.Logf("/api/items: worst slot %s, %d calls, timeout %vs against the whole period's %vs; %d windows",
		p.WorstSlot.Slot, p.WorstSlot.Samples, p.WorstSlot.TimeoutSeconds, p.WorstSlot.WholeTimeoutSeconds, len(items.Windows))

	// The profile's hours in another zone, and of the week: the same.
	for _, extra := range [][]string{{"--tz", "Europe/Berlin"}, {"--profile", "weekly"}, {"--for", "all"}} {
		local, remote := both(extra...)
		assert.Equal(t, withoutInput(t, "json", local), withoutInput(t, "json", remote), "%v", extra)
	}
	// The text report too, with its window and slot tables.
	local, remote = both("-o", "text")
	assert.Equal(t, withoutInput(t, "text", local), withoutInput(t, "text", remote))
	assert.Contains(t, remote, "18:00-19:00 UTC on 4 of 4 days")
	_, remote = both("--tz", "Europe/Berlin")
	assert.Equal(t, "19:00-20:00", decode(remote).Groups[1].Profile.WorstSlot.Slot, "18:00 UTC is 19:00 in Berlin in November")
}

// What tunetimeout clickhouse --window holds grows with the windows, as
// analyze --window's does, not with the rows: a week of 1,000,000 calls
// in 10 groups, made by ClickHouse itself, read with no windows, 1-hour
// and 1-minute windows, against analyze --window of the same rows as CSV.
// The peak RSS is GNU time's (%M) of each process: the rusage this test
// would read itself counts the test's own memory too, since Go starts a
// process sharing its memory until exec (Linux keeps that high-water
// mark). The figures are logged (docs/windows.md quotes them).
func TestClickHouseWindowsMemory(t *testing.T) {
	gnuTime := requireBinary(t, "time", "time")
	chs := startClickHouse(t, "")
	const rows = 1_000_000
	chs.query("CREATE TABLE week (ts DateTime, route String, status Int32, latency_us UInt64) ENGINE = MergeTree ORDER BY ts", nil)
	chs.query(fmt.Sprintf(`INSERT INTO week SELECT toDateTime(1793577600 + intDiv(number * 604800, %d)), concat('/api/r', toString(number %% 10)),
		200, 1000 + intHash64(number) %% 500000 FROM system.numbers LIMIT %d`, rows, rows), nil)
	csvPath := filepath.Join(t.TempDir(), "week.csv")
	require.NoError(t, os.WriteFile(csvPath, chs.query("SELECT toUnixTimestamp(ts) AS timestamp, route, status, latency_us FROM week ORDER BY ts FORMAT CSVWithNames", nil), 0o644))
	peak := func(args ...string) (kib int64, windows, groups int, records int64) {
		t.Helper()
		cmd := exec.Command(gnuTime, append([]string{"-f", "%M", tool(t)}, append(args, "--by", "route", "-o", "json")...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), errOut.String())
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
		require.NoError(t, err, errOut.String())
		var rep report.Report
		require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
		require.NotEmpty(t, rep.Groups)
		return kib, len(rep.Groups[0].Windows), len(rep.Groups), rep.Input.Records
	}
	remote := []string{"clickhouse", "--url", chs.base, "--table", "week", "--latency", "latency_us", "--unit", "us", "--time", "ts"}
	for _, window := range []string{"0", "1h", "1m"} {
		chRSS, chWindows, groups, records := peak(append(remote, "--window", window)...)
		localRSS, localWindows, _, _ := peak("analyze", csvPath, "--window", window)
		assert.Equal(t, 10, groups)
		assert.EqualValues(t, rows, records)
		assert.Equal(t, localWindows, chWindows, "window %s", window)
		t.Logf("--window %s: %d windows per group; peak RSS clickhouse %.1f MB, analyze of the CSV %.1f MB",
			window, chWindows, float64(chRSS)/1024, float64(localRSS)/1024)
		assert.LessOrEqual(t, float64(chRSS), float64(localRSS)*1.25+8*1024, "--window %s: no more than the local read", window)
	}
}
