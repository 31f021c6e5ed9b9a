package analysis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/report"
)

// hosts cuts a log into n logs the way a load balancer spreads calls over
// n hosts: line i goes to host i mod n, so each host's log spans the whole
// time and every interval holds calls from every host.
func hosts(data []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		out[i%n] = append(out[i%n], line...)
	}
	return out
}

// censor turns every k-th line's status into a 504 (a timeout, kept as
// censored) and every (k+1)-th into a 499 (the client gave up; censored).
func censor(data []byte, k int) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := range lines {
		for _, c := range []struct {
			every  int
			status string
		}{{k, " 504 "}, {k + 1, " 499 "}} {
			if i%c.every == c.every-1 {
				lines[i] = bytes.Replace(lines[i], []byte(" 200 "), []byte(c.status), 1)
			}
		}
	}
	return bytes.Join(lines, nil)
}

// reportJSON runs an analysis and returns its report as JSON, with the
// input's file names and formats (logs, or their interval logs), which
// differ by design, left out.
func reportJSON(t *testing.T, o Options) (string, *report.Report) {
	t.Helper()
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	r.Input.Files, r.Input.Formats = nil, nil
	var b bytes.Buffer
	require.NoError(t, report.WriteJSON(&b, r))
	return b.String(), r
}

// TestSummariesMergeToTheRawReport is the acceptance test: a log
// is split across several "hosts", each host's part is summarised to an
// interval log, and the analysis of the interval logs together is the
// analysis of the whole log: the same percentiles, recommendation, rates
// (mean, busiest minute and second), censored, excluded and bad-line
// counts, the JSON report byte for byte but for the file names.
func TestSummariesMergeToTheRawReport(t *testing.T) {
	dir := t.TempDir()
	// 40,000 calls at 100/s: almost 7 minutes, routes with ids, 0.5 % fast
	// 500s (excluded), 504s and 499s (censored), bad lines.
	whole := spoil(censor(nginxLog(t, 11, 40_000), 211), 1499)
	real, err := os.ReadFile("../testdata/nginx/access.log") // connect times too
	require.NoError(t, err)

	for _, tc := range []struct {
		name  string
		data  []byte
		hosts int
		every time.Duration
		o     func(o *Options)
	}{
		{"generated nginx, 3 hosts, per route and status class", whole, 3, time.Minute, func(o *Options) {
			o.Ingest.By = []string{"route", "status_class"}
			o.Rate, o.Pool = 0, 200
		}},
		{"real nginx with connect times, 2 hosts", real, 2, time.Minute, func(o *Options) {
			o.Ingest.NginxConf, o.Ingest.LogFormatName = "../testdata/nginx/nginx.conf", "timing"
			o.Ingest.By = []string{"route"}
			o.Pool = 64
		}},
		{"40 s cut out by --from/--to, 4 hosts", whole, 4, 10 * time.Second, func(o *Options) {
			// The log spans 10:00:00 to 10:01:40.
			o.Ingest.By = []string{"route"}
			o.From = time.Date(2026, 11, 2, 10, 0, 30, 0, time.UTC)
			o.To = time.Date(2026, 11, 2, 10, 1, 10, 0, time.UTC)
		}},
	} {
		for _, windowed := range []bool{true, false} {
			name := tc.name + ", windows of the summaries' interval"
			if !windowed {
				name = tc.name + ", --window 0"
			}
			t.Run(name, func(t *testing.T) {
				raw := options(filepath.Join(dir, "whole.log"))
				raw.ShowErrors = 100
				tc.o(&raw)
				// Summaries are analysed at their interval, the raw logs
				// at that --window give the same windows; the real log
				// spans a single minute, which gives none.
				single := strings.HasPrefix(tc.name, "real nginx")
				if windowed && !single {
					raw.Window = tc.every
				}
				require.NoError(t, os.WriteFile(raw.Inputs[0], tc.data, 0o644))
				want, wantR := reportJSON(t, raw)

				var summaries []string
				for i, part := range hosts(tc.data, tc.hosts) {
					name := filepath.Join(dir, "host"+string(rune('a'+i)))
					require.NoError(t, os.WriteFile(name+".log", part, 0o644))
					o := raw
					o.Inputs = []string{name + ".log"}
					o.From, o.To = time.Time{}, time.Time{} // the summary keeps all; the range is the reader's
					var hlog bytes.Buffer
					_, err := Summarize(context.Background(), o, tc.every, nil, &hlog)
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(name+".hlog", hlog.Bytes(), 0o644))
					summaries = append(summaries, name+".hlog")
				}
				merged := options(summaries...)
				merged.ShowErrors = 100
				tc.o(&merged)
				// Grouping and log format flags are the summary's business: the
				// reader of interval logs must not need them.
				merged.Ingest.By, merged.Ingest.NginxConf, merged.Ingest.LogFormatName = nil, "", ""
				merged.NoWindows = !windowed
				got, gotR := reportJSON(t, merged)
				// What the summaries' report says besides: the windows are
				// theirs (TT-LOG-WINDOWS), not a --window's.
				assert.Equal(t, windowed && !single, dropFinding(gotR, finding.LogWindows))
				got = mustJSON(t, gotR)

				// The bad lines are quoted with their host file's name and line.
				for _, r := range []*report.Report{wantR, gotR} {
					for i := range r.Input.BadExamples {
						r.Input.BadExamples[i] = r.Input.BadExamples[i][strings.Index(r.Input.BadExamples[i], ": "):]
					}
				}
				if len(wantR.Input.BadExamples) > 0 {
					assert.ElementsMatch(t, wantR.Input.BadExamples, gotR.Input.BadExamples)
					wantR.Input.BadExamples, gotR.Input.BadExamples = nil, nil
					want, got = mustJSON(t, wantR), mustJSON(t, gotR)
				}
				assert.Equal(t, want, got)

				// Not equal by luck: the figures that could go wrong are there.
				require.NotEmpty(t, wantR.Groups)
				g := wantR.Groups[0]
				assert.Positive(t, g.Samples)
				assert.Equal(t, "measured", g.LittlesLaw.RateSource)
				if tc.name != "real nginx with connect times, 2 hosts" {
					assert.Positive(t, wantR.Input.BadRecords)
					var censored, excluded int64
					for _, g := range wantR.Groups {
						censored += g.Censored
						for _, n := range g.Excluded {
							excluded += n
						}
					}
					assert.Positive(t, censored)
					assert.Positive(t, excluded)
				}
				if !raw.From.IsZero() {
					assert.Positive(t, wantR.Input.OutsideRange)
					assert.Less(t, wantR.Input.OutsideRange, wantR.Input.Records)
				}
				if windowed && !single {
					assert.GreaterOrEqual(t, len(g.Windows), 2, "windows to compare")
				} else {
					assert.Empty(t, gotR.Groups[0].Windows)
				}
			})
		}
	}
}

