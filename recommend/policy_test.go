package recommend_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// domain returns the histogram of the worked example (docs/method.md#12-the-worked-example; p50 20ms,
// p99.9 792ms) and its recommendation (800ms), built once.
var domain = sync.OnceValues(func() (*histogram.Latency, recommend.Recommendation) {
	h := histogram.New()
	for _, d := range mixture(1, 200_000) {
		h.Record(d)
	}
	rec, err := recommend.Recommend(h, recommend.DefaultOptions())
	if err != nil {
		panic(err)
	}
	return h, rec
})

func policyWarning(p recommend.Policy, sub string) string {
	for _, w := range p.Warnings {
		if strings.Contains(w, sub) {
			return w
		}
	}
	return ""
}

func policyRules(p recommend.Policy) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Rule)
	}
	return out
}

func TestNewPolicyRules(t *testing.T) {
	h, rec := domain()
	require.Equal(t, 800*ms, rec.Timeout, "precondition: the worked example recommends 800ms")
	all := []string{"per-try", "attempts", "backoff", "min-useful-try", "hang", "fast-failures", "static"}
	idem := []string{"connect-failure", "refused-stream", "timeout", "408", "429", "502", "503", "504"}
	never := []string{"connect-failure", "refused-stream"}

	tests := []struct {
		name          string
		o             recommend.PolicyOptions
		wantAttempts  int
		wantPerTry    time.Duration
		wantWorstCase time.Duration
		wantStatic    int
		wantHang      int           // attempts sent in a hang
		wantHangWait  time.Duration // what the caller waits then
		wantRetryOn   []string
		wantRules     []string
		wantWarnings  []string // substrings, each in some warning
		noWarnings    []string // substrings in no warning
	}{
		{
			name:         "defaults: one attempt at the recommendation, nothing retried but never-sent failures",
			o:            recommend.PolicyOptions{},
			wantAttempts: 1, wantPerTry: 800 * ms, wantWorstCase: 800 * ms, wantStatic: 1, wantHang: 1, wantHangWait: 800 * ms,
			wantRetryOn: never,
			wantRules:   []string{"per-try"},
			noWarnings:  []string{"idempotent", "budget", "deadline"},
		},
		{
			name: "three attempts and a 3s deadline: all three time out in a hang, within it",
			o:    recommend.PolicyOptions{Deadline: 3 * s, Attempts: 3, Idempotent: true, RetryBudget: 0.1},
			// 800 + 12.5 + 800 + 25 + 800 = 2,437.5ms with the mean waits.
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2437500 * us,
			wantRetryOn: idem,
			wantRules:   all,
			noWarnings:  []string{"idempotent", "budget"},
		},
		{
			name: "a 2s deadline: the third attempt gets only what is left (the method's lab, docs/method.md#attempts-inside-a-deadline)",
			o:    recommend.PolicyOptions{Deadline: 2 * s, Attempts: 3, Idempotent: true, RetryBudget: 0.1},
			// Attempt 3 starts at 1,637.5ms and gets the 362.5ms left;
			// statically 2 x 800 + 250 = 1.85s fits, 3 x 800 + 500 does not.
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2 * s, wantStatic: 2, wantHang: 3, wantHangWait: 2 * s,
			wantRetryOn:  idem,
			wantRules:    all,
			wantWarnings: []string{},
		},
		{
			name: "the README's 1s deadline allows all 3 attempts; a hang sends 2 and waits the deadline",
			o:    recommend.PolicyOptions{Deadline: s, Attempts: 3, Idempotent: true, RetryBudget: 0.1},
			// Attempt 2 at 812.5ms gets the 187.5ms left; attempt 3 would
			// start with less than 40.5ms left.
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: s, wantStatic: 1, wantHang: 2, wantHangWait: s,
			wantRetryOn: idem,
			wantRules:   all,
			noWarnings:  []string{"exceeds the deadline", "idempotent", "do not fit"},
		},
		{
			name:         "a deadline below the timeout lowers the per-try timeout to it; a hang sends one attempt",
			o:            recommend.PolicyOptions{Deadline: 500 * ms, Attempts: 3, Idempotent: true, RetryBudget: 0.1},
			wantAttempts: 3, wantPerTry: 500 * ms, wantWorstCase: 500 * ms, wantStatic: 1, wantHang: 1, wantHangWait: 500 * ms,
			wantRetryOn: idem,
			wantRules:   []string{"per-try", "deadline", "attempts", "backoff", "min-useful-try", "hang", "fast-failures", "static"},
			wantWarnings: []string{
				"the recommended timeout of 800ms exceeds the deadline of 500ms: the per-try timeout is lowered to 500ms, which cuts off at most " + human.Percent(h.FractionAbove(500*ms)),
			},
		},
		{
			name:         "one attempt and a deadline below the timeout",
			o:            recommend.PolicyOptions{Deadline: 250 * ms},
			wantAttempts: 1, wantPerTry: 250 * ms, wantWorstCase: 250 * ms, wantStatic: 1, wantHang: 1, wantHangWait: 250 * ms,
			wantRetryOn:  never,
			wantRules:    []string{"per-try", "deadline", "min-useful-try", "hang"},
			wantWarnings: []string{"cuts off at most 1.74 % of calls instead of 0.069 %"},
			noWarnings:   []string{"idempotent", "budget", "do not fit"},
		},
		{
			name:         "a call that is not idempotent retries only never-sent failures; a hang is one attempt",
			o:            recommend.PolicyOptions{Deadline: 3 * s, Attempts: 3, RetryBudget: 0.1},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 1, wantHangWait: 800 * ms,
			wantRetryOn:  never,
			wantRules:    all,
			wantWarnings: []string{"not marked idempotent (--idempotent), so only failures that prove the request was never sent are retried (connect-failure, refused-stream)", "RFC 9110 section 9.2.2"},
		},
		{
			name:         "--retry-on widens a call that is not idempotent, with a warning naming RFC 9110",
			o:            recommend.PolicyOptions{Deadline: 3 * s, Attempts: 3, RetryBudget: 0.1, RetryOn: []string{"connect-failure", "503", "timeout"}},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2437500 * us,
			wantRetryOn:  []string{"connect-failure", "timeout", "503"},
			wantRules:    all,
			wantWarnings: []string{"--retry-on timeout, 503 on a call that is not idempotent", "RFC 9110 section 9.2.2"},
		},
		{
			name:         "a POST group is not idempotent, whatever --idempotent says",
			o:            recommend.PolicyOptions{Deadline: 3 * s, Attempts: 3, Idempotent: true, Method: "POST", RetryBudget: 0.1},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 1, wantHangWait: 800 * ms,
			wantRetryOn:  never,
			wantRules:    all,
			wantWarnings: []string{"POST is not idempotent, so the group is not treated as idempotent despite --idempotent", "POST is not idempotent, so only failures"},
		},
		{
			name:         "a GET group is idempotent without --idempotent",
			o:            recommend.PolicyOptions{Deadline: 3 * s, Attempts: 3, Method: "get", RetryBudget: 0.1},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2437500 * us,
			wantRetryOn: idem,
			wantRules:   all,
			noWarnings:  []string{"idempotent"},
		},
		{
			name:         "POST declared idempotent (idempotency keys) by --idempotent-methods",
			o:            recommend.PolicyOptions{Attempts: 2, Method: "POST", IdempotentMethods: []string{"get", "POST"}, RetryBudget: 0.1},
			wantAttempts: 2, wantPerTry: 800 * ms, wantWorstCase: 1850 * ms, wantStatic: 2, wantHang: 2, wantHangWait: 1612500 * us,
			wantRetryOn: idem,
			wantRules:   []string{"per-try", "attempts", "backoff", "hang", "fast-failures"},
			noWarnings:  []string{"idempotent"},
		},
		{
			name: "ten attempts asked in 200ms: the waits leave room for three",
			o:    recommend.PolicyOptions{Deadline: 200 * ms, Attempts: 10, Idempotent: true, RetryBudget: 0.1},
			// Waits at most 25, 50, 100ms: 75ms + 40.5ms fits, 175ms + 40.5ms does not.
			wantAttempts: 3, wantPerTry: 200 * ms, wantWorstCase: 200 * ms, wantStatic: 1, wantHang: 1, wantHangWait: 200 * ms,
			wantRetryOn: idem,
			wantRules:   []string{"per-try", "deadline", "attempts", "backoff", "min-useful-try", "hang", "fast-failures", "static"},
		},
		{
			name:         "no retry budget with retries warns about the load in an outage",
			o:            recommend.PolicyOptions{Attempts: 3, Idempotent: true},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2437500 * us,
			wantRetryOn:  idem,
			wantRules:    []string{"per-try", "attempts", "backoff", "hang", "fast-failures"},
			wantWarnings: []string{"no retry budget: during an outage 3 attempts per request cost 3 x the load"},
		},
		{
			name:         "3 attempts at 3 layers amplify 27 times",
			o:            recommend.PolicyOptions{Attempts: 3, Layers: 3, Idempotent: true, RetryBudget: 0.1},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2437500 * us,
			wantRetryOn:  idem,
			wantRules:    []string{"per-try", "attempts", "backoff", "hang", "fast-failures"},
			wantWarnings: []string{"up to 27 calls to the bottom layer", "retry at one layer, the others fail fast"},
		},
		{
			name:         "3 attempts at 2 layers (9) warn: more than one layer's attempts",
			o:            recommend.PolicyOptions{Attempts: 3, Layers: 2, Idempotent: true, RetryBudget: 0.1},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2900 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2437500 * us,
			wantRetryOn:  idem,
			wantRules:    []string{"per-try", "attempts", "backoff", "hang", "fast-failures"},
			wantWarnings: []string{"3 attempts at each of 2 layers send up to 9 calls"},
		},
		{
			name:         "500 may be retried, with a warning; refused connections are not on the list",
			o:            recommend.PolicyOptions{Attempts: 2, Idempotent: true, RetryBudget: 0.1, RetryOn: []string{"500", " 503", "TIMEOUT", "503"}},
			wantAttempts: 2, wantPerTry: 800 * ms, wantWorstCase: 1850 * ms, wantStatic: 2, wantHang: 2, wantHangWait: 1612500 * us,
			wantRetryOn:  []string{"timeout", "500", "503"},
			wantRules:    []string{"per-try", "attempts", "backoff", "hang", "fast-failures"},
			wantWarnings: []string{"500 is retried: a deterministic bug"},
		},
		{
			name:         "a small backoff cap fits three attempts statically in 2.5s",
			o:            recommend.PolicyOptions{Deadline: 2500 * ms, Attempts: 3, Idempotent: true, RetryBudget: 0.1, BackoffBase: 10 * ms, BackoffCap: 50 * ms},
			wantAttempts: 3, wantPerTry: 800 * ms, wantWorstCase: 2500 * ms, wantStatic: 3, wantHang: 3, wantHangWait: 2415 * ms,
			wantRetryOn: idem,
			wantRules:   all,
			noWarnings:  []string{"do not fit"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := recommend.NewPolicy(h, rec, tt.o)
			require.NoError(t, err)
			assert.Equal(t, tt.wantAttempts, p.Attempts, "attempts")
			assert.Equal(t, max(tt.o.Attempts, 1), p.RequestedAttempts)
			assert.Equal(t, tt.wantPerTry, p.PerTryTimeout, "per-try timeout")
			assert.Equal(t, tt.wantWorstCase, p.WorstCase, "worst case")
			assert.Equal(t, tt.wantStatic, p.StaticAttempts, "static attempts")
			assert.Equal(t, tt.wantHang, p.HangAttempts, "attempts in a hang")
			assert.Equal(t, tt.wantHangWait, p.HangWait, "wait in a hang")
			assert.Equal(t, tt.wantRetryOn, p.RetryOn, "retry on")
			assert.Equal(t, tt.wantRules, policyRules(p), "steps")
			assert.Equal(t, h.FractionAbove(p.PerTryTimeout), p.CutOff)
			assert.Equal(t, int(math.Pow(float64(p.Attempts), float64(p.Layers))), p.Amplification)
			for _, w := range tt.wantWarnings {
				assert.NotEmpty(t, policyWarning(p, w), "no warning contains %q in %q", w, p.Warnings)
			}
			for _, w := range tt.noWarnings {
				assert.Empty(t, policyWarning(p, w), "unexpected warning with %q", w)
			}
		})
	}
}

