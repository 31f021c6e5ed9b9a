// Package backendclient holds the HTTP clients of "backend", written by tunetimeout from measured latency.
// http.Client.Timeout bounds one request, reading the body included: it is the per-try timeout.
// Give each call a context deadline of its RetryPolicy's Deadline and retry in a loop that reads the RetryPolicy.
// net.Dialer.Timeout 6 * time.Millisecond: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
// TLSHandshakeTimeout 6 * time.Millisecond: the connect timeout again, a handshake costs about as many round trips
// ResponseHeaderTimeout 800 * time.Millisecond: the longest per-try timeout of the groups
// MaxConnsPerHost 25 = bulkhead (Poisson p99.9 of 13 calls in flight at the peak rate)
// NewClient (group "all"): Timeout 800 * time.Millisecond: 800ms = p99.9 of 200,000 calls (792ms), rounded up
//   DefaultRetry: no call policy in the report: one attempt, no retries; Deadline 800 * time.Millisecond: 800ms = p99.9 of 200,000 calls (792ms), rounded up

package backendclient

import (
	"net"
	"net/http"
	"time"
)

// RetryPolicy is the retry policy of a group: at most Attempts calls (the
// first included), waiting a random time from 0 to Base x 2^n, at most Cap,
// between them (full jitter), all within Deadline.
type RetryPolicy struct {
	Attempts  int
	Base, Cap time.Duration
	Deadline  time.Duration
}

// transport is shared by the clients of the service.
var transport = &http.Transport{
	Proxy: http.ProxyFromEnvironment,
	DialContext: (&net.Dialer{
		Timeout:   6 * time.Millisecond,
		KeepAlive: 30 * time.Second,
	}).DialContext,
	TLSHandshakeTimeout:   6 * time.Millisecond,
	ResponseHeaderTimeout: 800 * time.Millisecond,
	MaxConnsPerHost:       25,
	MaxIdleConnsPerHost:   25,
	IdleConnTimeout:       90 * time.Second,
}

// NewClient returns the client for group "all".
func NewClient() *http.Client {
	return &http.Client{Transport: transport, Timeout: 800 * time.Millisecond}
}

// DefaultRetry is the retry policy of group "all".
var DefaultRetry = RetryPolicy{
	Attempts: 1,
	Deadline: 800 * time.Millisecond,
}
