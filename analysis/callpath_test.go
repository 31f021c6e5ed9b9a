package analysis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// retrySpans is trace i of a chain with retries, as Zipkin v2 JSON: a
// CLIENT span of a to b per attempt under a's root SERVER span (bTries
// of them, all but the last 10 ms, the last 20-39 ms), b's SERVER span
// under the last attempt, and under it b's CLIENT spans to c, cTries of
// them (5-24 ms each), one after another.
func retrySpans(i, bTries, cTries int) []string {
	trace := fmt.Sprintf("%032x", i+1)
	base := deadlineBase.Add(time.Duration(i) * time.Second).UnixMicro()
	span := func(id, parent int, kind, local, remote string, ts, dur int64) string {
		s := fmt.Sprintf(`{"traceId":%q,"id":"%016x","kind":%q,"timestamp":%d,"duration":%d,"localEndpoint":{"serviceName":%q}`,
			trace, id, kind, base+ts, dur, local)
		if parent != 0 {
			s += fmt.Sprintf(`,"parentId":"%016x"`, parent)
		}
		if remote != "" {
			s += fmt.Sprintf(`,"remoteEndpoint":{"serviceName":%q}`, remote)
		}
		return s + "}"
	}
	out := []string{span(1, 0, "SERVER", "a", "", 0, 200_000)}
	at := int64(1000)
	for k := range bTries {
		dur := int64(10_000)
		if k == bTries-1 {
			dur = int64(20_000 + 1000*(i%20))
			out = append(out, span(200, 10+k, "SERVER", "b", "", at+100, dur-200))
			cAt := at + 200
			for j := range cTries {
				cDur := int64(5000 + 1000*((i+j)%20))
				out = append(out, span(300+j, 200, "CLIENT", "b", "c", cAt, cDur))
				cAt += cDur + 10
			}
		}
		out = append(out, span(10+k, 1, "CLIENT", "a", "b", at, dur))
		at += dur + 10
	}
	return out
}

// writeRetrySpans writes traces of retrySpans into a Zipkin file.
func writeRetrySpans(t *testing.T, traces, bTries, cTries int) string {
	t.Helper()
	var spans []string
	for i := range traces {
		spans = append(spans, retrySpans(i, bTries, cTries)...)
	}
	path := filepath.Join(t.TempDir(), "spans.json")
	require.NoError(t, os.WriteFile(path, []byte("[\n"+strings.Join(spans, ",\n")+"\n]\n"), 0o644))
	return path
}

func runSpans(t *testing.T, path string, deadline time.Duration) *report.Report {
	t.Helper()
	o := Options{Inputs: []string{path}, Format: "zipkin", Recommend: recommend.DefaultOptions()}
	o.Policy.Deadline = deadline
	r, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	require.NotNil(t, r.CallGraph, "a b and b c are a call graph")
	return r
}

func graphFindings(fs []report.Finding, c finding.Code) []report.Finding {
	var out []report.Finding
	for _, f := range fs {
		if f.Code == c {
			out = append(out, f)
		}
	}
	return out
}

