package promsource

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
)

// The vmrange strings below are VictoriaMetrics/metrics's own: its
// TestGetVMRange (histogram_test.go) pins the ranges of buckets 0, 1, 17,
// 18, 161, 162 and 485; lowerBucketRange and upperBucketRange
// (histogram.go) are the ranges below and above them.
func TestParseVMRange(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi float64
	}{
		{"1.000e-09...1.136e-09", 1e-9, 1.136e-9},
		{"1.136e-09...1.292e-09", 1.136e-9, 1.292e-9},
		{"8.799e-09...1.000e-08", 8.799e-9, 1e-8},
		{"1.000e-08...1.136e-08", 1e-8, 1.136e-8},
		{"8.799e-01...1.000e+00", 0.8799, 1},
		{"1.000e+00...1.136e+00", 1, 1.136},
		{"8.799e+17...1.000e+18", 8.799e17, 1e18},
		{"0...1.000e-09", 0, 1e-9},              // lowerBucketRange: every value below 1e-9, 0 too
		{"1.000e+18...+Inf", 1e18, math.Inf(1)}, // upperBucketRange
		// From its TestHistogramSerial and TestHistogramConcurrent.
		{"2.154e+02...2.448e+02", 215.4, 244.8},
		{"5.995e-01...6.813e-01", 0.5995, 0.6813},
		// The example, and VictoriaMetrics PR 4021's.
		{"1.000e-02...1.136e-02", 0.01, 0.01136},
		{"4.084e+02...4.642e+02", 408.4, 464.2},
		// Other writings strconv.ParseFloat reads, as VictoriaMetrics does.
		{"1e-2...1.136e-2", 0.01, 0.01136},
		{"1.000e+18...Inf", 1e18, math.Inf(1)},
		{"0.000e+00...1.000e-09", 0, 1e-9},
		{"0...+Inf", 0, math.Inf(1)}, // one range for everything
	}
	for _, tt := range tests {
		lo, hi, err := ParseVMRange(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.lo, lo, tt.in)
		assert.Equal(t, tt.hi, hi, tt.in)
	}
}

func TestParseVMRangeErrors(t *testing.T) {
	long := strings.Repeat("9", 100) + "...x"
	tests := []struct{ in, want string }{
		{"", `vmrange "" is not two bounds "lo...hi"`},
		{"1.000e-02", `vmrange "1.000e-02" is not two bounds`},
		{"1.000e-02..1.136e-02", `vmrange "1.000e-02..1.136e-02" is not two bounds`},
		{"...1.136e-02", `vmrange "...1.136e-02" is not two bounds`},
		{"1.000e-02...", `vmrange "1.000e-02..." is not two bounds`},
		{"a...1", `vmrange "a...1" has a lower bound "a" that is not a number`},
		{"1...2...3", `vmrange "1...2...3" has an upper bound "2...3" that is not a number`},
		{" 1...2", `vmrange " 1...2" has a lower bound " 1" that is not a number`},
		{"NaN...1", `vmrange "NaN...1" has a NaN bound`},
		{"+Inf...+Inf", `vmrange "+Inf...+Inf" has an infinite lower bound`},
		{"-1.000e-02...0", `vmrange "-1.000e-02...0" has a negative lower bound: a latency is never below zero`},
		{"1.136e-02...1.000e-02", `vmrange "1.136e-02...1.000e-02" has an upper bound that is not above its lower bound`},
		{"1...1", `vmrange "1...1" has an upper bound that is not above`},
		{"1\n...2", `vmrange "1\n...2" has a lower bound "1\n" that is not a number`},
		{long, `vmrange "` + strings.Repeat("9", 37) + `..." has an upper bound "x" that is not a number`},
	}
	for _, tt := range tests {
		_, _, err := ParseVMRange(tt.in)
		require.Error(t, err, tt.in)
		assert.Contains(t, err.Error(), tt.want)
		var ve *VMRangeError
		require.ErrorAs(t, err, &ve)
		assert.LessOrEqual(t, len([]rune(ve.Value)), maxShownValue, "the value is cut")
	}
	// The long value's upper side is garbage too, but the message is short.
	_, _, err := ParseVMRange(long)
	assert.Less(t, len(err.Error()), 200)
}

