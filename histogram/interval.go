package histogram

import (
	"maps"
	"math"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Untimed is the Start of the cell that holds a group's samples without a
// time: an interval log writes it at time 0 with length 0.
const Untimed = math.MinInt64

// Cell is what one group measured in one interval, for an interval log:
// the parts of a Group that add up exactly when cells are merged. Its
// histograms are sparse (hdrhistogram-go's PackedHistogram, with the
// geometry of Latency): a cell costs a few bytes per bucket used rather than
// the 230 KB of a dense histogram, so a day of minutes for many groups fits
// in memory.
type Cell struct {
	Start int64 // Unix seconds at the interval's start; Untimed for samples without a time
	// Latency holds every recorded value in microseconds, censored ones at
	// their lower bound, as Latency does.
	Latency *hdr.PackedHistogram
	// Censored holds the censored values alone and Connect the measured
	// connect times; nil when there are none.
	Censored, Connect *hdr.PackedHistogram
	Below, Above      int64            // samples out of the histogram's range, as Latency.OutOfRange
	Excluded          map[string]int64 // reason -> samples not used for latency; nil when none
	Methods           map[string]int64 // request method -> calls, as Group.Methods; nil when none
	// Seconds and Calls are the arrivals: Calls[i] calls in the second
	// Start+Seconds[i], every sample with a time counted (excluded ones
	// too), Seconds ascending.
	Seconds []int32
	Calls   []int64
}

// NewCell returns an empty cell for the interval starting at start.
func NewCell(start int64) *Cell {
	return &Cell{Start: start, Latency: newPacked()}
}

func newPacked() *hdr.PackedHistogram {
	return hdr.NewPacked(int64(Lowest/time.Microsecond), highestMicros, Digits)
}

// Record records one sample as Latency.Record does, counting it in Below or
// Above when out of range.
func (c *Cell) Record(d time.Duration) bool {
	us, ok := c.micros(d)
	if !ok {
		return false
	}
	if c.Latency.RecordValue(us) != nil {
		c.Above++
		return false
	}
	return true
}

// RecordCensored records a right-censored sample as Latency.RecordCensored does.
func (c *Cell) RecordCensored(d time.Duration) bool {
	if !c.Record(d) {
		return false
	}
	if c.Censored == nil {
		c.Censored = newPacked()
	}
	_ = c.Censored.RecordValue(int64(d / time.Microsecond)) // in range: Record took it
	return true
}

// RecordN records n samples of d as Latency.RecordN does: the calls of
// one row of HDR buckets a SQL engine computed for the cell's window.
func (c *Cell) RecordN(d time.Duration, n int64) bool {
	if n <= 0 {
		return true
	}
	us, ok := c.micros(d)
	if !ok {
		if d < 0 {
			c.Below += n - 1
		} else {
			c.Above += n - 1
		}
		return false
	}
	if c.Latency.RecordValues(us, n) != nil {
		c.Above += n
		return false
	}
	return true
}

// RecordCensoredN records n right-censored samples of d, as
// Latency.RecordCensoredN does.
func (c *Cell) RecordCensoredN(d time.Duration, n int64) bool {
	if n <= 0 {
		return true
	}
	if !c.RecordN(d, n) {
		return false
	}
	if c.Censored == nil {
		c.Censored = newPacked()
	}
	_ = c.Censored.RecordValues(int64(d/time.Microsecond), n) // in range: RecordN took it
	return true
}

// RecordConnect records one measured connect time; out-of-range ones are
// dropped, as Group.RecordConnect drops them from its totals.
func (c *Cell) RecordConnect(d time.Duration) {
	if d < 0 || d > Highest {
		return
	}
	if c.Connect == nil {
		c.Connect = newPacked()
	}
	_ = c.Connect.RecordValue(int64(d / time.Microsecond))
}

// Exclude counts one sample not used for latency, for reason.
func (c *Cell) Exclude(reason string) {
	if c.Excluded == nil {
		c.Excluded = make(map[string]int64)
	}
	c.Excluded[reason]++
}

// AddMethod counts one call with request method m, as Group.AddMethod.
func (c *Cell) AddMethod(m string) {
	if m == "" {
		return
	}
	if c.Methods == nil {
		c.Methods = make(map[string]int64, 2)
	}
	c.Methods[m]++
}

// Arrive counts n calls in the Unix second sec, which lies in the cell's
// interval.
func (c *Cell) Arrive(sec, n int64) {
	off := int32(sec - c.Start)
	i := len(c.Seconds)
	if i == 0 || c.Seconds[i-1] < off { // logs are mostly in time order
		c.Seconds = append(c.Seconds, off)
		c.Calls = append(c.Calls, n)
		return
	}
	i, found := slices.BinarySearch(c.Seconds, off)
	if found {
		c.Calls[i] += n
		return
	}
	c.Seconds = slices.Insert(c.Seconds, i, off)
	c.Calls = slices.Insert(c.Calls, i, n)
}

// Count returns the calls the cell holds: recorded, excluded and out of range.
func (c *Cell) Count() int64 {
	n := c.Latency.TotalCount() + c.Below + c.Above
	for _, v := range c.Excluded {
		n += v
	}
	return n
}

// bytes returns about how much memory c holds.
func (c *Cell) bytes() int {
	n := 160 + 4*cap(c.Seconds) + 8*cap(c.Calls) + 64*(len(c.Excluded)+len(c.Methods))
	for _, p := range []*hdr.PackedHistogram{c.Latency, c.Censored, c.Connect} {
		if p != nil {
			n += p.GetMemorySize()
		}
	}
	return n
}

func (c *Cell) micros(d time.Duration) (int64, bool) { return toMicros(d, &c.Below, &c.Above) }

// Merge adds o's counts to c; both hold the same interval.
func (c *Cell) Merge(o *Cell) {
	c.Latency.Merge(o.Latency)
	c.Censored = mergePacked(c.Censored, o.Censored)
	c.Connect = mergePacked(c.Connect, o.Connect)
	c.Below += o.Below
	c.Above += o.Above
	for reason, n := range o.Excluded {
		if c.Excluded == nil {
			c.Excluded = make(map[string]int64)
		}
		c.Excluded[reason] += n
	}
	c.Methods = addCounts(c.Methods, o.Methods)
	for i, off := range slices.Clone(o.Seconds) {
		c.Arrive(c.Start+int64(off), o.Calls[i])
	}
}

func mergePacked(into, from *hdr.PackedHistogram) *hdr.PackedHistogram {
	if from == nil {
		return into
	}
	if into == nil {
		return from.Clone()
	}
	into.Merge(from)
	return into
}

// Cell returns the group's cell for the interval that holds t (the
// Untimed cell for the zero time), creating it; nil when the group's set
// keeps no intervals (Set.Every).
func (g *Group) Cell(t time.Time) *Cell {
	if g.every == 0 {
		return nil
	}
	start := int64(Untimed)
	if !t.IsZero() {
		sec := t.Unix()
		start = sec - mod(sec, g.every)
	}
	return g.hot(start)
}

// mod is a % b rounded towards minus infinity, for times before 1970.
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// Every makes the set keep each group's samples per interval of length d
// (Group.Cells), and nothing else, for an interval log; intervals start at whole
// multiples of d since the Unix epoch, so that logs summarised apart line
// up. d is whole seconds, at least one; it applies to groups made after the
// call.
func (s *Set) Every(d time.Duration) { s.every = max(int64(d/time.Second), 1) }

// AddCell adds a cell read from an interval log to the group's totals: its
// histograms, out-of-range counts, exclusions and arrivals; its connect
// times join g.Connect. A group of a set that keeps intervals takes it
// into its cells instead.
func (g *Group) AddCell(c *Cell) {
	if g.every > 0 {
		g.addToCells(c)
		return
	}
	g.Latency.addPacked(c.Latency, c.Censored, c.Below, c.Above)
	if c.Connect != nil && c.Connect.TotalCount() > 0 {
		// Cells keep connect times of 0 with the others; the group counts
		// them as reused connections (RecordConnect).
		c.Connect.ForEachBucket(func(us, n int64) bool {
			if us == 0 {
				g.ReusedConnects += n
				return true
			}
			if g.Connect == nil {
				g.Connect = New()
			}
			g.Connect.RecordN(toDuration(us), n)
			return true
		})
	}
	for reason, n := range c.Excluded {
		g.Excluded[reason] += n
	}
	g.Methods = addCounts(g.Methods, c.Methods)
	if c.Start != Untimed {
		for i, off := range c.Seconds {
			g.Arrivals.add(c.Start+int64(off), c.Calls[i])
		}
	}
}

// addToCells adds c to the group's cells, in the interval that holds its
// start.
func (g *Group) addToCells(c *Cell) {
	c = c.clone()
	if c.Start != Untimed {
		// Into the set's interval holding the cell's start: summaries
		// merge into longer intervals (never shorter: see Summarize).
		start := c.Start - mod(c.Start, g.every)
		for i := range c.Seconds {
			c.Seconds[i] += int32(c.Start - start)
		}
		c.Start = start
	}
	g.addFrozen(c, true)
}

func (c *Cell) clone() *Cell {
	n := &Cell{Start: c.Start, Latency: c.Latency.Clone(), Below: c.Below, Above: c.Above,
		Excluded: maps.Clone(c.Excluded), Methods: maps.Clone(c.Methods), Seconds: slices.Clone(c.Seconds), Calls: slices.Clone(c.Calls)}
	if c.Censored != nil {
		n.Censored = c.Censored.Clone()
	}
	if c.Connect != nil {
		n.Connect = c.Connect.Clone()
	}
	return n
}

// addPacked adds sparse histograms of Latency's geometry to l: all is every
// recorded value, censored (nil: none) the censored ones among them.
// Values hdrhistogram drops are counted as above range.
func (l *Latency) addPacked(all, censored *hdr.PackedHistogram, below, above int64) {
	l.filled = nil
	l.below += below
	l.above += above
	l.above += l.h.mergePacked(all)
	if censored != nil && censored.TotalCount() > 0 {
		if l.censored == nil {
			l.censored = &counts{}
		}
		_ = l.censored.mergePacked(censored)
	}
}

// mergePacked adds p's buckets to c as p.MergeInto adds them to a dense
// histogram of Latency's geometry, and returns the samples dropped: those
// of buckets beyond the geometry's range, and of a bucket that would push
// the total past MaxInt64.
func (c *counts) mergePacked(p *hdr.PackedHistogram) (dropped int64) {
	for v, n := range p.ForEachBucket {
		if i := countsIndex(v); i >= countsLen || !c.add(int(i), n) {
			dropped = addDropped(dropped, n)
		}
	}
	return dropped
}
