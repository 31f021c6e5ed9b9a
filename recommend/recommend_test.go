package recommend_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
)

const (
	us = time.Microsecond
	ms = time.Millisecond
	s  = time.Second
)

func rules(r recommend.Recommendation) []string {
	var out []string
	for _, st := range r.Steps {
		out = append(out, st.Rule)
	}
	return out
}

func step(t *testing.T, r recommend.Recommendation, rule string) recommend.Step {
	t.Helper()
	for _, st := range r.Steps {
		if st.Rule == rule {
			return st
		}
	}
	require.Failf(t, "no step", "rule %q not in %v", rule, rules(r))
	return recommend.Step{}
}

// warningWith returns the warning containing sub, or "".
func warningWith(r recommend.Recommendation, sub string) string {
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			return w
		}
	}
	return ""
}

func TestDefaultOptions(t *testing.T) {
	assert.Equal(t, recommend.Options{FalseTimeouts: 0.001, TightTailRatio: 2, Confidence: 0.95}, recommend.DefaultOptions())
}

func TestRecommendRejectsBadOptions(t *testing.T) {
	h := hist(t, logSpread(1000, ms, s))
	tests := []struct {
		name   string
		modify func(*recommend.Options)
		want   string
	}{
		{"false timeouts zero", func(o *recommend.Options) { o.FalseTimeouts = 0 }, "false-timeout rate 0 must lie between 0 and 1"},
		{"false timeouts one", func(o *recommend.Options) { o.FalseTimeouts = 1 }, "false-timeout rate 1 must lie between 0 and 1"},
		{"false timeouts as percent", func(o *recommend.Options) { o.FalseTimeouts = 0.1 * 100 }, "false-timeout rate 10 must"},
		{"negative ratio", func(o *recommend.Options) { o.TightTailRatio = -1 }, "tight-tail ratio -1"},
		{"confidence one", func(o *recommend.Options) { o.Confidence = 1 }, "confidence 1 must lie between 0 and 1"},
		{"negative allowance", func(o *recommend.Options) { o.NetworkAllowance = -ms }, "network allowance -1ms must not be negative"},
		{"negative min", func(o *recommend.Options) { o.Min = -ms }, "minimum -1ms must not be negative"},
		{"negative rtt", func(o *recommend.Options) { o.RTT = -ms }, "RTT -1ms must not be negative"},
		{"min above max", func(o *recommend.Options) { o.Min, o.Max = 2*s, s }, "minimum 2s is above maximum 1s"},
		{"max below 1ms", func(o *recommend.Options) { o.Max = 500 * us }, "maximum 500µs is below 1ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := recommend.DefaultOptions()
			tc.modify(&o)
			_, err := recommend.Recommend(h, o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			// Validate is the same rule, asked without a histogram.
			verr := o.Validate()
			require.Error(t, verr)
			assert.Equal(t, "invalid options: "+verr.Error(), err.Error())
		})
	}

	t.Run("every problem at once", func(t *testing.T) {
		_, err := recommend.Recommend(h, recommend.Options{FalseTimeouts: 2, Min: -1})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "false-timeout rate 2")
		assert.Contains(t, err.Error(), "minimum -1ns")
		err = recommend.Options{FalseTimeouts: 2, Min: -1}.Validate()
		require.Error(t, err)
		assert.Equal(t, []string{"false-timeout rate 2 must lie between 0 and 1, both excluded (0.001 is 0.1 %, p99.9)", "minimum -1ns must not be negative"},
			strings.Split(err.Error(), "\n"))
	})
	t.Run("valid options", func(t *testing.T) {
		assert.NoError(t, recommend.DefaultOptions().Validate())
		assert.NoError(t, recommend.Options{FalseTimeouts: 0.001}.Validate(), "a zero confidence is the default")
	})
	t.Run("confidence zero means the default", func(t *testing.T) {
		r, err := recommend.Recommend(h, recommend.Options{FalseTimeouts: 0.001})
		require.NoError(t, err)
		assert.Equal(t, 0.95, r.Interval.Confidence)
	})
	t.Run("no samples", func(t *testing.T) {
		_, err := recommend.Recommend(histogram.New(), recommend.DefaultOptions())
		assert.ErrorIs(t, err, recommend.ErrNoSamples)
		_, err = recommend.Recommend(nil, recommend.DefaultOptions())
		assert.ErrorIs(t, err, recommend.ErrNoSamples)
	})
}