// vmRanges writes the bucket layout of VictoriaMetrics/metrics as its
// initBucketRanges does (histogram.go): from 1e-9, 18 ranges per decade up
// to 1e18, each bound written with %.3e, and the ranges below and above.
func vmRanges() []string {
	const e10Min, e10Max, perDecade = -9, 18, 18
	out := []string{fmt.Sprintf("0...%.3e", math.Pow10(e10Min))}
	v := math.Pow10(e10Min)
	start := fmt.Sprintf("%.3e", v)
	mult := math.Pow(10, 1.0/perDecade)
	for range (e10Max - e10Min) * perDecade {
		v *= mult
		end := fmt.Sprintf("%.3e", v)
		out = append(out, start+"..."+end)
		start = end
	}
	return append(out, fmt.Sprintf("%.3e...+Inf", math.Pow10(e10Max)))
}

// The layout FromVMRange expects is the library's: its TestGetVMRange
// pins these; every range reads, they touch without overlapping (the
// rounded end of one is the start of the next), and all of them at once
// build one histogram.
func TestVMRangeLayout(t *testing.T) {
	rs := vmRanges()
	require.Len(t, rs, 27*18+2)
	// TestGetVMRange's f(bucketIdx, want); index 0 here is the lower range.
	for idx, want := range map[int]string{
		0: "1.000e-09...1.136e-09", 1: "1.136e-09...1.292e-09", 17: "8.799e-09...1.000e-08",
		18: "1.000e-08...1.136e-08", 161: "8.799e-01...1.000e+00", 162: "1.000e+00...1.136e+00",
		485: "8.799e+17...1.000e+18",
	} {
		assert.Equal(t, want, rs[idx+1], "bucket %d", idx)
	}
	assert.Equal(t, "0...1.000e-09", rs[0])
	assert.Equal(t, "1.000e+18...+Inf", rs[len(rs)-1])
	var bs []VMBucket
	for _, r := range rs {
		bs = append(bs, VMBucket{Range: r, Count: 1})
	}
	h, err := FromVMRange(bs, time.Second)
	require.NoError(t, err)
	require.Len(t, h.Buckets, len(rs))
	for i := 1; i < len(h.Buckets); i++ {
		assert.Equal(t, h.Buckets[i-1].Hi, h.Buckets[i].Lo, "ranges %s and %s touch", rs[i-1], rs[i])
	}
	assert.Equal(t, float64(len(rs)), h.Count)
	require.Len(t, h.Repairs, 1, "the ranges beyond 24h, and nothing else")
	assert.Contains(t, h.Repairs[0].Message, "236 bucket bounds lie beyond 24h")
}

// serialBuckets is the histogram VictoriaMetrics/metrics's
// TestHistogramSerial writes for the values 98, 99, ..., 217: 120 calls
// (its _count), summing to 18,900 (its _sum). 100 lies in the range below
// 1.000e+02, as a power of ten does; 113 in the one up to 1.136e+02.
var serialBuckets = []VMBucket{
	{"8.799e+01...1.000e+02", 3},
	{"1.000e+02...1.136e+02", 13},
	{"1.136e+02...1.292e+02", 16},
	{"1.292e+02...1.468e+02", 17},
	{"1.468e+02...1.668e+02", 20},
	{"1.668e+02...1.896e+02", 23},
	{"1.896e+02...2.154e+02", 26},
	{"2.154e+02...2.448e+02", 2},
}

