package analysis

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// mixtureData is the worked example's data, by an absolute path: the
// tests of --suggest change directory.
var mixtureData, _ = filepath.Abs(filepath.Join("..", "testdata", "mixture.csv"))

func checkOptions(configs ...string) CheckOptions {
	o := CheckOptions{Options: Options{Inputs: []string{mixtureData}, Recommend: recommend.DefaultOptions()}}
	for _, c := range configs {
		o.Configs = append(o.Configs, filepath.Join("testdata", "check", c))
	}
	return o
}

func findingsOf(c *report.Check, code finding.Code) []report.CheckFinding {
	var out []report.CheckFinding
	for _, f := range c.Findings {
		if f.Code == string(code) {
			out = append(out, f)
		}
	}
	return out
}

// TestCheckEnvoyTimeout: an Envoy route with timeout 0.25s over the worked
// example cuts off 1.74 % of its calls (the candidates table of the
// README), an error at the config's line; at the recommended 800ms it
// passes.
func TestCheckEnvoyTimeout(t *testing.T) {
	c, err := Check(context.Background(), checkOptions("envoy-250ms.yaml"), nil)
	require.NoError(t, err)
	cut := findingsOf(c, finding.CheckTimeoutCutsOff)
	require.Len(t, cut, 1, "%+v", c.Findings)
	f := cut[0]
	assert.Equal(t, "error", f.Severity)
	assert.Equal(t, filepath.Join("testdata", "check", "envoy-250ms.yaml"), f.File)
	assert.Equal(t, 21, f.Line, "the line of timeout: 0.25s")
	assert.Equal(t, "all", f.Group)
	assert.Equal(t, 0.25, f.Measured["configured_seconds"])
	assert.InDelta(t, 3482.0/200000, f.Measured["cut_off_fraction"], 1e-12, "the exact share above 250ms")
	assert.Less(t, f.Measured["cut_off_low_fraction"], f.Measured["cut_off_fraction"])
	assert.Greater(t, f.Measured["cut_off_high_fraction"], f.Measured["cut_off_fraction"])
	assert.Equal(t, 0.8, f.Measured["recommended_seconds"])
	assert.Contains(t, f.Message, "cuts off 1.74 % of these calls")
	assert.True(t, c.AtLeast("error"))
	assert.Empty(t, c.UnmatchedGroups)

	ok := checkOptions()
	ok.Configs = []string{writeConfig(t, "envoy.yaml", "0.25s", "0.8s")}
	c, err = Check(context.Background(), ok, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckTimeoutCutsOff))
	require.Len(t, findingsOf(c, finding.CheckTimeoutFits), 1)
	assert.False(t, c.AtLeast("error"), "%+v", c.Findings)
}

// TestCheckNginxDefaultHang: a location without proxy_read_timeout runs on
// nginx's 60 s; at 400 calls/s and a pool of 200 a hang exhausts the pool
// 0.5 s in (200 / 400).
func TestCheckNginxDefaultHang(t *testing.T) {
	o := checkOptions("nginx-default.conf")
	o.Rate, o.Pool = 400, 200
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	require.Len(t, findingsOf(c, finding.CheckDefaultTimeout), 1)
	hang := findingsOf(c, finding.CheckHangExhaustsPool)
	require.Len(t, hang, 1, "%+v", c.Findings)
	assert.Equal(t, 6, hang[0].Line, "the location's line: the default has no line of its own")
	assert.Equal(t, 60.0, hang[0].Measured["configured_seconds"])
	assert.InDelta(t, 0.5, hang[0].Measured["seconds_to_exhaustion"], 1e-9)
	assert.InDelta(t, 24000, hang[0].Measured["in_flight_during_hang"], 1e-6)
}

// TestCheckRetryLayers: an Envoy route with 3 attempts in front of a gRPC
// service with 3 makes 9 attempts at the bottom, when --chain says they
// are layers of one chain; without it the two configs may be unrelated,
// and a note says what they would multiply to, no finding.
func TestCheckRetryLayers(t *testing.T) {
	o := checkOptions("envoy-3-attempts.yaml", "grpc-3-attempts.json")
	c, err := Check(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Empty(t, findingsOf(c, finding.CheckRetryLayers), "configs not declared a chain are not multiplied")
	i := slices.IndexFunc(c.NoteFindings, func(f report.Finding) bool { return f.Code == finding.CheckLayersUndeclared })
	require.GreaterOrEqual(t, i, 0, "%+v", c.NoteFindings)
	assert.EqualValues(t, 9, c.NoteFindings[i].Fields["attempts_at_bottom"])
	assert.Equal(t, finding.Info, c.NoteFindings[i].Severity)
	assert.Contains(t, c.NoteFindings[i].Message, "up to 9 attempts at the bottom")
	assert.Equal(t, finding.Messages(c.NoteFindings), c.Notes, "the notes are the note findings' messages, in order")

	o.Chain = true
	c, err = Check(context.Background(), o, nil)
	require.NoError(t, err)
	layers := findingsOf(c, finding.CheckRetryLayers)
	require.Len(t, layers, 1, "%+v", c.Findings)
	assert.EqualValues(t, 9, layers[0].Measured["attempts_at_bottom"])
	assert.EqualValues(t, 2, layers[0].Measured["layers"])
	assert.Contains(t, layers[0].Message, "up to 9 attempts at the bottom")
}

// TestWilson: the Wilson interval of 3,482 in 200,000 at 95 %.
func TestWilson(t *testing.T) {
	lo, hi := wilson(3482, 200000, 0.95)
	assert.InDelta(t, 0.016846, lo, 2e-6) // by hand: 0.017419 -+ 0.000573
	assert.InDelta(t, 0.017993, hi, 2e-6)
	lo, hi = wilson(0, 100, 0.95)
	assert.Equal(t, 0.0, lo)
	assert.InDelta(t, 0.0370, hi, 5e-4, "zero of a hundred still leaves 3.7 % open")
}

// writeConfig writes testdata/check/name with old replaced by new, and
// returns its path.
func writeConfig(t *testing.T, name, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "check", "envoy-250ms.yaml"))
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644))
	return p
}

