package littleslaw_test

import (
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/littleslaw"
)

// The worked example (docs/method.md#12-the-worked-example): 400 calls/s with a mean latency of 32ms
// and a p99 of 490ms, a timeout of 800ms, a pool of 200.
func ExampleAnalyze() {
	r := littleslaw.Analyze(littleslaw.Input{
		Rate:        400,
		Pool:        200,
		MeanLatency: 32 * time.Millisecond,
		P99:         490 * time.Millisecond,
		Timeout:     800 * time.Millisecond,
	})
	fmt.Printf("in flight normally: %.1f\n", r.InFlightNormal)
	fmt.Printf("in flight during a hang: %.0f (pool exhausted: %v, after %.2f s)\n", r.InFlightDuringHang, r.PoolExhausted, r.SecondsToExhaustion)
	fmt.Printf("bulkhead: %d (Hystrix's rule of thumb: %d)\n", r.Bulkhead, r.Hystrix)
	for _, timeout := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second} {
		inFlight, pool := r.HangAt(timeout)
		fmt.Printf("timeout %v: %.0f calls held, %.1f x the pool\n", timeout, inFlight, pool)
	}
	fmt.Println(r.Verdict())
	// Output:
	// in flight normally: 12.8
	// in flight during a hang: 320 (pool exhausted: true, after 0.50 s)
	// bulkhead: 25 (Hystrix's rule of thumb: 294)
	// timeout 250ms: 100 calls held, 0.5 x the pool
	// timeout 500ms: 200 calls held, 1.0 x the pool
	// timeout 1s: 400 calls held, 2.0 x the pool
	// During a hang, 400 calls/s x 800ms = 320 calls wait at once, 1.6 x the pool of 200: the pool is exhausted 0.50 s into the hang. A bulkhead of 25 (normal demand is 13 in flight) keeps the rest of the pool serving other work.
}
