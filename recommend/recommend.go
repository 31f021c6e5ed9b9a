// Package recommend turns a latency histogram into a timeout, a connect
// timeout and the reasons for both (DOMAIN.md section 1).
package recommend

import (
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
)

// Options are the user's choices for one recommendation.
type Options struct {
	FalseTimeouts    float64       // share of good calls accepted to be cut off, 0 < f < 1; 0.001 -> p99.9
	TightTailRatio   float64       // floor the timeout at this multiple of p50; default 2
	NetworkAllowance time.Duration // added for clients far from the server
	Min, Max         time.Duration // user bounds; 0 means none
	RTT              time.Duration // round-trip time to the server; 0 = unknown (no connect timeout)
	Confidence       float64       // confidence of the quantile's interval; default 0.95
}

// Step is one rule applied on the way to the timeout, in order.
type Step struct {
	Rule   string        // stable identifier: "quantile", "tight-tail", "network-allowance", "round", "min", "max", "connect"
	Value  time.Duration // the timeout after this step
	Reason string        // one sentence for people
}

// Recommendation is a timeout with the steps that produced it.
type Recommendation struct {
	Quantile       float64            // 1 - FalseTimeouts
	Base           time.Duration      // the measured quantile
	LowerBound     bool               // Base is only a lower bound (censored samples at or below it)
	Interval       histogram.Interval // confidence interval of Base
	Timeout        time.Duration
	RoundingStep   time.Duration // the rounding step used at Base's magnitude
	ConnectTimeout time.Duration // 0 when unknown
	Steps          []Step
	Warnings       []string
}

func DefaultOptions() Options                                           { panic("unimplemented") }
func Recommend(h *histogram.Latency, o Options) (Recommendation, error) { panic("unimplemented") }
func RoundUp(d time.Duration) (rounded, step time.Duration)             { panic("unimplemented") }
func Candidates(h *histogram.Latency, r Recommendation) []time.Duration { panic("unimplemented") }
func ParseNetworkAllowance(s string) (time.Duration, error)             { panic("unimplemented") }
