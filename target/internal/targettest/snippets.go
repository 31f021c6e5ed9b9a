package targettest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/advice"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
	"github.com/tunetimeout/tunetimeout/target"
)

// Checks are what a target's own tests know of its snippets: its
// validator, its reading of what a call through a snippet does, and what
// the simulator must find when it replays that. Every target's package
// hands them to Snippets.
type Checks struct {
	// Validate has the target's own parser (a Go library, or its program:
	// go vet, python3, nginx -t, haproxy -c) read snippets, all at once.
	Validate func(t *testing.T, bodies ...[]byte) error
	// Tool says Validate runs a program, a process each: the property
	// tests give it fewer reports, and weird names.
	Tool bool
	// Behaviours reads a snippet back by the target's documented
	// semantics, a Behaviour a route.
	Behaviours func(body []byte) ([]Behaviour, error)
	// Simulation is what replaying the README's example through the
	// target's config finds.
	Simulation Simulation
	// Refuses are mistakes the snippets must not make, which Validate
	// must refuse.
	Refuses []Mistake
	// NoRetryAfter: the target cannot wait for a Retry-After
	// (Plan.NoRetryAfter), so its config retries no 429 and its header
	// says why.
	NoRetryAfter bool
}

// Each is a Validate of a validator that reads one snippet.
func Each(v func(body []byte) error) func(t *testing.T, bodies ...[]byte) error {
	return func(t *testing.T, bodies ...[]byte) error {
		for i, b := range bodies {
			if err := v(b); err != nil {
				return fmt.Errorf("snippet %d: %w", i, err)
			}
		}
		return nil
	}
}

// EachRun is a Validate of a validator that runs a program on one snippet.
func EachRun(v func(t *testing.T, body []byte) error) func(t *testing.T, bodies ...[]byte) error {
	return func(t *testing.T, bodies ...[]byte) error {
		for i, b := range bodies {
			if err := v(t, b); err != nil {
				return fmt.Errorf("snippet %d: %w", i, err)
			}
		}
		return nil
	}
}

// Simulation: the README's example (3 idempotent attempts of 800ms in a
// 1s deadline, a 2ms RTT) replayed through the target's config as the
// target runs it: what counts as an attempt and what bounds the call
// differ, and so do a hang and fast failures.
type Simulation struct {
	Opts target.Options
	// What a hang does: attempts per request and at most how long a
	// caller waits; what 20 % of refused connections leave.
	HangAttempts float64
	HangWait     time.Duration
	FailSuccess  float64
	Why          string
}

// Mistake is a snippet of the policy fixture with one string replaced:
// the last From (the first may be in the header) by To.
type Mistake struct {
	Name, From, To string
	Linkerd        string // target.Options.LinkerdResource
}

// Snippets runs the checks of a target's snippets: the golden fixtures,
// the fuzz seeds and random reports are accepted by its validator;
// read back by its semantics, random pipelines keep the deadline and the
// idempotency rule; the simulator finds what the target does; and the
// validator refuses the mistakes.
func Snippets(t *testing.T, tg target.Target, c Checks) {
	require.NotNil(t, c.Validate, "%s: a validator", tg.Name)
	require.NotNil(t, c.Behaviours, "%s: a reading of the semantics", tg.Name)
	t.Run("fixtures", func(t *testing.T) { fixturesValid(t, tg, c) })
	if c.Tool {
		t.Run("random reports", func(t *testing.T) { propertyTools(t, tg, c) })
		t.Run("weird names", func(t *testing.T) { weirdNamesTools(t, tg, c) })
	} else {
		t.Run("fuzz seeds", func(t *testing.T) { fuzzSeedsValid(t, tg, c) })
		t.Run("random reports", func(t *testing.T) { everyValueAccepted(t, tg, c) })
	}
	t.Run("deadline and idempotency", func(t *testing.T) { deadlineAndIdempotency(t, tg, c) })
	t.Run("simulator", func(t *testing.T) { simulatorFollows(t, tg, c) })
	if len(c.Refuses) > 0 {
		t.Run("validator refuses", func(t *testing.T) { validatorRefuses(t, tg, c) })
	}
	if c.NoRetryAfter {
		t.Run("no 429 without Retry-After", func(t *testing.T) { noRetryAfterNo429(t, tg) })
	}
}

// fixturesValid has the validator read the target's golden snippets.
func fixturesValid(t *testing.T, tg target.Target, c Checks) {
	for _, f := range Fixtures {
		if !f.For(tg) {
			continue
		}
		got, err := tg.Render(LoadReport(t, f.Report), f.Opts)
		require.NoError(t, err)
		require.NoError(t, c.Validate(t, got), "%s %s", f.Name, tg.Name)
	}
}