func TestFromVMRange(t *testing.T) {
	// The values were milliseconds: the bounds come out in seconds.
	h, err := FromVMRange(serialBuckets, time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, VMRange, h.Kind)
	assert.Equal(t, 120.0, h.Count)
	assert.Empty(t, h.Repairs)
	// Cumulative: 3 16 32 49 69 92 118 120.
	tests := []struct {
		q, lo, hi, est float64
	}{
		// Rank 60: the 11th of the 20 calls in (146.8, 166.8]; the true
		// median of 98..217 is 157.5.
		{0.5, 0.1468, 0.1668, 0.1468 + 0.020*11/20},
		// Rank 12: the 9th of the 13 in (100, 113.6].
		{0.1, 0.1, 0.1136, 0.1 + 0.0136*9/13},
		// Rank 118.8: 0.8 of the 2 in (215.4, 244.8].
		{0.99, 0.2154, 0.2448, 0.2154 + 0.0294*0.8/2},
		// Rank 1.2 in the first range: from its lower bound, not from 0,
		// as VictoriaMetrics's histogram_quantile does (the le bucket it
		// adds at a range's start when the range below is missing).
		{0.01, 0.08799, 0.1, 0.08799 + (0.1-0.08799)*1.2/3},
	}
	for _, tt := range tests {
		p := h.Locate(tt.q)
		assert.InDelta(t, tt.lo, p.Bucket.Lo, 1e-15, "q %v", tt.q)
		assert.InDelta(t, tt.hi, p.Bucket.Hi, 1e-15, "q %v", tt.q)
		assert.InDelta(t, tt.est, p.Estimate, 1e-12, "q %v", tt.q)
		assert.False(t, p.InInf)
	}
	// The conservative reading: every call at its range's upper bound.
	l := h.Latency()
	assert.Equal(t, int64(120), l.Count())
	assert.Equal(t, 166800*time.Microsecond, l.Quantile(0.5))
	assert.Equal(t, 113600*time.Microsecond, l.Quantile(0.1))
	assert.Equal(t, 244800*time.Microsecond, l.Quantile(1))
	assert.Equal(t, int64(0), l.Censored())
	assert.Equal(t, []float64{0.1, 0.1136, 0.1292, 0.1468, 0.1668, 0.1896, 0.2154, 0.2448}, roundAll(h.Bounds()))
}

func roundAll(fs []float64) []float64 {
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = math.Round(f*1e9) / 1e9
	}
	return out
}

// Ranges apart from each other, the range below 1e-9 and the one above
// 1e18, in any order.
func TestFromVMRangeGapsAndEnds(t *testing.T) {
	h, err := FromVMRange([]VMBucket{
		{"1.000e+18...+Inf", 5},
		{"1.000e-02...1.136e-02", 90},
		{"0...1.000e-09", 5},
	}, time.Second)
	require.NoError(t, err)
	require.Len(t, h.Buckets, 3)
	assert.Equal(t, histogram.Bucket{Lo: 0, Hi: 1e-9, Count: 5, Cumulative: 5}, h.Buckets[0])
	assert.Equal(t, histogram.Bucket{Lo: 0.01, Hi: 0.01136, Count: 90, Cumulative: 95}, h.Buckets[1])
	assert.Equal(t, histogram.Bucket{Lo: 1e18, Hi: math.Inf(1), Count: 5, Cumulative: 100}, h.Buckets[2])

	p := h.Locate(0.03) // rank 3 of the 5 below 1e-9
	assert.InDelta(t, 0.6e-9, p.Estimate, 1e-21)
	p = h.Locate(0.5) // rank 50: the 45th of 90 in (0.01, 0.01136]
	assert.Equal(t, 0.01, p.Bucket.Lo)
	assert.InDelta(t, 0.01+0.00136*45/90, p.Estimate, 1e-15)
	p = h.Locate(0.999) // rank 99.9: above 1e18
	assert.True(t, p.InInf)
	assert.Equal(t, 1e18, p.Estimate, "histogram_quantile's answer: le=1.000e+18, the bound it adds at the range's start")
	assert.Equal(t, 0.01136, h.LargestFinite())

	l := h.Latency()
	assert.Equal(t, int64(100), l.Count())
	assert.Equal(t, int64(5), l.Censored(), "the calls above 1e18 took longer than the largest finite bound")
	assert.Equal(t, 11360*time.Microsecond, l.Quantile(0.5))
}

