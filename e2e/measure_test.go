package e2e

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/tunetimeout/tunetimeout/histogram"
)

// What the tests compare the tool's figures with, and how closely.
//
// A server's own figures (nginx's $request_time, HAProxy's Ta, Apache's %D,
// Caddy's duration) are what the tool reads: each sample must be the
// server's figure exactly, and each percentile the server's own order
// statistic up to the histogram's precision. The upstream's and the
// client's clocks only bracket the server's: the server starts after the
// client sends and before the upstream starts, and it ends after the
// upstream and before the client has the answer, up to the server's timer
// resolution, however busy the machine. No check compares a time with an
// absolute latency ("less than 100ms") that a loaded machine can exceed.

// quantileRank is the 1-based rank of the sample the tool reports for
// quantile q of n samples: ceil(q*n), at least 1 (histogram.Latency's
// Quantile; its tests pin the rule, these tests only follow it).
func quantileRank(q float64, n int) int {
	x := q * float64(n)
	if r := math.Round(x); math.Abs(x-r) <= 1e-9 {
		x = r // float error in q*n, which the tool allows for too
	}
	return min(max(int(math.Ceil(x)), 1), n)
}

// orderStat returns the sample of sorted that the tool's quantile q stands
// for.
func orderStat(sorted []time.Duration, q float64) time.Duration {
	return sorted[quantileRank(q, len(sorted))-1]
}

// hdrSlack is how far above a sample the tool may report it: a histogram
// keeps histogram.Digits (3) significant digits of values in microseconds
// and answers a quantile with the highest value of the sample's bucket, at
// most 1/1024 (< 0.1 %) of the value above its microseconds.
func hdrSlack(d time.Duration) time.Duration {
	us := d.Truncate(histogram.Lowest)
	return d - us + us/1024
}

// assertHDR checks that the tool's figure got stands for the sample want:
// not below its whole microseconds, at most hdrSlack above it. msg and args
// say which figure, as in fmt.Sprintf.
func assertHDR(t *testing.T, want, got time.Duration, msg string, args ...any) bool {
	t.Helper()
	lo, hi := want.Truncate(histogram.Lowest), want+hdrSlack(want)
	if got >= lo && got <= hi {
		return true
	}
	return assert.Failf(t, "not the sample, within the histogram's precision",
		"%s: the tool says %v, the sample is %v (the histogram answers within [%v, %v])", fmt.Sprintf(msg, args...), got, want, lo, hi)
}

// reportDuration converts a report's seconds back to the microseconds the
// histogram answered in.
func reportDuration(seconds float64) time.Duration {
	return time.Duration(math.Round(seconds*1e6)) * time.Microsecond
}

// sortedDurations returns a sorted copy.
func sortedDurations(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}

// waitUntil polls cond every interval until it holds or limit has passed,
// and reports whether it held. The limit is a bound for a test that would
// otherwise wait forever, not an expectation of how long a server takes:
// make it generous, the loop returns as soon as cond holds.
func waitUntil(limit, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
