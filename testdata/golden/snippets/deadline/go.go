// Package backendclient holds the HTTP clients of "backend", written by tunetimeout from measured latency.
// Call Do(ctx, NewXClient(), req, XPolicy): Timeout bounds the whole call (every attempt and wait); each attempt gets the smaller of PerTry and the time left, reading the body included; no attempt is sent with less than MinUseful left.
// The time left is passed down: Do sets x-envoy-expected-rq-timeout-ms on every attempt to the whole milliseconds the attempt has left, as Envoy's router sets it on the requests it sends; an Envoy whose router filter has respect_expected_rq_timeout: true takes it as the route's timeout. A handler's DeadlineFromRequest(r) bounds its context by the header its caller set; pass that context to Do, and a call with less than MinUseful left is not sent at all (ErrNoUsefulTime): the work is dropped at once.
// Do retries a request that was never sent (no connection was obtained: DNS or connect failed) for every call, and after it was sent only when RetrySent is set (idempotent calls).
// A retried status with a Retry-After (seconds or an HTTP-date, RFC 9110 section 10.2.3) is retried no sooner; when that wait does not fit what is left of Timeout (or, without one, exceeds Cap), Do returns the response at once.
// Retries off during an incident, without a deploy or a restart: create the file named by the environment variable TUNETIMEOUT_RETRIES_OFF_FILE (default /etc/tunetimeout/retries-off; the variable is read when the process starts), e.g. `touch /etc/tunetimeout/retries-off`, or add the key retries-off to a ConfigMap mounted at /etc/tunetimeout (not with subPath: the kubelet then updates it in running pods). Do looks for the file on every call and, while it exists, makes one attempt per call whatever the policy; remove the file to restore retries.
// dial: DNS within time.Second, then each address within the connect timeout 6 * time.Millisecond: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried) (net.Dialer.Timeout alone covers DNS too, and is divided among the addresses)
// TLSHandshakeTimeout 6 * time.Millisecond: the connect timeout again, a handshake costs about as many round trips
// ResponseHeaderTimeout 800 * time.Millisecond: the longest per-try timeout of the groups (each attempt's own context is shorter where its group's is)
// MaxConnsPerHost 25 = bulkhead for the whole service (Poisson p99.9 of 13 calls in flight at the peak rate, summed over 3 groups); a request beyond it waits for a connection within its attempt's time (Go has no limit on waiting requests)
// NewAPIOrdersClient and APIOrdersPolicy (group "/api/orders"):
//   Timeout time.Second: 1s = the caller's deadline: it bounds every attempt and the backoff between them, the last attempt getting only what is left
//   PerTry 800 * time.Millisecond: 800ms = p99.9 of 59,978 calls (796ms), rounded up
//   Attempts 3: 3 attempts from the call policy
//   RetrySent: the call policy says the calls are idempotent (--idempotent); RetryStatus 408, 429, 502, 503, 504; in a hang each attempt times out at 800ms and is retried until the timeout of 1s ends the call: the caller waits at most 1s
//   no hedging: net/http has none; Do does not hedge
//   MinUseful 40 * time.Millisecond: the call policy's min-useful-try: an attempt with less than 40.4ms left before the deadline is not sent, and a backoff that would leave less ends the call (2 x the median of 20.2ms: less than that fires on ordinary noise)
// NewAPISearchClient and APISearchPolicy (group "/api/search"):
//   Timeout time.Second: 1s = the caller's deadline: it bounds every attempt and the backoff between them, the last attempt getting only what is left
//   PerTry 800 * time.Millisecond: 800ms = p99.9 of 19,908 calls (792ms), rounded up
//   Attempts 3: 3 attempts from the call policy
//   RetrySent: the call policy says the calls are idempotent (--idempotent); RetryStatus 408, 429, 502, 503, 504; in a hang each attempt times out at 800ms and is retried until the timeout of 1s ends the call: the caller waits at most 1s
//   no hedging: net/http has none; Do does not hedge
//   MinUseful 40 * time.Millisecond: the call policy's min-useful-try: an attempt with less than 40.6ms left before the deadline is not sent, and a backoff that would leave less ends the call (2 x the median of 20.3ms: less than that fires on ordinary noise)
// NewAPIUsersClient and APIUsersPolicy (group "/api/users"):
//   Timeout time.Second: 1s = the caller's deadline: it bounds every attempt and the backoff between them, the last attempt getting only what is left
//   PerTry 800 * time.Millisecond: 800ms = p99.9 of 120,114 calls (790ms), rounded up
//   Attempts 3: 3 attempts from the call policy
//   RetrySent: the call policy says the calls are idempotent (--idempotent); RetryStatus 408, 429, 502, 503, 504; in a hang each attempt times out at 800ms and is retried until the timeout of 1s ends the call: the caller waits at most 1s
//   no hedging: net/http has none; Do does not hedge
//   MinUseful 40 * time.Millisecond: the call policy's min-useful-try: an attempt with less than 40.5ms left before the deadline is not sent, and a backoff that would leave less ends the call (2 x the median of 20.3ms: less than that fires on ordinary noise)

package backendclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Policy is how the calls of one group are made.
type Policy struct {
	// Timeout bounds the whole call: every attempt and the waits between them.
	Timeout time.Duration
	// PerTry bounds one attempt, reading the body included; an attempt gets
	// the smaller of PerTry and what is left of Timeout.
	PerTry time.Duration
	// Attempts is the most attempts, the first included.
	Attempts int
	// Base and Cap: before retry n Do waits a random time from 0 to
	// min(Cap, Base x 2^n) (full jitter).
	Base, Cap time.Duration
	// MinUseful: no attempt is sent, and no wait begun, with less than
	// this left of Timeout or of the deadline of Do's context (the
	// caller's, from DeadlineFromRequest): a call with less is dropped
	// at once (ErrNoUsefulTime).
	MinUseful time.Duration
	// RetrySent allows a retry after the request was sent (a timeout, a
	// reset, a status of RetryStatus): for idempotent calls only. Without
	// it only a request that never got a connection is retried. A status
	// with a Retry-After is retried no sooner than it asks (RFC 9110
	// section 10.2.3), or returned at once when that does not fit.
	RetrySent   bool
	RetryStatus []int
	// Budget, when set, is the group's retry budget: a retry is sent only
	// with a token to spend (Budget).
	Budget *Budget
}

// Budget is a retry budget as one token bucket for the calls that share
// it: each call earns Ratio of a token, at most budgetMax are kept, each
// retry spends one, and a call is not retried without one. It starts
// full. A nil *Budget allows every retry.
type Budget struct {
	Ratio  float64
	mu     sync.Mutex
	tokens float64
	used   bool
}

// budgetMax is the most tokens a Budget keeps: the retries a burst of
// failures may send before the budget holds them to Ratio per call.
const budgetMax = 10

func (b *Budget) fill() {
	if !b.used {
		b.tokens, b.used = budgetMax, true
	}
}

func (b *Budget) earn() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fill()
	b.tokens = min(budgetMax, b.tokens+b.Ratio)
}

func (b *Budget) spend() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fill()
	if b.tokens < 1-1e-9 {
		return false
	}
	b.tokens--
	return true
}

// RetriesOffFile is the switch that turns retries off during an incident,
// without a deploy: while a file exists at this path, Do makes one attempt
// per call whatever the policy. The path is read from the environment
// variable TUNETIMEOUT_RETRIES_OFF_FILE when the process starts; the file is
// looked for on every call.
var RetriesOffFile = retriesOffFile()

func retriesOffFile() string {
	if f := os.Getenv("TUNETIMEOUT_RETRIES_OFF_FILE"); f != "" {
		return f
	}
	return "/etc/tunetimeout/retries-off"
}

// retriesOff reports whether the switch is on: a file at RetriesOffFile.
func retriesOff() bool {
	_, err := os.Stat(RetriesOffFile)
	return err == nil
}

// DeadlineHeader carries the time a call has left, in whole milliseconds
// counted from when the request is sent: Envoy's
// x-envoy-expected-rq-timeout-ms, which Envoy's router sets on the
// requests it sends (the route's per-try timeout, or its timeout) and,
// with respect_expected_rq_timeout: true in its router filter, takes from
// its caller as the route's timeout. Do sets it on every attempt;
// DeadlineFromRequest reads it. Envoy removes it from requests it does not
// count as internal: trust it from your own services only.
const DeadlineHeader = "x-envoy-expected-rq-timeout-ms"

// ErrNoUsefulTime is the error of a call Do did not send: less than the
// policy's MinUseful was left of its deadline, too little for an attempt
// to succeed, so the work is dropped at once.
var ErrNoUsefulTime = errors.New("less time left than a useful try: the call is dropped, not sent")

// DeadlineFromRequest returns the context of an incoming request bounded
// by the time its caller has left (DeadlineHeader), counted from now, and
// its cancel function. Without the header, or with a value that is not a
// positive whole number (Envoy reads 0 as no timeout), the context is
// r.Context()'s. Pass it to Do for the calls the handler makes: they get
// what is left, and a call with less than its MinUseful left is not sent.
func DeadlineFromRequest(r *http.Request) (context.Context, context.CancelFunc) {
	ms, err := strconv.ParseInt(r.Header.Get(DeadlineHeader), 10, 64)
	if err != nil || ms <= 0 {
		return context.WithCancel(r.Context())
	}
	ms = min(ms, int64(math.MaxInt64/time.Millisecond))
	return context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
}

