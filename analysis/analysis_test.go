package analysis

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// writeFile writes content to a file in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func options(inputs ...string) Options {
	return Options{Inputs: inputs, Recommend: recommend.DefaultOptions()}
}

// TestAgreesWithExactComputation is the acceptance test: on a
// generated 200,000-sample mixture every percentile, cut-off share and
// in-flight figure of the report agrees, within HDR precision, with an exact
// computation over the same samples.
func TestAgreesWithExactComputation(t *testing.T) {
	samples := mixture.Default().Generate(7, 200_000)
	var b strings.Builder
	b.WriteString("latency_us\n")
	for _, d := range samples {
		fmt.Fprintf(&b, "%d\n", d.Microseconds())
	}
	o := options("-")
	o.Rate, o.Pool = 400, 200
	r, err := Run(context.Background(), o, strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, r.Groups, 1)
	g := r.Groups[0]

	// Exact computation over the same microsecond values.
	exact := make([]float64, len(samples))
	var total float64
	for i, d := range samples {
		exact[i] = float64(d.Microseconds()) / 1e6
		total += exact[i]
	}
	slices.Sort(exact)
	n := float64(len(exact))
	require.EqualValues(t, len(samples), g.Samples)

	const precision = 1e-3 // 3 significant digits
	for _, p := range g.Percentiles {
		rank := int(math.Ceil(p.Quantile*n)) - 1
		want := exact[rank]
		assert.InDelta(t, want, p.Seconds, want*precision+1e-6, "%s", human.Quantile(p.Quantile))
	}
	assert.InDelta(t, total/n, g.MeanSeconds, total/n*precision)

	cutOff := func(timeout float64) float64 {
		i, _ := slices.BinarySearch(exact, math.Nextafter(timeout, math.Inf(1)))
		return (n - float64(i)) / n
	}
	require.NotEmpty(t, g.Candidates)
	for _, c := range g.Candidates {
		// A sample within HDR precision of the timeout may fall on either side.
		lo, hi := cutOff(c.TimeoutSeconds*(1+precision)), cutOff(c.TimeoutSeconds*(1-precision))
		assert.GreaterOrEqual(t, c.CutOffFraction, lo-1e-12, "cut off at %v", c.TimeoutSeconds)
		assert.LessOrEqual(t, c.CutOffFraction, hi+1e-12, "cut off at %v", c.TimeoutSeconds)
		require.NotNil(t, c.InFlightDuringHang)
		assert.InDelta(t, 400*c.TimeoutSeconds, *c.InFlightDuringHang, 1e-9)
		require.NotNil(t, c.PoolMultiple)
		assert.InDelta(t, 400*c.TimeoutSeconds/200, *c.PoolMultiple, 1e-9)
	}

	ll := g.LittlesLaw
	require.NotNil(t, ll.InFlightNormal)
	assert.InDelta(t, 400*total/n, *ll.InFlightNormal, 400*total/n*precision)
	require.NotNil(t, ll.InFlightDuringHang)
	assert.InDelta(t, 400*g.Recommendation.TimeoutSeconds, *ll.InFlightDuringHang, 1e-9)

	// The recommendation: between p99.9 and p99.9 plus one rounding step,
	// the pool flagged, the bulkhead far below the pool.
	p999 := exact[int(math.Ceil(0.999*n))-1]
	rec := g.Recommendation
	assert.GreaterOrEqual(t, rec.TimeoutSeconds, p999*(1-precision))
	_, step := recommend.RoundUp(time.Duration(p999 * 1e9))
	assert.LessOrEqual(t, rec.TimeoutSeconds, p999+step.Seconds())
	require.NotNil(t, ll.PoolExhausted)
	assert.True(t, *ll.PoolExhausted)
	require.NotNil(t, ll.SecondsToExhaustion)
	assert.InDelta(t, 200.0/400, *ll.SecondsToExhaustion, 1e-9)
	require.NotNil(t, ll.Bulkhead)
	assert.Less(t, *ll.Bulkhead, 50)
	assert.Greater(t, *ll.Bulkhead, int(math.Ceil(*ll.InFlightNormal)), "a bulkhead must hold more than the mean demand")
	assert.Contains(t, ll.Verdict, "exhausted")
}