func TestFromVMRangeRepairs(t *testing.T) {
	h, err := FromVMRange([]VMBucket{
		{"1.000e-02...1.136e-02", 10},
		{"1e-2...1.136e-2", 5}, // the same range, written otherwise
		{"1.136e-02...1.292e-02", math.NaN()},
		{"1.292e-02...1.468e-02", -2.5},
		{"1.468e-02...1.668e-02", 0},
		{"1.668e-02...1.896e-02", 5},
	}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 20.0, h.Count)
	require.Len(t, h.Buckets, 2, "the NaN, negative and empty ranges hold no calls")
	assert.Equal(t, 15.0, h.Buckets[0].Count)
	assert.Equal(t, 0.01668, h.Buckets[1].Lo)
	require.Len(t, h.Repairs, 3)
	assert.Contains(t, h.Repairs[0].Message, "1 vmrange buckets had a NaN increase; they were left out")
	assert.Contains(t, h.Repairs[1].Message, "1 vmrange buckets had a negative increase (by up to 2.5 calls")
	assert.Contains(t, h.Repairs[2].Message, "1 vmrange buckets had the same bounds as another")
	// Rank 17.5 lies in (0.01668, 0.01896]: from its start, the empty
	// ranges below holding nothing.
	p := h.Locate(0.875)
	assert.InDelta(t, 0.01668+(0.01896-0.01668)*2.5/5, p.Estimate, 1e-15)
}

func TestFromVMRangeErrors(t *testing.T) {
	tests := []struct {
		name    string
		buckets []VMBucket
		want    string
		is      error
	}{
		{"malformed", []VMBucket{{"1.000e-02...1.136e-02", 1}, {"1.136e-02-1.292e-02", 1}},
			`1 bucket series have a vmrange label that cannot be read: vmrange "1.136e-02-1.292e-02" is not two bounds "lo...hi" such as "1.000e-02...1.136e-02"`, nil},
		{"many malformed", []VMBucket{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}},
			`5 bucket series have a vmrange label that cannot be read: vmrange "a" is not two bounds "lo...hi" such as "1.000e-02...1.136e-02"; vmrange "b"`, nil},
		{"overlap", []VMBucket{{"1.000e-02...1.136e-02", 1}, {"1.100e-02...1.200e-02", 1}},
			`vmrange "1.000e-02...1.136e-02" overlaps "1.100e-02...1.200e-02": each call is counted in one range`, nil},
		{"nested", []VMBucket{{"0...+Inf", 1}, {"1.000e-02...1.136e-02", 1}, {"1.136e-02...1.292e-02", 1}},
			`vmrange "0...+Inf" overlaps "1.000e-02...1.136e-02" (2 overlaps in all)`, nil},
		{"none", nil, "no bucket series", ErrEmptyWindow},
		{"all NaN", []VMBucket{{"1.000e-02...1.136e-02", math.NaN()}}, "no bucket series", ErrEmptyWindow},
		{"no calls", []VMBucket{{"1.000e-02...1.136e-02", 0}, {"1.136e-02...1.292e-02", 0}}, "every vmrange bucket's increase is 0", ErrEmptyWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromVMRange(tt.buckets, time.Second)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
	_, err := FromVMRange([]VMBucket{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}}, time.Second)
	assert.True(t, strings.HasSuffix(err.Error(), "(and 2 more)"), err)
}

