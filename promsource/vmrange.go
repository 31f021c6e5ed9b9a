package promsource

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// VMRange is the kind of a VictoriaMetrics histogram, as written by
// github.com/VictoriaMetrics/metrics (and vmagent's stream aggregation):
// one counter per range, NAME_bucket{vmrange="1.000e-02...1.136e-02"}, not
// cumulative, with NAME_sum and NAME_count beside them.
//
// The layout (metrics/histogram.go): 18 ranges per decade from 1e-9 to 1e18,
// range k between 10^(-9+k/18) and 10^(-9+(k+1)/18), each bound written with
// %.3e ("8.799e-01...1.000e+00"); below them "0...1.000e-09", above them
// "1.000e+18...+Inf". Only ranges that hold a call are exported, so the
// ranges of an answer need not touch: a range missing between two others
// had no calls. The library's comment says a range holds the values above
// its lower and up to its upper bound, as an le bucket does; VictoriaMetrics's
// own histogram_quantile and prometheus_buckets read it so (they turn vmrange
// into le=upper, app/vmselect/promql/transform.go vmrangeBucketsToLE), and
// so does FromVMRange: each range is the bucket (lo, hi]. (Strictly, Update
// files a value v in range floor((log10(v)+9)*18), which is [lo, hi) but for
// exact powers of ten, and the labels round the bounds to 4 digits: the
// difference is below 0.05 % of a bound.)
const VMRange = "vmrange"

// VMBucket is one vmrange bucket series as a query returns it: the vmrange
// label's value, "lo...hi" in the metric's unit, and the calls within the
// range (its increase over the window).
type VMBucket struct {
	Range string
	Count float64
}

// VMRangeError is a vmrange value that FromVMRange cannot read.
type VMRangeError struct {
	Value  string // cut to a sane length
	Reason string
}

func (e *VMRangeError) Error() string {
	return fmt.Sprintf("vmrange %q %s", e.Value, e.Reason)
}

// maxShownValue bounds a label value quoted in an error: the value is the
// server's data and may be anything.
const maxShownValue = 40

// ParseVMRange reads a vmrange value "lo...hi" into its bounds, as
// VictoriaMetrics does (strconv.ParseFloat on each side of "..."): hi may be
// +Inf; lo must be finite and at least 0 (the histograms record no negative
// values) and hi above lo.
func ParseVMRange(s string) (lo, hi float64, err error) {
	bad := func(reason string) (float64, float64, error) {
		return 0, 0, &VMRangeError{Value: cut(s, maxShownValue), Reason: reason}
	}
	a, b, ok := strings.Cut(s, "...")
	if !ok || a == "" || b == "" {
		return bad(`is not two bounds "lo...hi" such as "1.000e-02...1.136e-02"`)
	}
	lo, err1 := strconv.ParseFloat(a, 64)
	hi, err2 := strconv.ParseFloat(b, 64)
	switch {
	case err1 != nil:
		return bad(fmt.Sprintf("has a lower bound %q that is not a number", cut(a, maxShownValue)))
	case err2 != nil:
		return bad(fmt.Sprintf("has an upper bound %q that is not a number", cut(b, maxShownValue)))
	case math.IsNaN(lo) || math.IsNaN(hi):
		return bad("has a NaN bound")
	case math.IsInf(lo, 0):
		return bad("has an infinite lower bound")
	case lo < 0:
		return bad("has a negative lower bound: a latency is never below zero")
	case !(hi > lo):
		return bad("has an upper bound that is not above its lower bound")
	}
	return lo, hi, nil
}

// maxShownErrors bounds the malformed values one error names.
const maxShownErrors = 3

