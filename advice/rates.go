package advice

import (
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
)

// MeasuredRates says whether arrivals measure a rate: one second of data
// gives no rate worth the name.
func MeasuredRates(a *histogram.Arrivals) bool {
	return a != nil && a.Count() > 0 && a.Span() >= 2*time.Second
}

// BusiestMinuteRate is the calls per second of the busiest minute (of the
// whole span when it is shorter): the peak rate Little's law uses.
func BusiestMinuteRate(a *histogram.Arrivals) float64 {
	minute, _ := a.Busiest(time.Minute)
	return float64(minute) / min(time.Minute, a.Span()).Seconds()
}

// total is the sum of a group's excluded calls.
func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
