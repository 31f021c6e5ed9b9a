package targettest

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

var propertyRuns = flag.Int("snippet.runs", 150, "random reports of the property tests, for each target")

// Runs is how many random reports a property test renders: -snippet.runs,
// 20 under -short.
func Runs() int {
	if testing.Short() {
		return 20
	}
	return *propertyRuns
}

// weirdNames are group names a config language could choke on.
var weirdNames = []string{
	"all", "other", "/users/{id}", "GET /users/{id}", "/users/{id} POST", "/static/*", "DELETE",
	"<script>alert(1)</script>", "/<script>/{id}", "GET /a b c", "/caf\u00e9/\u65e5\u672c/{x}",
	"\U0001F600 emoji", "/%2f//./../x", "/a/../b/.", "/#frag?q=1&x=%zz", "tab\there", "new\nline",
	"nul\x00byte", "bad\xffutf8", "/" + strings.Repeat("long-segment/", 120), strings.Repeat("x", 300),
	"/.*+?()[]{}|^$\\", "2xx", "GET", "/pkg.Service/Method", "/Pkg.V1.Svc/Get_Thing", "'quote\"", "",
	"/users/{id}/posts/{post}", "/{a}", "/*",
}

// ServiceNames are service names a config language could choke on.
var ServiceNames = []string{"", "backend", "my service!", "\u00dcn\u00efcode.svc", "a.b.c", strings.Repeat("s", 300), "-", "42"}

// randDuration is from 1ms to 10 min, log-uniform, with odd sub-millisecond
// parts.
func randDuration(r *rand.Rand) float64 {
	s := math.Exp(math.Log(0.001) + r.Float64()*(math.Log(600)-math.Log(0.001)))
	return s + float64(r.IntN(999_999))*1e-9
}

