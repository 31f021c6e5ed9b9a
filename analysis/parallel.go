package analysis

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/report"
)

// Reading in parallel: an input is cut into chunks of whole lines
// (ingest.Splitter) by a reader goroutine, which also runs the
// decompression; one worker per core decodes chunks into a histogram.Set
// of its own (histograms are not safe for concurrent use, and a set of its
// own keeps the recording free of locks); the calling goroutine takes the
// chunks' results in input order. A worker whose set has grown past
// workerSetBytes hands it over, merged into one shared set under a lock,
// and starts afresh: memory grows with the groups, not with the groups
// times the workers (each of which would otherwise hold a copy of every
// group it met). The rest is merged at the end. The report is the one a
// single goroutine gives, byte for byte:
//
//   - histograms, exclusion counts and arrivals are counts: the order in
//     which they are added up does not change them;
//   - records, bad records and the quoted bad lines are added up in input
//     order, from each chunk's first few; line numbers are the input's, as
//     each chunk knows the number of its first line;
//   - with --strict, the first bad line in input order ends the run;
//   - the groups kept apart under --max-groups are those a single goroutine
//     keeps: the first groups to appear in input order. See admission.

// parallel reads inputs with several workers, keeping their sets and the
// admission of groups from one input to the next, as the single set of
// readInput is kept.
type parallel struct {
	workers []*worker
	adm     admission
	// seq holds the samples the calling goroutine files itself (see
	// chunkResult.pending); nil until needed.
	seq    *histogram.Set
	newSet func() *histogram.Set

	mu     sync.Mutex
	shared *histogram.Set // the sets workers handed over (see handOver)
	handed bool           // shared holds something

	// extras is what the input read gave besides samples and counts.
	extras extras
}

// workerSetBytes is how large a worker's set grows (histogram.Set.Bytes,
// checked after each chunk) before the worker hands it over to the shared
// set. Groups that recur stay with the worker, so recording stays free of
// locks and merges: 4 routes of a log hold a few hundred KB, 200 busy
// routes a few MB. A variable for the tests.
var workerSetBytes int64 = 8 << 20

// newParallel returns a reader with one worker per core (workers), each
// filling a set newSet returns.
func newParallel(workers, maxGroups int, newSet func() *histogram.Set) *parallel {
	p := &parallel{adm: admission{limit: maxGroups, admitted: map[string]bool{}}, newSet: newSet, shared: newSet()}
	for range workers {
		p.workers = append(p.workers, &worker{adm: &p.adm, set: newSet(), known: map[string]*histogram.Group{}})
	}
	return p
}

// set merges the workers' sets into the shared one and returns it.
func (p *parallel) set() *histogram.Set {
	all, rest := p.shared, p.workers
	if !p.handed {
		all, rest = p.workers[0].set, p.workers[1:]
	}
	for _, w := range rest {
		all.Merge(w.set)
		w.set = nil // garbage once merged
	}
	all.Merge(p.seq)
	return all
}

// handOver merges w's set into the shared set and gives w an empty one,
// when w's set has grown past workerSetBytes. The groups' fates stay
// decided (admission); their samples are counts, which add up in any order.
func (p *parallel) handOver(w *worker) {
	if w.set.Bytes() < workerSetBytes {
		return
	}
	p.mu.Lock()
	p.shared.Merge(w.set)
	p.handed = true
	p.mu.Unlock()
	w.set = p.newSet()
	clear(w.known)
	w.recent = [len(w.recent)]recentGroup{}
}

// recentGroup is an entry of worker.recent; g nil when unset.
type recentGroup struct {
	name string
	g    *histogram.Group
}

// admission decides which groups are kept apart under the --max-groups
// limit, in input order, while workers read chunks in any order.
//
// A single goroutine keeps a group when it first appears while fewer than
// the limit are kept. Here a worker that meets a group knows its fate at
// once when the group is kept already, or when the limit is reached (then
// the group is folded into "other"); otherwise it may decide only when all
// chunks before its own have been taken (its chunk has the turn), since
// one of them may hold the group or fill the limit. Until then it sets the
// sample aside, and the samples still aside when the chunk ends are filed
// by the calling goroutine when it takes the chunk, in turn.
type admission struct {
	limit int // <= 0: no limit

	mu       sync.Mutex
	admitted map[string]bool // groups kept apart, "other" aside; written under mu until full
	full     atomic.Bool     // len(admitted) == limit: admitted no longer changes
	turn     int             // the chunk all of whose predecessors have been taken
}

// worker decodes chunks into its own set.
type worker struct {
	adm   *admission
	set   *histogram.Set
	known map[string]*histogram.Group // groups kept apart, in set
	// recent holds a few entries of known, the groups met last: a log has
	// few groups, and comparing a few names (interned by the decoder, so
	// mostly the same string) costs less than hashing one.
	recent [8]recentGroup
	next   uint8 // the slot of recent to fill next

	status  *ingest.StatusRule
	dec     ingest.ChunkDecoder // for chunks after the first, made by the Splitter
	seq     int                 // the chunk being decoded
	pending []ingest.Sample     // samples of groups not yet decided, in input order
}

// chunkResult is what a worker hands back for one chunk.
type chunkResult struct {
	seq int
	// counts are the chunk's records, bad records (the first few quoted,
	// at most ShowErrors), records outside --from/--to, lines that are
	// not requests and records with a time out of range, as the run's
	// report.Input counts them.
	counts      report.Input
	timeExample string   // the first time out of range (dropOddTime)
	notes       []string // the first chunk's decoder's (ingest.Noter)
	// pending are the chunk's samples whose group could not be decided
	// while the chunk was decoded, in input order.
	pending []ingest.Sample
	err     error // ends the reading: a read error, a bad line under --strict, cancellation
}