// TestRecommendRules checks each rule on a histogram where it must (or must
// not) fire, and the order of the steps.
func TestRecommendRules(t *testing.T) {
	// 20,000 calls spread log-evenly over 1ms-1s: p50 31.6ms, p99.9 993ms.
	wide := logSpread(20000, ms, s)
	// 10,000 calls spread evenly over 90-105ms: p99.9 105ms < 2 x p50.
	tight := linSpread(10000, 90*ms, 105*ms)
	// 10,000 calls spread evenly over 100-300µs: sub-millisecond.
	fast := linSpread(10000, 100*us, 300*us)

	tests := []struct {
		name        string
		samples     []time.Duration
		modify      func(*recommend.Options)
		wantRules   []string
		wantTimeout time.Duration
	}{
		{"quantile and round", wide, nil, []string{"quantile", "round"}, s},
		{"tight tail raises to 2 x p50", tight, nil, []string{"quantile", "tight-tail", "round"}, 200 * ms},
		{"tight tail with ratio 1.5", tight, func(o *recommend.Options) { o.TightTailRatio = 1.5 }, []string{"quantile", "tight-tail", "round"}, 150 * ms},
		{"tight tail off", tight, func(o *recommend.Options) { o.TightTailRatio = 0 }, []string{"quantile", "round"}, 110 * ms},
		{"network allowance", wide, func(o *recommend.Options) { o.NetworkAllowance = 300 * ms }, []string{"quantile", "network-allowance", "round"}, 1300 * ms},
		{"floor at 1ms", fast, nil, []string{"quantile", "tight-tail", "round", "floor"}, ms},
		{"min raises", wide, func(o *recommend.Options) { o.Min = 2 * s }, []string{"quantile", "round", "min"}, 2 * s},
		{"min below timeout does nothing", wide, func(o *recommend.Options) { o.Min = 500 * ms }, []string{"quantile", "round"}, s},
		{"max lowers", wide, func(o *recommend.Options) { o.Max = 500 * ms }, []string{"quantile", "round", "max"}, 500 * ms},
		{"max between base and rounded", wide, func(o *recommend.Options) { o.Max = 995 * ms }, []string{"quantile", "round", "max"}, 995 * ms},
		{"p99 instead of p99.9", wide, func(o *recommend.Options) { o.FalseTimeouts = 0.01 }, []string{"quantile", "round"}, 950 * ms},
		{"connect is last", wide, func(o *recommend.Options) { o.RTT = 5 * ms; o.Min = 2 * s }, []string{"quantile", "round", "min", "connect"}, 2 * s},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hist(t, tc.samples)
			o := recommend.DefaultOptions()
			if tc.modify != nil {
				tc.modify(&o)
			}
			r, err := recommend.Recommend(h, o)
			require.NoError(t, err)
			assert.Equal(t, tc.wantRules, rules(r))
			assert.Equal(t, tc.wantTimeout, r.Timeout)
			assert.Equal(t, h.Quantile(1-o.FalseTimeouts), r.Base)
			assert.Equal(t, r.Base, r.Steps[0].Value, "the quantile step's value is the base")
			// Each step's value is the timeout after it; the last one that
			// is not "connect" is the timeout.
			last := r.Steps[len(r.Steps)-1]
			if last.Rule == "connect" {
				last = r.Steps[len(r.Steps)-2]
			}
			assert.Equal(t, r.Timeout, last.Value)
			for _, st := range r.Steps {
				assert.NotEmpty(t, st.Reason, st.Rule)
			}
		})
	}
}

