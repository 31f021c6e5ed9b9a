package histogram

import (
	"iter"
	"math"
	"math/bits"
	"slices"
)

// counts holds the bucket counts of one histogram of Latency's geometry
// (countsLen buckets, see countsIndex), in memory that grows with the
// buckets filled rather than with the 1 µs to 24 h range: a dense
// hdrhistogram-go histogram of that range is 28,672 int64 counters, 230 KB,
// whatever it holds.
//
// It starts sparse: the filled buckets' indexes, sorted, with their counts
// beside them, 4 bytes a bucket (50 samples cost about 200 bytes). From
// startLen filled buckets on, where a binary search would take 6 steps and
// more, start tells where each page of pageLen buckets begins among them
// (900 bytes), so that recording looks among the few buckets of one page:
// latencies in whole milliseconds (nginx's $request_time) fill one bucket
// in 1,000 at 2 ms, one in 60 at 20 ms, and stay sparse. Once that many
// buckets are filled that a paged form would cost at most four times as
// much as the sparse one (checked each time the number of filled buckets
// doubles, from minPagedLen: a new bucket costs a copy of the sparse form,
// which must stay small), it turns paged: a directory of the pages and the
// pages that hold a sample, so that recording is an index computation and
// an increment, as in a dense histogram. 10,000 samples of the worked
// example's latency (3,200 filled buckets) cost 16 KB, 200,000 (6,500
// filled buckets) 20 KB; the paged form costs at most 58 KB, all pages
// filled.
//
// A count is kept in 16 bits, lo, with what exceeds them in the map hi:
// count = lo + loMax*hi, with lo in [1, loMax] for every filled bucket, so
// that lo == 0 means empty in both forms and the map is touched once per
// loMax samples of one bucket.
//
// The zero value is an empty histogram. Every answer (quantiles, counts,
// min, max, mean, merges, the drops at MaxInt64) is the one of a dense
// hdrhistogram-go histogram of the same geometry holding the same samples,
// which TestLatencyMatchesDense checks.
type counts struct {
	total int64
	// Sparse (dir == nil): idx holds the filled buckets in ascending order,
	// lo their counts beside them; once there are startLen of them,
	// start[p] is the position in idx of the first bucket of page p or
	// later (dirLen+1 of them, the last len(idx)).
	idx   []uint16
	start []uint16
	// Paged (dir != nil): dir[i>>pageBits] is 1 + the number of bucket i's
	// page in lo, 0 when the page holds nothing; lo holds the pages, pageLen
	// counts each.
	dir []uint16
	lo  []uint16
	hi  map[uint16]int64 // beyond 16 bits; nil until a bucket passes loMax
}

const (
	pageBits = 6
	pageLen  = 1 << pageBits
	pageMask = pageLen - 1
	loMax    = math.MaxUint16
	// startLen is the fewest filled buckets of a sparse form with start.
	startLen = 64
	// minPagedLen is the fewest filled buckets a paged form is considered for.
	minPagedLen = 128
)

// dirLen is the number of pages of Latency's geometry.
var dirLen = int(countsLen >> pageBits)

// bucketOf returns the HDR bucket of v in Latency's geometry: the power of
// two by which its sub-bucket is scaled, HdrHistogram's getBucketIndex
// (unit magnitude 0, 1,024 sub-buckets in each half).
func bucketOf(v int64) uint {
	return uint(bits.Len64(uint64(v)|2047)) - 11
}

// lowestEquivalent returns the lowest value the histogram does not tell
// apart from v (hdrhistogram-go's lowestEquivalentValue, negative values
// included).
func lowestEquivalent(v int64) int64 {
	b := bucketOf(v)
	return v >> b << b
}

// equivalent reports whether the histogram tells a and b apart
// (hdrhistogram-go's ValuesAreEquivalent).
func equivalent(a, b int64) bool { return lowestEquivalent(a) == lowestEquivalent(b) }

// highestAt returns the highest value of the bucket at counts index i.
func highestAt(i int64) int64 { return valueAt(i+1) - 1 }

// medianAt returns the middle of the bucket at counts index i, as
// hdrhistogram-go's medianEquivalentValue does.
func medianAt(i int64) int64 {
	v := valueAt(i)
	return v + (int64(1)<<bucketOf(v))>>1
}

// quantileRank is the rank, in [1, total], of the sample at quantile q (0 to
// 1) of a non-empty histogram: the smallest rank with at most (1-q) x total
// samples above it, ceil(q x total), as HdrHistogram's Java implementation
// takes it. hdrhistogram-go rounds q x total instead, which can cut off more
// than the share 1-q promises (p99.9 of 1,600 samples would be rank 1,598,
// with 2 samples, 0.125 %, above it). q x total is a float product: within
// 4 ulps of an integer it is taken as that integer, as Java's one-ulp step
// down makes it, so that a rounding error never steps a whole rank (none
// was found for the usual q and totals up to 10^6, but q comes from the
// user). NaN and q <= 0 give 1.
func quantileRank(q float64, total int64) int64 {
	if !(q > 0) {
		return 1
	}
	if q >= 1 {
		return total
	}
	x := q * float64(total)
	if r := math.Round(x); math.Abs(x-r) <= 4*x*0x1p-52 {
		x = r
	}
	rank := math.Ceil(x)
	if rank < 1 {
		return 1
	}
	if rank >= float64(total) {
		return total
	}
	return int64(rank)
}

