package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
)

var deadlineBase = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// callPair returns trace i's client span from frontend to cart, ending
// 100ms after its start, and cart's server span under it ending serverAfter
// after the client span's end (negative: before it).
func callPair(i int, serverAfter time.Duration) (client, server ingest.SpanLink) {
	var trace [16]byte
	trace[0], trace[1], trace[2] = byte(i), byte(i>>8), byte(i>>16)
	start := deadlineBase.Add(time.Duration(i) * time.Second)
	end := start.Add(100 * time.Millisecond)
	client = ingest.SpanLink{TraceID: trace, SpanID: [8]byte{1}, Client: true, Start: start, End: end, Caller: "frontend", Callee: "cart"}
	server = ingest.SpanLink{TraceID: trace, SpanID: [8]byte{2}, ParentID: [8]byte{1}, Server: true,
		Start: start.Add(time.Millisecond), End: end.Add(serverAfter), Caller: "cart", Callee: "-"}
	return client, server
}

func TestDeadlineMatcher(t *testing.T) {
	tests := []struct {
		name        string
		after       []time.Duration // per trace: the server's end after the client's
		serverFirst bool
		max         int
		wantCalls   int64
		wantAfter   int64
		wantMax     time.Duration
		wantTotal   time.Duration
		wantDropped int64
	}{
		{name: "client first", after: []time.Duration{200 * time.Millisecond, -time.Millisecond, 50 * time.Millisecond},
			max: 100, wantCalls: 3, wantAfter: 2, wantMax: 200 * time.Millisecond, wantTotal: 250 * time.Millisecond},
		{name: "server first", after: []time.Duration{200 * time.Millisecond, -time.Millisecond, 50 * time.Millisecond},
			serverFirst: true, max: 100, wantCalls: 3, wantAfter: 2, wantMax: 200 * time.Millisecond, wantTotal: 250 * time.Millisecond},
		{name: "within the clock skew tolerance", after: []time.Duration{time.Millisecond, 999 * time.Microsecond, time.Millisecond + time.Nanosecond},
			max: 100, wantCalls: 3, wantAfter: 1, wantMax: time.Millisecond + time.Nanosecond, wantTotal: time.Millisecond + time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newDeadlineMatcher(tt.max, deadlineSkew)
			for i, a := range tt.after {
				c, s := callPair(i, a)
				if tt.serverFirst {
					c, s = s, c
				}
				m.add(c)
				m.add(s)
			}
			require.Zero(t, len(m.clients)+len(m.servers), "every span matched")
			e := m.edges["frontend cart"]
			require.NotNil(t, e)
			assert.Equal(t, tt.wantCalls, e.calls)
			assert.Equal(t, tt.wantAfter, e.after)
			assert.Equal(t, tt.wantMax, e.max)
			assert.Equal(t, tt.wantTotal, e.total)
			fs := m.findings()
			require.Len(t, fs, 1)
			assert.Equal(t, finding.DeadlineNotPropagated, fs[0].Code)
			assert.Equal(t, "frontend cart", fs[0].Fields["edge"])
			assert.Equal(t, tt.wantAfter, fs[0].Fields["after_parent"])
			assert.InDelta(t, float64(tt.wantAfter)/float64(tt.wantCalls), fs[0].Fields["after_parent_fraction"], 1e-12)
			assert.InDelta(t, tt.wantMax.Seconds(), fs[0].Fields["work_after_seconds_max"], 1e-12)
			assert.EqualValues(t, 0, fs[0].Fields["unmatched_dropped"])
			assert.Contains(t, fs[0].Message, "by more than the 1ms allowed for clock skew")
		})
	}
}