// TestBadInput covers every kind of bad input the issue names: each gives a
// one-line error or a counted, reported skip.
func TestBadInput(t *testing.T) {
	garbage := func() string {
		var b strings.Builder
		b.WriteString("latency_ms\n")
		for i := range 1000 {
			if i%10 == 3 {
				b.WriteString("oops\n")
			} else {
				fmt.Fprintf(&b, "%d\n", 10+i%7)
			}
		}
		return b.String()
	}()
	tests := []struct {
		name      string
		content   string
		missing   bool
		strict    bool
		format    string
		wantErr   string // substring of the one-line error; "" = success
		nothing   bool   // the error wraps ErrNothingToAnalyse
		wantBad   int64
		wantFirst string // first bad example, with its line number
		wantUsed  int64
		wantOut   string // a key of the group's excluded counts
	}{
		{name: "empty file", content: "", wantErr: "empty input"},
		{name: "header only", content: "latency_ms\n", wantErr: "the input holds no records", nothing: true},
		{name: "no latency column", content: "a,b\n1,2\n", format: "csv", wantErr: "no latency column"},
		{name: "unknown format", content: "a,b\n1,2\n", wantErr: `cannot tell the input format from its first line "a,b"; tried `},
		{name: "missing file", missing: true, wantErr: "no such file or directory"},
		{name: "all negative", content: "latency_ms\n-5\n-1\n", wantErr: "all 2 records are bad", nothing: true},
		{name: "negative skipped", content: "latency_ms\n5\n-1\n7\n", wantBad: 1, wantFirst: `:3: column "latency_ms": "-1" is negative`, wantUsed: 2},
		{name: "not a number", content: "latency_ms\n5\nabc\n", wantBad: 1, wantFirst: `:3: column "latency_ms": "abc" is not a number`, wantUsed: 1},
		{name: "not a number strict", content: "latency_ms\n5\nabc\n", strict: true, wantErr: `"abc" is not a number (--strict)`},
		{name: "beyond the histogram's range", content: "latency_s\n0.5\n100000\n", wantUsed: 1, wantOut: "above range"},
		{name: "only beyond range", content: "latency_s\n100000\n", wantErr: "out of the histogram's range", nothing: true},
		{name: "ten percent garbage", content: garbage, wantBad: 100, wantFirst: `:5: column "latency_ms": "oops" is not a number`, wantUsed: 900},
		{name: "only errors", content: "latency_ms,status\n5,500\n6,503\n", wantErr: "--include-errors", nothing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "missing.csv")
			if !tt.missing {
				path = writeFile(t, "in.csv", tt.content)
			}
			o := options(path)
			o.Strict = tt.strict
			o.Format = tt.format
			r, err := Run(context.Background(), o, nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "\n", "errors are one line")
				assert.Equal(t, tt.nothing, errors.Is(err, ErrNothingToAnalyse))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantBad, r.Input.BadRecords)
			if tt.wantFirst != "" {
				require.NotEmpty(t, r.Input.BadExamples)
				assert.Equal(t, path+tt.wantFirst, r.Input.BadExamples[0])
				assert.LessOrEqual(t, len(r.Input.BadExamples), 5)
			}
			require.Len(t, r.Groups, 1)
			assert.Equal(t, tt.wantUsed, r.Groups[0].Samples)
			if tt.wantOut != "" {
				assert.EqualValues(t, 1, r.Groups[0].Excluded[tt.wantOut])
			}
		})
	}
}