// addDropped adds c to a count of dropped samples, saturating at MaxInt64
// as hdrhistogram-go does.
func addDropped(total, c int64) int64 {
	if c > math.MaxInt64-total {
		return math.MaxInt64
	}
	return total + c
}

// inc records one sample in bucket i, 0 <= i < countsLen. It reports false,
// recording nothing, when the total would pass MaxInt64.
func (c *counts) inc(i int) bool {
	if c.total < math.MaxInt64 {
		var s *uint16
		if c.dir != nil {
			if p := c.dir[i>>pageBits]; p != 0 {
				s = &c.lo[int(p-1)<<pageBits|i&pageMask]
			}
		} else if c.start != nil {
			s = c.findInPage(i)
		}
		if s != nil && *s < loMax {
			*s++
			c.total++
			return true
		}
	}
	return c.add(i, 1)
}

// findInPage returns the 16 bits of bucket i's count in a sparse form with
// start, nil when the bucket is empty.
func (c *counts) findInPage(i int) *uint16 {
	p := i >> pageBits
	a, b := int(c.start[p]), int(c.start[p+1])
	if b-a > 8 {
		if k, found := slices.BinarySearch(c.idx[a:b], uint16(i)); found {
			return &c.lo[a+k]
		}
		return nil
	}
	for k := a; k < b; k++ {
		if int(c.idx[k]) == i {
			return &c.lo[k]
		}
	}
	return nil
}

// add records n >= 0 samples in bucket i, 0 <= i < countsLen. It reports
// false, recording nothing, when the total would pass MaxInt64 (as
// hdrhistogram-go's RecordValues refuses it).
func (c *counts) add(i int, n int64) bool {
	if n > math.MaxInt64-c.total {
		return false
	}
	if n == 0 {
		return true
	}
	c.total += n
	var s *uint16
	if c.dir != nil {
		s = c.pageSlot(i)
	} else {
		s = c.sparseSlot(i)
	}
	v := int64(*s)
	if v+n <= loMax {
		*s = uint16(v + n)
		return true
	}
	if c.hi == nil {
		c.hi = make(map[uint16]int64)
	}
	t := v + loMax*c.hi[uint16(i)] + n // at most c.total
	*s = uint16((t-1)%loMax + 1)
	c.hi[uint16(i)] = (t - 1) / loMax
	return true
}

// count returns the count of bucket i whose 16 bits are lo.
func (c *counts) count(i int, lo uint16) int64 {
	n := int64(lo)
	if c.hi != nil {
		n += loMax * c.hi[uint16(i)]
	}
	return n
}

// sparseSlot returns the 16 bits of bucket i's count, making the bucket
// (and perhaps turning the form paged) when it is new.
func (c *counts) sparseSlot(i int) *uint16 {
	var k int
	if c.start != nil {
		p := i >> pageBits
		a, b := int(c.start[p]), int(c.start[p+1])
		off, found := slices.BinarySearch(c.idx[a:b], uint16(i))
		if k = a + off; found {
			return &c.lo[k]
		}
		for q := p + 1; q < len(c.start); q++ {
			c.start[q]++
		}
	} else {
		var found bool
		if k, found = slices.BinarySearch(c.idx, uint16(i)); found {
			return &c.lo[k]
		}
	}
	c.idx = slices.Insert(c.idx, k, uint16(i))
	c.lo = slices.Insert(c.lo, k, 0)
	n := len(c.idx)
	if n >= minPagedLen && n&(n-1) == 0 && c.pagedPays() {
		c.page()
		return c.pageSlot(i)
	}
	if n == startLen {
		c.start = make([]uint16, dirLen+1)
		j := 0
		for p := range c.start {
			for j < n && int(c.idx[j])>>pageBits < p {
				j++
			}
			c.start[p] = uint16(j)
		}
	}
	return &c.lo[k]
}

// pagedPays reports whether the sparse form's buckets would cost at most
// four times as much paged.
func (c *counts) pagedPays() bool {
	paged := 2 * (dirLen + c.pages()*pageLen)
	return paged <= 4*4*len(c.idx)
}

// pages returns how many pages the sparse form's buckets lie in.
func (c *counts) pages() int {
	pages, last := 0, -1
	for _, i := range c.idx {
		if p := int(i) >> pageBits; p != last {
			pages, last = pages+1, p
		}
	}
	return pages
}

