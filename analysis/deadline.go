package analysis

import (
	"bufio"
	"context"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/report"
)

// The call-graph check "deadline not propagated": a SERVER span whose
// parent is a CLIENT span of the same trace, and that ends after it, is a
// callee that worked on after its caller gave up (its timeout fired, or
// it was cancelled): the caller's deadline did not reach it.
const (
	// deadlineSkew is how much later than its parent a server span must
	// end to count: the two ends come from two hosts' clocks.
	deadlineSkew = time.Millisecond
	// maxDeadlineWaiting bounds the spans waiting for their parent or
	// child, client and server spans together; beyond it the oldest is
	// given up and counted (unmatched_dropped).
	maxDeadlineWaiting = 1_000_000
	// maxDeadlineEdges bounds the edges counted apart; the rest are
	// counted together as histogram.Other.
	maxDeadlineEdges = 10_000
	// spanHorizon and softWaiting keep memory flat as a span input
	// grows: once more than softWaiting spans wait, those that ended more
	// than spanHorizon before the latest end read are given up (expired,
	// counted apart from the dropped): their parent or child, if the input
	// holds one, ends within the same trace, within minutes. An input of
	// one service's spans after another's (files concatenated) may hold
	// the partner later than that: it is then counted as expired.
	spanHorizon = 15 * time.Minute
	softWaiting = 10_000
)

// scanLinks reads the span inputs a second time, for the links between
// spans, and gives each link to every one of checks: the deadline matcher
// (TT-DEADLINE-NOT-PROPAGATED) and the attempts counter (callpath.go) read
// the one pass. Standard input, read once already, is not read again;
// inputs of formats without spans are passed over, and so is the rest of
// an input that cannot be read to its end (the analysis has reported
// why). Client spans are kept as the analysis keeps calls: those that
// start in [From, To).
func scanLinks(ctx context.Context, o Options, stdin io.Reader, checks ...func(ingest.SpanLink)) error {
	inputs, err := o.inputs()
	if err != nil {
		return err
	}
	var n int
	for _, in := range inputs {
		name := in.name
		if in.path == "-" {
			continue
		}
		err := func() error {
			rc, err := open(in, stdin, nil)
			if err != nil {
				return err
			}
			defer rc.Close()
			f, r, err := ingest.Detect(o.Format, bufio.NewReaderSize(rc, 64<<10), name, o.Ingest)
			if err != nil {
				return err
			}
			return ingest.ScanSpanLinks(r, name, f.Name, o.Ingest, func(l ingest.SpanLink) error {
				if n++; n%(1<<16) == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if l.Client && !o.inRange(l.Start) {
					return nil
				}
				for _, c := range checks {
					c(l)
				}
				return nil
			})
		}()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		_ = err // see above: the analysis has read this input and reported its errors
	}
	return nil
}

// callGraphChecks reads the span inputs once more (scanLinks) and adds to
// g what their links say: a TT-DEADLINE-NOT-PROPAGATED finding per edge
// where a callee worked on after its caller's span ended, a
// TT-CALL-OUTLIVES-CALLER finding per edge whose calls ran on after the
// caller's request had ended (outlive.go), and the
// attempts per call and the paths with their findings (addPaths).
func callGraphChecks(ctx context.Context, g *report.CallGraph, o Options, stdin io.Reader) error {
	m := newDeadlineMatcher(maxDeadlineWaiting, deadlineSkew)
	out := newOutliveMatcher(maxDeadlineWaiting, deadlineSkew)
	c := newAttemptCounter(maxAttemptGroups)
	if err := scanLinks(ctx, o, stdin, m.add, out.add, c.add); err != nil {
		return err
	}
	g.Findings = append(g.Findings, m.findings()...)
	g.Findings = append(g.Findings, out.findings()...)
	c.finish()
	addPaths(g, c, o.Policy.Deadline)
	return nil
}

// linkKey is a span by its trace and span id.
type linkKey struct {
	trace [16]byte
	span  [8]byte
}

