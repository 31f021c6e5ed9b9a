package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// requestAndCall returns trace i's server span of orders (a request,
// 100ms) and orders' client span to payments-db under it, which ends
// callAfter after the request (negative: before it). payments-db is not
// traced: no span of it exists.
func requestAndCall(i int, callAfter time.Duration) (server, client ingest.SpanLink) {
	var trace [16]byte
	trace[0], trace[1], trace[2] = byte(i), byte(i>>8), byte(i>>16)
	start := deadlineBase.Add(time.Duration(i) * time.Second)
	end := start.Add(100 * time.Millisecond)
	server = ingest.SpanLink{TraceID: trace, SpanID: [8]byte{1}, Server: true, Start: start, End: end, Caller: "orders", Callee: "-"}
	client = ingest.SpanLink{TraceID: trace, SpanID: [8]byte{2}, ParentID: [8]byte{1}, Client: true,
		Start: start.Add(time.Millisecond), End: end.Add(callAfter), Caller: "orders", Callee: "payments-db"}
	return server, client
}

func TestOutliveMatcher(t *testing.T) {
	after := []time.Duration{200 * time.Millisecond, -time.Millisecond, 50 * time.Millisecond, time.Millisecond, -30 * time.Millisecond}
	for _, order := range []string{"request first", "call first"} {
		t.Run(order, func(t *testing.T) {
			m := newOutliveMatcher(100, deadlineSkew)
			for i, a := range after {
				s, c := requestAndCall(i, a)
				if order == "call first" {
					m.add(c)
					m.add(s)
				} else {
					m.add(s)
					m.add(c)
				}
			}
			assert.Zero(t, len(m.children.m), "every call matched")
			e := m.edges["orders payments-db"]
			require.NotNil(t, e)
			// 200ms and 50ms are after; 1ms is within the skew allowed.
			assert.EqualValues(t, 5, e.calls)
			assert.EqualValues(t, 2, e.after)
			assert.Equal(t, 200*time.Millisecond, e.max)
			assert.Equal(t, 250*time.Millisecond, e.total)
			fs := m.findings()
			require.Len(t, fs, 1)
			assert.Equal(t, finding.CallOutlivesCaller, fs[0].Code)
			assert.Equal(t, "orders payments-db", fs[0].Fields["edge"])
			assert.EqualValues(t, 2, fs[0].Fields["after_parent"])
			assert.InDelta(t, 0.4, fs[0].Fields["after_parent_fraction"], 1e-12)
			assert.InDelta(t, 0.25, fs[0].Fields["work_after_seconds_total"], 1e-12)
			assert.Equal(t, "2 of orders's calls to payments-db (40 %) ran on after the request of orders they were made for had ended (its server span), by more than the 1ms allowed for clock skew: 250ms of calls nobody waited for, at most 200ms; make the call with the request's context, so that it is cancelled when the request ends, and give it a timeout within what the request has left", fs[0].Message)
		})
	}
}

// A request's several calls each count, those read before the request and
// those after it; a call under no request (a root client span) and a call
// whose parent never comes count in no edge.
func TestOutliveMatcherChildren(t *testing.T) {
	m := newOutliveMatcher(100, deadlineSkew)
	s, c1 := requestAndCall(0, 300*time.Millisecond)
	_, c2 := requestAndCall(0, -20*time.Millisecond)
	_, c3 := requestAndCall(0, 10*time.Millisecond)
	c2.SpanID, c3.SpanID = [8]byte{3}, [8]byte{4}
	root := c1
	root.ParentID, root.TraceID = [8]byte{}, [16]byte{9}
	orphan := c1
	orphan.TraceID = [16]byte{7}
	for _, l := range []ingest.SpanLink{c2, root, orphan, s, c1, c3} {
		m.add(l)
	}
	e := m.edges["orders payments-db"]
	require.NotNil(t, e)
	assert.EqualValues(t, 3, e.calls)
	assert.EqualValues(t, 2, e.after)
	assert.Equal(t, 310*time.Millisecond, e.total)
	assert.Len(t, m.children.m, 1, "the orphan waits for its parent")
}

// Memory is bounded: at most max/2 client spans wait for their parents,
// at most maxChildrenWaiting of one parent; the rest are counted.
func TestOutliveMatcherBounded(t *testing.T) {
	m := newOutliveMatcher(20, deadlineSkew)
	for i := range 50 {
		_, c := requestAndCall(i, time.Second)
		m.add(c)
	}
	assert.Len(t, m.children.m, 10)
	assert.EqualValues(t, 40, m.children.dropped)
	for i := range maxChildrenWaiting + 5 {
		_, c := requestAndCall(1000, time.Second)
		c.SpanID = [8]byte{byte(i), byte(i >> 8), 1}
		m.add(c)
	}
	w, ok := m.children.get(linkKey{trace: [16]byte{1000 & 0xff, 1000 >> 8}, span: [8]byte{1}})
	require.True(t, ok)
	assert.Len(t, w.v, maxChildrenWaiting)
	assert.EqualValues(t, 5, m.overflow)
	s, _ := requestAndCall(1000, 0)
	m.add(s)
	assert.EqualValues(t, maxChildrenWaiting, m.edges["orders payments-db"].after)
	fs := m.findings()
	require.Len(t, fs, 1)
	assert.EqualValues(t, 41+5, fs[0].Fields["unmatched_dropped"], "40 given up for room, 1 for the parent's, 5 over the parent's limit")
}