// FuzzSeeds are the seeds of FuzzFromJSON: the report fixtures and two
// hostile reports.
func FuzzSeeds(tb testing.TB) [][]byte {
	seeds, _ := filepath.Glob(filepath.Join(Root(), "target", "testdata", "*.json"))
	var out [][]byte
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return append(out,
		[]byte(`{"groups":[{"name":"a\u0000\nb\u202e","recommendation":{"timeout_seconds":0.25}}]}`),
		[]byte(`{"groups":[{"name":"GET /x","recommendation":{"timeout_seconds":1e-9},"policy":{"attempts":-1}}]}`))
}

// fuzzSeedsValid: every fuzz seed that renders renders a snippet the
// validator accepts.
func fuzzSeedsValid(t *testing.T, tg target.Target, c Checks) {
	for i, data := range FuzzSeeds(t) {
		r, err := report.ReadJSON(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			continue
		}
		body, err := tg.Render(r, target.Options{Service: "backend"})
		if err != nil {
			continue
		}
		require.NoError(t, c.Validate(t, body), "seed %d: its parser refuses the snippet:\n%s", i, body)
	}
}

// everyValueAccepted renders random reports (timeouts from 1ms to 10 min
// with odd sub-millisecond parts, 1 to 10 attempts, caps below bases,
// budgets, bulkheads up to 10,000, hostile group and service names) and
// has each snippet read by the validator: no snippet may carry a value
// its target refuses.
func everyValueAccepted(t *testing.T, tg target.Target, c Checks) {
	runs := Runs()
	for i := 0; i < runs; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0x7117))
		rep := RandReport(r)
		o := target.Options{Service: ServiceNames[r.IntN(len(ServiceNames))], Namespace: []string{"", "prod", "Team A"}[r.IntN(3)]}
		body, err := tg.Render(rep, o)
		require.NoError(t, err, "seed %d", seed)
		require.NoError(t, c.Validate(t, body), "seed %d:\n%s", seed, body)
	}
}

// propertyTools runs a validator that is a program on a few random
// reports: it takes a process each, so fewer runs.
func propertyTools(t *testing.T, tg target.Target, c Checks) {
	runs := 6
	if testing.Short() {
		runs = 1
	}
	var bodies [][]byte
	for i := 0; i < runs; i++ {
		seed := uint64(1000 + i)
		r := rand.New(rand.NewPCG(seed, 0x7117))
		rep := RandReport(r)
		body, err := tg.Render(rep, target.Options{Service: ServiceNames[r.IntN(len(ServiceNames))]})
		require.NoError(t, err)
		bodies = append(bodies, body)
	}
	require.NoError(t, c.Validate(t, bodies...))
}

// weirdNamesTools runs a validator that is a program on group names a
// config language could choke on.
func weirdNamesTools(t *testing.T, tg target.Target, c Checks) {
	r := LoadReport(t, "policy.json")
	names := []string{`GET /a b/{id}`, `/<script>alert("x")</script>`, "/caf\u00e9/{id}/;#{}", `/back\slash/*`, "checkout", "POST /a'quote"}
	for i := range r.Groups {
		r.Groups[i].Name = names[i%len(names)]
	}
	extra := r.Groups[0]
	extra.Name = names[3]
	r.Groups = append(r.Groups, extra)
	body, err := tg.Render(r, target.Options{Service: "my service!"})
	require.NoError(t, err)
	require.NoError(t, c.Validate(t, body), "%s", body)
}

// deadlineAndIdempotency: for random histograms and flags, the target's
// snippet, read back by its own documented semantics, never keeps a
// caller past the deadline, and a call that is not idempotent is never
// retried after its request was sent.
func deadlineAndIdempotency(t *testing.T, tg target.Target, c Checks) {
	runs := Runs()
	for i := range runs {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xdead))
		rep, deadline, idempotent := PipelineReport(t, r)
		dl := target.CeilMs(deadline.Seconds())
		o := target.Options{GatewayAPIChannel: []string{target.GatewayStandard, target.GatewayExperimental}[r.IntN(2)],
			LinkerdResource: []string{target.LinkerdAuto, target.LinkerdServiceProfile}[r.IntN(2)]}
		body, err := tg.Render(rep, o)
		require.NoError(t, err, "seed %d", seed)
		if !c.Tool {
			require.NoError(t, c.Validate(t, body), "seed %d:\n%s", seed, body)
		}
		bs, err := c.Behaviours(body)
		require.NoError(t, err, "seed %d", seed)
		require.NotEmpty(t, bs, "seed %d", seed)
		for _, b := range bs {
			msg := []any{"seed %d target %s route %s (deadline %v, idempotent %v): %+v\n%s", seed, tg.Name, b.Name, deadline, idempotent, b, body}
			if deadline > 0 && b.Worst > dl {
				// Only one try may outlast the deadline, when the waits
				// before its request run out in full: its own timer is
				// never shortened for them (plan.timers).
				require.LessOrEqual(t, b.PerTry, dl, msg...)
				require.Equal(t, b.Setup+b.PerTry, b.Worst, msg...)
			}
			if !idempotent {
				require.False(t, b.RetrySent, msg...)
				require.Zero(t, b.Hedge, msg...)
			}
			require.GreaterOrEqual(t, b.Attempts, 1, msg...)
		}
	}
}