// TestRetryAmplification: a tries b twice per call and b tries c three
// times: 6 attempts at c per call of a, above the 3 allowed, one finding
// on the path a -> b -> c; without --deadline no budget is held.
func TestRetryAmplification(t *testing.T) {
	r := runSpans(t, writeRetrySpans(t, 200, 2, 3), 0)
	cg := r.CallGraph
	require.Len(t, cg.Edges, 2)
	want := map[string]struct {
		calls, attempts int64
	}{"a b": {400, 2}, "b c": {600, 3}}
	for _, e := range cg.Edges {
		w := want[e.Group]
		assert.Equal(t, w.calls, e.Calls, "%s: every attempt is a sample", e.Group)
		require.NotNil(t, e.AttemptsPerCallMax, e.Group)
		assert.Equal(t, w.attempts, *e.AttemptsPerCallMax, e.Group)
		assert.InDelta(t, float64(w.attempts), *e.AttemptsPerCallMean, 1e-12, e.Group)
	}
	require.Len(t, cg.Paths, 1)
	p := cg.Paths[0]
	assert.Equal(t, []string{"a b", "b c"}, p.Edges)
	require.NotNil(t, p.AttemptsMax)
	assert.InDelta(t, 6, *p.AttemptsMax, 1e-12)
	assert.InDelta(t, 6, *p.AttemptsMean, 1e-12)
	assert.InDelta(t, cg.Edges[0].TimeoutSeconds+cg.Edges[1].TimeoutSeconds, p.TimeoutSecondsTotal, 1e-12)
	assert.Nil(t, p.FitsDeadline, "no --deadline")
	assert.Nil(t, p.DeadlineShares)
	assert.Nil(t, cg.DeadlineSeconds)
	assert.Equal(t, 1, cg.PathsTotal)
	assert.Zero(t, cg.AttemptGroupsClosedEarly)

	fs := graphFindings(cg.Findings, finding.RetryAmplification)
	require.Len(t, fs, 1, "%v", cg.Findings)
	f := fs[0]
	assert.Equal(t, []string{"a b", "b c"}, f.Fields["path"])
	assert.InDelta(t, 6, f.Fields["attempts_max"], 1e-12)
	assert.EqualValues(t, maxAttemptsPerRootCall, f.Fields["attempts_limit"])
	assert.Contains(t, f.Message, "Along a -> b -> c the attempts multiply: a tries b up to 2 times per call (2 on average), b tries c up to 3 times per call (3 on average); that is up to 6 attempts at c per call of a")
	assert.Empty(t, graphFindings(cg.Findings, finding.DeadlineBudget), "no --deadline, no budget")

	var text strings.Builder
	require.NoError(t, report.WriteText(&text, r))
	assert.Contains(t, text.String(), "a -> b -> c")
	assert.Contains(t, text.String(), "[TT-RETRY-AMPLIFICATION]")
}

// TestRetryNoAmplification: one attempt per call everywhere multiplies to
// 1: the path is listed, no finding.
func TestRetryNoAmplification(t *testing.T) {
	cg := runSpans(t, writeRetrySpans(t, 100, 1, 1), 0).CallGraph
	require.Len(t, cg.Paths, 1)
	assert.InDelta(t, 1, *cg.Paths[0].AttemptsMax, 1e-12)
	assert.Empty(t, graphFindings(cg.Findings, finding.RetryAmplification))
}

// TestDeadlineBudget: the chain a -> b -> c needs the sum of its two
// timeouts; a deadline of half that does not hold it (a finding, with the
// sum and the deadline), one of twice that does.
func TestDeadlineBudget(t *testing.T) {
	path := writeRetrySpans(t, 200, 1, 1)
	sum := runSpans(t, path, 0).CallGraph.Paths[0].TimeoutSecondsTotal
	require.Greater(t, sum, 0.0)
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		fits     bool
	}{
		{"does not fit", time.Duration(sum / 2 * float64(time.Second)).Round(time.Millisecond), false},
		{"fits", time.Duration(sum * 2 * float64(time.Second)).Round(time.Millisecond), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := runSpans(t, path, tc.deadline).CallGraph
			require.NotNil(t, cg.DeadlineSeconds)
			assert.InDelta(t, tc.deadline.Seconds(), *cg.DeadlineSeconds, 1e-12)
			require.Len(t, cg.Paths, 1)
			p := cg.Paths[0]
			assert.InDelta(t, sum, p.TimeoutSecondsTotal, 1e-12, "the deadline does not change the recommended timeouts")
			require.NotNil(t, p.FitsDeadline)
			assert.Equal(t, tc.fits, *p.FitsDeadline)
			require.Len(t, p.DeadlineShares, 2)
			assert.InDelta(t, sum/tc.deadline.Seconds(), p.DeadlineShares[0]+p.DeadlineShares[1], 1e-9)
			fs := graphFindings(cg.Findings, finding.DeadlineBudget)
			if tc.fits {
				assert.Empty(t, fs)
				return
			}
			require.Len(t, fs, 1)
			assert.Equal(t, []string{"a b", "b c"}, fs[0].Fields["path"])
			assert.InDelta(t, sum, fs[0].Fields["timeout_seconds_total"], 1e-12)
			assert.InDelta(t, tc.deadline.Seconds(), fs[0].Fields["deadline_seconds"], 1e-12)
			assert.Contains(t, fs[0].Message, "The recommended timeouts along a -> b -> c add up to ")
		})
	}
}

