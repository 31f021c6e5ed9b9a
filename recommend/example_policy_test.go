package recommend_test

import (
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

func ExampleNewPolicy() {
	// 10,000 calls: most take 10-30ms, one in 50 stalls for 100-500ms.
	h := histogram.New()
	for i := range 10000 {
		d := 10*time.Millisecond + time.Duration(i%200)*100*time.Microsecond
		if i%50 == 0 {
			d = 100*time.Millisecond + time.Duration(i/50)*2*time.Millisecond
		}
		h.Record(d)
	}
	rec, _ := recommend.Recommend(h, recommend.DefaultOptions())

	// The caller gives up after 1.5s and would like 3 attempts.
	p, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{
		Deadline:    1500 * time.Millisecond,
		Attempts:    3,
		RetryBudget: 0.1,
		Idempotent:  true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range p.Steps {
		fmt.Printf("%-14s %-8v %s\n", s.Rule, s.Value, s.Reason)
	}
	fmt.Printf("%d of %d attempts of %v, worst case %v, retry on %v\n",
		p.Attempts, p.RequestedAttempts, p.PerTryTimeout, p.WorstCase, p.RetryOn)
	for _, w := range p.Warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// per-try        480ms    each attempt gets the recommended timeout of 480ms (it cuts off at most 0.1 % of calls)
	// attempts       1.5s     3 attempts within the deadline of 1.5s: each attempt gets the smaller of 480ms and the time left; when attempts fail fast all 3 are sent (the waits before the last take at most 75ms, leaving it the 40.4ms an attempt needs); at most 1.5s in all
	// backoff        37.5ms   full jitter between 25ms and 250ms: the 2 waits between 3 attempts total 37.5ms on average, at most 75ms
	// min-useful-try 40.414ms an attempt with less than 40.4ms left before the deadline is not sent, and a backoff that would leave less ends the call (2 x the median of 20.2ms: less than that fires on ordinary noise)
	// hang           1.4775s  when the dependency hangs (waits at their mean): attempt 1 at 0s times out at 480ms, attempt 2 at 493ms times out at 973ms, attempt 3 at 998ms times out at 1.48s; the caller waits 1.48s, within the deadline of 1.5s
	// fast-failures  37.5ms   when every attempt fails fast (a refused connection), all 3 are sent, with 37.5ms of backoff between them on average (at most 75ms)
	// static         1.21s    clients with no bound over all attempts (HAProxy, resilience4j's Retry without an outer TimeLimiter) must fit every attempt timing out in full, every wait at the cap of 250ms: 2 attempts of 480ms fit the deadline of 1.5s (3 would take 1.94s), so their snippets let at most 2 attempts run into the timeout, and beyond that retry only refused connections (a retry of one costs no more than a connect). A per-try timeout of 330ms would fit all 3 for them, but it cuts off at most 0.85 % of calls instead of 0.1 %
	// 3 of 3 attempts of 480ms, worst case 1.5s, retry on [connect-failure refused-stream timeout 408 429 502 503 504]
}
