package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// TestPlanChainSimulation: analyze --plan on the lesson's chain (gateway
// -> frontend -> orders -> payments; frontend works 30ms and orders 160ms
// before calling on, payments answers in about 52ms) replays the path
// under faults at payments, every hop retrying (3 attempts each) against
// the plan (only gateway's calls retry). By hand, from the fitted
// policies: the plan's gateway tries 650ms within 1s, a useful try being
// 606ms. Under fast failures an attempt fails after 30 + 160 + 1ms, so a
// second is sent (about 800ms left) and a third only when the waits are
// short (less than 606ms left after about 400ms): at most 3 at payments,
// one per gateway attempt. Under a hang payments' 110ms timer ends each
// attempt 300ms in: the second ends by 625ms, and the third has less than
// a useful try left: 2. Every hop retrying, gateway's first attempt (its
// callees' 3 x 3 tries) takes more than 400ms, leaving less than a useful
// try: at most 9 at payments under fast failures, not 27.
func TestPlanChainSimulation(t *testing.T) {
	tmp := t.TempDir()
	spans := filepath.Join(tmp, "spans.jsonl")
	writeChainSpans(t, spans, nil)
	args := []string{"analyze", spans, "-q", "--deadline", "1s", "--attempts", "3", "--plan", "--idempotent", "--requests", "20000"}
	out, errOut, code := execute(t, "", append(args, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.NotNil(t, r.CallGraph)
	require.NotNil(t, r.CallGraph.Plan)
	sim := r.CallGraph.Plan.Simulation
	require.NotNil(t, sim)
	assert.Equal(t, []string{"gateway frontend", "frontend orders", "orders payments"}, sim.Path)
	assert.Equal(t, "payments", sim.FaultAt)
	assert.Equal(t, 20000, sim.Requests)
	assert.InDelta(t, 0.030, sim.OwnSeconds[0], 0.001)
	assert.InDelta(t, 0.160, sim.OwnSeconds[1], 0.001)
	runs := map[string]report.ChainRun{}
	for _, run := range sim.Runs {
		runs[run.Fault+"/"+run.Policies] = run
	}
	require.Len(t, runs, 8)
	for _, p := range []string{report.ChainEveryHopRetries, report.ChainPlanned} {
		none := runs["none/"+p]
		assert.Equal(t, 1.0, none.SuccessFraction, p)
		assert.Equal(t, []int{1, 1, 1}, none.AttemptsMax, p)
		assert.Zero(t, none.WorkAfterRootSeconds, p)
		for _, f := range []string{"fast failures", "hang", "slowdown x3"} {
			assert.Zero(t, runs[f+"/"+p].SuccessFraction, f+"/"+p)
		}
	}
	fast, fastPlan := runs["fast failures/every_hop_retries"], runs["fast failures/plan"]
	assert.Equal(t, []int{1, 3, 9}, fast.AttemptsMax)
	assert.Equal(t, []int{3, 3, 3}, fastPlan.AttemptsMax)
	// One attempt below the root: the three hops' attempts agree.
	assert.Equal(t, fastPlan.AttemptsMean[0], fastPlan.AttemptsMean[2])
	assert.Greater(t, fast.AttemptsMean[2], 3*fastPlan.AttemptsMean[2])
	hangPlan := runs["hang/plan"]
	assert.Equal(t, []float64{2, 2, 2}, hangPlan.AttemptsMean)
	assert.Zero(t, hangPlan.WorkAfterRootSeconds)
	assert.Equal(t, 3, runs["hang/every_hop_retries"].AttemptsMax[2])

	text, errOut, code := execute(t, "", args...)
	require.Equal(t, 0, code, errOut)
	flat := strings.Join(strings.Fields(text), " ") // paragraphs wrap
	assert.Contains(t, flat, "The chain under a fault at payments (gateway -> frontend -> orders -> payments); under a hang there, every hop retrying sends 3 attempts to payments per request, the plan 2:")
	assert.Regexp(t, `fast failures +every hop retries +0 % +[0-9.]+ \(max 9\)`, text)
	assert.Regexp(t, `hang +the plan +0 % +2 \(max 2\) +0s`, text)
	assert.Contains(t, flat, "20,000 requests of the root replayed (seed 1)")
}

// TestPlanChainSimulationHostileNames: the bottom service's name reaches
// the chain's heading and columns escaped, in every layout.
func TestPlanChainSimulationHostileNames(t *testing.T) {
	tmp := t.TempDir()
	spans := filepath.Join(tmp, "spans.jsonl")
	evil := "pay<b>\x1b[31m"
	writeChainSpans(t, spans, map[string]string{"payments": evil})
	for _, format := range []string{"text", "markdown", "html"} {
		out, errOut, code := execute(t, "", "analyze", spans, "-q", "--deadline", "1s", "--attempts", "3", "--plan", "--requests", "1000", "-o", format)
		require.Equal(t, 0, code, errOut)
		assert.NotContains(t, out, "\x1b", format)
		if format != "text" {
			assert.NotContains(t, out, "pay<b>", format) // markup, read as such
		}
		assert.Contains(t, out, "The chain under a fault at pay", format)
	}
}