// TestNewPolicyFindings: each warning of a policy carries its code and
// numbers, and the warnings are the findings' messages.
func TestNewPolicyFindings(t *testing.T) {
	h, rec := domain()
	for _, tt := range []struct {
		name   string
		o      recommend.PolicyOptions
		codes  []finding.Code
		fields finding.Fields // of the first finding
	}{
		{"one attempt", recommend.PolicyOptions{}, nil, nil},
		{"deadline below the timeout", recommend.PolicyOptions{Deadline: 250 * ms, Idempotent: true},
			[]finding.Code{finding.TimeoutAboveDeadline},
			finding.Fields{"timeout_seconds": 0.8, "deadline_seconds": 0.25, "per_try_timeout_seconds": 0.25,
				"cut_off_fraction": h.FractionAbove(250 * ms), "recommended_cut_off_fraction": h.FractionAbove(rec.Timeout)}},
		{"not idempotent", recommend.PolicyOptions{Attempts: 3, RetryBudget: 0.1},
			[]finding.Code{finding.RetryNeverSentOnly},
			finding.Fields{"method": nil, "retry_on": []string{"connect-failure", "refused-stream"}}},
		{"POST despite --idempotent", recommend.PolicyOptions{Attempts: 2, Idempotent: true, Method: "POST", RetryBudget: 0.1},
			[]finding.Code{finding.MethodNotIdempotent, finding.RetryNeverSentOnly}, finding.Fields{"method": "POST"}},
		{"layers, 500 and no budget", recommend.PolicyOptions{Attempts: 3, Idempotent: true, Layers: 3, RetryOn: []string{"timeout", "500"}},
			[]finding.Code{finding.Retry500, finding.Amplification, finding.NoRetryBudget},
			finding.Fields{"attempts": int64(3)}},
		// Issue 29 item 12: 9 calls at the bottom for one request is the
		// amplification to warn about; one layer, or one attempt, is none.
		{"2 layers of 3 attempts", recommend.PolicyOptions{Attempts: 3, Idempotent: true, Layers: 2, RetryBudget: 0.1},
			[]finding.Code{finding.Amplification}, finding.Fields{"attempts": int64(3), "layers": int64(2), "calls": int64(9)}},
		{"2 layers of 2 attempts", recommend.PolicyOptions{Attempts: 2, Idempotent: true, Layers: 2, RetryBudget: 0.1},
			[]finding.Code{finding.Amplification}, finding.Fields{"attempts": int64(2), "layers": int64(2), "calls": int64(4)}},
		{"1 layer of 5 attempts", recommend.PolicyOptions{Attempts: 5, Idempotent: true, Layers: 1, RetryBudget: 0.1}, nil, nil},
		{"3 layers of 1 attempt", recommend.PolicyOptions{Layers: 3}, nil, nil},
		{"hedging a call that is not idempotent", recommend.PolicyOptions{Hedge: true},
			[]finding.Code{finding.HedgeNotIdempotent}, finding.Fields{}},
		// Issue 29 item 9: a PUT is idempotent but not safe; hedging it
		// sends concurrent writes.
		{"hedging a PUT", recommend.PolicyOptions{Hedge: true, Method: "PUT"},
			[]finding.Code{finding.HedgeNotSafe}, finding.Fields{"method": "PUT"}},
		{"hedging a DELETE marked idempotent", recommend.PolicyOptions{Hedge: true, Idempotent: true, Method: "DELETE"},
			[]finding.Code{finding.HedgeNotSafe}, finding.Fields{"method": "DELETE"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := recommend.NewPolicy(h, rec, tt.o)
			require.NoError(t, err)
			var codes []finding.Code
			for _, f := range p.Findings {
				codes = append(codes, f.Code)
			}
			assert.Equal(t, tt.codes, codes)
			assert.Equal(t, finding.Messages(p.Findings), p.Warnings)
			if tt.fields != nil {
				assert.Equal(t, tt.fields, p.Findings[0].Fields)
			}
		})
	}
}