// vmrangeAnswer answers the queries of a vmrange histogram, two routes,
// with the answers VictoriaMetrics gives: sum by (le) of series without le
// is one series per group without labels but the group's.
func vmrangeAnswer(q string) string {
	switch {
	case strings.HasPrefix(q, "count("):
		return vectorOf(`{"metric":{},"value":[1800000000,"9"]}`)
	case strings.HasPrefix(q, "sum by (le, route)"):
		return vectorOf(`{"metric":{"route":"/a"},"value":[1800000000,"120"]}`, `{"metric":{"route":"/b"},"value":[1800000000,"10"]}`)
	case strings.HasPrefix(q, "sum by (vmrange, route)"):
		var s []string
		for _, b := range serialBuckets {
			s = append(s, fmt.Sprintf(`{"metric":{"route":"/a","vmrange":%q},"value":[1800000000,"%v"]}`, b.Range, b.Count))
		}
		s = append(s, `{"metric":{"route":"/b","vmrange":"1.000e+00...1.136e+00"},"value":[1800000000,"10"]}`)
		return vectorOf(s...)
	case strings.Contains(q, "_count[1h]"):
		return vectorOf(`{"metric":{"route":"/a"},"value":[1800000000,"120"]}`, `{"metric":{"route":"/b"},"value":[1800000000,"10"]}`)
	case strings.Contains(q, "_sum[1h]"):
		return vectorOf(`{"metric":{"route":"/a"},"value":[1800000000,"18900"]}`, `{"metric":{"route":"/b"},"value":[1800000000,"10.5"]}`)
	case strings.HasPrefix(q, "max_over_time("):
		return vectorOf(`{"metric":{"route":"/a"},"value":[1800000000,"0.5"]}`, `{"metric":{"route":"/b"},"value":[1800000000,"0.1"]}`)
	}
	if a, ok := spanAnswer(q); ok {
		return a
	}
	return `{"status":"error","errorType":"bad_data","error":"unexpected query"}`
}

// A bucket series without le but with vmrange is a VictoriaMetrics
// histogram: read by its vmrange buckets, the rest as for a classic one.
func TestFetchVMRange(t *testing.T) {
	rc := &recorder{}
	srv := rc.server(t, func(w http.ResponseWriter, _ *http.Request, q string) { fmt.Fprint(w, vmrangeAnswer(q)) })
	o := options(srv.URL, &noSleep{})
	o.Metric = "rpc_duration_milliseconds"
	o.By = []string{"route"}
	res, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, VMRange, res.Kind)
	assert.Equal(t, []string{
		"count(last_over_time(rpc_duration_milliseconds_bucket[1h]))",
		"sum by (le, route) (increase(rpc_duration_milliseconds_bucket[1h]))",
		"sum by (vmrange, route) (increase(rpc_duration_milliseconds_bucket[1h]))",
		"sum by (route) (increase(rpc_duration_milliseconds_count[1h]))",
		"sum by (route) (increase(rpc_duration_milliseconds_sum[1h]))",
		"max(timestamp(rpc_duration_milliseconds_count)) or max(max_over_time(timestamp(rpc_duration_milliseconds_count)[1h:1m]))",
		"min(min_over_time(timestamp(rpc_duration_milliseconds_count)[1h:1m]))",
		"max_over_time(sum by (route) (rate(rpc_duration_milliseconds_count[1m]))[1h:1m])",
	}, res.Queries)
	assert.Empty(t, res.Notes)
	assert.Equal(t, "", res.Server, "not asked")
	require.Len(t, res.Groups, 2)
	a, b := res.Groups[0], res.Groups[1]
	assert.Equal(t, "/a", a.Name)
	require.NoError(t, a.Err)
	assert.Equal(t, VMRange, a.Overall.Kind)
	assert.Equal(t, 120.0, a.Calls)
	assert.InDelta(t, 0.1575, a.Mean, 1e-12, "18,900 ms / 120 calls")
	assert.InDelta(t, 0.1468+0.020*11/20, a.Overall.Locate(0.5).Estimate, 1e-12)
	assert.True(t, math.IsNaN(a.ServerEstimate))
	assert.Equal(t, 0.001, b.Overall.Buckets[0].Lo)
	assert.InDelta(t, 1.05e-3, b.Mean, 1e-15)
}

