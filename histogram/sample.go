package histogram

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Sampler draws latencies from the distribution a Latency recorded, for
// simulations that replay measured latency. It is a snapshot: samples
// recorded after Sampler was called are not drawn.
//
// A draw picks a recorded sample uniformly at random (by inverse CDF over
// the buckets, so a bucket holding k of N samples is picked with
// probability k/N) and returns a value spread uniformly over the values
// equivalent to it. Censored samples are drawn at their lower bound, like
// every other query answers them.
//
// A Sampler is safe for concurrent use as long as each goroutine passes its
// own *rand.Rand.
type Sampler struct {
	cum   []int64 // cumulative counts, one per non-empty bucket
	from  []int64 // the bucket's lowest equivalent value, µs
	width []int64 // number of equivalent values in the bucket, µs (at least 1)
}

// Sampler returns a sampler over the samples recorded so far. It returns
// nil for an empty histogram.
func (l *Latency) Sampler() *Sampler {
	if l.Count() == 0 {
		return nil
	}
	s := &Sampler{}
	var total int64
	for i, n := range l.h.all() {
		from, to := valueAt(int64(i)), highestAt(int64(i))
		total += n
		s.cum = append(s.cum, total)
		s.from = append(s.from, from)
		s.width = append(s.width, max(to-from+1, 1))
	}
	return s
}

// Sample draws one latency using r. The same sequence from r gives the
// same draws.
func (s *Sampler) Sample(r *rand.Rand) time.Duration {
	total := s.cum[len(s.cum)-1]
	k := r.Int64N(total) // the k-th sample, 0-based
	i, _ := slices.BinarySearch(s.cum, k+1)
	// Uniform over the bucket's values [from, from+width) in nanoseconds.
	lo := s.from[i] * int64(time.Microsecond)
	return time.Duration(lo + r.Int64N(s.width[i]*int64(time.Microsecond)))
}