// page turns the sparse form paged.
func (c *counts) page() {
	idx, lo, pages := c.idx, c.lo, c.pages()
	c.idx, c.start, c.lo = nil, nil, make([]uint16, 0, pages*pageLen)
	c.dir = make([]uint16, dirLen)
	for k, i := range idx {
		*c.pageSlot(int(i)) = lo[k]
	}
}

// pageSlot returns the 16 bits of bucket i's count in the paged form,
// making its page when it has none.
func (c *counts) pageSlot(i int) *uint16 {
	pg := i >> pageBits
	p := c.dir[pg]
	if p == 0 {
		if n := len(c.lo); n+pageLen > cap(c.lo) {
			// Grown by an eighth (append would add a quarter), at least 4 pages.
			lo := make([]uint16, n, n+max(n/8/pageLen, 4)*pageLen)
			copy(lo, c.lo)
			c.lo = lo
		}
		c.lo = c.lo[:len(c.lo)+pageLen]
		clear(c.lo[len(c.lo)-pageLen:])
		p = uint16(len(c.lo) >> pageBits)
		c.dir[pg] = p
	}
	return &c.lo[int(p-1)<<pageBits|i&pageMask]
}

// all yields the filled buckets in value order: their counts index and
// count.
func (c *counts) all() iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		if c.dir == nil {
			for k, i := range c.idx {
				if !yield(int(i), c.count(int(i), c.lo[k])) {
					return
				}
			}
			return
		}
		for pg, p := range c.dir {
			if p == 0 {
				continue
			}
			page := c.lo[int(p-1)<<pageBits:][:pageLen]
			for j, lo := range page {
				if lo != 0 {
					i := pg<<pageBits | j
					if !yield(i, c.count(i, lo)) {
						return
					}
				}
			}
		}
	}
}

// first returns the counts index of the lowest filled bucket; false when
// empty.
func (c *counts) first() (int, bool) {
	for i := range c.all() {
		return i, true
	}
	return 0, false
}

// merge adds o's buckets to c, lowest first, as hdrhistogram-go's Merge
// does, and returns the samples dropped: those of a bucket that would push
// the total past MaxInt64. o may be c.
func (c *counts) merge(o *counts) (dropped int64) {
	if o == c {
		clone := o.clone()
		o = &clone
	}
	if c.total == 0 && c.idx == nil && c.dir == nil && o.total > 0 {
		*c = o.clone() // nothing to add to: the same buckets, no drops
		return 0
	}
	for i, n := range o.all() {
		if !c.add(i, n) {
			dropped = addDropped(dropped, n)
		}
	}
	return dropped
}

// clone returns a copy of c that shares nothing with it.
func (c *counts) clone() counts {
	n := counts{total: c.total, idx: slices.Clone(c.idx), start: slices.Clone(c.start), dir: slices.Clone(c.dir), lo: slices.Clone(c.lo)}
	if c.hi != nil {
		n.hi = make(map[uint16]int64, len(c.hi))
		for i, h := range c.hi {
			n.hi[i] = h
		}
	}
	return n
}

// bytes returns about how much memory c holds beyond its own fields.
func (c *counts) bytes() int {
	// A map entry: its key, value and share of the bucket overhead.
	return 2*(cap(c.idx)+cap(c.start)+cap(c.dir)+cap(c.lo)) + 24*len(c.hi)
}

// valueAtRank returns the highest value equivalent to the sample of rank r
// (1 <= r <= total) over the cumulative counts of filled buckets (see view),
// or the lowest with lowest set; 0 when empty.
func valueAtRank(v *view, total, r int64, lowest bool) int64 {
	if total == 0 {
		return 0
	}
	r = min(max(r, 1), total)
	k, _ := slices.BinarySearch(v.cum, r)
	i := int64(v.at[k])
	if lowest {
		return valueAt(i)
	}
	return highestAt(i)
}

// view is the filled buckets of a counts in value order, with cumulative
// counts, for queries: a report asks hundreds of them of each histogram,
// and each is a binary search here.
type view struct {
	at  []uint16 // counts index of each filled bucket, ascending
	cum []int64  // cum[k]: samples in the buckets at[0] to at[k]
}

func newView(c *counts) *view {
	n := len(c.idx)
	if c.dir != nil {
		n = 0
		for _, lo := range c.lo {
			if lo != 0 {
				n++
			}
		}
	}
	v := &view{at: make([]uint16, 0, n), cum: make([]int64, 0, n)}
	var sum int64
	for i, n := range c.all() {
		sum += n
		v.at = append(v.at, uint16(i))
		v.cum = append(v.cum, sum)
	}
	return v
}

// from returns the position of the first filled bucket of counts index at
// least i.
func (v *view) from(i int64) int {
	switch {
	case i <= 0:
		return 0
	case i >= countsLen:
		return len(v.at)
	}
	k, _ := slices.BinarySearch(v.at, uint16(i))
	return k
}

// before returns the samples in the filled buckets before position k.
func (v *view) before(k int) int64 {
	if k == 0 {
		return 0
	}
	return v.cum[k-1]
}
