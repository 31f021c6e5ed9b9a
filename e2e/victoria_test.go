package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/promsource"
)

// The data imported into VictoriaMetrics: six hours of counters, one sample
// every 15 s, known counts per minute.
//
//   - tt_vm_duration_seconds: a VictoriaMetrics histogram (vmrange buckets,
//     as github.com/VictoriaMetrics/metrics writes them: a series per range
//     that holds calls, not cumulative; the strings are the library's
//     layout, 18 ranges per decade written with %.3e). Route /api takes 600
//     calls a minute, 640 in its peak hour (the fourth) with a slower tail;
//     /batch 10 a minute, slow. As the library does, a range's series only
//     appears with its first call.
//   - tt_le_duration_seconds: a classic histogram (le buckets), 600 a minute.
//   - tt_mixed_duration_seconds: both kinds of bucket under one name.
const (
	vmResolve  = 15 * time.Second
	vmHours    = 6
	vmPeakHour = 3 // 0-based: the hour ending at t0+4h
)

// vmRange is one range of tt_vm_duration_seconds and its calls per minute.
type vmRange struct {
	vmrange string
	lo, hi  float64
	normal  int64 // calls a minute
	peak    int64 // calls a minute in the peak hour
}

var vmRoutes = map[string][]vmRange{
	"/api": {
		{"1.000e-02...1.136e-02", 0.01, 0.01136, 300, 300},
		{"1.668e-02...1.896e-02", 0.01668, 0.01896, 200, 200},
		{"4.642e-02...5.275e-02", 0.04642, 0.05275, 80, 80},
		{"1.000e-01...1.136e-01", 0.1, 0.1136, 15, 15},
		{"4.642e-01...5.275e-01", 0.4642, 0.5275, 4, 40},
		// After a gap of 8 ranges: p99.9 lies here.
		{"1.000e+00...1.136e+00", 1, 1.136, 1, 5},
	},
	"/batch": {
		{"2.154e+00...2.448e+00", 2.154, 2.448, 9, 9},
		{"4.642e+00...5.275e+00", 4.642, 5.275, 1, 1},
	},
}

var (
	vmLEBounds    = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}
	vmLEPerMinute = []int64{300, 180, 90, 27, 2, 1, 0, 0}
)

// vmSpread is what step k (0-3) of a minute adds of the minute's n calls:
// every minute adds up exactly.
func vmSpread(n int64, k int64) int64 {
	per := int64(time.Minute / vmResolve)
	return n*(k+1)/per - n*k/per
}

// perMinute is the calls a minute of one range in an hour.
func (r vmRange) perMinute(hour int) int64 {
	if hour == vmPeakHour {
		return r.peak
	}
	return r.normal
}

// vmCalls is the calls of a route's ranges over hours [from, to).
func vmCalls(route string, from, to int) float64 {
	n := 0.0
	for _, r := range vmRoutes[route] {
		for h := from; h < to; h++ {
			n += 60 * float64(r.perMinute(h))
		}
	}
	return n
}

