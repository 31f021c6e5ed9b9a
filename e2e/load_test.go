package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// loadEnv names the load mode: TUNETIMEOUT_E2E_LOAD=N keeps N busy
// goroutines per core spinning for the whole run of the package, so that
// the tests meet a machine as busy as a loaded CI runner (see doc.go).
const loadEnv = "TUNETIMEOUT_E2E_LOAD"

func TestMain(m *testing.M) {
	stop, err := startLoad(os.Getenv(loadEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %s: %v\n", loadEnv, err)
		os.Exit(2)
	}
	code := m.Run()
	stop()
	removeBuilt()
	os.Exit(code)
}

// loadSink keeps the spinners' work observable, so that the compiler cannot
// drop it.
var loadSink atomic.Uint64

// startLoad starts the busy goroutines of the load mode, n (a count, "" or
// "0" for none) per core, and returns what stops them and waits for them.
//
// A goroutine the Go scheduler runs on one of GOMAXPROCS threads only
// competes with the test's own goroutines, not with nginx or Prometheus:
// GOMAXPROCS (the cores) threads are all the operating system would see
// busy, whatever n. So GOMAXPROCS grows by the spinners, each locked to a
// thread of its own: the kernel then has n runnable threads per core more
// than the tests and the servers they start, which it shares out among all
// of them as it would with a busy neighbour's processes, and the tests'
// goroutines keep the Ps they had.
func startLoad(n string) (stop func(), err error) {
	if n == "" {
		return func() {}, nil
	}
	perCore, err := strconv.Atoi(n)
	if err != nil || perCore < 0 || perCore > 64 {
		return nil, fmt.Errorf("%q is not a count of busy goroutines per core (0-64)", n)
	}
	spinners := perCore * runtime.NumCPU()
	if spinners == 0 {
		return func() {}, nil
	}
	before := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(before + spinners)
	var done atomic.Bool
	var wg sync.WaitGroup
	for k := range spinners {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// Hash a block over and over, each round over the last digest:
			// real work, with no allocation (no garbage for the tests' GC).
			var block [4096]byte
			block[0] = byte(k)
			rounds := uint64(0)
			for !done.Load() {
				sum := sha256.Sum256(block[:])
				copy(block[:len(sum)], sum[:])
				rounds++
			}
			loadSink.Add(uint64(block[0]) + rounds)
		})
	}
	fmt.Fprintf(os.Stderr, "e2e: load mode: %d busy goroutines (%d per core, %d cores) on threads of their own; GOMAXPROCS %d -> %d\n",
		spinners, perCore, runtime.NumCPU(), before, before+spinners)
	return func() {
		done.Store(true)
		wg.Wait()
		runtime.GOMAXPROCS(before)
	}, nil
}