// TestGroupsAndMeasuredRate checks grouping, the status rule and rates
// measured from timestamps.
func TestGroupsAndMeasuredRate(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp,route,status,latency_ms\n")
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	// /a: 10 calls a second for 120 s, 20 a second in seconds 30-39.
	// /b: one call a second, every tenth a 504 after 1 s.
	for s := range 120 {
		calls := 10
		if s >= 30 && s < 40 {
			calls = 20
		}
		for c := range calls {
			ts := start.Add(time.Duration(s)*time.Second + time.Duration(c)*time.Millisecond)
			fmt.Fprintf(&b, "%s,/a,200,%d\n", ts.Format(time.RFC3339Nano), 10+c)
		}
		status, latency := 200, 30
		if s%10 == 0 {
			status, latency = 504, 1000
		}
		fmt.Fprintf(&b, "%s,/b,%d,%d\n", start.Add(time.Duration(s)*time.Second).Format(time.RFC3339), status, latency)
	}
	b.WriteString(start.Format(time.RFC3339) + ",/a,500,2\n")

	o := options("-")
	o.Ingest.By = []string{"route"}
	o.Pool = 50
	r, err := Run(context.Background(), o, strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, r.Groups, 2)

	a, bg := r.Groups[0], r.Groups[1]
	assert.Equal(t, "/a", a.Name)
	assert.EqualValues(t, 1300, a.Samples)
	assert.Equal(t, map[string]int64{"status 5xx": 1}, a.Excluded)
	require.NotNil(t, a.LittlesLaw.RatePerSecond)
	assert.Equal(t, "measured", a.LittlesLaw.RateSource)
	assert.InDelta(t, 1301.0/120, *a.LittlesLaw.RatePerSecond, 1e-9)
	require.NotNil(t, a.LittlesLaw.PeakRatePerSecond)
	// The busiest minute holds 50 seconds at 10 and 10 seconds at 20 calls, plus the 500.
	assert.InDelta(t, 701.0/60, *a.LittlesLaw.PeakRatePerSecond, 1e-9)
	require.NotNil(t, a.LittlesLaw.BusiestSecond)
	assert.EqualValues(t, 20, *a.LittlesLaw.BusiestSecond)

	assert.Equal(t, "/b", bg.Name)
	assert.EqualValues(t, 120, bg.Samples)
	assert.EqualValues(t, 12, bg.Censored, "504s are kept as censored samples")
	assert.Empty(t, bg.Excluded)
}

// TestUnknownRateAndPool: without a rate, timestamps or a pool the report
// says so instead of inventing numbers.
func TestUnknownRateAndPool(t *testing.T) {
	r, err := Run(context.Background(), options("-"), strings.NewReader("latency_ms\n10\n20\n30\n"))
	require.NoError(t, err)
	ll := r.Groups[0].LittlesLaw
	assert.Equal(t, "unknown", ll.RateSource)
	assert.Nil(t, ll.RatePerSecond)
	assert.Nil(t, ll.Pool)
	assert.Nil(t, ll.PoolExhausted)
	assert.Nil(t, ll.Bulkhead)
	assert.Contains(t, ll.Verdict, "--rate")
	for _, c := range r.Groups[0].Candidates {
		assert.Nil(t, c.InFlightDuringHang)
		assert.Nil(t, c.PoolMultiple)
	}
	assert.Nil(t, r.Groups[0].Recommendation.ConnectTimeoutSeconds)
}

// TestExistingTimeout: a client that already times out at 500ms records
// 504s at 500ms. They are kept as censored samples, the pile-up is flagged,
// and p99.9 is reported as "at least 500ms", not as a measurement.
func TestExistingTimeout(t *testing.T) {
	var b strings.Builder
	b.WriteString("latency_ms,status\n")
	var timeouts int64
	for _, d := range mixture.Default().Generate(3, 50_000) {
		if d >= 500*time.Millisecond {
			b.WriteString("500,504\n")
			timeouts++
			continue
		}
		fmt.Fprintf(&b, "%.3f,200\n", float64(d.Microseconds())/1e3)
	}
	r, err := Run(context.Background(), options("-"), strings.NewReader(b.String()))
	require.NoError(t, err)
	g := r.Groups[0]
	require.Greater(t, timeouts, int64(100), "precondition: the mixture has a tail beyond 500ms")
	assert.Equal(t, timeouts, g.Censored)
	assert.EqualValues(t, 50_000, g.Samples, "censored samples count as samples")
	rec := g.Recommendation
	assert.True(t, rec.LowerBound)
	assert.InDelta(t, 0.5, rec.BaseSeconds, 0.5e-3)
	joined := strings.Join(rec.Warnings, "\n")
	assert.Contains(t, joined, "existing timeout")
	assert.Contains(t, joined, "at least 500ms")
	for _, p := range g.Percentiles {
		if p.Quantile >= 0.999 {
			assert.True(t, p.LowerBound, "%v is only a lower bound", p.Quantile)
		}
		if p.Quantile <= 0.99 { // p99 is about 490ms, below the pile-up
			assert.False(t, p.LowerBound, "%v is measured", p.Quantile)
		}
	}
}

