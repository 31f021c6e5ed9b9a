package analysis

import (
	"maps"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/report"
)

// The call-graph check "call outlives its caller": a CLIENT span whose
// parent is a SERVER span of the same trace, and that ends after it, is an
// outgoing call that ran on after the caller's own request was over (the
// caller answered, its own caller timed out, or the request was
// cancelled): nobody reads its answer. Unlike TT-DEADLINE-NOT-PROPAGATED
// it needs no span of the callee, so it finds calls to a database or a
// third-party API that nobody traces. A client span whose parent is not a
// SERVER span (an INTERNAL span between them) is not paired.

// maxChildrenWaiting bounds the client spans of one parent kept while the
// parent has not been read; the rest are counted as dropped.
const maxChildrenWaiting = 256

// childSpan is a client span waiting for its parent: its end (ns since the
// epoch) and its edge.
type childSpan struct {
	end  int64
	edge string
}

// outliveMatcher pairs client spans with the server spans they were made
// under, in either order: server spans by (trace, span id), kept after
// they are matched since more children may follow (an input written as
// spans end holds a call that outlived its parent after the parent); client
// spans waiting for their parent by (trace, parent id). Both wait in a
// spanWait, bounded as the deadline matcher's spans are.
type outliveMatcher struct {
	skew     time.Duration
	parents  *spanWait[struct{}]
	children *spanWait[[]childSpan]
	// overflow counts client spans past maxChildrenWaiting of one parent.
	overflow int64
	edges    map[string]*deadlineEdge
	names    edgeNames
}

func newOutliveMatcher(max int, skew time.Duration) *outliveMatcher {
	return &outliveMatcher{skew: skew, parents: newSpanWait[struct{}](max / 2), children: newSpanWait[[]childSpan](max / 2),
		edges: map[string]*deadlineEdge{}, names: edgeNames{}}
}

func (m *outliveMatcher) add(l ingest.SpanLink) {
	end := l.End.UnixNano()
	switch {
	case l.Server:
		k := linkKey{l.TraceID, l.SpanID}
		m.parents.put(k, struct{}{}, end)
		if cs, ok := m.children.take(k); ok {
			for _, c := range cs.v {
				m.match(c.edge, c.end, end)
			}
		}
	case l.Client:
		if l.ParentID == [8]byte{} {
			return // a root client span: no request of the caller's around it
		}
		k := linkKey{l.TraceID, l.ParentID}
		edge := m.names.name(l.Caller, l.Callee)
		if p, ok := m.parents.get(k); ok {
			m.match(edge, end, p.end)
			return
		}
		w, _ := m.children.get(k)
		if len(w.v) >= maxChildrenWaiting {
			m.overflow++
			return
		}
		// The entry's end is its latest child's: it expires with the
		// last of them.
		m.children.put(k, append(w.v, childSpan{end: end, edge: edge}), max(w.end, end))
	}
}

func (m *outliveMatcher) match(edge string, clientEnd, parentEnd int64) {
	if _, ok := m.edges[edge]; !ok && len(m.edges) >= maxDeadlineEdges {
		edge = histogram.Other
	}
	e := m.edges[edge]
	if e == nil {
		e = &deadlineEdge{}
		m.edges[edge] = e
	}
	e.calls++
	if after := time.Duration(clientEnd - parentEnd); after > m.skew {
		e.after++
		e.total += after
		e.max = max(e.max, after)
	}
}