func TestRecommendReasons(t *testing.T) {
	h := hist(t, logSpread(20000, ms, s))
	o := recommend.DefaultOptions()
	o.NetworkAllowance = 300 * ms
	r, err := recommend.Recommend(h, o)
	require.NoError(t, err)
	// p99.9 of the log spread is the sample of rank 19,980: 1ms x 1000^(19979/19999).
	assert.InEpsilon(t, float64(993*ms), float64(r.Base), 0.002)
	assert.Equal(t, "p99.9 of 20,000 calls is 993ms: 20 calls slower (0.1 %; at most the 0.1 % asked for)", step(t, r, "quantile").Reason)
	assert.Equal(t, "latency measured at the server does not include the client's network, so 300ms of network allowance is added (993ms to 1.29s)", step(t, r, "network-allowance").Reason)
	assert.Equal(t, "1.29s is rounded up to 1.3s, a value people write in configs (steps of 100ms at this size)", step(t, r, "round").Reason)
	assert.Equal(t, 50*ms, r.RoundingStep, "the step at the base's magnitude (993ms), not at the padded 1.29s")

	tight := hist(t, linSpread(10000, 90*ms, 105*ms))
	r, err = recommend.Recommend(tight, recommend.DefaultOptions())
	require.NoError(t, err)
	tt := step(t, r, "tight-tail")
	p50 := tight.Quantile(0.5)
	assert.InEpsilon(t, float64(97500*us), float64(p50), 0.002)
	assert.Equal(t, time.Duration(2*p50), tt.Value)
	assert.Contains(t, tt.Reason, "p99.9 (105ms) is below 2 x the median (97.5ms)")
	assert.Contains(t, tt.Reason, "GC pause")
	assert.Contains(t, tt.Reason, "TCP retransmission")
	assert.Equal(t, "195ms is rounded up to 200ms, a value people write in configs (steps of 10ms at this size)", step(t, r, "round").Reason)

	// A value that is already round gets a round step that says so.
	fast := hist(t, linSpread(10000, 100*us, 300*us))
	r, err = recommend.Recommend(fast, recommend.DefaultOptions())
	require.NoError(t, err)
	// p50 is 199µs (microseconds are truncated), 2 x p50 = 398µs -> 400µs -> 1ms.
	assert.Equal(t, 398*us, step(t, r, "tight-tail").Value)
	assert.Equal(t, 400*us, step(t, r, "round").Value)
	assert.Equal(t, "400µs is raised to 1ms: gateway and Istio configs cannot express a shorter timeout", step(t, r, "floor").Reason)

	o = recommend.DefaultOptions()
	o.Min = s
	// p50 is exactly 500µs (below 2.048ms the histogram is exact): 2 x p50 = 1ms.
	r, err = recommend.Recommend(hist(t, repeat(6000, 500*us), linSpread(4000, 500*us, 900*us)), o)
	require.NoError(t, err)
	assert.Equal(t, []string{"quantile", "tight-tail", "round", "min"}, rules(r))
	assert.Equal(t, "1ms is already a value people write in configs", step(t, r, "round").Reason)
	assert.Equal(t, "you set a minimum of 1s, so the timeout is raised from 1ms", step(t, r, "min").Reason)
}

func TestRecommendMaxBelowBaseWarns(t *testing.T) {
	h := hist(t, logSpread(20000, ms, s))
	o := recommend.DefaultOptions()
	o.Max = 500 * ms
	r, err := recommend.Recommend(h, o)
	require.NoError(t, err)
	assert.Equal(t, "you set a maximum of 500ms, so the timeout is lowered from 1s", step(t, r, "max").Reason)
	// log10(500)/log10(1000) = 0.8997: the top 10.03 % of the spread lies above 500ms.
	assert.InDelta(t, 0.1003, h.FractionAbove(500*ms), 0.0005)
	assert.Contains(t, r.Warnings, "the maximum of 500ms you set is below the measured p99.9 (993ms): it cuts off at most 10 % of calls instead of 0.1 %")

	o.Max = 995 * ms // above the base: cuts off fewer than 0.1 %, no warning
	r, err = recommend.Recommend(h, o)
	require.NoError(t, err)
	assert.Empty(t, r.Warnings)
}