// TestMaxGroupsAndRotatedInputs: a glob over rotated logs (one compressed)
// reads every file, and groups beyond --max-groups fold into "other".
func TestMaxGroupsAndRotatedInputs(t *testing.T) {
	dir := t.TempDir()
	var plain, zipped strings.Builder
	plain.WriteString("route,latency_ms\n")
	zipped.WriteString("route,latency_ms\n")
	for i := range 100 {
		fmt.Fprintf(&plain, "/r%d,%d\n", i%10, 10+i%5)
		fmt.Fprintf(&zipped, "/r%d,%d\n", i%10, 20+i%5)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "access.csv"), []byte(plain.String()), 0o644))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(zipped.String()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "access.csv.1.gz"), gz.Bytes(), 0o644))

	o := options(filepath.Join(dir, "access.csv*"))
	o.Ingest.By = []string{"route"}
	o.MaxGroups = 3
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Len(t, r.Input.Files, 2)
	assert.EqualValues(t, 200, r.Input.Records)
	var names []string
	for _, g := range r.Groups {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"/r0", "/r1", "/r2", "other"}, names)
	assert.EqualValues(t, 140, r.Groups[3].Samples, "7 routes x 20 calls folded")
	require.Len(t, r.Input.Notes, 1)
	assert.Equal(t, `140 calls from 7 more groups are folded into "other": only 3 groups are kept apart (--max-groups).`, r.Input.Notes[0])
}

// TestStatusRuleOverride: --status decides what counts.
func TestStatusRuleOverride(t *testing.T) {
	in := "latency_ms,status\n10,200\n20,404\n30,503\n40,504\n"
	rule, err := ingest.ParseStatusRule("exclude=4xx censor=503")
	require.NoError(t, err)
	o := options("-")
	o.Status = rule
	r, err := Run(context.Background(), o, strings.NewReader(in))
	require.NoError(t, err)
	g := r.Groups[0]
	assert.EqualValues(t, 3, g.Samples)
	assert.EqualValues(t, 2, g.Censored, "503 by the override, 504 by the built-in rule")
	assert.Equal(t, map[string]int64{"status 4xx": 1}, g.Excluded)
}

// TestSharedPool: groups sharing one pool must fit their bulkheads in it
// together, whatever each group's own verdict says.
// TestSharedPool: groups that share --pool hang together. Three routes at
// 1,000 calls/s each fit a pool of 5,000 alone but not together, and their
// bulkheads are added up against the pool.
func TestSharedPool(t *testing.T) {
	var b strings.Builder
	b.WriteString("route,latency_ms\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "/r%d,%d\n", i%3, 20+i%40)
	}
	for _, tt := range []struct {
		pool      int
		exhausted bool
		want      string
	}{
		{pool: 200, exhausted: true, want: "Their bulkheads add up to "},
		{pool: 5, exhausted: true, want: "more than the pool: even normal demand does not fit"},
		{pool: 100_000, exhausted: false, want: "within the pool of 100,000"},
	} {
		o := options("-")
		o.Ingest.By = []string{"route"}
		o.Rate, o.Pool = 3000, tt.pool
		r, err := Run(context.Background(), o, strings.NewReader(b.String()))
		require.NoError(t, err)
		total, inFlight := 0, 0.0
		for _, g := range r.Groups {
			require.NotNil(t, g.LittlesLaw.Bulkhead)
			total += *g.LittlesLaw.Bulkhead
			inFlight += *g.LittlesLaw.InFlightDuringHang
		}
		sp := r.SharedPool
		require.NotNil(t, sp)
		assert.Equal(t, tt.pool, sp.Pool)
		assert.Equal(t, 3, sp.Groups)
		assert.InDelta(t, inFlight, *sp.InFlightDuringHang, 1e-9, "the groups' hangs add up")
		assert.Equal(t, tt.exhausted, *sp.PoolExhausted)
		assert.Equal(t, total, *sp.BulkheadsTotal)
		assert.Contains(t, sp.Verdict, tt.want)
		if tt.exhausted {
			// Every group waits the same timeout: the pool fills at the sum
			// of the rates.
			assert.InDelta(t, float64(tt.pool)/3000, *sp.SecondsToExhaustion, 1e-9)
		}
	}
	o := options("-")
	o.Ingest.By = []string{"route"}
	o.Rate = 3000
	r, err := Run(context.Background(), o, strings.NewReader(b.String()))
	require.NoError(t, err)
	assert.Nil(t, r.SharedPool, "no pool, no shared pool")
}