// TestDeadlineMatcherBound: with room for 4 spans waiting, 10 client spans
// whose server spans come only after all of them, last first: clients 0-5
// are given up, 6-9 match, then the servers of 5 to 0 wait without their
// parent and the oldest two of them are given up too: 8 dropped, counted.
func TestDeadlineMatcherBound(t *testing.T) {
	m := newDeadlineMatcher(4, deadlineSkew)
	var servers []ingest.SpanLink
	for i := range 10 {
		c, s := callPair(i, 200*time.Millisecond)
		m.add(c)
		servers = append(servers, s)
		require.LessOrEqual(t, len(m.clients)+len(m.servers), 4)
	}
	assert.EqualValues(t, 6, m.dropped, "clients 0-5")
	for i := len(servers) - 1; i >= 0; i-- {
		m.add(servers[i])
		require.LessOrEqual(t, len(m.clients)+len(m.servers), 4)
	}
	e := m.edges["frontend cart"]
	require.NotNil(t, e)
	assert.EqualValues(t, 4, e.calls, "the last 4 client spans were still waiting")
	assert.EqualValues(t, 4, e.after)
	assert.EqualValues(t, 8, m.dropped, "and the servers of traces 5 and 4")
	assert.Len(t, m.servers, 4, "the servers of traces 3 to 0 still wait")
	fs := m.findings()
	require.Len(t, fs, 1)
	assert.Equal(t, m.dropped, fs[0].Fields["unmatched_dropped"])
	assert.Contains(t, fs[0].Message, "spans were given up unmatched")
}

// TestDeadlineMatcherQueueBounded: spans that match at once leave stale
// keys in the FIFO; it is compacted, never longer than twice the bound.
func TestDeadlineMatcherQueueBounded(t *testing.T) {
	m := newDeadlineMatcher(8, deadlineSkew)
	for i := range 1000 {
		c, s := callPair(i, -time.Millisecond)
		m.add(c)
		m.add(s)
		require.Less(t, len(m.queue)-m.head, 16)
	}
	assert.Zero(t, m.dropped)
	assert.EqualValues(t, 1000, m.edges["frontend cart"].calls)
	assert.Empty(t, m.findings(), "no server span ended after its client span")
}

// TestDeadlineEdgesBounded: edge names come from the data; beyond
// maxDeadlineEdges they are counted together as "other".
func TestDeadlineEdgesBounded(t *testing.T) {
	m := newDeadlineMatcher(10, time.Millisecond)
	for i := range maxDeadlineEdges + 5 {
		m.match(fmt.Sprintf("svc%d db", i), 0, int64(time.Second))
	}
	assert.Len(t, m.edges, maxDeadlineEdges+1)
	require.Contains(t, m.edges, histogram.Other)
	assert.EqualValues(t, 5, m.edges[histogram.Other].after)
}

// TestDeadlineMatcherExpires: client spans whose server never comes (a
// callee without tracing), one a second, are given up once softWaiting
// wait and they ended spanHorizon before the latest: the spans waiting
// stay flat however long the input; a server span within the horizon of
// its client still matches.
func TestDeadlineMatcherExpires(t *testing.T) {
	m := newDeadlineMatcher(maxDeadlineWaiting, deadlineSkew)
	const n = 30_000 // spans a second apart: 8 hours of span time
	horizon := int(spanHorizon / time.Second)
	for i := range n {
		c, _ := callPair(i, 0)
		m.add(c)
		require.LessOrEqual(t, len(m.clients), max(softWaiting+1, horizon+2))
	}
	assert.EqualValues(t, n-softWaiting-1, m.expired, "all but the newest softWaiting+1: expiry runs before a span is added")
	assert.Zero(t, m.dropped)
	// The server of a client that still waits matches; that of one given
	// up does not.
	_, late := callPair(n-1, 5*time.Millisecond)
	m.add(late)
	_, gone := callPair(0, 5*time.Millisecond)
	m.add(gone)
	e := m.edges["frontend cart"]
	require.NotNil(t, e)
	assert.EqualValues(t, 1, e.calls)
	assert.EqualValues(t, 1, e.after)
	fs := m.findings()
	require.Len(t, fs, 1)
	assert.Equal(t, m.expired, fs[0].Fields["unmatched_expired"])
	assert.Contains(t, fs[0].Message, "after waiting 15m of span time")
}
