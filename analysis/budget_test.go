package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
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
// counted apart; the calls with less than a useful try left, and past the
// deadline, are counted.
func TestBudgetCounter(t *testing.T) {
	roots := &rootStarts{max: 10, m: map[[16]byte]int64{{1}: deadlineBase.UnixNano()}}
	b := &budgetCounter{roots: roots, deadline: time.Second, useful: map[string]time.Duration{"a b": 100 * time.Millisecond},
		edges: map[string]*edgeSpent{}, names: edgeNames{}}
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
	// 899ms leaves 101ms, a useful try; 901ms leaves 99ms; 1,200ms leaves -200ms.
	assert.EqualValues(t, 2, e.belowUseful)
	assert.EqualValues(t, 1, e.past)
	assert.EqualValues(t, 1, b.unrooted)
}