func TestRecommendConnectTimeout(t *testing.T) {
	h := hist(t, logSpread(20000, ms, s)) // timeout 1s
	tests := []struct {
		name        string
		rtt         time.Duration
		want        time.Duration
		wantInStep  string
		wantNoSteps bool
	}{
		{"3 x RTT rounded up", 5 * ms, 15 * ms, "Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect", false},
		{"rounded like a timeout", 23 * ms, 70 * ms, "3 x the RTT of 23ms, rounded up: 70ms", false},
		{"at least 1ms", 100 * us, ms, "rounded up: 1ms", false},
		{"never above the timeout", 400 * ms, s, "capped at the timeout of 1s", false},
		{"unknown RTT", 0, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := recommend.DefaultOptions()
			o.RTT = tc.rtt
			r, err := recommend.Recommend(h, o)
			require.NoError(t, err)
			assert.Equal(t, s, r.Timeout, "the connect timeout leaves the timeout alone")
			assert.Equal(t, tc.want, r.ConnectTimeout)
			if tc.wantNoSteps {
				assert.NotContains(t, rules(r), "connect")
				return
			}
			c := r.Steps[len(r.Steps)-1]
			assert.Equal(t, "connect", c.Rule)
			assert.Equal(t, tc.want, c.Value)
			assert.Contains(t, c.Reason, tc.wantInStep)
			assert.Contains(t, c.Reason, "1 to 3 round trips")
		})
	}
}

func TestRecommendWarnings(t *testing.T) {
	censoredLow := func(t *testing.T) *histogram.Latency {
		h := hist(t, logSpread(20000, ms, s))
		for _, d := range linSpread(30, 100*ms, 200*ms) {
			require.True(t, h.RecordCensored(d))
		}
		return h
	}
	outOfRange := func(t *testing.T) *histogram.Latency {
		h := hist(t, logSpread(20000, ms, s))
		require.False(t, h.Record(-ms))
		require.False(t, h.Record(25*time.Hour))
		require.False(t, h.Record(26*time.Hour))
		return h
	}
	tests := []struct {
		name       string
		h          func(t *testing.T) *histogram.Latency
		f          float64
		want       []string // exact warnings, in order
		lowerBound bool
		codes      []finding.Code // the findings' codes, in order
		fields     finding.Fields // the first finding's fields
	}{
		{"enough samples", func(t *testing.T) *histogram.Latency { return hist(t, logSpread(20000, ms, s)) }, 0.001, nil, false, nil, nil},
		{
			"few samples above p99.9", func(t *testing.T) *histogram.Latency { return hist(t, logSpread(2000, ms, s)) }, 0.001,
			// Rank 1998 of 2000; the upper rank 1998 + 1.96 x 1.41 + 1 lies beyond 2000.
			[]string{"only 2 calls lie above p99.9; the true p99.9 is between 983ms and beyond the largest sample (95 % confidence)"}, false,
			[]finding.Code{finding.FewAbove},
			finding.Fields{"quantile": 0.999, "samples_above": int64(2), "low_seconds": 0.983039, "high_seconds": nil, "confidence": 0.95},
		},
		{
			"few samples above p99 with a known upper bound", func(t *testing.T) *histogram.Latency { return hist(t, logSpread(800, ms, s)) }, 0.01,
			[]string{"only 8 calls lie above p99; the true p99 is between 886ms and 992ms (95 % confidence)"}, false,
			[]finding.Code{finding.FewAbove}, nil,
		},
		{
			"fewer calls than 1/f", func(t *testing.T) *histogram.Latency { return hist(t, logSpread(500, ms, s)) }, 0.001,
			[]string{
				"only 500 calls: fewer than needed to see one in 1,000, so p99.9 is at best the largest sample",
				"no call lies above p99.9; the true p99.9 is between 973ms and beyond the largest sample (95 % confidence)",
			}, false,
			[]finding.Code{finding.FewSamples, finding.FewAbove},
			finding.Fields{"samples": int64(500), "one_in": int64(1000), "quantile": 0.999},
		},
		{
			"censored below the quantile", censoredLow, 0.001,
			[]string{
				"the true p99.9 is at least 993ms, not measured: censored calls (timeouts) lie at or below it, and they took at least their recorded time, maybe longer; measure without that timeout (or with a longer one) to see the tail",
				"30 calls (0.15 %) were censored, cut off because they were slow (a timeout, a 504, an nginx 499): they are kept as lower bounds, each at least as long as recorded",
			}, true,
			[]finding.Code{finding.LowerBound, finding.Censored}, nil,
		},
		{
			"out of range", outOfRange, 0.001,
			[]string{"3 samples were not recorded, being out of the histogram's range: 1 negative and 2 longer than 24h"}, false,
			[]finding.Code{finding.OutOfRange},
			finding.Fields{"samples": int64(3), "negative": int64(1), "too_long": int64(2), "highest_seconds": 86400.0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := recommend.DefaultOptions()
			o.FalseTimeouts = tc.f
			r, err := recommend.Recommend(tc.h(t), o)
			require.NoError(t, err)
			assert.Equal(t, tc.want, r.Warnings)
			assert.Equal(t, tc.lowerBound, r.LowerBound)
			assert.Equal(t, finding.Messages(r.Findings), r.Warnings, "the warnings are the findings' messages")
			assert.Equal(t, tc.codes, codesOf(r.Findings))
			if tc.fields != nil {
				assert.Equal(t, tc.fields, r.Findings[0].Fields)
			}
		})
	}
}