// TestMethodSetsIdempotency: with --by method a group's method decides
// whether its calls are retried after they were sent.
func TestMethodSetsIdempotency(t *testing.T) {
	var b strings.Builder
	b.WriteString("route,method,latency_ms\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "/r,%s,%d\n", []string{"GET", "POST", "PUT"}[i%3], 20+i%40)
	}
	o := options("-")
	o.Ingest.By = []string{"route", "method"}
	o.Policy = recommend.PolicyOptions{Deadline: 2 * time.Second, Attempts: 3}
	r, err := Run(context.Background(), o, strings.NewReader(b.String()))
	require.NoError(t, err)
	got := map[string]bool{}
	for _, g := range r.Groups {
		require.NotNil(t, g.Policy.Method, g.Name)
		got[*g.Policy.Method] = g.Policy.Idempotent
		if !g.Policy.Idempotent {
			assert.Equal(t, recommend.NeverSent, g.Policy.RetryOn, g.Name)
		}
	}
	assert.Equal(t, map[string]bool{"GET": true, "POST": false, "PUT": true}, got)
}

func TestMethodOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		by   []string
		want string
	}{
		{"GET /users/{id}", []string{"method", "route"}, "GET"},
		{"/a b/c POST", []string{"route", "method"}, "POST"},
		{"/a b/c POST x", []string{"route", "method", "host"}, ""},
		{"- /x", []string{"method", "route"}, ""},
		{"get /x", []string{"http_method", "route"}, "GET"},
		{"/x", []string{"route"}, ""},
		{"FOO /x", []string{"method", "route"}, ""},
	} {
		assert.Equal(t, tc.want, methodOf(tc.name, tc.by), "%q by %v", tc.name, tc.by)
	}
}

// TestTruncatedInput: a gzip file cut off is read to its last whole line,
// told in a note with the complete records read, its partial line counted
// bad; --strict makes it fatal.
func TestTruncatedInput(t *testing.T) {
	var content strings.Builder
	content.WriteString("latency_ms\n")
	for i := range 20000 {
		fmt.Fprintf(&content, "%d\n", 10+i*7919%997)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(content.String()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	// A cut that falls inside a line, and what the decompressor hands on
	// before it meets the cut.
	var cut, raw []byte
	for n := gz.Len() * 6 / 10; n > 0; n-- {
		zr, err := kgzip.NewReader(bytes.NewReader(gz.Bytes()[:n]))
		require.NoError(t, err)
		b, err := io.ReadAll(zr)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			cut, raw = gz.Bytes()[:n], b
			break
		}
	}
	require.NotNil(t, cut)
	complete := int64(bytes.Count(raw, []byte("\n")) - 1) // less the header
	require.Greater(t, complete, int64(500))
	path := filepath.Join(t.TempDir(), "access.csv.gz")
	require.NoError(t, os.WriteFile(path, cut, 0o644))

	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			o := options(path)
			o.Workers = workers
			r, err := Run(context.Background(), o, nil)
			require.NoError(t, err)
			assert.Equal(t, complete+1, r.Input.Records)
			assert.EqualValues(t, 1, r.Input.BadRecords)
			assert.Equal(t, []string{path + ": the last line is cut off (the gzip stream ends early)"}, r.Input.BadExamples)
			require.Len(t, r.Groups, 1)
			assert.Equal(t, complete, r.Groups[0].Samples, "the partial line is never a sample")
			assert.Contains(t, r.Input.Notes, fmt.Sprintf("%s: the gzip stream ends early (the file is cut off): %s complete records were read from it; its cut-off last line is counted bad.",
				path, human.Count(complete)))

			o.Strict = true
			_, err = Run(context.Background(), o, nil)
			require.Error(t, err)
			assert.Equal(t, fmt.Sprintf("%s: the gzip stream ends early, after %d bytes of data (the file is cut off); its cut-off last line is dropped (--strict)", path, len(raw)), err.Error())
		})
	}
}