// vmWriteData writes the data in Prometheus's text format with explicit
// timestamps in milliseconds, as /api/v1/import/prometheus takes them.
func vmWriteData(w io.Writer, t0 time.Time) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	steps := int(vmHours * time.Hour / vmResolve)
	perMinute := int(time.Minute / vmResolve)
	type counters struct {
		ranges []int64
		count  int64
		sum    float64
	}
	vm := map[string]*counters{}
	for route, rs := range vmRoutes {
		vm[route] = &counters{ranges: make([]int64, len(rs))}
	}
	le := make([]int64, len(vmLEBounds)) // cumulative
	var leSum float64
	var mixedLow, mixedAll, mixedRange int64
	for i := 0; i <= steps; i++ {
		ts := t0.Add(time.Duration(i) * vmResolve)
		if i > 0 {
			minute, k := (i-1)/perMinute, int64((i-1)%perMinute)
			hour := minute / 60
			for route, rs := range vmRoutes {
				c := vm[route]
				for j, r := range rs {
					add := vmSpread(r.perMinute(hour), k)
					c.ranges[j] += add
					c.count += add
					c.sum += float64(add) * (r.lo + r.hi) / 2
				}
			}
			for b, n := range vmLEPerMinute {
				add := vmSpread(n, k)
				for j := b; j < len(le); j++ {
					le[j] += add
				}
				lo := 0.0
				if b > 0 {
					lo = vmLEBounds[b-1]
				}
				leSum += float64(add) * (lo + min(vmLEBounds[b], 5)) / 2
			}
			mixedLow += vmSpread(5, k)
			mixedAll += vmSpread(8, k)
			mixedRange += vmSpread(3, k)
		}
		ms := strconv.FormatInt(ts.UnixMilli(), 10)
		for route, rs := range vmRoutes {
			c := vm[route]
			for j, r := range rs {
				if c.ranges[j] == 0 {
					continue // the library exports a range once it holds a call
				}
				fmt.Fprintf(bw, "tt_vm_duration_seconds_bucket{route=%q,vmrange=%q} %d %s\n", route, r.vmrange, c.ranges[j], ms)
			}
			fmt.Fprintf(bw, "tt_vm_duration_seconds_sum{route=%q} %s %s\n", route, strconv.FormatFloat(c.sum, 'g', -1, 64), ms)
			fmt.Fprintf(bw, "tt_vm_duration_seconds_count{route=%q} %d %s\n", route, c.count, ms)
		}
		for b, bound := range vmLEBounds {
			fmt.Fprintf(bw, "tt_le_duration_seconds_bucket{le=%q} %d %s\n", formatLE(bound), le[b], ms)
		}
		fmt.Fprintf(bw, "tt_le_duration_seconds_sum %s %s\ntt_le_duration_seconds_count %d %s\n", strconv.FormatFloat(leSum, 'g', -1, 64), ms, le[len(le)-1], ms)
		fmt.Fprintf(bw, "tt_mixed_duration_seconds_bucket{le=\"0.1\"} %d %s\ntt_mixed_duration_seconds_bucket{le=\"+Inf\"} %d %s\n", mixedLow, ms, mixedAll, ms)
		fmt.Fprintf(bw, "tt_mixed_duration_seconds_bucket{vmrange=\"1.000e-01...1.136e-01\"} %d %s\n", mixedRange, ms)
		fmt.Fprintf(bw, "tt_mixed_duration_seconds_count %d %s\n", mixedAll, ms)
		// PromQL's non-monotonic histogram (promql/promqltest/testdata/
		// histograms.test, nonmonotonic_bucket): each bucket rises by its
		// step every 5 minutes, as 0+2x10 and so on there.
		if i%int(5*time.Minute/vmResolve) == 0 {
			n := int64(i / int(5*time.Minute/vmResolve))
			for _, b := range vmNonMonotonic {
				fmt.Fprintf(bw, "tt_nonmonotonic_seconds_bucket{le=%q} %d %s\n", b.le, b.step*n, ms)
			}
		}
	}
}

// vmNonMonotonic is PromQL's nonmonotonic_bucket: le and the rise per step.
var vmNonMonotonic = []struct {
	le   string
	step int64
}{{"0.1", 2}, {"1", 1}, {"10", 5}, {"100", 4}, {"1000", 9}, {"+Inf", 8}}

// vmServer is a running victoria-metrics.
type vmServer struct {
	url string
	log *promLog
}

// vmStart runs victoria-metrics on a free loopback port with its storage in
// a temporary directory, and waits until /health answers OK.
func vmStart(t *testing.T, bin string) *vmServer {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := []string{
		"-storageDataPath=" + t.TempDir(),
		"-httpListenAddr=" + addr,
		// The default, 1 month, takes the data of a few hours ago; a year
		// leaves room for a slow machine or a clock that moved.
		"-retentionPeriod=1y",
		// Answers from the data, never from a cache filled while the
		// import was still arriving; no alignment of range queries.
		"-search.disableCache",
		// No hiding of the last 30 s from queries near now.
		"-search.latencyOffset=0s",
		"-loggerLevel=WARN",
	}
	url := "http://" + addr
	return &vmServer{url: url, log: startServer(t, "victoria-metrics", bin, args, url+"/health")}
}

