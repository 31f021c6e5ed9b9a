package analysis

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

var (
	fixedPointRuns = flag.Int("check.runs", 150, "random reports in TestCheckFixedPoint (CI runs 1,000)")
	fixedPointSeed = flag.Int("check.seed", -1, "run TestCheckFixedPoint on this seed alone, to reproduce a failure")
)

// randomCalls writes a CSV of calls by route and method: each group its own
// lognormal latency with a slow tail, at a few hundred calls a second.
func randomCalls(t *testing.T, r *rand.Rand) string {
	t.Helper()
	paths := []string{"/api/orders", "/api/orders/{id}", "/api/search", "/users", "/a/b/c"}
	methods := []string{"GET", "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"}
	var b strings.Builder
	b.WriteString("timestamp,route,method,status,latency_ms\n")
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	n := 1 + r.IntN(4)
	for range n {
		path, method := paths[r.IntN(len(paths))], methods[r.IntN(len(methods))]
		median := math.Exp(math.Log(2) + r.Float64()*(math.Log(300)-math.Log(2)))
		tail, tailMs := r.Float64()*0.05, median*(5+r.Float64()*50)
		calls := 200 + r.IntN(3000)
		at := start
		for range calls {
			at = at.Add(time.Duration(r.ExpFloat64() * float64(5*time.Millisecond)))
			ms := median * math.Exp(0.5*r.NormFloat64())
			if r.Float64() < tail {
				ms += tailMs * r.Float64()
			}
			fmt.Fprintf(&b, "%s,%s,%s,200,%.3f\n", at.Format(time.RFC3339Nano), path, method, ms)
		}
	}
	p := filepath.Join(t.TempDir(), "calls.csv")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// TestCheckFixedPoint: check of any snippet the tool writes, against the
// data the snippet was written from, finds nothing to warn about, for
// every target that reads configs: analyze, the snippets and check hold
// one model of a call (docs/check.md). The reports are random: groups by
// route and method, deadlines or none, 1 to 4 attempts, idempotent or
// not, hedged or not, with and without a round-trip time.
func TestCheckFixedPoint(t *testing.T) {
	runs := *fixedPointRuns
	if testing.Short() {
		runs = 30
	}
	var readers []target.Target
	for _, tg := range targets.All {
		if tg.Reads() {
			readers = append(readers, tg)
		}
	}
	require.GreaterOrEqual(t, len(readers), 7)
	held, groups, covered := map[string]int{}, map[string]int{}, map[string]int{}
	for i := range runs {
		seed := uint64(i)
		if *fixedPointSeed >= 0 {
			if i > 0 {
				break
			}
			seed = uint64(*fixedPointSeed)
		}
		r := rand.New(rand.NewPCG(seed, 0xc4ec))
		o := Options{Inputs: []string{randomCalls(t, r)}, Recommend: recommend.DefaultOptions()}
		o.Ingest.By = []string{"route", "method"}
		o.Simulate.Requests = 200
		if r.IntN(2) == 0 {
			o.Policy.Deadline = time.Duration(50+r.IntN(3000)) * time.Millisecond
		}
		o.Policy.Attempts = 1 + r.IntN(4)
		o.Policy.Idempotent = r.IntN(2) == 0
		o.Policy.Hedge = r.IntN(4) == 0
		if r.IntN(2) == 0 {
			o.Recommend.RTT = time.Duration(1+r.IntN(50)) * time.Millisecond
		}
		rep, err := Run(context.Background(), o, nil)
		if err != nil {
			continue // a random policy analyze refuses is no snippet
		}
		dir := t.TempDir()
		for _, tg := range readers {
			body, err := tg.Render(rep, target.Options{})
			require.NoError(t, err, "seed %d %s", seed, tg.Name)
			p := filepath.Join(dir, tg.File)
			require.NoError(t, os.WriteFile(p, body, 0o644))
			co := CheckOptions{Options: o, Configs: []string{p}, ConfigFormat: tg.Name}
			c, err := Check(context.Background(), co, nil)
			require.NoError(t, err, "seed %d %s:\n%s", seed, tg.Name, body)
			// Not vacuous: every group of the report meets the object the
			// snippet wrote for it, or nothing above is held against it.
			groups[tg.Name] += len(rep.Groups)
			covered[tg.Name] += len(rep.Groups) - len(c.UnmatchedGroups)
			if len(c.UnmatchedGroups) > 0 {
				t.Errorf("seed %d, %s: no object of the snippet serves %q:\n%s", seed, tg.Name, c.UnmatchedGroups, body)
			}
			failed := false
			for _, f := range c.Findings {
				if f.Severity != "info" {
					t.Errorf("seed %d, %s: %s [%s] %s (%s): %s", seed, tg.Name, f.Severity, f.Code, f.Object, f.Group, f.Message)
					failed = true
				}
				held[tg.Name]++
			}
			if failed {
				t.Logf("seed %d, the %s snippet:\n%s", seed, tg.Name, body)
			}
		}
	}
	t.Logf("%d random reports; findings held per target: %v; groups covered per target: %v of %v", runs, held, covered, groups)
	for _, tg := range readers {
		assert.Positive(t, groups[tg.Name], tg.Name)
		assert.Equal(t, groups[tg.Name], covered[tg.Name], "%s: every group of every report is served by an object of its snippet", tg.Name)
	}
}
