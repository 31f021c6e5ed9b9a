package e2e

import (
	"sync"
	"time"
)

// wallWatch measures how far the machine's wall clock moves against its
// monotonic clock while a test runs: a server that times one interval on
// the wall clock and another on the monotonic clock (nginx: $request_time
// from ngx_timeofday(), $upstream_response_time from ngx_current_msec, its
// monotonic clock) sees them disagree by as much, and a comparison between
// the two is only as good as that. It samples every millisecond until
// stopped.
type wallWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	low  time.Duration
	high time.Duration
}

func watchWallClock() *wallWatch {
	w := &wallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			now := time.Now()
			// The wall clock's elapsed time less the monotonic clock's.
			d := now.Round(0).Sub(start.Round(0)) - now.Sub(start)
			w.mu.Lock()
			w.low, w.high = min(w.low, d), max(w.high, d)
			w.mu.Unlock()
		}
	}()
	return w
}

// Stop ends the sampling and returns the spread of the wall clock against
// the monotonic clock seen: 0 on a machine whose clocks agree.
func (w *wallWatch) Stop() time.Duration {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.high - w.low
}