// setTimeLeft sets DeadlineHeader on an attempt's request: the whole
// milliseconds its context has left, at least 1.
func setTimeLeft(r *http.Request) {
	dl, ok := r.Context().Deadline()
	if !ok {
		return
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(DeadlineHeader, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
}

// Do sends req with policy p through c. The response it returns must be
// closed; its body is read within the attempt's time. A call with less
// than p.MinUseful left of ctx's deadline or of p.Timeout is not sent:
// Do returns ErrNoUsefulTime at once.
func Do(ctx context.Context, c *http.Client, req *http.Request, p Policy) (*http.Response, error) {
	var cancelAll context.CancelFunc = func() {}
	if p.Timeout > 0 {
		ctx, cancelAll = context.WithTimeout(ctx, p.Timeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < max(p.MinUseful, time.Millisecond) {
			cancelAll()
			return nil, fmt.Errorf("%w (%v left, MinUseful %v)", ErrNoUsefulTime, max(left, 0).Round(time.Millisecond), p.MinUseful)
		}
	}
	p.Budget.earn()
	if retriesOff() {
		p.Attempts = 1
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.PerTry)
		sent := false
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { sent = true }}
		r := req.Clone(httptrace.WithClientTrace(actx, trace))
		setTimeLeft(r)
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				cancel()
				cancelAll()
				return nil, err
			}
			r.Body = body
		}
		resp, err := c.Do(r)
		retry := !sent || (p.RetrySent && (err != nil || slices.Contains(p.RetryStatus, resp.StatusCode)))
		var after time.Duration
		if retry && err == nil {
			after = retryAfter(resp)
		}
		if attempt >= p.Attempts || !retry || (req.Body != nil && req.GetBody == nil) || !waitBeforeRetry(ctx, p, attempt, after) {
			if err != nil {
				cancel()
				cancelAll()
				return nil, err
			}
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(); cancelAll() }}
			return resp, nil
		}
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		cancel()
	}
}

// waitBeforeRetry waits the backoff before retry n (from 1), at least
// atLeast (a Retry-After), and reports whether a retry may follow: false
// when the wait would leave less than MinUseful of the call's time (or,
// without a deadline, a Retry-After exceeds Cap), when the retry budget
// has no token left (spent only for a retry that fits), or the call's
// context ends.
func waitBeforeRetry(ctx context.Context, p Policy, n int, atLeast time.Duration) bool {
	window := p.Base
	for i := 1; i < n && window < p.Cap; i++ {
		window *= 2
	}
	window = min(window, p.Cap)
	var wait time.Duration
	if window > 0 {
		wait = rand.N(window + 1)
	}
	wait = max(wait, atLeast)
	dl, ok := ctx.Deadline()
	if ok && time.Until(dl)-wait < p.MinUseful || !ok && atLeast > p.Cap {
		return false
	}
	if !p.Budget.spend() { // only for a retry that is sent
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryAfter is the wait a response asks for before a retry (Retry-After:
// delay-seconds or an HTTP-date, RFC 9110 section 10.2.3); 0 when it asks
// for none or cannot be read.
func retryAfter(resp *http.Response) time.Duration {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseUint(v, 10, 31); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// cancelOnClose ends the attempt's context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// dialer connects to one address; dial gives name resolution its own time.
var dialer = &net.Dialer{Timeout: 6 * time.Millisecond, KeepAlive: 30 * time.Second}

// dnsTimeout bounds name resolution, the search path's lookups included.
const dnsTimeout = time.Second

// dial resolves the host within dnsTimeout, then connects to its addresses
// in turn, each within the dialer's timeout.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	ips, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	cancel()
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	var first error
	for _, ip := range ips {
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// transport is shared by the clients of the service.
var transport = &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           dial,
	TLSHandshakeTimeout:   6 * time.Millisecond,
	ResponseHeaderTimeout: 800 * time.Millisecond,
	MaxConnsPerHost:       25,
	MaxIdleConnsPerHost:   25,
	IdleConnTimeout:       90 * time.Second,
}

// NewAPIOrdersClient returns the client for group "/api/orders".
func NewAPIOrdersClient() *http.Client {
	return &http.Client{Transport: transport}
}

// APIOrdersPolicy is the policy of group "/api/orders".
var APIOrdersPolicy = Policy{
	Timeout:     time.Second,
	PerTry:      800 * time.Millisecond,
	Attempts:    3,
	MinUseful:   40 * time.Millisecond,
	Base:        25 * time.Millisecond,
	Cap:         250 * time.Millisecond,
	RetrySent:   true,
	RetryStatus: []int{408, 429, 502, 503, 504},
}

// NewAPISearchClient returns the client for group "/api/search".
func NewAPISearchClient() *http.Client {
	return &http.Client{Transport: transport}
}

// APISearchPolicy is the policy of group "/api/search".
var APISearchPolicy = Policy{
	Timeout:     time.Second,
	PerTry:      800 * time.Millisecond,
	Attempts:    3,
	MinUseful:   40 * time.Millisecond,
	Base:        25 * time.Millisecond,
	Cap:         250 * time.Millisecond,
	RetrySent:   true,
	RetryStatus: []int{408, 429, 502, 503, 504},
}

// NewAPIUsersClient returns the client for group "/api/users".
func NewAPIUsersClient() *http.Client {
	return &http.Client{Transport: transport}
}

// APIUsersPolicy is the policy of group "/api/users".
var APIUsersPolicy = Policy{
	Timeout:     time.Second,
	PerTry:      800 * time.Millisecond,
	Attempts:    3,
	MinUseful:   40 * time.Millisecond,
	Base:        25 * time.Millisecond,
	Cap:         250 * time.Millisecond,
	RetrySent:   true,
	RetryStatus: []int{408, 429, 502, 503, 504},
}
