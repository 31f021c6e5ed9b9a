package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// The roots kept are bounded; a root read twice keeps its earliest start;
// spans with a parent are no roots.
func TestRootStartsBounded(t *testing.T) {
	r := &rootStarts{max: 2, m: map[[16]byte]int64{}}
	at := func(ms int) time.Time { return deadlineBase.Add(time.Duration(ms) * time.Millisecond) }
	r.add(ingest.SpanLink{TraceID: [16]byte{1}, Server: true, Start: at(50)})
	r.add(ingest.SpanLink{TraceID: [16]byte{1}, Client: true, Start: at(20)}) // a root client span of the same trace, earlier
	r.add(ingest.SpanLink{TraceID: [16]byte{2}, ParentID: [8]byte{9}, Server: true, Start: at(0)})
	r.add(ingest.SpanLink{TraceID: [16]byte{3}, Server: true, Start: at(0)})
	r.add(ingest.SpanLink{TraceID: [16]byte{4}, Server: true, Start: at(0)})
	require.Len(t, r.m, 2)
	assert.Equal(t, at(20).UnixNano(), r.m[[16]byte{1}])
	assert.EqualValues(t, 1, r.dropped)
}

// A call is measured from its trace's root; one that starts before the
// root (two hosts' clocks) spent nothing; a call without a root read is
// counted apart; the calls past the deadline are counted as read, those
// with less than a useful try left from the histogram (an upper bound,
// exact here).
func TestBudgetCounter(t *testing.T) {
	roots := &rootStarts{max: 10, m: map[[16]byte]int64{{1}: deadlineBase.UnixNano()}}
	b := &budgetCounter{roots: roots, deadline: time.Second, edges: map[string]*edgeSpent{}, names: edgeNames{}}
	for _, ms := range []int{-5, 300, 899, 901, 1200} {
		b.add(ingest.SpanLink{TraceID: [16]byte{1}, Client: true, Start: deadlineBase.Add(time.Duration(ms) * time.Millisecond), Caller: "a", Callee: "b"})
	}
	b.add(ingest.SpanLink{TraceID: [16]byte{2}, Client: true, Start: deadlineBase, Caller: "a", Callee: "b"})
	b.add(ingest.SpanLink{TraceID: [16]byte{1}, Server: true, Start: deadlineBase, Caller: "b", Callee: "-"})
	e := b.edges["a b"]
	require.NotNil(t, e)
	assert.EqualValues(t, 5, e.spent.Count())
	assert.Equal(t, time.Duration(0), e.spent.Min(), "the call before its root spent nothing")
	assert.Equal(t, 1200*time.Millisecond, e.worst)
	assert.EqualValues(t, 1, e.past)
	assert.EqualValues(t, 1, b.unrooted)

	g := &report.CallGraph{Edges: []report.Edge{{Group: "a b", Caller: "a", Callee: "b", TimeoutSeconds: 0.5}}}
	applyBudgets(g, b, Options{Recommend: recommend.DefaultOptions()}, map[string]float64{"a b": 0.1})
	bu := g.Edges[0].Budget
	require.NotNil(t, bu)
	// 899ms leaves 101ms, a useful try; 901ms leaves 99ms; 1,200ms leaves -200ms.
	assert.EqualValues(t, 2, bu.CallsBelowMinUseful)
	assert.EqualValues(t, 1, bu.CallsPastDeadline)
	assert.InDelta(t, -0.2, bu.LeftSeconds.Worst, 1e-9)
	// p99.9 of 5 calls is the worst: its time left, -200ms, leaves no timeout.
	assert.Zero(t, bu.TimeoutSeconds)
	assert.EqualValues(t, 1, g.CallsUnrooted)
	require.Len(t, g.Findings, 1)
	assert.EqualValues(t, 2, g.Findings[0].Fields["calls_below_min_useful"])
}
