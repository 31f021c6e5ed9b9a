package recommend_test

import (
	"fmt"
	"time"

	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/recommend"
)

func ExampleRecommend() {
	// 10,000 calls: most take 10-30ms, one in 50 stalls for 100-500ms.
	h := histogram.New()
	for i := range 10000 {
		d := 10*time.Millisecond + time.Duration(i%200)*100*time.Microsecond
		if i%50 == 0 {
			d = 100*time.Millisecond + time.Duration(i/50)*2*time.Millisecond
		}
		h.Record(d)
	}

	o := recommend.DefaultOptions() // 0.1 % false timeouts: p99.9
	o.NetworkAllowance, _ = recommend.ParseNetworkAllowance("region")
	o.RTT = 2 * time.Millisecond
	r, err := recommend.Recommend(h, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range r.Steps {
		fmt.Printf("%-17s %-8v %s\n", s.Rule, s.Value, s.Reason)
	}
	fmt.Println("timeout:", r.Timeout, "connect timeout:", r.ConnectTimeout)
	for _, w := range r.Warnings {
		fmt.Println("warning:", w)
	}
	fmt.Println("candidates:", recommend.Candidates(h, r))
	// Output:
	// quantile          478.207ms p99.9 of 10,000 calls is 478ms: 10 calls slower (0.1 %; at most the 0.1 % asked for)
	// network-allowance 488.207ms latency measured at the server does not include the client's network, so 10ms of network allowance is added (478ms to 488ms)
	// round             490ms    488ms is rounded up to 490ms, a value people write in configs (steps of 10ms at this size)
	// connect           6ms      a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
	// timeout: 490ms connect timeout: 6ms
	// candidates: [50ms 100ms 250ms 300ms 490ms 500ms 1s]
}
