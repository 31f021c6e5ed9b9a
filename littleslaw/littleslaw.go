// Package littleslaw applies Little's law (in flight = rate x time) to tell
// what a hang of a dependency costs, whether it exhausts the caller's pool,
// and how large a bulkhead prevents that (DOMAIN.md section 2).
package littleslaw

import "time"

// Input is what is known about the calls to one dependency. Zero means
// unknown for every field.
type Input struct {
	Rate        float64       // mean calls per second
	PeakRate    float64       // calls per second in the busiest minute; 0 = unknown, Rate stands in
	Pool        int           // threads, connections or goroutines the calls share
	MeanLatency time.Duration // mean latency in normal operation
	P99         time.Duration // p99 latency, for the Hystrix rule of thumb
	Timeout     time.Duration // the timeout a hang runs into
	Rejection   float64       // share of calls the bulkhead may reject in normal operation; default 0.001
}

// Result is Little's law applied to an Input. Fields whose inputs are
// unknown are zero and the matching Known flag is false.
type Result struct {
	Rate, PeakRate       float64
	Pool                 int
	RateKnown, PoolKnown bool
	InFlightNormal       float64 // Rate x MeanLatency
	InFlightDuringHang   float64 // hang rate (PeakRate, else Rate) x Timeout
	PoolExhausted        bool
	SecondsToExhaustion  float64 // Pool / hang rate, when PoolExhausted
	Bulkhead             int     // Poisson quantile 1-Rejection of (peak rate x mean latency)
	Hystrix              int     // peak rate x p99 + breathing room
}

func InFlight(rate float64, wait time.Duration) float64 { panic("unimplemented") }
func PoissonQuantile(mean, p float64) int               { panic("unimplemented") }
func Analyze(in Input) Result                           { panic("unimplemented") }
func (r Result) Verdict() string                        { panic("unimplemented") }