// TestRecommendPileUp is the censored tail of docs/method.md#3-censoring: a client with a
// 500ms timeout recorded the mixture, so nothing is above 500ms.
func TestRecommendPileUp(t *testing.T) {
	h := hist(t, clamp(mixture(1, 200000), 500*ms))
	r, err := recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	assert.True(t, r.LowerBound, "p99.9 lies in the pile-up: only a lower bound")
	assert.False(t, h.QuantileIsLowerBound(0.999), "nothing was recorded as censored: the pile-up alone tells")
	w := warningWith(r, "the true p99.9 is at least")
	require.NotEmpty(t, w, "warnings: %q", r.Warnings)
	assert.Contains(t, w, "at least 500ms, not measured: it falls into the pile-up at 500ms")
	w = warningWith(r, "looks like an existing timeout")
	require.NotEmpty(t, w, "warnings: %q", r.Warnings)
	// 2 % slow x (800-480)/650 = about 1 % of calls took longer than 500ms.
	assert.Equal(t, "1,971 calls (0.985 %) end at 500ms, the largest value: this looks like an existing timeout of 500ms; latency beyond it is unknown", w)
	assert.Empty(t, warningWith(r, "calls lie above"), "the interval inside a pile-up says nothing")
	assert.Equal(t, []finding.Code{finding.LowerBoundPileUp, finding.CensoredPileUp}, codesOf(r.Findings))
	// The field is the histogram's maximum as it holds it (the top of the
	// bucket of 500ms); the message shows it to 3 digits.
	assert.Equal(t, finding.Fields{"calls": int64(1971), "fraction": 1971 / 200000.0, "at_seconds": 0.500223}, r.Findings[1].Fields)
}