// TestNewPolicyHangStep pins the words of the hang step of the README's
// example: the deadline rule of docs/method.md#attempts-inside-a-deadline with the measured latency.
func TestNewPolicyHangStep(t *testing.T) {
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: 2 * s, Attempts: 3, Idempotent: true})
	require.NoError(t, err)
	var hang, fast string
	for _, st := range p.Steps {
		switch st.Rule {
		case "hang":
			hang = st.Reason
		case "fast-failures":
			fast = st.Reason
		}
	}
	assert.Equal(t, "when the dependency hangs (waits at their mean): attempt 1 at 0s times out at 800ms, attempt 2 at 813ms times out at 1.61s, "+
		"attempt 3 at 1.64s gets only the 363ms left; the caller waits 2s, the deadline", hang)
	assert.Equal(t, "when every attempt fails fast (a refused connection), all 3 are sent, with 37.5ms of backoff between them on average (at most 75ms)", fast)
}

func TestNewPolicyDefaults(t *testing.T) {
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: 2 * s, Attempts: 2})
	require.NoError(t, err)
	assert.Equal(t, recommend.Backoff{Jitter: recommend.JitterFull, Base: 25 * ms, Cap: 250 * ms}, p.Backoff)
	assert.Equal(t, 1, p.Layers)
	// 2 x p50 (20.3ms), the tight-tail floor.
	assert.Equal(t, 2*h.Quantile(0.5), p.MinUsefulTry)
	assert.Equal(t, 12500*us, p.ExpectedBackoff, "one full-jitter wait over [0, 25ms]")
	assert.Equal(t, 25*ms, p.LargestBackoff)

	// Only the base given: the cap is 10 x base, as in Envoy.
	p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{BackoffBase: 100 * ms})
	require.NoError(t, err)
	assert.Equal(t, time.Second, p.Backoff.Cap)

	// A per-try timeout cut below the useful minimum: the minimum follows it.
	p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: 30 * ms})
	require.NoError(t, err)
	assert.Equal(t, 30*ms, p.PerTryTimeout)
	assert.Equal(t, 30*ms, p.MinUsefulTry)
	assert.NotEmpty(t, policyWarning(p, "below 2 x the median"))
}