// dropFinding removes the input finding code, and its note, from r; it
// reports whether r had it.
func dropFinding(r *report.Report, code finding.Code) bool {
	for i, f := range r.Input.Findings {
		if f.Code == code {
			r.Input.Findings = slices.Delete(r.Input.Findings, i, i+1)
			r.Input.Notes = slices.DeleteFunc(r.Input.Notes, func(n string) bool { return n == f.Message })
			return true
		}
	}
	return false
}

func mustJSON(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, report.WriteJSON(&b, r))
	return b.String()
}

// A summary does not depend on how many cores read the log.
func TestSummaryIsTheSameOnAnyCores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	data := spoil(censor(nginxLog(t, 12, 30_000), 97), 501)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	var records int64 // lines, the blank ones aside
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			records++
		}
	}
	var out []string
	for _, workers := range []int{1, 2, 5} {
		o := options(path)
		o.Ingest.By = []string{"route"}
		o.Workers, o.chunkSize = workers, 64<<10
		var b bytes.Buffer
		in, err := Summarize(context.Background(), o, 30*time.Second, nil, &b)
		require.NoError(t, err)
		assert.Equal(t, records, in.Records)
		out = append(out, b.String())
	}
	assert.Equal(t, out[0], out[1])
	assert.Equal(t, out[0], out[2])
	// 30,000 calls at 400/s are 75 s: intervals at :00, :30 and :60 (whole
	// half minutes), 4 routes each.
	assert.Equal(t, 3*4, strings.Count(out[0], "\nTag="), out[0][:400])
}

