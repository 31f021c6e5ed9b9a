package histogram

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/names"
)

// Group is everything measured for one group of samples (a route, a method,
// or the whole input).
type Group struct {
	Name     string
	Latency  *Latency
	Excluded map[string]int64 // reason -> count of samples not used for latency
	Arrivals *Arrivals        // every sample with a timestamp, excluded ones too
	// Connect holds measured connect times (nginx $upstream_connect_time,
	// HAProxy Tc); nil until the first one, since most inputs have none.
	Connect *Latency
	// ReusedConnects counts the connect times of 0: nginx logs
	// $upstream_connect_time 0.000 for a request sent on a kept-alive
	// connection, which connected nothing; they are not in Connect.
	ReusedConnects int64
	// Methods counts the group's calls by request method ("GET"), excluded
	// ones included, where the input says the method; nil when it never
	// does. It decides whether the group's requests may be repeated
	// (recommend.PolicyOptions.Methods). A group that keeps cells keeps
	// them there (Cell.Methods).
	Methods map[string]int64
	// Measured holds what a source measured for the group as a whole rather
	// than call by call (Prometheus: rates from NAME_count, the mean from
	// NAME_sum / NAME_count); nil for sources of single calls. Set.Merge
	// leaves it alone.
	Measured *Measured
	// cells holds the group's samples interval by interval (Cell.Start ->
	// cell) when its set keeps intervals (Set.Every; see KeepsCells,
	// CellStarts, CellAt); nil otherwise. Such a group has nothing else:
	// Latency, Arrivals and Connect are nil. All but the hotCells latest
	// timed cells are frozen: encoded, in frozen (see freeze).
	cells  map[int64]*Cell
	frozen map[int64][]byte
	// hotCells is how many timed cells stay open (0: the constant
	// hotCells); thaws and calls count the cells thawed and asked for
	// (hot) since they were last weighed.
	hotCells, thaws, calls int
	every                  int64 // the interval in seconds; 0: no cells
}

// Measured is what a source of aggregates measured for one group. Zero
// means unknown for every field.
type Measured struct {
	Rate     float64       // mean calls per second over the window
	PeakRate float64       // calls per second in the busiest minute
	Mean     time.Duration // mean latency, exact where the bucketed histogram is not
	Source   string        // where the rates came from, for people: "prometheus"
}

// RecordConnect records one measured connect time; one of 0 (below
// Lowest) is a reused connection, counted in ReusedConnects.
func (g *Group) RecordConnect(d time.Duration) {
	if d >= 0 && d < Lowest {
		g.ReusedConnects++
		return
	}
	if g.Connect == nil {
		g.Connect = New()
	}
	g.Connect.Record(d)
}

// AddMethod counts one call with request method m; "" (not said) is not
// counted.
func (g *Group) AddMethod(m string) {
	if m == "" {
		return
	}
	if g.Methods == nil {
		g.Methods = make(map[string]int64, 2)
	}
	g.Methods[m]++
}

// addCounts adds the counts of from to into, made when needed, and returns
// it (into itself when into is from: doubled).
func addCounts(into, from map[string]int64) map[string]int64 {
	if into == nil && len(from) > 0 {
		into = make(map[string]int64, len(from))
	}
	for k, n := range maps.Clone(from) {
		into[k] += n
	}
	return into
}

// Other is the group that takes the samples of groups beyond a Set's limit.
const Other = "other"

// maxFoldedNames bounds the names a Set remembers to count distinct folded
// groups: beyond it the count is a lower bound (FoldedAtLeast). An exact
// count of distinct names needs every name (or something as large) kept:
// no bounded memory gives it for an input that may hold any number of them.
const maxFoldedNames = 100_000

// maxFoldedBytes bounds the bytes of those names: 100,000 URLs of a hostile
// client may be long ones.
const maxFoldedBytes = 16 << 20