// codesOf returns the findings' codes in order; nil for none.
func codesOf(fs []finding.Finding) []finding.Code {
	var out []finding.Code
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func TestPileUp(t *testing.T) {
	body := linSpread(900, 10*ms, 100*ms)
	tests := []struct {
		name    string
		samples [][]time.Duration
		wantAt  time.Duration // 0: do not check
		wantN   int64
		wantOK  bool
	}{
		{"smooth log tail", [][]time.Duration{logSpread(20000, ms, s)}, 0, 0, false},
		{"100 calls at a 150ms timeout", [][]time.Duration{body, repeat(100, 150*ms)}, 150*ms + 15*us, 100, true},
		{"jitter within 1 % counts", [][]time.Duration{body, linSpread(100, 149*ms, 150*ms)}, 0, 100, true},
		{"4 calls are not a spike", [][]time.Duration{body, repeat(4, 150*ms)}, 0, 4, false},
		{"most calls at the maximum are the body", [][]time.Duration{linSpread(400, 10*ms, 100*ms), repeat(600, 150*ms)}, 0, 600, false},
		// 50 calls at 100ms against 50 in the 9 % below: no spike.
		{"no more than the slope below", [][]time.Duration{linSpread(500, 91*ms, 98*ms), repeat(50, 100*ms)}, 0, 50, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hist(t, tc.samples...)
			at, n, ok := recommend.PileUp(h)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, h.Max(), at)
			if tc.wantAt != 0 {
				assert.Equal(t, tc.wantAt, at, "the maximum, as the histogram's highest equivalent value")
			}
			if tc.wantN != 0 {
				assert.Equal(t, tc.wantN, n)
			}
		})
	}

	t.Run("empty", func(t *testing.T) {
		_, _, ok := recommend.PileUp(histogram.New())
		assert.False(t, ok)
	})

	// The tuning target of the detector: the mixture of docs/method.md#12-the-worked-example is a smooth
	// tail; the same mixture recorded through a 500ms timeout is not.
	t.Run("the worked example's mixture", func(t *testing.T) {
		_, n, ok := recommend.PileUp(hist(t, mixture(1, 200000)))
		assert.False(t, ok, "%d calls at the maximum", n)
	})
	t.Run("the worked example's mixture through a 500ms timeout", func(t *testing.T) {
		at, n, ok := recommend.PileUp(hist(t, clamp(mixture(1, 200000), 500*ms)))
		assert.True(t, ok)
		assert.InDelta(t, float64(500*ms), float64(at), float64(ms))
		// About 1 % of calls took longer than 500ms: 2 % slow x (800-480)/650.
		assert.InDelta(t, 2000, n, 250)
	})
}

func TestRoundUp(t *testing.T) {
	tests := []struct {
		in, want, step time.Duration
	}{
		{788 * ms, 800 * ms, 50 * ms},
		{412 * ms, 420 * ms, 10 * ms},
		{1050 * ms, 1100 * ms, 100 * ms},
		{5010 * ms, 5500 * ms, 500 * ms},
		{9600 * ms, 10 * s, 500 * ms},
		{23400 * us, 24 * ms, ms},
		{800 * ms, 800 * ms, 50 * ms},
		{ms, ms, 100 * us},
		{ms + 1, 1100 * us, 100 * us},
		{999 * us, ms, 50 * us},
		{950 * us, 950 * us, 50 * us},
		{s, s, 100 * ms},
		{10 * s, 10 * s, s},
		{45 * s, 45 * s, s},
		{45*s + 1, 46 * s, s},
		{time.Minute, time.Minute, 5 * s},
		{61 * s, 65 * s, 5 * s},
		{4999 * ms, 5 * s, 100 * ms},
		{5 * s, 5 * s, 500 * ms},
		{49 * ms, 49 * ms, ms},
		{49*ms + 1, 50 * ms, ms},
		{us, us, us},
		{4300, 5 * us, us}, // 4.3µs: sub-microsecond parts round up to whole µs
		{1, us, us},        // 1ns
		{788 * us, 800 * us, 50 * us},
		{time.Hour, time.Hour, 100 * s},
		{time.Hour + 1, time.Hour + 100*s, 100 * s},
	}
	for _, tc := range tests {
		t.Run(tc.in.String(), func(t *testing.T) {
			got, step := recommend.RoundUp(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.step, step)
			assert.GreaterOrEqual(t, got, tc.in)
			assert.Less(t, got-tc.in, step)
		})
	}
	got, step := recommend.RoundUp(0)
	assert.Equal(t, time.Duration(0), got)
	assert.Equal(t, time.Duration(0), step)
	got, _ = recommend.RoundUp(time.Duration(1<<63 - 1))
	assert.Equal(t, time.Duration(1<<63-1), got, "no overflow")
}