// FromVMRange builds a histogram from vmrange buckets, in the metric's unit
// (unit is what one of its units lasts). Each range is the bucket (lo, hi]
// (see VMRange); ranges absent from buckets, and ranges without calls, had
// no calls and are left out. Counts are per range, so the total is their sum
// and needs no +Inf range. It fails on a malformed vmrange value and on
// ranges that overlap (a call lies in one range only, so overlapping counts
// cannot be read); it repairs what VictoriaMetrics's histogram_quantile also
// passes over, saying so in Repairs: a NaN count is left out, a negative one
// (an increase across a reset it could not see) taken as 0, and ranges with
// the same bounds (written differently) added up.
func FromVMRange(buckets []VMBucket, unit time.Duration) (*histogram.Bucketed, error) {
	h := &histogram.Bucketed{Kind: VMRange}
	ranges, rc, err := parseVMRanges(buckets)
	if err != nil {
		return nil, err
	}
	merged, dups := mergeVMRanges(ranges)
	if err := vmOverlaps(merged); err != nil {
		return nil, err
	}
	if rc.nan > 0 {
		repair(h, "nan-count", finding.Fields{"buckets": rc.nan}, "%d vmrange buckets had a NaN increase; they were left out, as VictoriaMetrics's histogram_quantile leaves them out", rc.nan)
	}
	if rc.neg > 0 {
		repair(h, "negative-increase", finding.Fields{"buckets": rc.neg, "by_calls": rc.negBy}, "%d vmrange buckets had a negative increase (by up to %s calls: a counter reset increase() could not see); they were taken as 0, as VictoriaMetrics's histogram_quantile takes them", rc.neg, human.Number(rc.negBy))
	}
	if dups > 0 {
		repair(h, "duplicate-range", finding.Fields{"buckets": dups}, "%d vmrange buckets had the same bounds as another, written differently; their counts were added up", dups)
	}
	if len(merged) == 0 {
		return nil, fmt.Errorf("%w: no bucket series", ErrEmptyWindow)
	}
	u := unit.Seconds()
	cum := 0.0
	for _, r := range merged {
		if r.count == 0 {
			continue
		}
		cum += r.count
		h.Buckets = append(h.Buckets, histogram.Bucket{Lo: r.lo * u, Hi: r.hi * u, Count: r.count, Cumulative: cum})
	}
	h.Count = cum
	noteBeyond(h, unit)
	if !(h.Count > 0) {
		return h, fmt.Errorf("%w: every vmrange bucket's increase is 0", ErrEmptyWindow)
	}
	return h, nil
}

// vmRange is a vmrange bucket read: its bounds, its count and its label.
type vmRange struct {
	lo, hi, count float64
	label         string
}

// vmCounts counts the counts of vmrange buckets repaired: NaN (left out)
// and negative (taken as 0, by up to negBy calls).
type vmCounts struct {
	nan, neg int
	negBy    float64
}

// parseVMRanges reads the bounds of buckets, leaving out those of a NaN
// count and taking a negative count as 0 (counted in rc); a label that
// cannot be read is an error.
func parseVMRanges(buckets []VMBucket) (ranges []vmRange, rc vmCounts, err error) {
	var bad []string
	nBad := 0
	for _, b := range buckets {
		lo, hi, err := ParseVMRange(b.Range)
		if err != nil {
			if nBad++; nBad <= maxShownErrors {
				bad = append(bad, err.Error())
			}
			continue
		}
		c := b.Count
		switch {
		case math.IsNaN(c):
			rc.nan++
			continue
		case c < 0:
			rc.neg++
			rc.negBy = max(rc.negBy, -c)
			c = 0
		}
		ranges = append(ranges, vmRange{lo, hi, c, b.Range})
	}
	if nBad > 0 {
		more := ""
		if nBad > len(bad) {
			more = fmt.Sprintf(" (and %d more)", nBad-len(bad))
		}
		return nil, rc, fmt.Errorf("%d bucket series have a vmrange label that cannot be read: %s%s", nBad, strings.Join(bad, "; "), more)
	}
	return ranges, rc, nil
}

// mergeVMRanges sorts ranges by their bounds and adds up the counts of
// the same bounds written differently ("1e-2...1.136e-2" beside
// "1.000e-02...1.136e-02"), dups of them, in place.
func mergeVMRanges(ranges []vmRange) (merged []vmRange, dups int) {
	slices.SortFunc(ranges, func(a, b vmRange) int {
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(a.hi, b.hi)
	})
	merged = ranges[:0]
	for _, r := range ranges {
		if n := len(merged); n > 0 && merged[n-1].lo == r.lo && merged[n-1].hi == r.hi {
			merged[n-1].count += r.count
			dups++
			continue
		}
		merged = append(merged, r)
	}
	return merged, dups
}

// vmOverlaps fails when ranges of merged, sorted by lower bound,
// overlap: when one starts below the highest upper bound so far.
func vmOverlaps(merged []vmRange) error {
	overlaps, first := 0, ""
	for i, top := 1, 0; i < len(merged); i++ {
		if merged[i].lo < merged[top].hi {
			if overlaps++; overlaps == 1 {
				first = fmt.Sprintf("vmrange %q overlaps %q", cut(merged[top].label, maxShownValue), cut(merged[i].label, maxShownValue))
			}
		}
		if merged[i].hi > merged[top].hi {
			top = i
		}
	}
	if overlaps > 0 {
		more := ""
		if overlaps > 1 {
			more = fmt.Sprintf(" (%d overlaps in all)", overlaps)
		}
		return fmt.Errorf("%s%s: each call is counted in one range, so the counts of overlapping ranges cannot be read", first, more)
	}
	return nil
}

// cut shortens text from the server to at most n runes, the last three
// "..." when it was longer; quote it with %q, which escapes the rest.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-3]) + "..."
}

// printable makes text from the server one line of at most n runes:
// characters that are not printable become spaces, runs of spaces one.
func printable(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(cut(oneLine(b.String()), n))
}