// TestCheckOwnSnippets: every config the snippet writers produce from the
// data passes check on the same data: nothing above info. With a pool the
// worked example's timeout alone cannot protect (analyze says a hang
// exhausts it 0.5 s in), the targets that carry the bulkhead (Envoy's
// max_requests, Istio's http2MaxRequests, nginx's max_conns, HAProxy's
// maxconn, resilience4j's bulkhead) still pass, and the others report that
// hang and nothing else. A target whose reader and writer disagree on a
// value, or a check that misreads its own advice, fails here.
func TestCheckOwnSnippets(t *testing.T) {
	for _, pool := range []int{0, 200} {
		o := checkOptions()
		o.Rate, o.Pool, o.Recommend.RTT = 400, pool, 2*time.Millisecond
		r, err := Run(context.Background(), o.Options, nil)
		require.NoError(t, err)
		exhausted := r.Groups[0].LittlesLaw.PoolExhausted != nil && *r.Groups[0].LittlesLaw.PoolExhausted
		require.Equal(t, pool > 0, exhausted, "analyze's own verdict on the pool")
		dir := t.TempDir()
		read := 0
		for _, tg := range targets.All {
			if !tg.Reads() {
				continue
			}
			body, err := tg.Render(r, target.Options{})
			require.NoError(t, err, tg.Name)
			p := filepath.Join(dir, tg.File)
			require.NoError(t, os.WriteFile(p, body, 0o644))
			co := o
			co.Configs, co.ConfigFormat = []string{p}, tg.Name
			c, err := Check(context.Background(), co, nil)
			require.NoError(t, err, "%s:\n%s", tg.Name, body)
			read++
			// A target that writes a bulkhead (a limit on the calls in
			// flight, read back as MaxInFlight) keeps a hang from
			// exhausting the pool.
			objs, err := tg.Read(p, body, nil)
			require.NoError(t, err, tg.Name)
			bulkhead := slices.ContainsFunc(objs, func(ob target.Object) bool { return ob.MaxInFlight != nil })
			for _, f := range c.Findings {
				if f.Severity == "info" {
					continue
				}
				assert.True(t, exhausted && !bulkhead && f.Code == string(finding.CheckHangExhaustsPool),
					"pool %d, %s: %s [%s] %s: %s\n%s", pool, tg.Name, f.Severity, f.Code, f.Object, f.Message, body)
			}
			assert.NotEmpty(t, findingsOf(c, finding.CheckTimeoutFits), "%s: its timeout is held against the data and fits", tg.Name)
		}
		assert.GreaterOrEqual(t, read, 8, "every target that reads")
	}
}

// TestCheckAgainstAReport: a saved report is data too: at one of its
// candidates the share is the candidate's, exact; elsewhere its bins
// bracket it, and the finding says how to measure it.
func TestCheckAgainstAReport(t *testing.T) {
	o := checkOptions()
	r, err := Run(context.Background(), o.Options, nil)
	require.NoError(t, err)

	ro := checkOptions("envoy-250ms.yaml")
	ro.Inputs, ro.Report = nil, r
	c, err := Check(context.Background(), ro, nil)
	require.NoError(t, err)
	cut := findingsOf(c, finding.CheckTimeoutCutsOff)
	require.Len(t, cut, 1, "%+v", c.Findings)
	assert.InDelta(t, 3482.0/200000, cut[0].Measured["cut_off_fraction"], 1e-12, "the 250ms candidate's share, exact")
	assert.Empty(t, findingsOf(c, finding.CheckNoBucketAtTimeout))

	ro.Configs = []string{writeConfig(t, "envoy.yaml", "0.25s", "0.3s")}
	c, err = Check(context.Background(), ro, nil)
	require.NoError(t, err)
	// Both ends of the bracket are above 0.1 %: the verdict is known, so
	// no bucket bound is asked for.
	assert.Empty(t, findingsOf(c, finding.CheckNoBucketAtTimeout))
	nb := findingsOf(c, finding.CheckTimeoutCutsOff)
	require.Len(t, nb, 1, "%+v", c.Findings)
	lo, hi := nb[0].Measured["cut_off_low_fraction"].(float64), nb[0].Measured["cut_off_high_fraction"].(float64)
	// Exact: the calls above 300ms of the data themselves.
	c2, err := Check(context.Background(), func() CheckOptions { x := checkOptions(); x.Configs = ro.Configs; return x }(), nil)
	require.NoError(t, err)
	exact := findingsOf(c2, finding.CheckTimeoutCutsOff)[0].Measured["cut_off_fraction"].(float64)
	assert.LessOrEqual(t, lo, exact)
	assert.GreaterOrEqual(t, hi, exact)
	assert.Less(t, hi-lo, 0.005, "the bins are fine: a bracket of less than half a percent")
	require.Len(t, findingsOf(c, finding.CheckTimeoutCutsOff), 1, "both ends above 0.1 %%: it surely cuts off too much")
	assert.Contains(t, nb[0].Message, "cuts off between 1.54 % and 1.63 %")
}