func TestCandidates(t *testing.T) {
	t.Run("log spread", func(t *testing.T) {
		h := hist(t, logSpread(20000, ms, s))
		r, err := recommend.Recommend(h, recommend.DefaultOptions())
		require.NoError(t, err)
		require.Equal(t, s, r.Timeout)
		// 2 x p50 (63ms) -> 100ms ... 2 x 1s -> 2.5s; plus p99 (933ms) -> 950ms.
		assert.Equal(t, []time.Duration{100 * ms, 250 * ms, 500 * ms, 950 * ms, s, 2500 * ms}, recommend.Candidates(h, r))
	})
	t.Run("at least 1ms", func(t *testing.T) {
		h := hist(t, linSpread(10000, 100*us, 300*us))
		r, err := recommend.Recommend(h, recommend.DefaultOptions())
		require.NoError(t, err)
		require.Equal(t, ms, r.Timeout)
		// p99 299µs -> 300µs; the series starts at 1ms and ends at 2.5ms.
		assert.Equal(t, []time.Duration{300 * us, ms, 2500 * us}, recommend.Candidates(h, r))
	})
	t.Run("thinned out", func(t *testing.T) {
		h := hist(t, logSpread(20000, ms, s))
		r := recommend.Recommendation{Timeout: time.Hour}
		got := recommend.Candidates(h, r)
		assert.LessOrEqual(t, len(got), 9)
		assert.True(t, slices.IsSorted(got))
		assert.Equal(t, 100*ms, got[0], "the series keeps its first value")
		assert.Equal(t, 10000*s, got[len(got)-1], "and its last, the first at or above 2 x 1h")
		assert.Contains(t, got, time.Hour)
		assert.Contains(t, got, 950*ms)
	})
	t.Run("empty", func(t *testing.T) {
		assert.Nil(t, recommend.Candidates(histogram.New(), recommend.Recommendation{Timeout: s}))
	})
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{"0.1%", 0.001, ""},
		{"1/1000", 0.001, ""},
		{" 1 / 1000 ", 0.001, ""},
		{"1%", 0.01, ""},
		{" 0.5 % ", 0.005, ""},
		{"99.9%", 0.999, ""},
		{"1e-1%", 0.001, ""},
		// A bare number is read two ways: refused, naming both.
		{"0.1", 0, `"0.1" is ambiguous: write 0.1% for a percentage, or 10% (a fraction of 0.1)`},
		{"0.001", 0, "write 0.001% for a percentage, or 0.1% (a fraction of 0.001)"},
		{"1e-3", 0, "is ambiguous"},
		{"0%", 0, "strictly between 0 % and 100 %"},
		{"0", 0, "strictly between 0 % and 100 %"},
		{"0/10", 0, "strictly between 0 % and 100 %"},
		{"10/10", 0, "strictly between 0 % and 100 %"},
		{"1/0", 0, "not a ratio"},
		{"0.5/10", 0, "not a ratio"},
		{"100%", 0, "strictly between 0 % and 100 %"},
		{"-1%", 0, "strictly between 0 % and 100 %"},
		{"1", 0, "write 1% for a percentage"},
		{"5", 0, "write 5% for a percentage"},
		{"abc", 0, "is not a percentage"},
		{"%", 0, "is not a percentage"},
		{"", 0, "is not a percentage"},
		{"NaN", 0, "is not a percentage"},
		{"0.1%%", 0, "is not a percentage"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := recommend.ParsePercent(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "exactly the float of the decimal")
		})
	}
}