func TestNewPolicyRejects(t *testing.T) {
	h, rec := domain()
	tests := []struct {
		name string
		o    recommend.PolicyOptions
		want []string
	}{
		{"404", recommend.PolicyOptions{RetryOn: []string{"404"}}, []string{"retry-on 404", "Not Found"}},
		{"401 and 403", recommend.PolicyOptions{RetryOn: []string{"401", "403"}}, []string{"retry-on 401", "retry-on 403", "refresh them once"}},
		{"400 and 422", recommend.PolicyOptions{RetryOn: []string{"400", "422"}}, []string{"400 Bad Request", "422 Unprocessable"}},
		{"other 4xx", recommend.PolicyOptions{RetryOn: []string{"409"}}, []string{"only 408, 425 and 429"}},
		{"not a failure", recommend.PolicyOptions{RetryOn: []string{"200"}}, []string{"200 is not a failure"}},
		{"unknown condition", recommend.PolicyOptions{RetryOn: []string{"reset"}}, []string{`"reset" is neither`}},
		{"negative deadline", recommend.PolicyOptions{Deadline: -s}, []string{"deadline -1s must not be negative"}},
		{"sub-millisecond deadline", recommend.PolicyOptions{Deadline: 500 * us}, []string{"below 1ms"}},
		{"cap below base", recommend.PolicyOptions{BackoffBase: 100 * ms, BackoffCap: 50 * ms}, []string{"cap 50ms is below the base 100ms"}},
		{"jitter", recommend.PolicyOptions{Jitter: "none"}, []string{`unknown jitter "none"`}},
		{"attempts", recommend.PolicyOptions{Attempts: 101}, []string{"attempts 101"}},
		{"budget", recommend.PolicyOptions{RetryBudget: 1.5}, []string{"retry budget 1.5"}},
		{"layers", recommend.PolicyOptions{Layers: -1}, []string{"layers -1"}},
		{"all at once", recommend.PolicyOptions{Attempts: -2, Jitter: "x", RetryOn: []string{"404"}}, []string{"attempts -2", `jitter "x"`, "404"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := recommend.NewPolicy(h, rec, tt.o)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := recommend.NewPolicy(histogram.New(), rec, recommend.PolicyOptions{})
	assert.True(t, errors.Is(err, recommend.ErrNoSamples))
}

func TestParseRetryOn(t *testing.T) {
	got, err := recommend.ParseRetryOn([]string{"504", "Timeout", "", "connect-failure", "429", "504", "599"})
	require.NoError(t, err)
	assert.Equal(t, []string{"connect-failure", "timeout", "429", "504", "599"}, got)
	got, err = recommend.ParseRetryOn([]string{})
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = recommend.ParseRetryOn([]string{"501"})
	assert.ErrorContains(t, err, "does not support the request")
}

// TestNewPolicyProperties: for random histograms and random options the
// policy always fits the deadline in the worst case, makes at least one
// attempt with a positive per-try timeout, and makes as many attempts as
// fit.
func TestNewPolicyProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	logUniform := func(lo, hi time.Duration) time.Duration {
		return time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), r.Float64()))
	}
	jitters := []recommend.Jitter{"", recommend.JitterFull, recommend.JitterEqual, recommend.JitterDecorrelated}
	// 100 histograms x 10 option sets: building histograms and
	// recommending is the slow part, not NewPolicy.
	var h *histogram.Latency
	var rec recommend.Recommendation
	for i := range 1000 {
		if i%10 == 0 {
			h = histogram.New()
			// Medians of 100µs to 1s, tails up to about 60 x the median.
			median := logUniform(100*us, s)
			sigma := 0.1 + 1.1*r.Float64()
			for range 50 + r.IntN(500) {
				h.Record(time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64())))
			}
			ro := recommend.DefaultOptions()
			ro.FalseTimeouts = []float64{0.001, 0.01, 0.05}[r.IntN(3)]
			var err error
			rec, err = recommend.Recommend(h, ro)
			require.NoError(t, err)
		}

		o := recommend.PolicyOptions{
			Attempts:    1 + r.IntN(6),
			Jitter:      jitters[r.IntN(len(jitters))],
			Idempotent:  r.IntN(2) == 0,
			Layers:      r.IntN(4),
			RetryBudget: []float64{0, 0.1, 0.2}[r.IntN(3)],
		}
		if r.IntN(5) > 0 {
			o.Deadline = logUniform(time.Millisecond, 20*s)
		}
		if r.IntN(2) == 0 {
			o.BackoffBase = logUniform(time.Millisecond, 200*ms)
			o.BackoffCap = o.BackoffBase + logUniform(time.Microsecond, 2*s)
		}
		p, err := recommend.NewPolicy(h, rec, o)
		require.NoError(t, err, "case %d: %+v", i, o)

		msg := []any{"case %d: %+v -> %+v", i, o, p}
		require.GreaterOrEqual(t, p.Attempts, 1, msg...)
		require.LessOrEqual(t, p.Attempts, max(o.Attempts, 1), msg...)
		require.Positive(t, p.PerTryTimeout, msg...)
		require.LessOrEqual(t, p.PerTryTimeout, rec.Timeout, msg...)
		worst := recommend.WorstCaseOf(p.Attempts, p.PerTryTimeout, p.Backoff.Cap)
		require.LessOrEqual(t, p.LargestBackoff, time.Duration(p.Attempts-1)*p.Backoff.Cap, msg...)
		require.LessOrEqual(t, p.ExpectedBackoff, p.LargestBackoff, msg...)
		require.GreaterOrEqual(t, p.HangAttempts, 1, msg...)
		require.LessOrEqual(t, p.HangAttempts, p.Attempts, msg...)
		require.LessOrEqual(t, p.StaticAttempts, p.Attempts, msg...)
		require.Equal(t, recommend.WorstCaseOf(p.StaticAttempts, p.PerTryTimeout, p.Backoff.Cap), p.StaticWorstCase, msg...)
		if o.Deadline > 0 {
			require.Equal(t, min(worst, o.Deadline), p.WorstCase, msg...)
			require.LessOrEqual(t, p.HangWait, o.Deadline, msg...)
			require.Equal(t, min(o.Deadline, time.Duration(p.HangAttempts)*p.PerTryTimeout+p.HangBackoff), p.HangWait, msg...)
			require.LessOrEqual(t, p.StaticWorstCase, o.Deadline, msg...)
			if p.PerTryTimeout < rec.Timeout {
				require.Equal(t, o.Deadline, p.PerTryTimeout, msg...)
			}
			// Every allowed attempt is sent when attempts fail fast, and one
			// more would not be.
			if p.Attempts > 1 {
				_, largest := p.Backoff.Totals(p.Attempts - 1)
				require.LessOrEqual(t, largest+p.MinUsefulTry, o.Deadline, msg...)
			}
			if p.Attempts < max(o.Attempts, 1) {
				_, largest := p.Backoff.Totals(p.Attempts)
				require.Greater(t, largest+p.MinUsefulTry, o.Deadline, msg...)
			}
			if p.StaticAttempts < p.Attempts {
				require.Greater(t, recommend.WorstCaseOf(p.StaticAttempts+1, p.PerTryTimeout, p.Backoff.Cap), o.Deadline, msg...)
			}
		} else {
			require.Equal(t, worst, p.WorstCase, msg...)
			require.Equal(t, max(o.Attempts, 1), p.Attempts, msg...)
			require.Equal(t, p.Attempts, p.StaticAttempts, msg...)
			require.Equal(t, rec.Timeout, p.PerTryTimeout, msg...)
		}
		require.Positive(t, p.MinUsefulTry, msg...)
		require.LessOrEqual(t, p.MinUsefulTry, p.PerTryTimeout, msg...)
		if !o.Idempotent {
			for _, c := range p.RetryOn {
				require.Contains(t, recommend.NeverSent, c, msg...)
			}
			require.Equal(t, 1, p.HangAttempts, msg...)
		}
	}
}

