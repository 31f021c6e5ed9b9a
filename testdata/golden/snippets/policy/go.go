// Package shopapiclient holds the HTTP clients of "shop-api", written by tunetimeout from measured latency.
// http.Client.Timeout bounds one request, reading the body included: it is the per-try timeout.
// Give each call a context deadline of its RetryPolicy's Deadline and retry in a loop that reads the RetryPolicy.
// net.Dialer.Timeout 6 * time.Millisecond: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
// TLSHandshakeTimeout 6 * time.Millisecond: the connect timeout again, a handshake costs about as many round trips
// ResponseHeaderTimeout 800 * time.Millisecond: the longest per-try timeout of the groups
// MaxConnsPerHost 26 = bulkhead for the whole service (Poisson p99.9 of 13 calls in flight at the peak rate, summed over 3 groups)
// NewPOSTAPIOrdersClient (group "POST /api/orders"): Timeout 800 * time.Millisecond: 800ms = p99.9 of 59,978 calls (796ms), rounded up
//   POSTAPIOrdersRetry: 1 attempt from the call policy: no retries; Deadline 800 * time.Millisecond: 800ms = p99.9 of 59,978 calls (796ms), rounded up
// NewGETAPIUsersIDClient (group "GET /api/users/{id}"): Timeout 800 * time.Millisecond: 800ms = p99.9 of 120,114 calls (790ms), rounded up
//   GETAPIUsersIDRetry: 3 attempts from the call policy; Deadline 2475 * time.Millisecond: 2.475s = worst case of 3 attempts x 800ms plus the backoff between them, within the 2.5s deadline
// NewGETAPISearchClient (group "GET /api/search/*"): Timeout 351 * time.Millisecond: 351ms = the call policy's per-try timeout (p99 of the search calls, 350.4ms)
//   GETAPISearchRetry: 7 attempts from the call policy; Deadline 5007 * time.Millisecond: 5.007s = worst case of 7 attempts x 351ms plus the backoff between them

package shopapiclient

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
	MaxConnsPerHost:       26,
	MaxIdleConnsPerHost:   26,
	IdleConnTimeout:       90 * time.Second,
}

// NewPOSTAPIOrdersClient returns the client for group "POST /api/orders".
func NewPOSTAPIOrdersClient() *http.Client {
	return &http.Client{Transport: transport, Timeout: 800 * time.Millisecond}
}

// POSTAPIOrdersRetry is the retry policy of group "POST /api/orders".
var POSTAPIOrdersRetry = RetryPolicy{
	Attempts: 1,
	Deadline: 800 * time.Millisecond,
}

// NewGETAPIUsersIDClient returns the client for group "GET /api/users/{id}".
func NewGETAPIUsersIDClient() *http.Client {
	return &http.Client{Transport: transport, Timeout: 800 * time.Millisecond}
}

// GETAPIUsersIDRetry is the retry policy of group "GET /api/users/{id}".
var GETAPIUsersIDRetry = RetryPolicy{
	Attempts: 3,
	Base:     25 * time.Millisecond,
	Cap:      250 * time.Millisecond,
	Deadline: 2475 * time.Millisecond,
}

// NewGETAPISearchClient returns the client for group "GET /api/search/*".
func NewGETAPISearchClient() *http.Client {
	return &http.Client{Transport: transport, Timeout: 351 * time.Millisecond}
}

// GETAPISearchRetry is the retry policy of group "GET /api/search/*".
var GETAPISearchRetry = RetryPolicy{
	Attempts: 7,
	Base:     50 * time.Millisecond,
	Cap:      time.Second,
	Deadline: 5007 * time.Millisecond,
}