// Both le and vmrange buckets: said in a note, the le ones read.
func TestFetchVMRangeBesideLE(t *testing.T) {
	rc := &recorder{}
	srv := rc.server(t, func(w http.ResponseWriter, _ *http.Request, q string) {
		switch {
		case q == `count(last_over_time(http_request_duration_seconds_bucket{vmrange!=""}[1h]))`:
			fmt.Fprint(w, vectorOf(`{"metric":{},"value":[1800000000,"7"]}`))
		case strings.HasPrefix(q, "sum by (le)"):
			a := classicAnswer(q)
			// The vmrange series, summed without le, are one more series.
			fmt.Fprint(w, strings.Replace(a, `"result":[`, `"result":[{"metric":{},"value":[1800000000,"55"]},`, 1))
		default:
			fmt.Fprint(w, classicAnswer(q))
		}
	})
	res, err := Fetch(context.Background(), options(srv.URL, &noSleep{}))
	require.NoError(t, err)
	assert.Equal(t, Classic, res.Kind)
	require.Len(t, res.Notes, 1)
	assert.Equal(t, "http_request_duration_seconds_bucket has both le buckets and 7 series of VictoriaMetrics's vmrange buckets; the le buckets are read, the vmrange ones left out (pick one with --selector).", res.Notes[0])
	assert.Equal(t, 1000.0, res.Groups[0].Overall.Count, "the le buckets alone")
}

// histogram.Bucket series with neither label fail as before, saying what was looked for.
func TestFetchBucketsWithoutBounds(t *testing.T) {
	srv := (&recorder{}).server(t, func(w http.ResponseWriter, _ *http.Request, q string) {
		switch {
		case strings.HasPrefix(q, "count("):
			fmt.Fprint(w, vectorOf(`{"metric":{},"value":[1800000000,"1"]}`))
		case strings.HasPrefix(q, "sum by ("):
			fmt.Fprint(w, vectorOf(`{"metric":{},"value":[1800000000,"5"]}`))
		default:
			fmt.Fprint(w, classicAnswer(q))
		}
	})
	_, err := Fetch(context.Background(), options(srv.URL, &noSleep{}))
	require.Error(t, err)
	assert.Equal(t, "a bucket series has no le label (nor a vmrange label, as VictoriaMetrics's histograms have): {}", err.Error())
}

// A malformed vmrange is the group's error, which names it.
func TestFetchVMRangeMalformed(t *testing.T) {
	srv := (&recorder{}).server(t, func(w http.ResponseWriter, _ *http.Request, q string) {
		switch {
		case strings.HasPrefix(q, "sum by (le)"):
			fmt.Fprint(w, vectorOf(`{"metric":{},"value":[1800000000,"5"]}`))
		case strings.HasPrefix(q, "sum by (vmrange)"):
			fmt.Fprint(w, vectorOf(`{"metric":{"vmrange":"1.000e-02...1.136e-02"},"value":[1800000000,"5"]}`,
				`{"metric":{"vmrange":"1.136e-02…1.292e-02"},"value":[1800000000,"5"]}`))
		default:
			fmt.Fprint(w, classicAnswer(q))
		}
	})
	_, err := Fetch(context.Background(), options(srv.URL, &noSleep{}))
	require.Error(t, err)
	assert.Equal(t, `http_request_duration_seconds: 1 bucket series have a vmrange label that cannot be read: vmrange "1.136e-02…1.292e-02" is not two bounds "lo...hi" such as "1.000e-02...1.136e-02"`, err.Error())
	assert.False(t, errors.Is(err, ErrEmptyWindow))
}

func TestByVMRangeRefused(t *testing.T) {
	o := options("http://127.0.0.1:1", &noSleep{})
	o.By = []string{"vmrange"}
	_, err := Fetch(context.Background(), o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--by vmrange: cannot group by the histogram's own label")
}
