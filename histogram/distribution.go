package histogram

import "time"

// Bar is one non-empty bucket of a Latency: Count samples between Lo and
// Hi, values the histogram cannot tell apart (Lo is the lowest equivalent
// value, Hi the highest).
type Bar struct {
	Lo, Hi time.Duration
	Count  int64
}

// Bars returns the non-empty buckets, lowest first: the recorded
// distribution itself, for plots and for binning into coarser bins.
// Censored samples are in it at their lower bound, as in every other query.
// The counts add up to Count.
func (l *Latency) Bars() []Bar {
	var out []Bar
	for i, n := range l.h.all() {
		out = append(out, Bar{Lo: toDuration(valueAt(int64(i))), Hi: toDuration(highestAt(int64(i))), Count: n})
	}
	return out
}