func TestSummarizeRefusesOddIntervals(t *testing.T) {
	for _, d := range []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond} {
		_, err := Summarize(context.Background(), options("../testdata/mixture.csv"), d, nil, &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "want whole seconds")
	}
}

// A corrupt line of an interval log is a bad record with its file and
// line, counted and quoted like a bad log line; --strict makes it fatal.
func TestCorruptIntervalLog(t *testing.T) {
	var b bytes.Buffer
	_, err := Summarize(context.Background(), options("../testdata/mixture.csv"), time.Minute, nil, &b)
	require.NoError(t, err)
	lines := strings.Split(b.String(), "\n")
	var bad int
	for i, l := range lines {
		if strings.HasPrefix(l, "Tag=") && bad == 0 {
			lines[i] = l[:len(l)-20] + "!!!!" // a broken histogram
			bad = i + 1
		}
	}
	path := writeFile(t, "a.hlog", strings.Join(lines, "\n"))
	r, err := Run(context.Background(), options(path), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Input.BadRecords)
	require.Len(t, r.Input.BadExamples, 1)
	assert.Contains(t, r.Input.BadExamples[0], path+":"+strconv.Itoa(bad)+": field \"Interval_Compressed_Histogram\"")

	o := options(path)
	o.Strict = true
	_, err = Run(context.Background(), o, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(--strict)")
}

func TestIntervalRates(t *testing.T) {
	sec := func(start, length float64, calls int64) span { return span{start, length, calls} }
	// 10 s intervals over 3 minutes: 100 calls each, but 400 in the three
	// intervals from 60 s on: the busiest minute is 60-120 s with
	// 3x400 + 3x100 = 1,500 calls, 25/s.
	var spans []span
	for i := range 18 {
		n := int64(100)
		if i >= 6 && i < 9 {
			n = 400
		}
		spans = append(spans, sec(1000+float64(i)*10, 10, n))
	}
	m := intervalRates(spans)
	require.NotNil(t, m)
	assert.InDelta(t, float64(15*100+3*400)/180, m.Rate, 1e-9)
	assert.InDelta(t, 25.0, m.PeakRate, 1e-9)
	assert.Equal(t, "interval counts", m.Source)

	// Two hosts, the same intervals: counts add up per window.
	both := append(append([]span{}, spans...), spans...)
	m = intervalRates(both)
	assert.InDelta(t, 50.0, m.PeakRate, 1e-9)

	// Intervals of 5 minutes: the busiest interval's rate.
	m = intervalRates([]span{sec(0, 300, 3000), sec(300, 300, 6000), sec(600, 300, 300)})
	assert.InDelta(t, 20.0, m.PeakRate, 1e-9)
	assert.InDelta(t, 9300.0/900, m.Rate, 1e-9)

	// Less than a minute in all: the peak is the mean; under 2 s, no rate.
	m = intervalRates([]span{sec(0, 10, 10), sec(10, 10, 30)})
	assert.InDelta(t, 2.0, m.PeakRate, 1e-9)
	assert.Nil(t, intervalRates([]span{sec(0, 1, 10)}))
}

func TestNothingInTheRange(t *testing.T) {
	o := options("../testdata/mixture.csv")
	o.From = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := Run(context.Background(), o, nil)
	require.ErrorIs(t, err, ErrNothingToAnalyse)
	assert.Contains(t, err.Error(), "all 200,961 records that could be read lie outside --from 2030-01-01T00:00:00Z")
}

// BenchmarkSummarize measures summarize on 200,000 generated nginx lines
// (500 s at 400 calls/s, 4 routes) against analyze on the same lines
// (BenchmarkRun), and the analysis of the summary it writes.
func BenchmarkSummarize(b *testing.B) {
	log, err := io.ReadAll(mixture.Default().NewNginxLog(1, 200_000, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), 400))
	require.NoError(b, err)
	var summary []byte
	for _, workers := range []int{1, 0} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			b.ReportAllocs()
			var out bytes.Buffer
			for b.Loop() {
				o := options("-")
				o.Format, o.Workers = "nginx", workers
				o.Ingest.By = []string{"route"}
				out.Reset()
				if _, err := Summarize(context.Background(), o, time.Minute, bytes.NewReader(log), &out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/200_000, "ns/line")
			b.ReportMetric(float64(out.Len()), "summary-bytes")
			summary = bytes.Clone(out.Bytes())
		})
	}
	b.Run("analyze the summary", func(b *testing.B) {
		b.SetBytes(int64(len(summary)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Run(context.Background(), options("-"), bytes.NewReader(summary)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestOtherToolsIntervalLogs reads the public interval logs of
// testdata/hlog (testdata/hlog/README.md says who wrote each) and checks
// the report against the numbers HdrHistogram's own Java test asserts for
// them (HistogramLogReaderWriterTest.java at ec0b873: total count,
// getValueAtPercentile(99.9), getMaxValue of the accumulated histogram).
// Java accumulates each bucket at its lowest value; tunetimeout takes the
// highest (a bucket's values cannot be told apart, and a timeout is better
// set from the top), so ours lie at or above Java's by at most one bucket
// of the file's histograms (2 significant digits here: 1/128).
func TestOtherToolsIntervalLogs(t *testing.T) {
	for _, tc := range []struct {
		file       string
		unit       time.Duration
		calls      int64
		p999, max  int64 // Java's, in the file's unit
		groups     []string
		perMinute  bool // intervals short enough for a busiest minute
		wantDigits bool // the file's histograms are coarser than ours
	}{
		{"jHiccup-2.0.1.logV0.hlog", time.Nanosecond, 61256, 1510998015, 1569718271, []string{"all"}, true, true},
		{"jHiccup-2.0.6.logV1.hlog", time.Nanosecond, 65964, 1829765119, 1888485375, []string{"all"}, true, true},
		{"jHiccup-2.0.7S.logV2.hlog", time.Nanosecond, 48761, 1745879039, 1796210687, []string{"all"}, true, true},
		{"ycsb.logV1.hlog", time.Microsecond, 300056, 1214463, 1546239, []string{"all"}, true, false},
		{"tagged-Log.logV2.hlog", time.Nanosecond, 2 * 16145, 0, 0, []string{"A", "all"}, true, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			o := options("../testdata/hlog/" + tc.file)
			o.Ingest.Unit = tc.unit
			// Java's figures are the whole log's; the jHiccup logs hold
			// hiccups that make a window worse beyond the noise, whose
			// figures the group would otherwise take.
			o.WindowForAll = true
			r, err := Run(context.Background(), o, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.calls, r.Input.Records)
			var names []string
			var calls int64
			for _, g := range r.Groups {
				names = append(names, g.Name)
				calls += g.Samples
				assert.Equal(t, "interval counts", g.LittlesLaw.RateSource)
				assert.Positive(t, *g.LittlesLaw.PeakRatePerSecond)
				assert.GreaterOrEqual(t, *g.LittlesLaw.PeakRatePerSecond, *g.LittlesLaw.RatePerSecond)
			}
			assert.Equal(t, tc.groups, names)
			assert.Equal(t, tc.calls, calls)
			assert.Contains(t, strings.Join(r.Input.Notes, "\n"), "read as "+map[time.Duration]string{time.Nanosecond: "1ns", time.Microsecond: "1µs"}[tc.unit])
			if tc.wantDigits {
				assert.Contains(t, strings.Join(r.Input.Notes, "\n"), "fewer than 3 significant digits")
			}
			if tc.p999 == 0 {
				// The tagged log repeats every interval under Tag=A.
				assert.Equal(t, r.Groups[0].Percentiles, r.Groups[1].Percentiles)
				return
			}
			g := r.Groups[0]
			check := func(name string, got float64, java int64) {
				javaS := float64(java) * tc.unit.Seconds()
				if !tc.wantDigits {
					// The file's geometry is ours: the same bucket, the same value.
					assert.InDelta(t, javaS, got, 1e-9, name)
					return
				}
				// One bucket of 2 digits above: between 1/256 and 1/128 of the value.
				assert.Greater(t, got, javaS*(1+1.0/512), "%s: ours %v, Java's %v", name, got, javaS)
				assert.LessOrEqual(t, got, javaS*(1+1.0/128+1e-3), "%s: ours %v, Java's %v", name, got, javaS)
			}
			for _, p := range g.Percentiles {
				if p.Quantile == 0.999 {
					check("p99.9", p.Seconds, tc.p999)
				}
			}
			check("max", g.Percentiles[len(g.Percentiles)-1].Seconds, tc.max)
		})
	}
}

// --from/--to on logs with times relative to their StartTime, against the
// ranges of Java's test (nextIntervalHistogram(from, to), seconds after
// the StartTime; HistogramLogReaderWriterTest.java at 0194bab).
func TestOtherToolsIntervalLogsInARange(t *testing.T) {
	for _, tc := range []struct {
		file            string
		startTime       float64 // the log's #[StartTime: ]
		from, to        float64
		calls, p999, mx int64 // Java's
	}{
		{"jHiccup-2.0.1.logV0.hlog", 1438869961.225, 20, 45, 18492, 459007, 623103},
		{"jHiccup-2.0.1.logV0.hlog", 1438869961.225, 46, 80, 25439, 1209008127, 1234173951},
		{"jHiccup-2.0.6.logV1.hlog", 1438867590.285, 5, 20, 11213, 1019740159, 1032323071},
		{"jHiccup-2.0.6.logV1.hlog", 1438867590.285, 50, 80, 22630, 1871708159, 1888485375},
	} {
		t.Run(fmt.Sprintf("%s %v-%v", tc.file, tc.from, tc.to), func(t *testing.T) {
			o := options("../testdata/hlog/" + tc.file)
			sec := func(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }
			o.From, o.To = sec(tc.startTime+tc.from), sec(tc.startTime+tc.to)
			o.WindowForAll = true // Java's figures are the range's, as above
			r, err := Run(context.Background(), o, nil)
			require.NoError(t, err)
			require.Len(t, r.Groups, 1)
			g := r.Groups[0]
			assert.Equal(t, tc.calls, g.Samples)
			assert.Equal(t, r.Input.Records-tc.calls, r.Input.OutsideRange)
			for name, v := range map[string]struct {
				got  float64
				java int64
			}{"p99.9": {g.Percentiles[3].Seconds, tc.p999}, "max": {g.Percentiles[len(g.Percentiles)-1].Seconds, tc.mx}} {
				// One bucket of the file's above Java's: 1/256 to 1/128 of the
				// value, but at least 2^14 ns, as its lowest value is 20,000 ns.
				java := float64(v.java) / 1e9
				assert.Greater(t, v.got, java, name)
				assert.LessOrEqual(t, v.got, java*(1+1.0/128+1e-3)+16384e-9, name)
			}
		})
	}
}

// Summaries summarised again into longer intervals (a day's hosts into
// one file of 5-minute intervals) still give the raw logs' report; into
// shorter intervals they cannot go.
func TestSummaryOfSummaries(t *testing.T) {
	dir := t.TempDir()
	whole := spoil(censor(nginxLog(t, 13, 30_000), 101), 997)
	raw := options(filepath.Join(dir, "whole.log"))
	raw.Ingest.By = []string{"route"}
	require.NoError(t, os.WriteFile(raw.Inputs[0], whole, 0o644))
	raw.Window = time.Minute // the merged summary's interval, and so its windows
	_, wantR := reportJSON(t, raw)
	require.Len(t, wantR.Input.BadExamples, 5)
	wantR.Input.BadExamples = nil // quoted with the host files' names and lines
	want := mustJSON(t, wantR)
	raw.Window = 0

	var parts []string
	for i, part := range hosts(whole, 2) {
		name := filepath.Join(dir, fmt.Sprintf("host%d", i))
		require.NoError(t, os.WriteFile(name+".log", part, 0o644))
		o := raw
		o.Inputs = []string{name + ".log"}
		var b bytes.Buffer
		_, err := Summarize(context.Background(), o, 20*time.Second, nil, &b)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(name+".hlog", b.Bytes(), 0o644))
		parts = append(parts, name+".hlog")
	}
	var merged bytes.Buffer
	_, err := Summarize(context.Background(), options(parts...), time.Minute, nil, &merged)
	require.NoError(t, err)
	assert.Contains(t, merged.String(), ",60.000000,")
	assert.NotContains(t, merged.String(), ",20.000000,")
	path := filepath.Join(dir, "merged.hlog")
	require.NoError(t, os.WriteFile(path, merged.Bytes(), 0o644))
	_, gotR := reportJSON(t, options(path))
	require.Len(t, gotR.Input.BadExamples, 5)
	gotR.Input.BadExamples = nil
	assert.True(t, dropFinding(gotR, finding.LogWindows))
	assert.Equal(t, want, mustJSON(t, gotR))
	assert.Greater(t, len(gotR.Groups[0].Windows), 1)

	_, err = Summarize(context.Background(), options(parts...), 10*time.Second, nil, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not fit in one of --interval 10s")

	// Grouping flags cannot regroup a summary: the report says so.
	o := options(path)
	o.Ingest.By = []string{"method"}
	o.NoWindows = true
	_, r := reportJSON(t, o)
	assert.Equal(t, []string{"--by, --latency, --include-errors and the log format do not apply to interval logs: their groups, latency and status rule were set when they were written."}, r.Input.Notes)
	plain := options(path)
	plain.NoWindows = true
	_, plainR := reportJSON(t, plain)
	assert.Equal(t, plainR.Groups, r.Groups)
}

// A summary of many small intervals says it is hardly smaller than its
// log; the range a summary was cut to is named as the summaries'.
func TestSparseSummaryNote(t *testing.T) {
	path := writeFile(t, "groups.csv", manyGroups(30_000, 400, 5))
	o := options(path)
	o.Ingest.By = []string{"group"}
	o.MaxGroups = -1
	var b bytes.Buffer
	in, err := Summarize(context.Background(), o, time.Minute, nil, &b)
	require.NoError(t, err)
	require.NotEmpty(t, in.Notes)
	assert.Regexp(t, `^[0-9,]+ intervals of groups hold [0-9.]+ calls on average: a summary this sparse`, in.Notes[len(in.Notes)-1])

	o.From = time.Unix(1793613600+300, 0)
	b.Reset()
	_, err = Summarize(context.Background(), o, time.Minute, nil, &b)
	require.NoError(t, err)
	r, err := Run(context.Background(), options(writeFile(t, "cut.hlog", b.String())), nil)
	require.NoError(t, err)
	assert.Positive(t, r.Input.OutsideRange)
	assert.Contains(t, r.Input.Notes, human.Count(r.Input.OutsideRange)+" calls outside the --from/--to of the summaries are left out.")
}

// Other tools' intervals are the windows of their logs too: jHiccup's
// last about a second from any millisecond, so windows of a second get
// each interval in the window of its start and say how many straddle two;
// windows of 10 s take ten, and --window 0 none.
func TestForeignIntervalsAreWindows(t *testing.T) {
	const file = "../testdata/hlog/jHiccup-2.0.7S.logV2.hlog"
	// The intervals, as the reader gives them, and those that straddle
	// windows of 1 s and 10 s.
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	lr := histogram.NewLogReader(f, file)
	perWindow := map[int64]map[int64]int64{1: {}, 10: {}}
	straddle := map[int64]int64{}
	intervals := 0
	for {
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		intervals++
		for w := range perWindow {
			first, last := int64(math.Floor(e.Start/float64(w))), int64(math.Floor((e.Start+e.Length-1e-3)/float64(w)))
			perWindow[w][first*w] += e.Cell.Count()
			if last > first {
				straddle[w]++
			}
		}
	}
	require.Greater(t, intervals, 30)
	require.Positive(t, straddle[1])

	for _, tc := range []struct {
		window time.Duration
		w      int64
	}{{0, 1}, {10 * time.Second, 10}} {
		o := options(file)
		o.Window = tc.window
		r, err := Run(context.Background(), o, nil)
		require.NoError(t, err)
		g := r.Groups[0]
		require.Len(t, g.Windows, len(perWindow[tc.w]), "window %ds", tc.w)
		for _, win := range g.Windows {
			assert.Equal(t, perWindow[tc.w][win.Start.Unix()], win.Samples, win.Start)
			assert.Equal(t, time.Duration(tc.w)*time.Second, win.End.Sub(win.Start))
		}
		fields := map[finding.Code]finding.Fields{}
		for _, f := range r.Input.Findings {
			fields[f.Code] = f.Fields
		}
		assert.Equal(t, straddle[tc.w], fields[finding.StraddlingIntervals]["intervals"], "window %ds", tc.w)
		if tc.window == 0 {
			assert.Equal(t, 1.0, fields[finding.LogWindows]["window_seconds"])
		} else {
			assert.NotContains(t, fields, finding.LogWindows, "--window was given")
		}
	}

	o := options(file)
	o.NoWindows = true
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Groups[0].Windows)
	for _, f := range r.Input.Findings {
		assert.NotEqual(t, finding.LogWindows, f.Code)
		assert.NotEqual(t, finding.StraddlingIntervals, f.Code)
	}

	// Windows of 7,477 s: the log's interval starts all lie in one, and its
	// last interval ends past the next window's start (at 1441812341 s,
	// 192,833 windows after the epoch). One window is no windows, so the
	// note on the interval that straddles two is taken out, by its code,
	// with its message; the other notes stay the findings' messages.
	o = options(file)
	o.Window = 7477 * time.Second
	r, err = Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, r.Groups[0].Windows)
	var codes []finding.Code
	for _, f := range r.Input.Findings {
		codes = append(codes, f.Code)
	}
	assert.Contains(t, codes, finding.OneWindow)
	assert.NotContains(t, codes, finding.StraddlingIntervals)
	assert.Equal(t, finding.Messages(r.Input.Findings), r.Input.Notes)
	assert.NotContains(t, strings.Join(r.Input.Notes, "\n"), "straddle")
}

// summaryOf writes the summary of data at interval every to dir/name.hlog.
func summaryOf(t *testing.T, dir, name string, data []byte, every time.Duration) string {
	t.Helper()
	log := filepath.Join(dir, name+".log")
	require.NoError(t, os.WriteFile(log, data, 0o644))
	var b bytes.Buffer
	_, err := Summarize(context.Background(), options(log), every, nil, &b)
	require.NoError(t, err)
	path := filepath.Join(dir, name+".hlog")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

// The windows of summaries are whole multiples of their intervals: a
// --window that would cut one is refused, and summaries whose intervals do
// not divide each other get no windows of their own.
func TestSummaryWindowsAreWholeIntervals(t *testing.T) {
	dir := t.TempDir()
	data := nginxLog(t, 17, 30_000) // 10:00:00 to 10:01:15
	half := summaryOf(t, dir, "half", data, 30*time.Second)
	twenty := summaryOf(t, dir, "twenty", data, 20*time.Second)

	o := options(half)
	o.Window = 20 * time.Second
	_, err := Run(context.Background(), o, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not fit in one window of --window 20s")

	o = options(half)
	o.Window = time.Minute
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Len(t, r.Groups[0].Windows, 2) // 10:00, 10:01

	r, err = Run(context.Background(), options(half, twenty), nil)
	require.NoError(t, err)
	assert.Empty(t, r.Groups[0].Windows, "20 s does not divide 30 s")
	for _, f := range r.Input.Findings {
		assert.NotEqual(t, finding.LogWindows, f.Code)
	}
	assert.Equal(t, int64(60_000), r.Input.Records)
}

// An input that is not a regular file (a pipe, <(zcat ...)) is read once:
// it gets no windows of its own, and loses nothing to a look at its start.
func TestPipedSummaryIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	data := nginxLog(t, 19, 20_000)
	path := summaryOf(t, dir, "s", data, time.Minute)
	summary, err := os.ReadFile(path)
	require.NoError(t, err)
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.Write(summary)
			_ = f.Close()
		}
	}()
	o := options(fifo)
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(20_000), r.Input.Records)
	assert.Empty(t, r.Groups[0].Windows)
	for _, f := range r.Input.Findings {
		assert.NotEqual(t, finding.ForeignIntervalLog, f.Code, "the first line, which says the log is ours, was read")
	}
	plain := options(path)
	plain.NoWindows = true
	want, err := Run(context.Background(), plain, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Groups, r.Groups)
}