// TestBackoffTotalsAgainstDraws checks the expected and largest totals of
// every jitter against 200,000 drawn schedules.
func TestBackoffTotalsAgainstDraws(t *testing.T) {
	tests := []struct {
		b            recommend.Backoff
		retries      int
		wantExpected time.Duration // exact where known, else 0
		wantLargest  time.Duration
	}{
		// Windows 25, 50ms: full jitter waits half of each on average.
		{recommend.Backoff{Jitter: recommend.JitterFull, Base: 25 * ms, Cap: 250 * ms}, 2, 37500 * us, 75 * ms},
		// Windows 25, 50, 100, 200, 250, 250ms.
		{recommend.Backoff{Jitter: recommend.JitterFull, Base: 25 * ms, Cap: 250 * ms}, 6, 437500 * us, 875 * ms},
		// Equal jitter: three quarters of each window.
		{recommend.Backoff{Jitter: recommend.JitterEqual, Base: 25 * ms, Cap: 250 * ms}, 2, 56250 * us, 75 * ms},
		// Decorrelated below the cap: 50ms, then (25 + 3 x 50) / 2 = 87.5ms.
		{recommend.Backoff{Jitter: recommend.JitterDecorrelated, Base: 25 * ms, Cap: 250 * ms}, 2, 137500 * us, 300 * ms},
		// Decorrelated against the cap: no closed form.
		{recommend.Backoff{Jitter: recommend.JitterDecorrelated, Base: 100 * ms, Cap: 250 * ms}, 4, 0, 1000 * ms},
		{recommend.Backoff{Jitter: recommend.JitterDecorrelated, Base: 25 * ms, Cap: 1 * s}, 6, 0, 25*3*ms + 25*9*ms + 25*27*ms + 3*s},
		// Cap equal to the base: every wait is the cap.
		{recommend.Backoff{Jitter: recommend.JitterDecorrelated, Base: 50 * ms, Cap: 50 * ms}, 3, 150 * ms, 150 * ms},
	}
	for _, tt := range tests {
		t.Run(string(tt.b.Jitter), func(t *testing.T) {
			expected, largest := tt.b.Totals(tt.retries)
			assert.Equal(t, tt.wantLargest, largest, "largest")
			if tt.wantExpected > 0 {
				assert.InDelta(t, float64(tt.wantExpected), float64(expected), float64(us), "expected")
			}
			r := rand.New(rand.NewPCG(1, 2))
			const n = 200_000
			var sum float64
			var most time.Duration
			for range n {
				var total, prev time.Duration
				for k := range tt.retries {
					w := tt.b.Wait(r, k, prev)
					if w < 0 || w > tt.b.Cap {
						require.Failf(t, "wait out of range", "retry %d: %v not in [0, %v]", k, w, tt.b.Cap)
					}
					total += w
					prev = w
				}
				sum += float64(total)
				most = max(most, total)
			}
			assert.InEpsilon(t, float64(expected), sum/n, 0.005, "mean of the draws")
			assert.LessOrEqual(t, most, largest)
			assert.GreaterOrEqual(t, most, largest*95/100, "the draws come near the largest total")
		})
	}
}