// Set holds the groups of one analysis by name. Like Latency, it is not safe
// for concurrent use.
type Set struct {
	groups map[string]*Group
	// limit is the most groups kept apart (0: no limit); the samples of
	// later groups go to Other, and folded/foldedNames count them.
	limit       int
	folded      int64
	foldedNames map[string]struct{}
	// foldedMore: names of folded groups were left out of foldedNames (or
	// may have been, by whoever counted them elsewhere): its size is a
	// lower bound.
	foldedMore  bool
	foldedBytes int64 // the lengths of the names in foldedNames
	// foldedUnnamed counts folded groups whose names were never seen: a
	// SQL engine folded them (AddFoldedUnnamed).
	foldedUnnamed int
	every         int64 // interval of the groups' cells in seconds; 0: none (see Every)
	// recent holds a few entries of groups, those Group returned last: an
	// input has few groups, and comparing a few names (mostly the same
	// interned strings) costs less than hashing one. Groups are never
	// removed from a set, so an entry stays right.
	recent [8]recentGroup
	next   uint8 // the slot of recent to fill next
}

// recentGroup is an entry of Set.recent; g nil when unset.
type recentGroup struct {
	name string
	g    *Group
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{groups: make(map[string]*Group)} }

// Limit keeps at most n groups apart (n <= 0: no limit); samples of any
// further group are folded into the group Other, so that a hostile or huge
// URL space cannot exhaust memory. Groups that exist already stay.
func (s *Set) Limit(n int) { s.limit = n }

// Folded returns how many samples went to Other because of the limit, and
// how many distinct groups they came from: exactly, unless FoldedAtLeast.
func (s *Set) Folded() (samples int64, groups int) {
	return s.folded, len(s.foldedNames) + s.foldedUnnamed
}

// FoldedAtLeast reports whether the groups Folded returns are a lower bound
// only: more than maxFoldedNames (100,000) distinct groups, or more than
// maxFoldedBytes of their names, were folded, or a summary read said its
// list was cut, and the set does not remember the names beyond them.
func (s *Set) FoldedAtLeast() bool { return s.foldedMore }

// foldName remembers name as a folded group's, up to maxFoldedNames names.
func (s *Set) foldName(name string) {
	if s.foldedNames == nil {
		s.foldedNames = make(map[string]struct{})
	}
	if _, ok := s.foldedNames[name]; ok {
		return
	}
	if len(s.foldedNames) < maxFoldedNames && s.foldedBytes+int64(len(name)) <= maxFoldedBytes {
		s.foldedNames[name] = struct{}{}
		s.foldedBytes += int64(len(name))
	} else {
		s.foldedMore = true
	}
}

// Group returns the group called name, creating it empty (New latency
// histogram, no exclusions, NewArrivals) on first use. Beyond the set's
// limit it returns the group Other instead and counts the fold. A name
// longer than names.MaxBytes is cut (names.Cap): the group is called so.
func (s *Set) Group(name string) *Group {
	name = names.Cap(name)
	for i := range s.recent {
		if r := &s.recent[i]; r.g != nil && r.name == name {
			return r.g
		}
	}
	if g, ok := s.groups[name]; ok {
		s.recent[s.next%uint8(len(s.recent))] = recentGroup{name, g}
		s.next++
		return g
	}
	if s.limit > 0 && name != Other && len(s.groups)-s.hasOther() >= s.limit {
		return s.Fold(name)
	}
	g := &Group{Name: name, Excluded: make(map[string]int64), every: s.every}
	if s.every > 0 {
		// Cells alone: a summary writes nothing else, and totals
		// beside them would only add to what a group costs.
		g.cells = make(map[int64]*Cell)
	} else {
		g.Latency, g.Arrivals = New(), NewArrivals()
	}
	s.groups[name] = g
	return g
}

// Fold returns the group Other and counts one sample of the group called
// name as folded into it, as Group does beyond the limit. Sets filled at
// once from parts of one input (one per core) fold with it when the limit
// is decided for all of them, in input order; Merge adds up their folds.
func (s *Set) Fold(name string) *Group {
	s.folded++
	s.foldName(name)
	return s.Group(Other)
}

// FoldedNames returns the names of the groups folded into Other, sorted
// (at most maxFoldedNames of them).
func (s *Set) FoldedNames() []string {
	return slices.Sorted(maps.Keys(s.foldedNames))
}

// AddFolded counts samples folded into Other elsewhere (a summary's), from
// the groups called names; atLeast says the list is not all of them. A
// list of maxFoldedNames names or more may have been cut there too
// (summaries written before they said so): the count becomes a lower
// bound.
func (s *Set) AddFolded(samples int64, names []string, atLeast bool) {
	s.folded += samples
	for _, name := range names {
		s.foldName(name)
	}
	if atLeast || len(names) >= maxFoldedNames {
		s.foldedMore = true
	}
}