func TestDirectoryInput(t *testing.T) {
	dir := t.TempDir()
	_, err := Run(context.Background(), options(dir), nil)
	require.Error(t, err)
	assert.Equal(t, dir+": is a directory (give its files, or a glob: "+filepath.Join(dir, "*")+")", err.Error())
}

// TestNotRequestsAndOddTimes: a server's own messages are skipped and
// counted by kind, never bad, even under --strict; a time after 2262 is
// counted and dropped, the rate measured from the other records; a
// decoder's note is told once for the inputs of a glob. On one worker and
// two alike.
func TestNotRequestsAndOddTimes(t *testing.T) {
	dir := t.TempDir()
	events, err := os.ReadFile(filepath.Join("..", "ingest", "testdata", "conformance", "haproxy-2.6-events.log"))
	require.NoError(t, err)
	hap := filepath.Join(dir, "haproxy.log")
	require.NoError(t, os.WriteFile(hap, events, 0o644))

	var far strings.Builder
	far.WriteString("timestamp,latency_ms\n")
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for i := range 3000 {
		fmt.Fprintf(&far, "%s,%d\n", start.Add(time.Duration(i)*20*time.Millisecond).Format(time.RFC3339Nano), 10+i%50)
		if i == 1500 {
			far.WriteString("2300-01-01T00:00:00Z,20\n")
		}
	}
	farPath := filepath.Join(dir, "far.csv")
	require.NoError(t, os.WriteFile(farPath, []byte(far.String()), 0o644))

	var apache strings.Builder
	for i := range 200 {
		fmt.Fprintf(&apache, "[20:16:%02d] \"GET /a HTTP/1.1\" 200 3 %d\n", i%60, 1000+i)
	}
	for _, name := range []string{"a_log", "b_log"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(apache.String()), 0o644))
	}

	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			o := options(hap)
			o.Workers, o.Strict = workers, true
			r, err := Run(context.Background(), o, nil)
			require.NoError(t, err, "not requests are not bad, under --strict neither")
			var lines, requests int64
			for _, l := range strings.Split(strings.TrimSpace(string(events)), "\n") {
				if strings.Contains(l, `"GET `) {
					requests++
				}
				lines++
			}
			assert.Equal(t, requests, r.Input.Records)
			assert.Zero(t, r.Input.BadRecords)
			var skipped int64
			for _, n := range r.Input.NotRequests {
				skipped += n
			}
			assert.Equal(t, lines-requests, skipped)
			assert.Contains(t, strings.Join(r.Input.Notes, "\n"), human.Count(lines-requests)+" lines are not requests but the server's own messages (")

			o = options(farPath)
			o.Workers = workers
			r, err = Run(context.Background(), o, nil)
			require.NoError(t, err)
			assert.EqualValues(t, 3001, r.Input.Records)
			assert.EqualValues(t, 1, r.Input.TimesOutOfRange)
			assert.Contains(t, r.Input.Notes, "1 record has a time outside 1970 to 2262 (the first: 2300-01-01T00:00:00Z in "+farPath+
				"); their latency is used, their time is not: rates are measured from the other records.")
			require.Len(t, r.Groups, 1)
			assert.EqualValues(t, 3001, r.Groups[0].Samples, "its latency is used")
			require.NotNil(t, r.Groups[0].LittlesLaw.RatePerSecond)
			assert.InDelta(t, 50, *r.Groups[0].LittlesLaw.RatePerSecond, 0.5, "the rate of the other records: one every 20 ms")

			o = options(filepath.Join(dir, "*_log"))
			o.Workers = workers
			o.Ingest.LogFormat = `[%{%H:%M:%S}t] "%r" %>s %b %D`
			r, err = Run(context.Background(), o, nil)
			require.NoError(t, err)
			var told []string
			for _, n := range r.Input.Notes {
				if strings.Contains(n, "are not read") {
					told = append(told, n)
				}
			}
			require.Len(t, told, 1, "one note for the two inputs: %q", r.Input.Notes)
			assert.True(t, strings.HasPrefix(told[0], filepath.Join(dir, "a_log")+", "+filepath.Join(dir, "b_log")+": "), told[0])
		})
	}
}

