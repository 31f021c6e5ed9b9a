package e2e

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/e2etest"
)

// requireBinary returns the path of a server binary, or skips the test (or
// fails it under TUNETIMEOUT_E2E=1) when it is not installed.
func requireBinary(t *testing.T, name, debianPackage string) string {
	t.Helper()
	return e2etest.RequireBinary(t, name, "apt-get install -y "+debianPackage)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sendCalls makes n HTTP calls, concurrency at a time; request(i) builds
// call i (to 127.0.0.1 only). It returns each call's status and round trip
// and reports transport errors on t.
func sendCalls(t *testing.T, n, concurrency int, request func(i int) *http.Request) (status []int, rtt []time.Duration) {
	t.Helper()
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, Proxy: nil},
	}
	status = make([]int, n)
	rtt = make([]time.Duration, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range next {
				sent := time.Now()
				resp, err := client.Do(request(i))
				if err != nil {
					t.Errorf("call %d: %v", i, err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status[i] = resp.StatusCode
				rtt[i] = time.Since(sent) // one goroutine per call; read after wg.Wait
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return status, rtt
}