// RandReport is a random report: 1 to 20 groups of weirdNames (or
// numbered), random timeouts, connect timeouts, bulkheads and policies.
func RandReport(r *rand.Rand) *report.Report {
	n := 1 + r.IntN(20)
	if r.IntN(3) == 0 {
		n = 1
	}
	seen := map[string]bool{}
	rep := &report.Report{}
	for len(rep.Groups) < n {
		name := weirdNames[r.IntN(len(weirdNames))]
		if r.IntN(4) == 0 {
			name = fmt.Sprintf("/r%d/{id}", r.IntN(1000))
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		g := report.Group{Name: name, Samples: int64(r.IntN(1_000_000))}
		g.Recommendation.Quantile = 0.999
		g.Recommendation.BaseSeconds = randDuration(r)
		g.Recommendation.TimeoutSeconds = randDuration(r)
		g.Recommendation.LowerBound = r.IntN(5) == 0
		g.Recommendation.Steps = []report.Step{{Rule: "quantile", Seconds: g.Recommendation.BaseSeconds}, {Rule: "round", Seconds: g.Recommendation.TimeoutSeconds}}
		if r.IntN(2) == 0 {
			c := randDuration(r) / 10
			g.Recommendation.ConnectTimeoutSeconds = &c
		}
		if r.IntN(3) > 0 {
			b := 1 + r.IntN(10000)
			in := float64(b) * r.Float64()
			g.LittlesLaw.Bulkhead, g.LittlesLaw.InFlightPeak = &b, &in
		}
		if r.IntN(4) > 0 {
			g.Policy = randPolicy(r, g.Recommendation.TimeoutSeconds)
		}
		rep.Groups = append(rep.Groups, g)
	}
	return rep
}

func randPolicy(r *rand.Rand, timeout float64) *report.Policy {
	p := &report.Policy{
		RequestedAttempts:    1 + r.IntN(10),
		PerTryTimeoutSeconds: timeout * (0.2 + r.Float64()),
		BackoffBaseSeconds:   randDuration(r) / 100,
		BackoffCapSeconds:    randDuration(r) / 10,
		Jitter:               []string{"full", "equal", "decorrelated", ""}[r.IntN(4)],
		Idempotent:           r.IntN(2) == 0,
	}
	p.Attempts = max(1, p.RequestedAttempts-r.IntN(3))
	switch r.IntN(4) {
	case 0:
		p.BackoffBaseSeconds = 0
	case 1:
		p.BackoffCapSeconds = p.BackoffBaseSeconds / 2 // a cap below the base
	}
	if r.IntN(2) == 0 {
		d := randDuration(r) * 3
		p.DeadlineSeconds = &d
	}
	if r.IntN(2) == 0 {
		p.WorstCaseSeconds = float64(p.Attempts)*p.PerTryTimeoutSeconds + r.Float64()
	}
	if r.IntN(2) == 0 {
		b := []float64{0.0001, 0.0004, 0.1, 0.2, 0.3333, 1, r.Float64()}[r.IntN(7)]
		p.RetryBudget = &b
	}
	for _, c := range []string{"connect-failure", "timeout", "408", "425", "429", "500", "502", "503", "504", "5xx", "bogus"} {
		if r.IntN(2) == 0 {
			p.RetryOn = append(p.RetryOn, c)
		}
	}
	return p
}

// hostileNames are group names with control and bidirectional characters:
// an SGR colour, an OSC 52 clipboard write, an 8-bit CSI, a bidi override, a
// newline that forges a line, DEL.
var hostileNames = []string{"/a\x1b[31mred\x1b[0m/{id}", "/x\x1b]52;c;ZWNobyBoaQ==\x07", "/c\u009b2J", "/admin\u202e/gpj.exe", "/ok\n== evil: 1 calls ==", "/del\x7f"}

// PipelineReport runs the real pipeline on a random histogram and random
// flags: Recommend, NewPolicy and advice.NewGroup for 1 to 4 groups that
// share a deadline (or none) and an idempotency, as groups of one caller do.
func PipelineReport(t *testing.T, r *rand.Rand) (*report.Report, time.Duration, bool) {
	t.Helper()
	idempotent := r.IntN(2) == 0
	var deadline time.Duration
	if r.IntN(4) > 0 {
		deadline = time.Duration(math.Exp(math.Log(20e6) + r.Float64()*(math.Log(60e9)-math.Log(20e6))))
	}
	po := recommend.PolicyOptions{
		Deadline:    deadline,
		Attempts:    1 + r.IntN(6),
		Idempotent:  idempotent,
		Hedge:       r.IntN(3) == 0,
		RetryBudget: []float64{0, 0.1, 0.2}[r.IntN(3)],
		Jitter:      recommend.Jitters[r.IntN(3)],
	}
	if r.IntN(2) == 0 {
		po.BackoffBase = time.Duration(1+r.IntN(200)) * time.Millisecond
		po.BackoffCap = po.BackoffBase * time.Duration(1+r.IntN(20))
	}
	ro := recommend.DefaultOptions()
	if r.IntN(2) == 0 {
		ro.RTT = time.Duration(1+r.IntN(50)) * time.Millisecond
	}
	rep := &report.Report{}
	var inputs []littleslaw.Result
	n := 1 + r.IntN(4)
	for i := range n {
		h := histogram.New()
		median := time.Duration(math.Exp(math.Log(2e5) + r.Float64()*(math.Log(2e9)-math.Log(2e5))))
		sigma := 0.1 + r.Float64()
		for range 200 + r.IntN(2000) {
			h.Record(time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64())))
		}
		rec, err := recommend.Recommend(h, ro)
		require.NoError(t, err)
		pol, err := recommend.NewPolicy(h, rec, po)
		require.NoError(t, err)
		name := fmt.Sprintf("/r%d/{id}", i)
		if r.IntN(5) == 0 {
			name = hostileNames[r.IntN(len(hostileNames))]
		}
		if i == 0 && n > 1 && r.IntN(3) == 0 {
			name = "all"
		}
		rate := 1 + 500*r.Float64()
		ll := littleslaw.Analyze(littleslaw.Input{Rate: rate, Pool: 200, MeanLatency: h.Mean(), P99: h.Quantile(0.99),
			Timeout: pol.PerTryTimeout, Attempts: pol.HangAttempts, Backoff: pol.HangBackoff, Deadline: pol.Deadline})
		inputs = append(inputs, ll)
		rep.Groups = append(rep.Groups, advice.NewGroup(advice.Result{
			Group: &histogram.Group{Name: name, Latency: h, Excluded: map[string]int64{}}, Recommendation: rec,
			Policy: pol, LittlesLaw: ll, RateSource: "flag",
		}))
	}
	rep.SharedPool = advice.NewSharedPool(200, inputs)
	return rep, deadline, idempotent
}
