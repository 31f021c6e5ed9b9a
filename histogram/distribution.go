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
	for _, b := range l.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		out = append(out, Bar{Lo: toDuration(b.From), Hi: toDuration(b.To), Count: b.Count})
	}
	return out
}