// TestTruncatedIntervalLogAndFirstLine: a cut-off .hlog.gz is noted, its
// intervals before the cut read, no record counted for the cut; a
// compressed input cut inside its first line says it is cut off, not empty.
func TestTruncatedIntervalLogAndFirstLine(t *testing.T) {
	dir := t.TempDir()
	o := options("../testdata/mixture.csv")
	var hlog bytes.Buffer
	_, err := Summarize(context.Background(), o, time.Second, nil, &hlog)
	require.NoError(t, err)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(hlog.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	path := filepath.Join(dir, "s.hlog.gz")
	require.NoError(t, os.WriteFile(path, gz.Bytes()[:gz.Len()*3/4], 0o644))
	r, err := Run(context.Background(), options(path), nil)
	require.NoError(t, err)
	// The cut may leave an interval's cell line without its histogram:
	// one bad line, at the end.
	assert.LessOrEqual(t, r.Input.BadRecords, int64(1))
	require.Len(t, r.Groups, 1)
	assert.Equal(t, r.Input.Records, r.Groups[0].Samples+sum(r.Groups[0].Excluded)+r.Input.BadRecords, "no record counted for the cut itself")
	assert.Greater(t, r.Groups[0].Samples, int64(1000))
	assert.Contains(t, strings.Join(r.Input.Notes, "\n"), path+": the gzip stream ends early (the file is cut off): the intervals before the cut are read")
	strict := options(path)
	strict.Strict = true
	_, err = Run(context.Background(), strict, nil)
	assert.ErrorContains(t, err, "stream ends early")

	gz.Reset()
	zw = gzip.NewWriter(&gz)
	_, err = zw.Write([]byte("latency_ms\n" + strings.Repeat("1", 5000)))
	require.NoError(t, err)
	require.NoError(t, zw.Flush())
	first := filepath.Join(dir, "first.csv.gz")
	require.NoError(t, os.WriteFile(first, gz.Bytes()[:12], 0o644))
	_, err = Run(context.Background(), options(first), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), first+": the gzip stream ends early")
	assert.Contains(t, err.Error(), "nothing whole was read before the cut")
}

// MoreCandidates join the default ladder (watch --timeout) and
// --candidates alike, rather than replacing them.
func TestMoreCandidatesJoin(t *testing.T) {
	timeouts := func(o Options) []time.Duration {
		r, err := Run(context.Background(), o, nil)
		require.NoError(t, err)
		var out []time.Duration
		for _, c := range r.Groups[0].Candidates {
			out = append(out, time.Duration(math.Round(c.TimeoutSeconds*1e9)))
		}
		return out
	}
	o := options("../testdata/mixture.csv")
	ladder := timeouts(o)
	require.Greater(t, len(ladder), 3)
	extra := []time.Duration{333 * time.Millisecond, ladder[1]}
	o.MoreCandidates = extra
	want := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ladder), extra...))))
	assert.Equal(t, want, timeouts(o))
	assert.Len(t, want, len(ladder)+1, "one new, one already there")

	o.Candidates = []time.Duration{time.Second}
	assert.Equal(t, slices.Sorted(slices.Values([]time.Duration{333 * time.Millisecond, ladder[1], time.Second})), timeouts(o))
}