func TestParseNetworkAllowance(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"datacenter", 0, ""},
		{"region", 10 * ms, ""},
		{"internet", 300 * ms, ""},
		{"Mobile", s, ""},
		{"150ms", 150 * ms, ""},
		{"0", 0, ""},
		{"-5ms", 0, "must not be negative"},
		{"lan", 0, "datacenter (0s), region (10ms), internet (300ms), mobile (1s)"},
		{"", 0, "neither a preset"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := recommend.ParseNetworkAllowance(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	var names []string
	for _, p := range recommend.NetworkPresets {
		names = append(names, p.Name)
		assert.NotEmpty(t, p.Why)
	}
	assert.Equal(t, []string{"datacenter", "region", "internet", "mobile"}, names, "nearest first, for --help")
}

// TestRecommendRoundsWithinHistogramPrecision pins a regression: the
// histogram reports the top of a value's bucket (an exact 500ms comes back
// as 500.2ms), and strict rounding then padded a whole step to 550ms for an
// artefact of the histogram. Logs with millisecond resolution hit this often.
func TestRecommendRoundsWithinHistogramPrecision(t *testing.T) {
	// Tight tail: twice a median of 250ms comes out as 500.22ms (the top of
	// 250ms's bucket, doubled); no call lies near 500ms, so it rounds down.
	h := hist(t, repeat(4_000, 100*time.Millisecond), repeat(6_000, 250*time.Millisecond))
	r, err := recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	require.Equal(t, "tight-tail", r.Steps[1].Rule)
	require.Greater(t, r.Steps[1].Value, 500*time.Millisecond)
	assert.Equal(t, 500*time.Millisecond, r.Timeout)

	// Calls recorded in 500ms's bucket (499.712ms to 500.223ms) may lie
	// above 500ms: the histogram cannot tell 500ms from 500.2ms, and a
	// timeout of 500ms could cut off all 1,000 of them (10 %), so the
	// quantile rounds up (issue 29, item 15).
	h = hist(t, linSpread(9_000, 10*time.Millisecond, 400*time.Millisecond), repeat(1_000, 500*time.Millisecond))
	require.Greater(t, h.Quantile(0.999), 500*time.Millisecond, "precondition: the histogram reports above the exact value")
	r, err = recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 550*time.Millisecond, r.Timeout)

	// Bucketed data whose bound is 500ms (a Prometheus le): its calls took
	// at most 500ms, and the quantile is 500ms itself.
	h = histogram.New()
	h.SnapTo([]time.Duration{100 * time.Millisecond, 500 * time.Millisecond})
	h.RecordN(100*time.Millisecond, 9_000)
	h.RecordN(500*time.Millisecond, 1_000)
	r, err = recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, r.Timeout)
	assert.Zero(t, h.CountAbove(r.Timeout))

	// Just beyond the histogram's precision the rule still rounds up.
	h = hist(t, linSpread(9_000, 10*time.Millisecond, 400*time.Millisecond), repeat(1_000, 502*time.Millisecond))
	r, err = recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	assert.Equal(t, 550*time.Millisecond, r.Timeout)

	// Never down past calls: 5 of 1,000 at 1.0009s lie within 0.1 % above
	// 1s, and a timeout of 1s would cut off 0.5 %, five times the share.
	h = hist(t, repeat(995, 10*time.Millisecond), repeat(5, 1000900*time.Microsecond))
	r, err = recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	assert.Greater(t, r.Timeout, time.Second)
	assert.Zero(t, h.CountAbove(r.Timeout))
}

func TestRecommendMeasuredConnectTimes(t *testing.T) {
	h := hist(t, linSpread(10_000, 10*time.Millisecond, 400*time.Millisecond))
	tests := []struct {
		name     string
		connects []time.Duration
		rtt      time.Duration
		want     time.Duration
		contains string
	}{
		// p99.9 of a 1..30ms log spread is about 30ms (the median 5.5ms).
		{"measured", logSpread(10_000, time.Millisecond, 30*time.Millisecond), 0, 30 * time.Millisecond, "p99.9 of 10,000 measured connects is 29.9ms (median 5.48ms"},
		// All connects at 2ms: never below twice the median, 4ms.
		{"tight", repeat(1_000, 2*time.Millisecond), 0, 4 * time.Millisecond, "never below twice the median"},
		// The RTT asks for more (3 x 20ms = 60ms) than the measurements.
		{"rtt larger", repeat(1_000, 2*time.Millisecond), 20 * time.Millisecond, 60 * time.Millisecond, "the larger of the two"},
		// Measured beyond the timeout: capped.
		{"capped", repeat(1_000, 900*time.Millisecond), 0, 410 * time.Millisecond, "capped at the timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := recommend.DefaultOptions()
			o.RTT = tt.rtt
			r, err := recommend.RecommendMeasured(h, recommend.Measured{ConnectTimes: hist(t, tt.connects)}, o)
			require.NoError(t, err)
			require.Equal(t, 410*time.Millisecond, r.Timeout, "precondition")
			assert.Equal(t, tt.want, r.ConnectTimeout)
			last := r.Steps[len(r.Steps)-1]
			assert.Equal(t, "connect", last.Rule)
			assert.Contains(t, last.Reason, tt.contains)
		})
	}
}