func TestPolicyHang(t *testing.T) {
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Attempts: 3, Idempotent: true})
	require.NoError(t, err)
	attempts, backoff := p.Hang()
	assert.Equal(t, 3, attempts, "timeouts are retried: a hang runs into every attempt")
	assert.Equal(t, 37500*us, backoff)

	p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{Attempts: 3})
	require.NoError(t, err)
	attempts, backoff = p.Hang()
	assert.Equal(t, 1, attempts, "not idempotent: a timed-out request is not repeated")
	assert.Zero(t, backoff)
}

// TestHedge checks the hedging figures against hedged calls drawn from the
// same histogram: the formula's p99, p99.9 and extra load must match what
// independent draws give.
func TestHedge(t *testing.T) {
	h, rec := domain()
	p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: 2 * s, Attempts: 3, Idempotent: true, Hedge: true})
	require.NoError(t, err)
	hd := p.Hedge
	require.NotNil(t, hd)
	assert.Equal(t, 3, hd.Attempts)
	assert.Equal(t, (h.Quantile(0.95)+ms-1)/ms*ms, hd.Delay, "p95 rounded up to the millisecond")
	assert.Equal(t, h.Quantile(0.99), hd.P99Without)

	sampler := h.Sampler()
	r := rand.New(rand.NewPCG(3, 4))
	const n = 400_000
	lat := histogram.New()
	sent := 0
	for range n {
		best := time.Duration(math.MaxInt64)
		for i := range hd.Attempts {
			at := time.Duration(i) * hd.Delay
			if at >= best {
				break // answered before this request would go out
			}
			sent++
			best = min(best, at+sampler.Sample(r))
		}
		lat.Record(best)
	}
	assert.InDelta(t, float64(sent)/n-1, hd.ExtraLoad, 0.003, "extra requests per call")
	assert.InEpsilon(t, float64(lat.Quantile(0.99)), float64(hd.P99), 0.03, "p99 with hedging")
	assert.InEpsilon(t, float64(lat.Quantile(0.999)), float64(hd.P999), 0.05, "p99.9 with hedging")
	assert.Less(t, hd.P99, hd.P99Without/4, "hedging at p95 cuts a tail of 2 %% of stalls")

	p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{Attempts: 3, Hedge: true})
	require.NoError(t, err)
	assert.Nil(t, p.Hedge, "a call that is not idempotent is never hedged")
	assert.NotEmpty(t, policyWarning(p, "not hedged: the call is not idempotent"))

	p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{Idempotent: true, Hedge: true, HedgeAt: 0.9})
	require.NoError(t, err)
	require.NotNil(t, p.Hedge)
	assert.Equal(t, 2, p.Hedge.Attempts, "one attempt asked: hedging sends at most one more")
	assert.Equal(t, 0.9, p.Hedge.Quantile)

	// Only safe methods are hedged (RFC 9110 section 9.2.1): a hedge sends
	// the request again while the first is still running, which no write
	// survives, idempotent or not.
	for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
		p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{Hedge: true, Method: m})
		require.NoError(t, err)
		assert.NotNil(t, p.Hedge, "%s is safe: hedged", m)
	}
	for _, m := range []string{"PUT", "DELETE", "POST", "PATCH"} {
		p, err = recommend.NewPolicy(h, rec, recommend.PolicyOptions{Hedge: true, Idempotent: true, Method: m, IdempotentMethods: []string{"PUT", "DELETE", "POST", "PATCH"}})
		require.NoError(t, err)
		assert.Nil(t, p.Hedge, "%s writes: never hedged, idempotent or not", m)
		assert.True(t, p.Idempotent, "%s is still retried as idempotent", m)
	}
}