// simulatorFollows replays the README's example through the target's
// config as the target runs it (Checks.Simulation).
func simulatorFollows(t *testing.T, tg target.Target, c Checks) {
	tc := c.Simulation
	require.NotEmpty(t, tc.Why, "%s: what the simulator finds, and why", tg.Name)
	h := histogram.New()
	for _, d := range mixture.Default().Generate(1, 200_000) {
		h.Record(d)
	}
	ro := recommend.DefaultOptions()
	ro.RTT = 2 * time.Millisecond
	rec, err := recommend.Recommend(h, ro)
	require.NoError(t, err)
	pol, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: time.Second, Attempts: 3, Idempotent: true})
	require.NoError(t, err)
	ll := littleslaw.Analyze(littleslaw.Input{Rate: 400, Pool: 200, MeanLatency: h.Mean(), P99: h.Quantile(0.99),
		Timeout: pol.PerTryTimeout, Attempts: pol.HangAttempts, Backoff: pol.HangBackoff, Deadline: pol.Deadline})
	rep := &report.Report{Groups: []report.Group{advice.NewGroup(advice.Result{
		Group: &histogram.Group{Name: "all", Latency: h, Excluded: map[string]int64{}}, Recommendation: rec, Policy: pol, LittlesLaw: ll})}}
	opts := simulate.Options{Seed: 1, Requests: 20_000}
	s := h.Sampler()

	body, err := tg.Render(rep, tc.Opts)
	require.NoError(t, err)
	bs, err := c.Behaviours(body)
	require.NoError(t, err)
	b := bs[0]
	p := TargetPolicy(b)
	hang := simulate.Replay(s, p, simulate.Condition{Name: "hang", Hang: true}, false, opts)
	fail := simulate.Replay(s, p, simulate.Condition{Name: "fail 20%", FailRate: 0.2}, false, opts)
	assert.InDelta(t, tc.HangAttempts, hang.AttemptsPerRequest, 0.01, "%s: %+v", tc.Why, b)
	assert.LessOrEqual(t, b.Worst, tc.HangWait, tc.Why)
	assert.InDelta(t, tc.FailSuccess, fail.SuccessFraction, 0.01, "%s: %+v", tc.Why, b)
}

// validatorRefuses shows that the validator would catch the mistakes the
// snippets must not make: a snippet with the mistake is refused.
func validatorRefuses(t *testing.T, tg target.Target, c Checks) {
	r := LoadReport(t, "policy.json")
	for _, tc := range c.Refuses {
		t.Run(tc.Name, func(t *testing.T) {
			body, err := tg.Render(r, target.Options{Service: "shop-api", Namespace: "shop", LinkerdResource: tc.Linkerd})
			require.NoError(t, err)
			require.Contains(t, string(body), tc.From)
			// The last occurrence: the first may be in the header.
			i := strings.LastIndex(string(body), tc.From)
			bad := string(body[:i]) + tc.To + string(body[i+len(tc.From):])
			assert.Error(t, c.Validate(t, []byte(bad)))
		})
	}
}

// RawControl returns the first control or bidirectional character of a
// snippet that stands raw in it, 0 for none; a newline, and a tab in a
// target that indents with tabs (Go), are allowed.
func RawControl(tg target.Target, body []byte) rune {
	for _, c := range string(body) {
		if c == '\t' && tg.Language == "go" {
			continue
		}
		if escape.Unsafe(c) && c != '\n' {
			return c
		}
	}
	return 0
}

// noRetryAfterNo429: a 429 asks the client to wait (RFC 6585 section
// 4, its Retry-After RFC 9110 section 10.2.3); a target that cannot wait
// for a Retry-After retries it at once, adding load to a server that asked
// for less, so it does not retry 429 at all, and its header says so.
func noRetryAfterNo429(t *testing.T, tg target.Target) {
	for _, fx := range []string{"deadline.json", "policy.json"} {
		r := LoadReport(t, fx)
		body, err := tg.Render(r, target.Options{})
		require.NoError(t, err)
		var config []string
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), tg.Comment) {
				config = append(config, line)
			}
		}
		assert.NotContains(t, strings.Join(config, "\n"), "429", "%s %s retries 429", fx, tg.Name)
		assert.Contains(t, string(body), "429 is not retried", "%s %s: the header says why", fx, tg.Name)
	}
}