// AddFoldedUnnamed counts samples folded into Other elsewhere, and groups
// folded there whose names are not known (a SQL engine's --max-groups
// sends their number only): the groups are distinct from every other
// folded group counted.
func (s *Set) AddFoldedUnnamed(samples int64, groups int) {
	s.folded += samples
	s.foldedUnnamed += groups
}

// hasOther is 1 when the set holds the group Other, which the limit does
// not count.
func (s *Set) hasOther() int {
	if _, ok := s.groups[Other]; ok {
		return 1
	}
	return 0
}

// Groups returns the groups sorted by name.
func (s *Set) Groups() []*Group {
	gs := make([]*Group, 0, len(s.groups))
	for _, g := range s.groups {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b *Group) int { return cmp.Compare(a.Name, b.Name) })
	return gs
}

// Merge adds o's groups to s group by group: latency histograms, exclusion
// counts and arrivals of groups with the same name are merged, groups only
// in o are created in s. o is left unchanged (unless it is s, which doubles).
func (s *Set) Merge(o *Set) {
	if o == nil {
		return
	}
	for _, og := range o.Groups() {
		g := s.Group(og.Name)
		if g.Latency != nil && og.Latency != nil {
			g.Latency.Merge(og.Latency)
		}
		excluded := og.Excluded
		if o == s {
			excluded = maps.Clone(excluded) // g.Excluded is the map being ranged over
		}
		for reason, n := range excluded {
			g.Excluded[reason] += n
		}
		if g.Arrivals != nil && og.Arrivals != nil {
			g.Arrivals.Merge(og.Arrivals)
		}
		g.Methods = addCounts(g.Methods, og.Methods)
		g.ReusedConnects += og.ReusedConnects
		if og.Connect != nil {
			if g.Connect == nil {
				g.Connect = New()
			}
			g.Connect.Merge(og.Connect)
		}
		if g.cells != nil {
			cells, frozen := og.cells, og.frozen
			if o == s { // the maps being ranged over change
				cells, frozen = maps.Clone(cells), maps.Clone(frozen)
			}
			for _, oc := range cells {
				g.addFrozen(oc, false)
			}
			for start, b := range frozen {
				if _, open := g.cells[start]; !open && g.frozen[start] == nil {
					if g.frozen == nil {
						g.frozen = make(map[int64][]byte)
					}
					g.frozen[start] = b // never changed in place: shared
					continue
				}
				g.addFrozen(thaw(start, b), true)
			}
		}
	}
	s.folded += o.folded
	for name := range o.foldedNames {
		s.foldName(name)
	}
	s.foldedMore = s.foldedMore || o.foldedMore
	s.foldedUnnamed += o.foldedUnnamed
}

// Bytes returns about how much memory the set holds: its groups, their
// histograms, arrivals and cells, the names of folded groups.
func (s *Set) Bytes() int64 {
	n := int64(len(s.foldedNames))*48 + s.foldedBytes
	for _, g := range s.groups {
		n += int64(g.bytes())
	}
	return n
}

// bytes returns about how much memory g holds, its name and its entry in
// its set included.
func (g *Group) bytes() int {
	const (
		groupBytes = 160 // the struct, its entry in Set.groups, its Excluded map
		entryBytes = 48  // a map entry: key, value, a share of the buckets
	)
	n := groupBytes + 2*len(g.Name) + entryBytes*(len(g.Excluded)+len(g.Methods))
	for reason := range g.Excluded {
		n += len(reason)
	}
	for _, l := range []*Latency{g.Latency, g.Connect} {
		if l != nil {
			n += l.bytes()
		}
	}
	if g.Arrivals != nil {
		n += g.Arrivals.bytes()
	}
	for _, c := range g.cells {
		n += entryBytes + c.bytes()
	}
	for _, b := range g.frozen {
		n += entryBytes + cap(b)
	}
	return n
}

// Arrivals are kept per second in chunks of chunkLen consecutive seconds. A
// chunk with few busy seconds stores them sparsely (6 bytes each), one with
// many as a dense array (4 bytes a second), so a week of a busy group costs
// about 2.4 MB and a week of one call a minute about 60 KB, where a map from
// second to count would cost 20-40 bytes per busy second.
const (
	chunkBits = 10
	chunkLen  = 1 << chunkBits // seconds per chunk
	// sparseMax is the number of busy seconds above which a chunk turns
	// dense: the sparse form then costs about as much as the dense one.
	sparseMax = chunkLen / 2
)

