// Package histogram turns samples into HDR latency histograms. It is the only
// package that touches hdrhistogram-go.
package histogram

import "time"

const (
	// Lowest is the smallest latency told apart from zero.
	Lowest = time.Microsecond
	// Highest is the largest latency recorded; longer ones are counted as
	// out of range.
	Highest = 24 * time.Hour
	// Digits is the number of significant decimal digits kept.
	Digits = 3
)

// Latency is a latency histogram with its right-censored samples and the
// samples it could not record.
type Latency struct{}

// Interval is a distribution-free confidence interval for a quantile, from
// order statistics (DOMAIN.md section 1).
type Interval struct {
	Quantile   float64       // q, 0 < q <= 1
	Confidence float64       // e.g. 0.95
	Lo, Hi     time.Duration // bounds of the true q-quantile
	HiKnown    bool          // false when the upper rank lies beyond the largest sample
	Above      int64         // samples above the q-quantile estimate
}

func New() *Latency                                                { panic("unimplemented") }
func (l *Latency) Record(d time.Duration) bool                     { panic("unimplemented") }
func (l *Latency) RecordCensored(d time.Duration) bool             { panic("unimplemented") }
func (l *Latency) Count() int64                                    { panic("unimplemented") }
func (l *Latency) Censored() int64                                 { panic("unimplemented") }
func (l *Latency) OutOfRange() (below, above int64)                { panic("unimplemented") }
func (l *Latency) Quantile(q float64) time.Duration                { panic("unimplemented") }
func (l *Latency) QuantileIsLowerBound(q float64) bool             { panic("unimplemented") }
func (l *Latency) FractionAbove(d time.Duration) float64           { panic("unimplemented") }
func (l *Latency) CountAbove(d time.Duration) int64                { panic("unimplemented") }
func (l *Latency) CountBetween(lo, hi time.Duration) int64         { panic("unimplemented") }
func (l *Latency) Mean() time.Duration                             { panic("unimplemented") }
func (l *Latency) Min() time.Duration                              { panic("unimplemented") }
func (l *Latency) Max() time.Duration                              { panic("unimplemented") }
func (l *Latency) Merge(o *Latency)                                { panic("unimplemented") }
func (l *Latency) QuantileInterval(q, confidence float64) Interval { panic("unimplemented") }
