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
	// per-try        480ms    each attempt gets the recommended timeout of 480ms (it cuts off 0.09 % of calls)
	// attempts       1.21s    3 attempts of 480ms with waits capped at 250ms take up to 1.94s, more than the deadline of 1.5s: 2 attempts fit (at most 1.21s)
	// backoff        12.5ms   full jitter between 25ms and 250ms: the wait between 2 attempts is 12.5ms on average, at most 25ms
	// min-useful-try 40.414ms an attempt with less than 40.4ms left before the deadline is not sent (2 x the median of 20.2ms: less than that fires on ordinary noise)
	// 2 of 3 attempts of 480ms, worst case 1.21s, retry on [connect-failure timeout 408 429 502 503 504]
	// warning: 3 attempts do not fit the deadline of 1.5s: in the worst case (every attempt times out, every wait at the cap of 250ms) they take 1.94s; only 2 attempts of 480ms fit. A per-try timeout of 330ms would fit all 3, but it cuts off 0.84 % of calls instead of 0.09 %
}