// chunk holds the per-second counts of chunkLen consecutive seconds, either
// dense (dense has chunkLen entries) or sparse (offs sorted, ns beside them).
type chunk struct {
	dense []uint32
	offs  []uint16
	ns    []uint32
}

// Arrivals counts calls per second of wall time, for measured call rates.
// The zero value is not ready for use; call NewArrivals. It is not safe for
// concurrent use.
type Arrivals struct {
	chunks map[int64]*chunk // by second >> chunkBits
	// overflow holds what exceeds math.MaxUint32 in one second's count; nil
	// until needed (4 billion calls in one second of one group).
	overflow    map[int64]int64
	count       int64
	first, last int64 // Unix seconds; valid when count > 0
	// lastKey's chunk, the one add met last (nil: none): calls come in
	// time order, mostly to the chunk of the call before.
	lastKey   int64
	lastChunk *chunk
	// lastSec and lastIdx: the second add counted last and its index in
	// its chunk's sparse form (checked before use: an insertion moves it).
	lastSec int64
	lastIdx int
}

// NewArrivals returns an empty arrivals counter.
func NewArrivals() *Arrivals {
	return &Arrivals{chunks: make(map[int64]*chunk)}
}

// Add counts one call at t, in the whole second (Unix time) that holds it.
func (a *Arrivals) Add(t time.Time) { a.add(t.Unix(), 1) }

// AddN counts n > 0 calls in second sec (Unix time): the arrivals a SQL
// engine counted per second (ingest's buckets format).
func (a *Arrivals) AddN(sec, n int64) {
	if n > 0 {
		a.add(sec, n)
	}
}

// add counts n > 0 calls in second sec.
func (a *Arrivals) add(sec, n int64) {
	if a.count == 0 {
		a.first, a.last = sec, sec
	} else {
		a.first = min(a.first, sec)
		a.last = max(a.last, sec)
	}
	a.count += n

	key, off := sec>>chunkBits, sec&(chunkLen-1)
	c := a.lastChunk
	if c == nil || key != a.lastKey {
		if c = a.chunks[key]; c == nil {
			c = &chunk{}
			a.chunks[key] = c
		}
		a.lastKey, a.lastChunk = key, c
	}
	if c.dense != nil {
		a.bump(&c.dense[off], sec, n)
		return
	}
	if i := a.lastIdx; sec == a.lastSec && i < len(c.offs) && c.offs[i] == uint16(off) {
		a.bump(&c.ns[i], sec, n) // the second of the call before, mostly
		return
	}
	i, found := slices.BinarySearch(c.offs, uint16(off))
	if found {
		a.lastSec, a.lastIdx = sec, i
		a.bump(&c.ns[i], sec, n)
		return
	}
	if len(c.offs) < sparseMax {
		c.offs = slices.Insert(c.offs, i, uint16(off))
		c.ns = slices.Insert(c.ns, i, 0)
		a.lastSec, a.lastIdx = sec, i
		a.bump(&c.ns[i], sec, n)
		return
	}
	c.dense = make([]uint32, chunkLen)
	for j, o := range c.offs {
		c.dense[o] = c.ns[j]
	}
	c.offs, c.ns = nil, nil
	a.bump(&c.dense[off], sec, n)
}

// bump adds n to the count of second sec held in *slot, spilling what does
// not fit in 32 bits into a.overflow.
func (a *Arrivals) bump(slot *uint32, sec, n int64) {
	s := int64(*slot) + n
	if s > math.MaxUint32 {
		if a.overflow == nil {
			a.overflow = make(map[int64]int64)
		}
		a.overflow[sec] += s - math.MaxUint32
		s = math.MaxUint32
	}
	*slot = uint32(s)
}

// Count returns the number of calls counted.
func (a *Arrivals) Count() int64 { return a.count }

// bytes returns about how much memory a holds.
func (a *Arrivals) bytes() int {
	const chunkBytes = 48 + 72 // its entry in a.chunks, the struct
	n := 64 + 48*len(a.overflow)
	for _, c := range a.chunks {
		n += chunkBytes + 4*cap(c.dense) + 2*cap(c.offs) + 4*cap(c.ns)
	}
	return n
}