// read reads one input, as readInput does; the samples go to the workers'
// sets, not to the set readInput would fill.
func (p *parallel) read(ctx context.Context, name string, r io.Reader, o Options, in *report.Input) error {
	sp, err := ingest.NewSplitter(o.Format, r, name, o.Ingest, o.chunkSize)
	if err != nil {
		return err
	}
	p.adm.mu.Lock()
	p.adm.turn = 0
	p.adm.mu.Unlock()
	for _, w := range p.workers {
		w.dec = nil // decoders are made for one input
	}
	p.extras = extras{}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan ingest.Chunk, len(p.workers))
	results := make(chan chunkResult, len(p.workers))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the reader: cuts chunks, and decompresses
		defer wg.Done()
		defer close(chunks)
		for seq := 0; ; seq++ {
			c, err := sp.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				results <- chunkResult{seq: seq, err: err}
				return
			}
			select {
			case chunks <- c:
			case <-wctx.Done():
				return
			}
		}
	}()
	for _, w := range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range chunks {
				r := w.decode(wctx, c, sp, &o)
				sp.Release(c)
				p.handOver(w)
				results <- r
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	// Take the results in input order.
	var first error
	next, held := 0, map[int]chunkResult{}
	for r := range results {
		held[r.seq] = r
		for {
			r, ok := held[next]
			if !ok {
				break
			}
			delete(held, next)
			next++
			if first == nil {
				if first = p.take(r, &o, in); first != nil {
					cancel()
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return first
}

// take adds up one chunk's result, the chunks before it taken already, and
// passes the turn to the next chunk.
func (p *parallel) take(r chunkResult, o *Options, in *report.Input) error {
	addCounts(in, &r.counts, o.ShowErrors)
	if p.extras.timeExample == "" {
		p.extras.timeExample = r.timeExample
	}
	if r.notes != nil {
		p.extras.notes = r.notes
	}
	if r.err != nil {
		return r.err
	}
	a := &p.adm
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range r.pending {
		if p.seq == nil {
			p.seq = p.newSet()
		}
		name := groupName(s.Group)
		var g *histogram.Group
		if a.admitLocked(name) {
			g = p.seq.Group(name)
		} else {
			g = p.seq.Fold(name)
		}
		add(g, &o.Status, s)
	}
	a.turn = r.seq + 1
	if o.Progress != nil {
		o.Progress.Records(in.Records)
	}
	return nil
}

// admitLocked decides the fate of a group met in turn: whether it is kept
// apart. a.mu is held.
func (a *admission) admitLocked(name string) bool {
	if a.limit <= 0 || name == histogram.Other || a.admitted[name] {
		return true
	}
	if len(a.admitted) >= a.limit {
		return false
	}
	a.admitted[name] = true
	if len(a.admitted) == a.limit {
		a.full.Store(true)
	}
	return true
}

// decode reads one chunk into w.set.
func (w *worker) decode(ctx context.Context, c ingest.Chunk, sp *ingest.Splitter, o *Options) chunkResult {
	r := chunkResult{seq: c.Seq}
	if r.err = ctx.Err(); r.err != nil {
		return r
	}
	dec := c.Decoder
	if dec == nil {
		if w.dec == nil {
			if w.dec, r.err = sp.Fork(); r.err != nil {
				return r
			}
		}
		w.dec.Reset(c.Data, c.Line)
		dec = w.dec
	}
	w.seq, w.pending, w.status = c.Seq, nil, &o.Status
	d := drain{in: &r.counts, o: o, every: everyRecords}
	r.err = drainInto(ctx, d, dec, func(s ingest.Sample) error {
		if !o.counted(&s, &r.counts, &r.timeExample) {
			return nil
		}
		if g := w.group(groupName(s.Group)); g != nil {
			add(g, &o.Status, s)
		} else {
			w.pending = append(w.pending, s)
		}
		return nil
	})
	if r.err != nil {
		return r
	}
	r.pending = w.pending
	w.pending = nil
	if c.Decoder != nil {
		if n, ok := c.Decoder.(ingest.Noter); ok {
			r.notes = n.Notes()
		}
	}
	return r
}

// group returns the group of w.set a sample of the named group goes to, or
// nil when that cannot be decided yet (see admission). The answer is the
// one a single set with the limit would give.
func (w *worker) group(name string) *histogram.Group {
	for i := range w.recent {
		if r := &w.recent[i]; r.g != nil && r.name == name {
			return r.g
		}
	}
	if g, ok := w.known[name]; ok {
		w.recent[w.next%uint8(len(w.recent))] = recentGroup{name, g}
		w.next++
		return g
	}
	a := w.adm
	if a.limit <= 0 || name == histogram.Other {
		return w.keep(name)
	}
	if a.full.Load() {
		// admitted is written no more: it is read without the lock.
		if a.admitted[name] {
			return w.keep(name)
		}
		return w.set.Fold(name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.admitted[name] {
		return w.keep(name)
	}
	if a.turn != w.seq {
		return nil
	}
	// The chunk has the turn: the samples set aside come first, then this
	// one, each decided as it comes.
	for _, s := range w.pending {
		n := groupName(s.Group)
		g := w.known[n]
		switch {
		case g != nil:
		case a.admitLocked(n):
			g = w.keep(n)
		default:
			g = w.set.Fold(n)
		}
		add(g, w.status, s)
	}
	w.pending = w.pending[:0]
	if a.admitLocked(name) {
		return w.keep(name)
	}
	return w.set.Fold(name)
}

// keep returns the group called name of w.set, a group kept apart.
func (w *worker) keep(name string) *histogram.Group {
	g := w.set.Group(name)
	w.known[name] = g
	return g
}
