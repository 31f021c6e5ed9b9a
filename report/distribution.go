package report

// StandardQuantiles are the percentiles every report shows; 1 is the maximum.
var StandardQuantiles = []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1}

// Distribution is a group's latency histogram in at most MaxBins
// log-spaced bins, small enough for every report to carry.
//
// Bin i holds the samples above the upper bound of bin i-1 (LowestSeconds
// for the first bin) and at most its own upper bound; the empty bins between
// the first and the last non-empty one are kept, so the bins are contiguous.
// The bounds lie on one fixed grid, 20 per decade (10^(k/20) seconds rounded
// to three significant digits: 1ms, 1.12ms, 1.26ms, ... 8.91ms, 10ms), so two
// reports bin alike; a distribution spanning more than five decades takes
// every second, fourth, fifth, tenth or twentieth bound instead. A sample
// is binned by the lowest value its HDR bucket holds (within 0.1 % of it);
// censored samples are counted at their lower bound, as everywhere else.
// Samples below one microsecond, zero included, are in the first bin of the
// grid, whose upper bound is 1µs.
type Distribution struct {
	LowestSeconds float64 `json:"lowest_seconds"`
	Bins          []Bin   `json:"bins"`
}

// Bin is one bin of a Distribution.
type Bin struct {
	UpperSeconds float64 `json:"upper_seconds"`
	Count        int64   `json:"count"`
}

// MaxBins is the most bins a Distribution has.
const MaxBins = 100
