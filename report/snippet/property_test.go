package snippet

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

var propertyRuns = flag.Int("snippet.runs", 150, "random reports in TestPropertyEveryValueAccepted")

// weirdNames are group names a config language could choke on.
var weirdNames = []string{
	"all", "other", "/users/{id}", "GET /users/{id}", "/users/{id} POST", "/static/*", "DELETE",
	"<script>alert(1)</script>", "/<script>/{id}", "GET /a b c", "/caf\u00e9/\u65e5\u672c/{x}",
	"\U0001F600 emoji", "/%2f//./../x", "/a/../b/.", "/#frag?q=1&x=%zz", "tab\there", "new\nline",
	"nul\x00byte", "bad\xffutf8", "/" + strings.Repeat("long-segment/", 120), strings.Repeat("x", 300),
	"/.*+?()[]{}|^$\\", "2xx", "GET", "/pkg.Service/Method", "/Pkg.V1.Svc/Get_Thing", "'quote\"", "",
	"/users/{id}/posts/{post}", "/{a}", "/*",
}

var serviceNames = []string{"", "backend", "my service!", "\u00dcn\u00efcode.svc", "a.b.c", strings.Repeat("s", 300), "-", "42"}

// randDuration is from 1ms to 10 min, log-uniform, with odd sub-millisecond
// parts.
func randDuration(r *rand.Rand) float64 {
	s := math.Exp(math.Log(0.001) + r.Float64()*(math.Log(600)-math.Log(0.001)))
	return s + float64(r.IntN(999_999))*1e-9
}

func randReport(r *rand.Rand) *report.Report {
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

// TestPropertyEveryValueAccepted renders random reports (timeouts from 1ms
// to 10 min with odd sub-millisecond parts, 1 to 10 attempts, caps below
// bases, budgets, bulkheads up to 10,000, hostile group and service names)
// for every target and has each snippet read by its target's validator:
// no snippet may carry a value its target refuses.
func TestPropertyEveryValueAccepted(t *testing.T) {
	runs := *propertyRuns
	if testing.Short() {
		runs = 20
	}
	start := time.Now()
	for i := 0; i < runs; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0x7117))
		rep := randReport(r)
		o := Options{Service: serviceNames[r.IntN(len(serviceNames))], Namespace: []string{"", "prod", "Team A"}[r.IntN(3)]}
		for _, tg := range Targets() {
			body, err := tg.Render(rep, o)
			require.NoError(t, err, "seed %d target %s", seed, tg.Name)
			require.NotEmpty(t, body)
			if v, ok := goValidators[tg.Name]; ok {
				require.NoError(t, v(body), "seed %d target %s:\n%s", seed, tg.Name, body)
			}
			if tg.Comment != "" {
				requireCommentedHeader(t, tg, body, seed)
			}
		}
	}
	t.Logf("%d random reports in %v", runs, time.Since(start).Round(time.Millisecond))
}

// requireCommentedHeader checks that every header line is a comment, so a
// hostile group name cannot break out of it.
func requireCommentedHeader(t *testing.T, tg Target, body []byte, seed uint64) {
	t.Helper()
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" {
			return
		}
		require.True(t, strings.HasPrefix(line, tg.Comment), "seed %d target %s: header line %q is not a comment", seed, tg.Name, line)
	}
}

// TestPropertyTools runs the targets checked by external tools (go vet,
// python3, nginx, HAProxy) on a few random reports: they take a process
// each, so fewer runs.
func TestPropertyTools(t *testing.T) {
	runs := 6
	if testing.Short() {
		runs = 1
	}
	for _, target := range []string{"go", "httpx", "nginx", "haproxy"} {
		t.Run(target, func(t *testing.T) {
			var bodies [][]byte
			for i := 0; i < runs; i++ {
				seed := uint64(1000 + i)
				r := rand.New(rand.NewPCG(seed, 0x7117))
				rep := randReport(r)
				body, err := Render(target, rep, Options{Service: serviceNames[r.IntN(len(serviceNames))]})
				require.NoError(t, err)
				bodies = append(bodies, body)
			}
			switch target {
			case "go":
				require.NoError(t, validateGo(t, bodies...))
			case "httpx":
				require.NoError(t, validatePython(t, bodies...))
			default:
				for i, body := range bodies {
					require.NoError(t, validate(t, target, body), "seed %d:\n%s", 1000+i, body)
				}
			}
		})
	}
}