// Span returns the time from the start of the first second with a call to the
// end of the last one (last second - first second + 1 s); 0 when empty.
func (a *Arrivals) Span() time.Duration {
	if a.count == 0 {
		return 0
	}
	return time.Duration(a.last-a.first+1) * time.Second
}

// MeanRate returns the calls per second over Span; 0 when empty.
func (a *Arrivals) MeanRate() float64 {
	if a.count == 0 {
		return 0
	}
	return float64(a.count) / float64(a.last-a.first+1)
}

// Busiest returns the largest number of calls in any window of length w
// (whole seconds, sliding by one second), and where that window starts.
// Seconds without calls count as 0. w is truncated to whole seconds, at least
// one. Windows lie within Span; when Span is shorter than w the window covers
// everything and starts at the first second. Among equally busy windows the
// earliest one that starts at a second with calls (or at the last possible
// start) is returned. An empty Arrivals gives 0 and the zero time.
func (a *Arrivals) Busiest(w time.Duration) (calls int64, start time.Time) {
	if a.count == 0 {
		return 0, time.Time{}
	}
	width := max(int64(w/time.Second), 1)
	if a.last-a.first+1 <= width {
		return a.count, time.Unix(a.first, 0)
	}
	// Slide over the seconds with calls: a window moved right until it starts
	// at a second with calls loses none, so those starts suffice, clamped to
	// lastStart so windows stay within the span.
	lastStart := a.last - width + 1
	keys := a.sortedKeys()
	head, tail := a.iter(keys), a.iter(keys)
	headOK, tailOK := head.next(), tail.next()
	var sum int64
	best, bestStart := int64(-1), a.first
	for starts := a.iter(keys); starts.next(); {
		s := min(starts.sec, lastStart)
		for tailOK && tail.sec < s {
			sum -= tail.n
			tailOK = tail.next()
		}
		for headOK && head.sec < s+width {
			sum += head.n
			headOK = head.next()
		}
		if sum > best {
			best, bestStart = sum, s
		}
		if s == lastStart {
			break
		}
	}
	return best, time.Unix(bestStart, 0)
}

// Merge adds o's calls to a. Merging an Arrivals into itself doubles it.
func (a *Arrivals) Merge(o *Arrivals) {
	if o == nil || o.count == 0 {
		return
	}
	keys := o.sortedKeys()
	if o == a {
		// Collect first: adding while iterating would see its own additions
		// once a chunk turns dense.
		type sn struct{ sec, n int64 }
		var all []sn
		for it := o.iter(keys); it.next(); {
			all = append(all, sn{it.sec, it.n})
		}
		for _, x := range all {
			a.add(x.sec, x.n)
		}
		return
	}
	for it := o.iter(keys); it.next(); {
		a.add(it.sec, it.n)
	}
}

func (a *Arrivals) sortedKeys() []int64 {
	keys := make([]int64, 0, len(a.chunks))
	for k := range a.chunks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secondIter walks the seconds with calls in time order.
type secondIter struct {
	a    *Arrivals
	keys []int64
	ki   int // index into keys of the current chunk
	i    int // next position in the current chunk
	sec  int64
	n    int64
}

func (a *Arrivals) iter(keys []int64) *secondIter {
	return &secondIter{a: a, keys: keys}
}

// next moves to the next second with calls, reporting false at the end.
func (it *secondIter) next() bool {
	for it.ki < len(it.keys) {
		key := it.keys[it.ki]
		c := it.a.chunks[key]
		if c.dense != nil {
			for it.i < chunkLen {
				off := it.i
				it.i++
				if c.dense[off] != 0 {
					return it.set(key<<chunkBits|int64(off), c.dense[off])
				}
			}
		} else if it.i < len(c.offs) {
			j := it.i
			it.i++
			return it.set(key<<chunkBits|int64(c.offs[j]), c.ns[j])
		}
		it.ki++
		it.i = 0
	}
	return false
}

func (it *secondIter) set(sec int64, n uint32) bool {
	it.sec, it.n = sec, int64(n)
	if n == math.MaxUint32 && it.a.overflow != nil {
		it.n += it.a.overflow[sec]
	}
	return true
}