// TestBackoffCumulative: one pass gives every prefix's totals, equal to
// Totals of that many retries, for every jitter.
func TestBackoffCumulative(t *testing.T) {
	for _, b := range []recommend.Backoff{
		{Jitter: recommend.JitterFull, Base: 25 * ms, Cap: 250 * ms},
		{Jitter: recommend.JitterEqual, Base: 10 * ms, Cap: 1 * s},
		{Jitter: recommend.JitterDecorrelated, Base: 25 * ms, Cap: 1 * s},
		{Jitter: recommend.JitterDecorrelated, Base: 50 * ms, Cap: 50 * ms},
	} {
		expected, largest := b.Cumulative(12)
		require.Len(t, expected, 12)
		for k := 1; k <= 12; k++ {
			e, l := b.Totals(k)
			assert.Equal(t, e, expected[k-1], "%s: expected total of %d waits", b.Jitter, k)
			assert.Equal(t, l, largest[k-1], "%s: largest total of %d waits", b.Jitter, k)
		}
	}
}

// BenchmarkNewPolicy fits the worst case the flags allow: 100 attempts of
// decorrelated jitter within a long deadline, where every attempt's mean
// wait comes from the grid of Backoff.Cumulative.
func BenchmarkNewPolicy(b *testing.B) {
	h, rec := domain()
	for _, j := range []recommend.Jitter{recommend.JitterFull, recommend.JitterDecorrelated} {
		b.Run(string(j), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: time.Minute, Attempts: 100, Idempotent: true, Jitter: j, Hedge: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