// findings returns a TT-CALL-OUTLIVES-CALLER finding per edge where a
// client span ended after its parent server span, by edge name.
func (m *outliveMatcher) findings() []report.Finding {
	var fs []report.Finding
	// Given up unmatched: client spans whose parent never came (or came
	// after they were given up). Server spans expire as a matter of
	// course, kept only for children that may follow.
	dropped := m.children.dropped + m.overflow
	expired := m.children.expired
	for _, name := range slices.Sorted(maps.Keys(m.edges)) {
		e := m.edges[name]
		if e.after == 0 {
			continue
		}
		caller, callee := splitEdge(name)
		frac := float64(e.after) / float64(e.calls)
		fs = append(fs, finding.Newf(finding.CallOutlivesCaller, finding.Fields{
			"edge": name, "calls": e.calls, "after_parent": e.after, "after_parent_fraction": frac,
			"work_after_seconds_total": e.total.Seconds(), "work_after_seconds_max": e.max.Seconds(),
			"unmatched_dropped": dropped, "unmatched_expired": expired},
			"%s of %s's calls to %s (%s) ran on after the request of %s they were made for had ended (its server span), by more than the %s allowed for clock skew: %s of calls nobody waited for, at most %s; make the call with the request's context, so that it is cancelled when the request ends, and give it a timeout within what the request has left",
			human.Count(e.after), caller, callee, human.Percent(frac), caller, human.Duration(m.skew),
			human.Duration(e.total), human.Duration(e.max)))
	}
	return fs
}

// spanWait holds spans waiting for their partner by key, each with a value
// and an end (ns since the epoch), in at most max entries: a FIFO of their
// keys gives up the oldest when full (dropped), and, while more than
// softWaiting wait, those that ended more than spanHorizon before the
// latest end put (expired), as the deadline matcher does.
type spanWait[V any] struct {
	max              int
	m                map[linkKey]waitEntry[V]
	queue            []queuedKey
	head             int
	seq              uint64
	latest           int64
	dropped, expired int64
}

type waitEntry[V any] struct {
	v   V
	end int64
	seq uint64
}

type queuedKey struct {
	key linkKey
	seq uint64
}

func newSpanWait[V any](max int) *spanWait[V] {
	return &spanWait[V]{max: max, m: map[linkKey]waitEntry[V]{}}
}

func (w *spanWait[V]) get(k linkKey) (waitEntry[V], bool) {
	e, ok := w.m[k]
	return e, ok
}

// take returns k's entry and removes it.
func (w *spanWait[V]) take(k linkKey) (waitEntry[V], bool) {
	e, ok := w.m[k]
	if ok {
		delete(w.m, k)
	}
	return e, ok
}

// put keeps v under k with the given end, replacing k's entry.
func (w *spanWait[V]) put(k linkKey, v V, end int64) {
	w.latest = max(w.latest, end)
	w.expire()
	if _, ok := w.m[k]; !ok {
		for len(w.m) >= w.max && w.head < len(w.queue) {
			q := w.queue[w.head]
			w.queue[w.head] = queuedKey{}
			w.head++
			if old, ok := w.m[q.key]; ok && old.seq == q.seq {
				delete(w.m, q.key)
				w.dropped++
			}
		}
	}
	w.seq++
	w.m[k] = waitEntry[V]{v: v, end: end, seq: w.seq}
	w.queue = append(w.queue, queuedKey{key: k, seq: w.seq})
	if len(w.queue)-w.head >= 2*w.max || w.head >= 1024 && w.head >= len(w.queue)/2 {
		w.compact()
	}
}

func (w *spanWait[V]) expire() {
	for len(w.m) > softWaiting && w.head < len(w.queue) {
		q := w.queue[w.head]
		if old, ok := w.m[q.key]; ok && old.seq == q.seq {
			if old.end >= w.latest-int64(spanHorizon) {
				return
			}
			delete(w.m, q.key)
			w.expired++
		}
		w.queue[w.head] = queuedKey{}
		w.head++
	}
}

func (w *spanWait[V]) compact() {
	live := w.queue[:0]
	for _, q := range w.queue[w.head:] {
		if e, ok := w.m[q.key]; ok && e.seq == q.seq {
			live = append(live, q)
		}
	}
	clear(w.queue[len(live):])
	w.queue, w.head = live, 0
	w.m = rebuilt(w.m)
}
