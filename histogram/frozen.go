package histogram

import (
	"cmp"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// hotCells is how many of a group's timed cells stay as they are, ready
// for samples; older ones are frozen (freeze) until a sample or a merge
// needs them again. Logs come mostly in time order, a chunk at a time per
// core, so that a week of 1-minute windows keeps 4 cells a group open and
// the 10,000 others as a few dozen bytes each: the 300 bytes of a packed
// histogram (its geometry, its slices) and the arrivals' two slices cost
// more than ten calls' buckets encoded.
const hotCells = 4

// Input out of time order (rows exported in no order, logs of hosts
// interleaved) would thaw and freeze a cell for nearly every sample, a
// hundred times slower than the reading. So a group weighs its thaws
// (weigh): at more than one in thawRate samples it keeps twice as many
// cells open, and past maxHotCells it freezes nothing more: such input
// costs the memory of open cells, not the time of the round trips. At
// less than one in 8 x thawRate it keeps half as many again, down to
// hotCells, freezing the oldest: input back in order is frozen as before.
// A late sample now and then changes nothing.
const (
	maxHotCells = 1024
	thawRate    = 256
	weighCalls  = 1 << 16 // calls between weighings, or hotLimit thaws
)

// Cell flags of the frozen form.
const (
	frozeCensored = 1 << iota
	frozeConnect
	frozeExcluded
	frozeMethods
)

// freeze encodes c compactly: flags, the out-of-range counts, each
// histogram's buckets (counts index, as a step from the previous one, and
// count, all varints), the exclusions, the arrivals (second offset as a
// step, calls). It reports false when a histogram holds a value beyond
// Latency's geometry (not from Record: kept as it is).
func freeze(c *Cell) ([]byte, bool) {
	var flags byte
	if c.Censored != nil && c.Censored.TotalCount() > 0 {
		flags |= frozeCensored
	}
	if c.Connect != nil && c.Connect.TotalCount() > 0 {
		flags |= frozeConnect
	}
	if len(c.Excluded) > 0 {
		flags |= frozeExcluded
	}
	if len(c.Methods) > 0 {
		flags |= frozeMethods
	}
	b := make([]byte, 0, 16+3*int(c.Latency.Populated())+3*len(c.Seconds))
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(c.Below))
	b = binary.AppendUvarint(b, uint64(c.Above))
	ok := true
	b, ok = appendBuckets(b, c.Latency)
	if flags&frozeCensored != 0 && ok {
		b, ok = appendBuckets(b, c.Censored)
	}
	if flags&frozeConnect != 0 && ok {
		b, ok = appendBuckets(b, c.Connect)
	}
	if !ok {
		return nil, false
	}
	if flags&frozeExcluded != 0 {
		b = appendCounts(b, c.Excluded)
	}
	if flags&frozeMethods != 0 {
		b = appendCounts(b, c.Methods)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Seconds)))
	prev := int64(0)
	for i, off := range c.Seconds {
		if i == 0 {
			b = binary.AppendVarint(b, int64(off))
		} else {
			b = binary.AppendUvarint(b, uint64(int64(off)-prev))
		}
		prev = int64(off)
		b = binary.AppendUvarint(b, uint64(c.Calls[i]))
	}
	return slices.Clip(b), true
}

// appendCounts encodes counts by name: their number, then each name's
// length, the name and its count, names in order.
func appendCounts(b []byte, counts map[string]int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(counts)))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(counts[k]))
	}
	return b
}

func appendBuckets(b []byte, p *hdr.PackedHistogram) ([]byte, bool) {
	b = binary.AppendUvarint(b, uint64(p.Populated()))
	prev, ok := int64(0), true
	p.ForEachBucket(func(v, n int64) bool {
		i := countsIndex(v)
		if i < prev || i >= countsLen {
			ok = false
			return false
		}
		b = binary.AppendUvarint(b, uint64(i-prev))
		b = binary.AppendUvarint(b, uint64(n))
		prev = i
		return true
	})
	return b, ok
}

// errFrozen is a frozen cell that does not decode: a bug, never input.
var errFrozen = errors.New("histogram: a frozen cell does not decode")

// thaw decodes what freeze encoded into a new cell starting at start.
func thaw(start int64, b []byte) *Cell {
	d := frozenReader{b: b}
	c := NewCell(start)
	flags := d.byte()
	c.Below, c.Above = int64(d.uvarint()), int64(d.uvarint())
	d.buckets(c.Latency)
	if flags&frozeCensored != 0 {
		c.Censored = newPacked()
		d.buckets(c.Censored)
	}
	if flags&frozeConnect != 0 {
		c.Connect = newPacked()
		d.buckets(c.Connect)
	}
	if flags&frozeExcluded != 0 {
		c.Excluded = d.counts()
	}
	if flags&frozeMethods != 0 {
		c.Methods = d.counts()
	}
	n := int(d.uvarint())
	c.Seconds, c.Calls = make([]int32, n), make([]int64, n)
	off := int64(0)
	for i := range n {
		if i == 0 {
			off = d.varint()
		} else {
			off += int64(d.uvarint())
		}
		c.Seconds[i], c.Calls[i] = int32(off), int64(d.uvarint())
	}
	if d.bad || len(d.b) != 0 {
		panic(errFrozen)
	}
	return c
}

// counts decodes what appendCounts encoded.
func (d *frozenReader) counts() map[string]int64 {
	n := int(d.uvarint())
	out := make(map[string]int64, n)
	for range n {
		k := string(d.bytes(int(d.uvarint())))
		out[k] = int64(d.uvarint())
	}
	return out
}