func attemptLink(trace, parent byte, caller, callee string) ingest.SpanLink {
	return ingest.SpanLink{TraceID: [16]byte{trace}, ParentID: [8]byte{parent}, Client: true, Caller: caller, Callee: callee}
}

// TestAttemptCounterBound: with room for 2 calls open, a third closes the
// oldest early (counted), and its late attempt counts as a call of its
// own; server spans are no attempts; the calls open at the end are
// counted whole.
func TestAttemptCounterBound(t *testing.T) {
	c := newAttemptCounter(2)
	c.add(attemptLink(1, 1, "a", "b"))
	c.add(attemptLink(1, 1, "a", "b"))
	c.add(attemptLink(2, 1, "a", "b"))
	c.add(ingest.SpanLink{TraceID: [16]byte{2}, ParentID: [8]byte{1}, Server: true, Caller: "b", Callee: "-"})
	require.Len(t, c.open, 2)
	c.add(attemptLink(3, 1, "a", "b")) // closes trace 1's call, 2 attempts
	assert.EqualValues(t, 1, c.closedEarly)
	c.add(attemptLink(1, 1, "a", "b")) // trace 1 again: a new call; closes trace 2's
	assert.EqualValues(t, 2, c.closedEarly)
	require.LessOrEqual(t, len(c.open), 2)
	c.finish()
	e := c.edges["a b"]
	require.NotNil(t, e)
	assert.EqualValues(t, 4, e.calls, "traces 1, 2, 3 and trace 1's late attempt")
	assert.EqualValues(t, 5, e.attempts)
	assert.EqualValues(t, 2, e.max)
	assert.EqualValues(t, 2, c.closedEarly, "finish closes nothing early")
	assert.Empty(t, c.open)
}

// TestAttemptCounterQueueBounded: the FIFO of open calls never grows
// past twice the bound, whatever the number of calls.
func TestAttemptCounterQueueBounded(t *testing.T) {
	c := newAttemptCounter(8)
	for i := range 1000 {
		c.add(attemptLink(byte(i), byte(i>>8), "a", "b"))
		require.LessOrEqual(t, len(c.queue)-c.head, 8)
		require.LessOrEqual(t, len(c.queue), 16)
	}
	c.finish()
	assert.EqualValues(t, 1000, c.edges["a b"].calls)
	assert.EqualValues(t, 1000-8, c.closedEarly)
}

func edgeOfGraph(group string, timeout float64) report.Edge {
	caller, callee := splitEdge(group)
	return report.Edge{Group: group, Caller: caller, Callee: callee, TimeoutSeconds: timeout}
}