// api is the server as the Prometheus tests' helpers query it.
func (s *vmServer) api() *promServer { return &promServer{url: s.url, log: s.log} }

// vmImport sends data to /api/v1/import/prometheus and makes it searchable
// at once (/internal/force_flush, which 1.79.5 has).
func (s *vmServer) vmImport(t *testing.T, data []byte) {
	t.Helper()
	resp, err := http.Post(s.url+"/api/v1/import/prometheus", "text/plain", bytes.NewReader(data))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "import: %s\n%s", body, s.log)
	resp, err = http.Get(s.url + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// vmWait polls q at at until its single value is want.
func (s *vmServer) vmWait(t *testing.T, q string, at time.Time, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.api().query(t, q, at)
		if len(r) == 1 && len(r[0].Values) == 1 && only(t, r) == want {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s did not reach %v within 30s: %v\n%s", q, want, r, s.log)
		time.Sleep(200 * time.Millisecond)
	}
}

var vmAppVersion = regexp.MustCompile(`^vm_app_version\{version="([^"]*)", short_version="([^"]*)"\}`)

// vmVersion reads the server's own version from its /metrics: the short one,
// else the whole one ("" in Debian's build).
func (s *vmServer) vmVersion(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := vmAppVersion.FindStringSubmatch(sc.Text()); m != nil {
			if m[2] != "" {
				return m[2]
			}
			return m[1]
		}
	}
	t.Fatalf("no vm_app_version on %s/metrics", s.url)
	return ""
}