// waiting is a span waiting for its parent or child: its end (ns since
// the epoch), a client span's edge, and its place in the queue.
type waiting struct {
	end  int64
	edge string
	seq  uint64
}

// queued is a span in the order it began to wait.
type queued struct {
	key    linkKey
	server bool
	seq    uint64
}

// deadlineEdge is what one edge's matched spans came to.
type deadlineEdge struct {
	calls, after int64
	total, max   time.Duration
}

// deadlineMatcher pairs client spans with their servers' spans, in either
// order: client spans by (trace, span id), server spans waiting for their
// parent by (trace, parent id). At most max spans wait in all; a FIFO of
// their keys gives up the oldest when full, counted in dropped.
type deadlineMatcher struct {
	max     int
	skew    time.Duration
	clients map[linkKey]waiting
	servers map[linkKey]waiting
	queue   []queued
	head    int
	seq     uint64
	dropped int64
	// expired counts the spans given up after spanHorizon; latest is the
	// latest end read, ns since the epoch.
	expired int64
	latest  int64
	edges   map[string]*deadlineEdge
	names   edgeNames
}

func newDeadlineMatcher(max int, skew time.Duration) *deadlineMatcher {
	return &deadlineMatcher{max: max, skew: skew, clients: map[linkKey]waiting{}, servers: map[linkKey]waiting{},
		edges: map[string]*deadlineEdge{}, names: edgeNames{}}
}

func (m *deadlineMatcher) add(l ingest.SpanLink) {
	end := l.End.UnixNano()
	switch {
	case l.Client:
		k := linkKey{l.TraceID, l.SpanID}
		edge := m.names.name(l.Caller, l.Callee)
		if s, ok := m.servers[k]; ok {
			delete(m.servers, k)
			m.match(edge, end, s.end)
			return
		}
		m.wait(m.clients, k, false, waiting{end: end, edge: edge})
	case l.Server:
		if l.ParentID == [8]byte{} {
			return // a root: nobody called it with a span
		}
		k := linkKey{l.TraceID, l.ParentID}
		if c, ok := m.clients[k]; ok {
			delete(m.clients, k)
			m.match(c.edge, c.end, end)
			return
		}
		if s, ok := m.servers[k]; ok {
			// Another server span of the same call: the later end counts.
			s.end = max(s.end, end)
			m.servers[k] = s
			return
		}
		m.wait(m.servers, k, true, waiting{end: end})
	}
}

// edgeNames are edge names by caller and callee, at most 10,000 kept.
type edgeNames map[[2]string]string

// name is the name of the edge from caller to callee, "caller callee".
func (n edgeNames) name(caller, callee string) string {
	if name, ok := n[[2]string{caller, callee}]; ok {
		return name
	}
	name := groupname.EdgeName(caller, callee)
	if len(n) < 10_000 {
		n[[2]string{caller, callee}] = name
	}
	return name
}

// wait keeps w in to, making room first: the oldest span waiting is given
// up while maxWaiting wait.
func (m *deadlineMatcher) wait(to map[linkKey]waiting, k linkKey, server bool, w waiting) {
	m.latest = max(m.latest, w.end)
	m.expire()
	if _, ok := to[k]; !ok {
		for len(m.clients)+len(m.servers) >= m.max && m.head < len(m.queue) {
			q := m.queue[m.head]
			m.queue[m.head] = queued{}
			m.head++
			from := m.clients
			if q.server {
				from = m.servers
			}
			if old, ok := from[q.key]; ok && old.seq == q.seq {
				delete(from, q.key)
				m.dropped++
			}
		}
	}
	m.seq++
	w.seq = m.seq
	to[k] = w // a span seen twice replaces itself: its old place in the queue is stale
	m.queue = append(m.queue, queued{key: k, server: server, seq: w.seq})
	// Compacted when stale or given-up entries are half of it: its memory
	// follows the spans waiting, not the spans read.
	if len(m.queue)-m.head >= 2*m.max || m.head >= 1024 && m.head >= len(m.queue)/2 {
		m.compact()
	}
}