type frozenReader struct {
	b   []byte
	bad bool
}

func (d *frozenReader) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *frozenReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *frozenReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *frozenReader) bytes(n int) []byte {
	if n > len(d.b) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *frozenReader) buckets(p *hdr.PackedHistogram) {
	n := int(d.uvarint())
	i := int64(0)
	for range n {
		i += int64(d.uvarint())
		if err := p.RecordValues(valueAt(i), int64(d.uvarint())); err != nil {
			d.bad = true
		}
	}
}

// hot returns the group's cell for the interval starting at start, ready
// for samples: the open one, or the frozen one thawed, or a new one. When
// that opens more than hotCells timed cells, the oldest is frozen.
func (g *Group) hot(start int64) *Cell {
	if g.calls++; g.calls >= weighCalls {
		g.weigh()
	}
	if c := g.cells[start]; c != nil {
		return c
	}
	var c *Cell
	if b, ok := g.frozen[start]; ok {
		c = thaw(start, b)
		delete(g.frozen, start)
		if g.thaws++; g.thaws >= g.hotLimit() {
			g.weigh()
		}
	} else {
		c = NewCell(start)
	}
	g.cells[start] = c
	if start != Untimed && len(g.cells) > g.hotLimit() && g.hotCells <= maxHotCells {
		oldest := int64(0)
		found := false
		for s := range g.cells {
			if s != Untimed && s != start && (!found || s < oldest) {
				oldest, found = s, true
			}
		}
		if found {
			g.freezeCell(oldest)
		}
	}
	return c
}

// hotLimit is how many timed cells the group keeps open: hotCells, or
// more while it thaws often (see maxHotCells).
func (g *Group) hotLimit() int { return max(g.hotCells, hotCells) }

// weigh sets how many cells the group keeps open from its thaws since it
// last weighed them (every weighCalls calls, or hotLimit thaws; see
// maxHotCells): twice as many at more than one thaw in thawRate calls,
// half as many at less than one in 8 x thawRate, the oldest beyond them
// frozen.
func (g *Group) weigh() {
	switch limit := g.hotLimit(); {
	case g.thaws*thawRate > g.calls:
		g.hotCells = 2 * limit
	case g.thaws*8*thawRate < g.calls && limit > hotCells:
		g.hotCells = limit / 2
		if open := len(g.cells); open > g.hotCells {
			starts := make([]int64, 0, open)
			for s := range g.cells {
				if s != Untimed {
					starts = append(starts, s)
				}
			}
			slices.Sort(starts)
			for _, s := range starts[:max(0, len(starts)-g.hotCells)] {
				g.freezeCell(s)
			}
		}
	}
	g.thaws, g.calls = 0, 0
}

// freezeCell freezes the open cell starting at start, when it can.
func (g *Group) freezeCell(start int64) {
	b, ok := freeze(g.cells[start])
	if !ok {
		return
	}
	if g.frozen == nil {
		g.frozen = make(map[int64][]byte)
	}
	g.frozen[start] = b
	delete(g.cells, start)
}

// addFrozen adds c, a cell no sample is being recorded into (a merge's, an
// interval log's), to the group's cell for its interval, leaving that
// cell frozen when it was frozen or new. owned: c is the group's to keep.
func (g *Group) addFrozen(c *Cell, owned bool) {
	if have := g.cells[c.Start]; have != nil {
		have.Merge(c)
		return
	}
	if b, ok := g.frozen[c.Start]; ok {
		have := thaw(c.Start, b)
		have.Merge(c)
		c, owned = have, true
	}
	if b, ok := freeze(c); ok && c.Start != Untimed {
		if g.frozen == nil {
			g.frozen = make(map[int64][]byte)
		}
		g.frozen[c.Start] = b
		return
	}
	delete(g.frozen, c.Start)
	if !owned {
		c = c.clone()
	}
	g.cells[c.Start] = c
}

// KeepsCells reports whether the group keeps its samples interval by
// interval (its set's Every) rather than as totals.
func (g *Group) KeepsCells() bool { return g.every > 0 }

// CellStarts returns the starts of the group's cells in ascending order
// (Untimed, when there is such a cell, first).
func (g *Group) CellStarts() []int64 {
	starts := make([]int64, 0, len(g.cells)+len(g.frozen))
	for s := range g.cells {
		starts = append(starts, s)
	}
	for s := range g.frozen {
		starts = append(starts, s)
	}
	slices.SortFunc(starts, cmp.Compare)
	return starts
}

// CellAt returns the group's cell for the interval starting at start, nil
// when there is none. A frozen cell is decoded anew each time; the cell
// is to be read, not changed. Safe for concurrent use while the group
// does not change.
func (g *Group) CellAt(start int64) *Cell {
	if c := g.cells[start]; c != nil {
		return c
	}
	if b, ok := g.frozen[start]; ok {
		return thaw(start, b)
	}
	return nil
}

// EachCell calls f with each of the group's cells, in no order, frozen
// ones decoded one at a time, as CellAt returns them.
func (g *Group) EachCell(f func(*Cell)) {
	for _, c := range g.cells {
		f(c)
	}
	for s, b := range g.frozen {
		f(thaw(s, b))
	}
}

// NumCells returns how many cells the group holds.
func (g *Group) NumCells() int { return len(g.cells) + len(g.frozen) }