// TestAddPaths: the paths run from the roots (here only a: c is called
// back by d, a cycle broken where it closes), each ending where no new
// service follows; attempts multiply along them, unknown where an edge's
// spans were not read again; with the finding's path trimmed to the last
// edge that retries; findings first; the listing bounded.
func TestAddPaths(t *testing.T) {
	g := &report.CallGraph{Edges: []report.Edge{edgeOfGraph("a b", 0.4), edgeOfGraph("a c", 0.3),
		edgeOfGraph("b d", 0.2), edgeOfGraph("c d", 0.2), edgeOfGraph("d c", 0.1), edgeOfGraph("d e", 0.1)}}
	c := newAttemptCounter(100)
	for i, e := range []struct {
		group string
		tries int
	}{{"a b", 2}, {"a c", 1}, {"b d", 2}, {"c d", 1}, {"d c", 1}} {
		caller, callee := splitEdge(e.group)
		for range e.tries {
			c.add(attemptLink(1, byte(i+1), caller, callee)) // one call per edge, each under a parent of its own
		}
	}
	c.finish()
	addPaths(g, c, time.Second)
	var got []string
	for _, p := range g.Paths {
		got = append(got, strings.Join(p.Edges, ","))
	}
	// a b d c: 4 attempts (a finding), first; then by attempts, budget.
	assert.Equal(t, []string{"a b,b d,d c", "a b,b d,d e", "a c,c d,d e"}, got)
	assert.InDelta(t, 4, *g.Paths[0].AttemptsMax, 1e-12)
	assert.Nil(t, g.Paths[1].AttemptsMax, "d e's spans were not read: unknown")
	assert.InDelta(t, 0.7, g.Paths[0].TimeoutSecondsTotal, 1e-12)
	assert.True(t, *g.Paths[0].FitsDeadline)
	assert.Equal(t, []float64{0.4, 0.2, 0.1}, g.Paths[0].DeadlineShares)
	fs := graphFindings(g.Findings, finding.RetryAmplification)
	require.Len(t, fs, 1)
	assert.Equal(t, []string{"a b", "b d"}, fs[0].Fields["path"], "d c retries nothing: the path ends at b d")
	assert.Contains(t, fs[0].Message, "Along a -> b -> d the attempts multiply")
	assert.Empty(t, graphFindings(g.Findings, finding.DeadlineBudget), "0.7s and 0.6s fit in 1s")

	// A graph that is all one cycle has no root, and no path.
	cyc := &report.CallGraph{Edges: []report.Edge{edgeOfGraph("a b", 1), edgeOfGraph("b a", 1)}}
	addPaths(cyc, newAttemptCounter(1), 0)
	assert.Empty(t, cyc.Paths)
	assert.Zero(t, cyc.PathsTotal)
}

// TestAddPathsBounded: 2^9 = 512 paths through a ladder of nine diamonds
// are walked, MaxListedPaths of them listed.
func TestAddPathsBounded(t *testing.T) {
	g := &report.CallGraph{}
	for i := range 9 {
		for _, mid := range []string{"x", "y"} {
			g.Edges = append(g.Edges, edgeOfGraph(fmt.Sprintf("s%d %s%d", i, mid, i), 0.1), edgeOfGraph(fmt.Sprintf("%s%d s%d", mid, i, i+1), 0.1))
		}
	}
	slices.SortFunc(g.Edges, func(a, b report.Edge) int { return strings.Compare(a.Group, b.Group) })
	addPaths(g, newAttemptCounter(1), 0)
	assert.Equal(t, 512, g.PathsTotal)
	assert.False(t, g.PathsCut)
	assert.Len(t, g.Paths, report.MaxListedPaths)
	for _, p := range g.Paths {
		assert.Len(t, p.Edges, 18)
	}
}

// TestAttemptCounterFlat: calls a second apart, one attempt each, are
// closed as calls once they ended spanHorizon before the latest (not
// early): the open calls stay flat however long the input.
func TestAttemptCounterFlat(t *testing.T) {
	c := newAttemptCounter(maxAttemptGroups)
	const n = 30_000
	for i := range n {
		l, _ := callPair(i, 0)
		c.add(l)
		require.LessOrEqual(t, len(c.open), softWaiting+1)
	}
	assert.Zero(t, c.closedEarly)
	c.finish()
	e := c.edges["frontend cart"]
	require.NotNil(t, e)
	assert.EqualValues(t, n, e.calls)
	assert.EqualValues(t, n, e.attempts)
	assert.EqualValues(t, 1, e.max)
}