// expire gives up, while more than softWaiting spans wait, the oldest
// waiting that ended more than spanHorizon before the latest end read;
// the queue is in the order spans began to wait, which an input in time
// order keeps close to the order of their ends.
func (m *deadlineMatcher) expire() {
	for len(m.clients)+len(m.servers) > softWaiting && m.head < len(m.queue) {
		q := m.queue[m.head]
		from := m.clients
		if q.server {
			from = m.servers
		}
		old, ok := from[q.key]
		if ok && old.seq == q.seq {
			if old.end >= m.latest-int64(spanHorizon) {
				return
			}
			delete(from, q.key)
			m.expired++
		}
		m.queue[m.head] = queued{}
		m.head++
	}
}

// compact drops the queue's given-up head and its stale entries (spans
// matched since, or replaced), so that it holds at most the spans waiting.
func (m *deadlineMatcher) compact() {
	live := m.queue[:0]
	for _, q := range m.queue[m.head:] {
		from := m.clients
		if q.server {
			from = m.servers
		}
		if w, ok := from[q.key]; ok && w.seq == q.seq {
			live = append(live, q)
		}
	}
	clear(m.queue[len(live):])
	m.queue, m.head = live, 0
	// The maps too: a map keeps the room of the keys deleted from it, and
	// spans come and go for as long as the input lasts.
	m.clients, m.servers = rebuilt(m.clients), rebuilt(m.servers)
}

// rebuilt is a copy of m in a map of its own size.
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (m *deadlineMatcher) match(edge string, clientEnd, serverEnd int64) {
	if _, ok := m.edges[edge]; !ok && len(m.edges) >= maxDeadlineEdges {
		// Edge names come from the data: beyond the bound the rest are
		// counted together, as the analysis folds groups.
		edge = histogram.Other
	}
	e := m.edges[edge]
	if e == nil {
		e = &deadlineEdge{}
		m.edges[edge] = e
	}
	e.calls++
	if after := time.Duration(serverEnd - clientEnd); after > m.skew {
		e.after++
		e.total += after
		e.max = max(e.max, after)
	}
}

// findings returns a finding per edge where a server span ended after its
// client span, by edge name.
func (m *deadlineMatcher) findings() []report.Finding {
	var fs []report.Finding
	for _, name := range slices.Sorted(maps.Keys(m.edges)) {
		e := m.edges[name]
		if e.after == 0 {
			continue
		}
		caller, callee := splitEdge(name)
		frac := float64(e.after) / float64(e.calls)
		dropped := ""
		if m.dropped > 0 {
			dropped = "; " + human.Count(m.dropped) + " spans were given up unmatched, more than " +
				human.Count(int64(m.max)) + " waiting for their parent or child at once"
		}
		if m.expired > 0 {
			dropped += "; " + human.Count(m.expired) + " spans were given up unmatched after waiting " +
				human.Duration(spanHorizon) + " of span time for their parent or child"
		}
		fs = append(fs, finding.Newf(finding.DeadlineNotPropagated, finding.Fields{
			"edge": name, "calls": e.calls, "after_parent": e.after, "after_parent_fraction": frac,
			"work_after_seconds_total": e.total.Seconds(), "work_after_seconds_max": e.max.Seconds(),
			"unmatched_dropped": m.dropped, "unmatched_expired": m.expired},
			"%s of %s's calls to %s (%s) ended while %s worked on, by more than the %s allowed for clock skew: %s of work after %s gave up, at most %s; propagate the deadline to %s (gRPC's grpc-timeout header, a header such as X-Request-Timeout over HTTP) and stop its work when its context is cancelled%s",
			human.Count(e.after), caller, callee, human.Percent(frac), callee, human.Duration(m.skew),
			human.Duration(e.total), caller, human.Duration(e.max), callee, dropped))
	}
	return fs
}

// splitEdge returns an edge's caller and callee (groupname.Edge); a name
// that is not an edge is all caller.
func splitEdge(name string) (string, string) {
	if caller, callee, ok := groupname.Edge(name); ok {
		return caller, callee
	}
	return name, ""
}