// TestVictoriaMetrics imports known histograms into a real VictoriaMetrics
// and checks what the tool reads against the plan and against
// VictoriaMetrics's own answers: its vmrange histograms read (they failed
// with "a bucket series has no le label" before), its increase() exact (it
// does not extrapolate, unlike Prometheus's), the bucket holding its own
// histogram_quantile, and the server told apart.
func TestVictoriaMetrics(t *testing.T) {
	bin := requireBinary(t, "victoria-metrics", "victoria-metrics")

	t0 := time.Now().UTC().Truncate(time.Hour).Add(-(vmHours + 2) * time.Hour)
	at := t0.Add(vmHours * time.Hour)
	srv := vmStart(t, bin)
	var data bytes.Buffer
	vmWriteData(&data, t0)
	srv.vmImport(t, data.Bytes())
	apiCalls, batchCalls := vmCalls("/api", 0, vmHours), vmCalls("/batch", 0, vmHours)
	srv.vmWait(t, "sum(increase(tt_vm_duration_seconds_count[6h]))", at, apiCalls+batchCalls)
	srv.vmWait(t, "sum(increase(tt_mixed_duration_seconds_count[6h]))", at, 8*60*vmHours)
	api := srv.api()

	base := []string{"prometheus", "--url", srv.url, "--window", "6h", "--at", at.Format(time.RFC3339)}
	vmArgs := append(append([]string{}, base...), "--metric", "tt_vm_duration_seconds")
	apiArgs := append(append([]string{}, vmArgs...), "--selector", `{route="/api"}`)
	const q = 0.999

	t.Run("vmrange: bucket, VictoriaMetrics's estimate, exact calls", func(t *testing.T) {
		r := runJSON(t, apiArgs...)
		assert.Equal(t, promsource.VMRange, r.Prometheus.Kind)
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		// 5 h x 600 + 1 h x 640 calls a minute: exactly, as VictoriaMetrics's
		// increase() does not extrapolate to the window's edges; the range
		// (1, 1.136] included, whose series appeared a minute in.
		assert.Equal(t, 218400.0, apiCalls)
		assert.Equal(t, int64(apiCalls), g.Samples)
		count := only(t, api.query(t, `sum(increase(tt_vm_duration_seconds_count{route="/api"}[6h]))`, at))
		assert.Equal(t, apiCalls, count, "VictoriaMetrics's increase() of _count is exact")
		buckets := only(t, api.query(t, `sum(increase(tt_vm_duration_seconds_bucket{route="/api"}[6h]))`, at))
		assert.Equal(t, apiCalls, buckets, "so is the sum of the ranges' increases")
		require.NotNil(t, g.Buckets)
		b := g.Buckets
		assert.Equal(t, apiCalls, b.Calls)
		assert.Equal(t, promsource.VMRange, b.Kind)
		// Cumulative up to 0.5275: 217,800; the rank 0.999 x 218,400 =
		// 218,181.6 lies in (1, 1.136], after a gap in the ranges.
		assert.Equal(t, 1.0, b.Bucket.Low)
		require.NotNil(t, b.Bucket.High)
		assert.Equal(t, 1.136, *b.Bucket.High)
		assert.False(t, b.Beyond)
		want := 1 + 0.136*(0.999*218400-217800)/600
		assert.InDelta(t, want, b.HistogramQuantile, 1e-9)
		theirs := only(t, api.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (vmrange) (increase(tt_vm_duration_seconds_bucket{route="/api"}[6h])))`, q), at))
		assert.GreaterOrEqual(t, theirs, b.Bucket.Low, "VictoriaMetrics's own histogram_quantile lies in the bucket")
		assert.LessOrEqual(t, theirs, *b.Bucket.High)
		assert.InDelta(t, theirs, b.HistogramQuantile, 1e-9, "and is the same estimate")
		assert.InDelta(t, 1.136, g.Recommendation.BaseSeconds, 1e-9, "the range's upper bound")
		assert.Empty(t, b.SuggestedLE, "vmrange bounds are fixed: no le to add")
		var sum float64
		for h := range vmHours {
			for _, rg := range vmRoutes["/api"] {
				sum += 60 * float64(rg.perMinute(h)) * (rg.lo + rg.hi) / 2
			}
		}
		assert.InDelta(t, sum/apiCalls, g.MeanSeconds, 1e-9, "mean from _sum / _count")
		require.NotNil(t, g.LittlesLaw.Rate)
		assert.InDelta(t, apiCalls/(6*3600), *g.LittlesLaw.Rate, 1e-9)
		require.NotNil(t, g.LittlesLaw.PeakRate)
		assert.InDelta(t, 640.0/60, *g.LittlesLaw.PeakRate, 0.5, "the peak hour's minutes")
		t.Logf("vmrange p99.9 in (1, 1.136]: histogram_quantile %.6f (VictoriaMetrics %.6f), %v calls", b.HistogramQuantile, theirs, g.Samples)
	})

	t.Run("vmrange by route", func(t *testing.T) {
		r := runJSON(t, append(append([]string{}, vmArgs...), "--by", "route")...)
		require.Len(t, r.Groups, 2)
		a, batch := r.Groups[0], r.Groups[1]
		require.Equal(t, "/api", a.Name)
		require.Equal(t, "/batch", batch.Name)
		assert.Equal(t, int64(batchCalls), batch.Samples)
		require.NotNil(t, batch.Buckets)
		assert.Equal(t, 4.642, batch.Buckets.Bucket.Low)
		assert.Equal(t, 5.275, *batch.Buckets.Bucket.High)
		theirs := api.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (vmrange, route) (increase(tt_vm_duration_seconds_bucket[6h])))`, q), at)
		require.Len(t, theirs, 2)
		for _, s := range theirs {
			g := a
			if s.Metric["route"] == "/batch" {
				g = batch
			}
			assert.InDelta(t, only(t, []promSample{s}), g.Buckets.HistogramQuantile, 1e-9, s.Metric["route"])
		}
	})

	t.Run("vmrange steps", func(t *testing.T) {
		r := runJSON(t, append(append([]string{}, apiArgs...), "--step", "1h")...)
		require.Len(t, r.Groups, 1)
		b := r.Groups[0].Buckets
		require.NotNil(t, b)
		require.Len(t, b.Steps, vmHours)
		theirs := api.queryRange(t, fmt.Sprintf(`histogram_quantile(%v, sum by (vmrange) (increase(tt_vm_duration_seconds_bucket{route="/api"}[1h])))`, q),
			t0.Add(time.Hour), at, time.Hour)
		require.Len(t, theirs, 1)
		for i, st := range b.Steps {
			assert.Equal(t, vmCalls("/api", i, i+1), st.Calls, st.End)
			end, err := time.Parse(time.RFC3339, st.End)
			require.NoError(t, err)
			assert.InDelta(t, theirs[0].Values[end.Unix()], st.HistogramQuantile, 1e-9, st.End)
			assert.Equal(t, 1.0, st.Bucket.Low, st.End)
		}
		require.NotNil(t, b.WorstStep)
		assert.Equal(t, t0.Add((vmPeakHour+1)*time.Hour).Format(time.RFC3339), b.Steps[*b.WorstStep].End)
		// The peak hour: rank 38,361.6 of 38,400, 38,100 up to 0.5275.
		assert.InDelta(t, 1+0.136*(0.999*38400-38100)/300, b.Steps[*b.WorstStep].HistogramQuantile, 1e-9)
	})

	t.Run("le histogram from VictoriaMetrics", func(t *testing.T) {
		r := runJSON(t, append(append([]string{}, base...), "--metric", "tt_le_duration_seconds")...)
		assert.Equal(t, promsource.Classic, r.Prometheus.Kind)
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		assert.Equal(t, int64(216000), g.Samples, "exact: no extrapolation")
		// Cumulative at 0.5: 215,640; the rank 215,784 lies in (0.5, 1].
		assert.Equal(t, 0.5, g.Buckets.Bucket.Low)
		assert.InDelta(t, 0.7, g.Buckets.HistogramQuantile, 1e-9)
		theirs := only(t, api.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (le) (increase(tt_le_duration_seconds_bucket[6h])))`, q), at))
		assert.InDelta(t, theirs, g.Buckets.HistogramQuantile, 1e-9)
	})

	t.Run("le and vmrange under one name: le read, said so", func(t *testing.T) {
		r := runJSON(t, append(append([]string{}, base...), "--metric", "tt_mixed_duration_seconds")...)
		assert.Equal(t, promsource.Classic, r.Prometheus.Kind)
		assert.Equal(t, int64(8*60*vmHours), r.Groups[0].Samples)
		found := false
		for _, n := range r.Input.Notes {
			if strings.Contains(n, "tt_mixed_duration_seconds_bucket has both le buckets and 1 series of VictoriaMetrics's vmrange buckets; the le buckets are read") {
				found = true
			}
		}
		assert.True(t, found, "notes: %q", r.Input.Notes)
	})

	t.Run("the report names the server and its own estimate", func(t *testing.T) {
		out, errOut, code := runTool(t, append(append([]string{}, apiArgs...), "-o", "json")...)
		require.Equal(t, 0, code, errOut)
		var r struct {
			Prometheus struct {
				Server        string `json:"server"`
				ServerVersion string `json:"server_version"`
			}
			Groups []struct {
				Buckets struct {
					Estimate          *float64 `json:"estimate_seconds"`
					EstimateBy        string   `json:"estimate_by"`
					HistogramQuantile *float64 `json:"histogram_quantile_seconds"`
					Server            string   `json:"histogram_quantile_server"`
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		assert.Equal(t, "VictoriaMetrics", r.Prometheus.Server)
		assert.Equal(t, srv.vmVersion(t), r.Prometheus.ServerVersion)
		require.Len(t, r.Groups, 1)
		b := r.Groups[0].Buckets
		theirs := only(t, api.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (vmrange) (increase(tt_vm_duration_seconds_bucket{route="/api"}[6h])))`, q), at))
		require.NotNil(t, b.HistogramQuantile)
		assert.Equal(t, theirs, *b.HistogramQuantile, "asked from the server")
		assert.Equal(t, "VictoriaMetrics", b.Server)
		require.NotNil(t, b.Estimate)
		assert.InDelta(t, theirs, *b.Estimate, 1e-9)
		assert.Equal(t, "histogram_quantile", b.EstimateBy, "tunetimeout's interpolation agrees with the server's")
		text, errOut, code := runTool(t, apiArgs...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, text, "VictoriaMetrics")
		assert.Contains(t, text, " at "+srv.url+": vmrange histogram")
	})

	t.Run("non-monotonic buckets: VictoriaMetrics's answer is its own", func(t *testing.T) {
		// Over the 50 minutes of PromQL's test (10 steps): le=0.1: 20, 1: 10,
		// 10: 50, 100: 40, 1000: 90, +Inf: 80. PromQL raises the decreasing
		// counts and answers p50 = 1 + 9 x (45-20)/30 = 8.5; VictoriaMetrics
		// before v1.102 lowers them instead.
		end := t0.Add(50 * time.Minute)
		args := []string{"prometheus", "--url", srv.url, "--metric", "tt_nonmonotonic_seconds", "--window", "50m",
			"--at", end.Format(time.RFC3339), "--false-timeouts", "50%", "-o", "json"}
		out, errOut, code := runTool(t, args...)
		require.Equal(t, 0, code, errOut)
		var r edgeReport
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		require.Len(t, r.Groups, 1)
		b := r.Groups[0].Buckets
		theirs := only(t, api.query(t, `histogram_quantile(0.5, sum by (le) (increase(tt_nonmonotonic_seconds_bucket[50m])))`, end))
		t.Logf("p50: VictoriaMetrics %v, tunetimeout %v (%s)", theirs, *b.Estimate, b.EstimateBy)
		require.NotNil(t, b.Estimate)
		assert.InDelta(t, 8.5, *b.Estimate, 1e-9, "PromQL's answer, computed as PromQL does")
		require.NotNil(t, b.HistogramQuantile)
		assert.Equal(t, theirs, *b.HistogramQuantile, "VictoriaMetrics's own answer, shown as it gave it")
		assert.Equal(t, "VictoriaMetrics", b.Server)
		if math.Abs(theirs-8.5) > 1e-9 {
			assert.Equal(t, "tunetimeout", b.EstimateBy, "not called histogram_quantile's when the server answers otherwise")
			assert.Contains(t, b.EstimateNote, "VictoriaMetrics's histogram_quantile computes otherwise")
		}
		assert.Equal(t, 1.0, b.Bucket.Low)
		require.NotNil(t, b.Bucket.High)
		assert.Equal(t, 10.0, *b.Bucket.High)
		assert.GreaterOrEqual(t, theirs, b.Bucket.Low, "the bucket holds the server's answer too")
		assert.LessOrEqual(t, theirs, *b.Bucket.High)
	})

	t.Run("server and its own estimate", func(t *testing.T) {
		o := promsource.Options{Metric: "tt_vm_duration_seconds", Selector: `{route="/api"}`, Window: vmHours * time.Hour,
			At: at, Step: time.Hour, Quantile: q}
		o.URL = srv.url
		res, err := promsource.Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, promsource.ServerVictoriaMetrics, res.Server)
		assert.Equal(t, srv.vmVersion(t), res.ServerVersion, "vm_app_version's label")
		t.Logf("server %q version %q", res.Server, res.ServerVersion)
		require.Len(t, res.Groups, 1)
		g := res.Groups[0]
		theirs := only(t, api.query(t, fmt.Sprintf(`histogram_quantile(%v, sum by (vmrange) (increase(tt_vm_duration_seconds_bucket{route="/api"}[6h])))`, q), at))
		assert.Equal(t, theirs, g.ServerEstimate, "the server's own answer, as it gave it")
		assert.InDelta(t, g.Overall.Locate(q).Estimate, g.ServerEstimate, 1e-9)
		require.Len(t, g.Steps, vmHours)
		steps := api.queryRange(t, fmt.Sprintf(`histogram_quantile(%v, sum by (vmrange) (increase(tt_vm_duration_seconds_bucket{route="/api"}[1h])))`, q),
			t0.Add(time.Hour), at, time.Hour)
		require.Len(t, steps, 1)
		for _, st := range g.Steps {
			assert.Equal(t, steps[0].Values[st.End.Unix()], st.ServerEstimate, st.End)
		}

		// The le histogram too; and without a quantile, nothing is asked.
		o.Metric, o.Selector, o.Step = "tt_le_duration_seconds", "", 0
		res, err = promsource.Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.InDelta(t, 0.7, res.Groups[0].ServerEstimate, 1e-9)
		o.Quantile = 0
		res, err = promsource.Fetch(context.Background(), o)
		require.NoError(t, err)
		assert.Equal(t, "", res.Server)
		assert.True(t, math.IsNaN(res.Groups[0].ServerEstimate))
	})
}
