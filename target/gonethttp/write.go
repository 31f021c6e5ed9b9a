// Package gonethttp is the Go net/http target: a client package per
// report, its transport, timeouts and retry loop.
package gonethttp

import (
	"fmt"
	"go/format"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes a Go file (net/http): a Transport for the service (its
// own DNS timeout, a connect timeout per address, TLS and response-header
// timeouts, MaxConnsPerHost as the bulkhead), an http.Client per group, each
// group's policy, and Do, which makes the attempts: each within the
// smaller of its per-try timeout and the time left, retrying only what the
// policy allows (a call that is not idempotent only when the request was
// never sent).
var Target = target.Target{
	Name:     "go",
	File:     "go.go",
	Summary:  "Go net/http: Transport (DNS, connect, TLS, ResponseHeaderTimeout, MaxConnsPerHost), a Policy per group and Do, the retry loop within the deadline",
	Language: "go",
	Comment:  "//",
	Write:    write,
}

// dnsTimeout is the time the Go snippet gives name resolution, apart from
// the connect: a pod's search path (ndots:5) may take several lookups, and
// net.Dialer.Timeout alone would spend the connect timeout on them.
const dnsTimeout = time.Second

func write(p *target.Plan, d *target.Doc) error {
	pkg := strings.ToLower(target.Identifier(p.Service, false))
	pkg = strings.ReplaceAll(pkg, "_", "") + "client"
	routes := p.GroupRoutes()
	d.Note("Package %s holds the HTTP clients of %q, written by tunetimeout from measured latency.", pkg, p.Service)
	d.Note("Call Do(ctx, NewXClient(), req, XPolicy): Timeout bounds the whole call (every attempt and wait); each attempt gets the smaller of PerTry and the time left, reading the body included; no attempt is sent with less than MinUseful left.")
	d.Note("The time left is passed down: Do sets %s on every attempt to the whole milliseconds the attempt has left, as Envoy's router sets it on the requests it sends; an Envoy whose router filter has respect_expected_rq_timeout: true takes it as the route's timeout. A handler's DeadlineFromRequest(r) bounds its context by the header its caller set; pass that context to Do, and a call with less than MinUseful left is not sent at all (ErrNoUsefulTime): the work is dropped at once.", target.DeadlineHeader)
	d.Note("Do retries a request that was never sent (no connection was obtained: DNS or connect failed) for every call, and after it was sent only when RetrySent is set (idempotent calls).")
	d.Note("A retried status with a Retry-After (seconds or an HTTP-date, RFC 9110 section 10.2.3) is retried no sooner; when that wait does not fit what is left of Timeout (or, without one, exceeds Cap), Do returns the response at once.")
	target.NoteRetriesOffFile(d, "Do")
	perTry := routes[0].PerTry
	for _, rt := range routes {
		perTry = max(perTry, rt.PerTry)
	}
	connect, connectWhy := p.ClusterConnect()
	d.Printf("package %s\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"fmt\"\n\t\"io\"\n\t\"math\"\n\t\"math/rand/v2\"\n\t\"net\"\n\t\"net/http\"\n\t\"net/http/httptrace\"\n\t\"os\"\n\t\"slices\"\n\t\"strconv\"\n\t\"sync\"\n\t\"time\"\n)\n\n", pkg)
	d.Printf("%s", policySource)
	d.Note("dial: DNS within %s, then each address within the connect timeout %s: %s (net.Dialer.Timeout alone covers DNS too, and is divided among the addresses)", target.GoDurLit(dnsTimeout), target.GoDurLit(connect), connectWhy)
	d.Note("TLSHandshakeTimeout %s: the connect timeout again, a handshake costs about as many round trips", target.GoDurLit(connect))
	d.Printf("// dialer connects to one address; dial gives name resolution its own time.\nvar dialer = &net.Dialer{Timeout: %s, KeepAlive: 30 * time.Second}\n\n", target.GoDurLit(connect))
	d.Printf("// dnsTimeout bounds name resolution, the search path's lookups included.\nconst dnsTimeout = %s\n\n", target.GoDurLit(dnsTimeout))
	d.Printf(dialSource)
	d.Printf("// transport is shared by the clients of the service.\nvar transport = &http.Transport{\n\tProxy:               http.ProxyFromEnvironment,\n\tDialContext:         dial,\n\tTLSHandshakeTimeout: %s,\n", target.GoDurLit(connect))
	d.Note("ResponseHeaderTimeout %s: the longest per-try timeout of the groups (each attempt's own context is shorter where its group's is)", target.GoDurLit(perTry))
	d.Printf("\tResponseHeaderTimeout: %s,\n", target.GoDurLit(perTry))
	if b := p.Bulkhead; b != nil {
		d.Note("MaxConnsPerHost %s; a request beyond it waits for a connection within its attempt's time (Go has no limit on waiting requests)", p.BulkheadWhy)
		d.Printf("\tMaxConnsPerHost:       %d,\n\tMaxIdleConnsPerHost:   %d,\n", *b, *b)
	} else {
		d.Note("MaxConnsPerHost not set (no limit): the report has no call rate for a bulkhead (analyze %s)", usage.Rate)
	}
	d.Printf("\tIdleConnTimeout:       90 * time.Second,\n}\n")

	names := target.NewUnique("")
	for _, rt := range routes {
		id := ""
		if len(routes) > 1 {
			id = names.Name(target.Identifier(rt.Group, true))
		}
		pol := id + "Policy"
		if id == "" {
			pol = "DefaultPolicy"
		}
		d.Note("New%sClient and %s (group %q):", id, pol, rt.Group)
		d.Note("  Timeout %s: %s", target.GoDurLit(rt.Timeout), rt.TimeoutWhy)
		d.Note("  PerTry %s: %s", target.GoDurLit(rt.PerTry), rt.PerTryWhy)
		d.Note("  Attempts %d: %s", rt.Attempts, rt.AttemptsWhy)
		retrySent := rt.Attempts > 1 && !rt.NeverSentOnly()
		var codes []string
		if retrySent {
			codes = rt.Statuses()
			d.Note("  RetrySent: %s; RetryStatus %s; %s", rt.IdempotentWhy, orNone(codes), rt.HangText(true))
		} else if rt.Attempts > 1 {
			d.Note("  RetrySent false: %s, so only a request never sent is retried; in a hang the one attempt times out at %s", rt.IdempotentWhy, target.GoDurLit(rt.PerTry))
		}
		if b := rt.Budget; b != nil && *b > 0 && rt.Attempts > 1 {
			d.Note("  Budget Ratio %s: retry budget %s of requests, from the call policy; a token bucket for the group's calls in this process: each call earns %s of a token, at most %d kept, each retry spends one (as the simulation's, docs/method.md#retry-budgets)", target.Ratio(*b), human.Percent(*b), target.Ratio(*b), 10)
		}
		if rt.Hedge != nil {
			d.Note("  no hedging: net/http has none; Do does not hedge")
		}
		d.Printf("\n// New%sClient returns the client for group %s.\nfunc New%sClient() *http.Client {\n\treturn &http.Client{Transport: transport}\n}\n", id, commentQuote(rt.Group), id)
		d.Printf("\n// %s is the policy of group %s.\nvar %s = Policy{\n\tTimeout:   %s,\n\tPerTry:    %s,\n\tAttempts:  %d,\n", pol, commentQuote(rt.Group), pol, target.GoDurLit(rt.Timeout), target.GoDurLit(rt.PerTry), rt.Attempts)
		d.Note("  MinUseful %s: %s", target.GoDurLit(max(rt.MinUseful, time.Millisecond)), rt.UsefulWhy())
		d.Printf("\tMinUseful: %s,\n", target.GoDurLit(max(rt.MinUseful, time.Millisecond)))
		if rt.Attempts > 1 {
			d.Printf("\tBase:      %s,\n\tCap:       %s,\n", target.GoDurLit(rt.BackoffBase), target.GoDurLit(rt.BackoffCap))
			if retrySent {
				d.Printf("\tRetrySent: true,\n")
				if len(codes) > 0 {
					d.Printf("\tRetryStatus: []int{%s},\n", strings.Join(codes, ", "))
				}
			}
			if b := rt.Budget; b != nil && *b > 0 {
				d.Printf("\tBudget:    &Budget{Ratio: %s},\n", target.Ratio(*b))
			}
		}
		d.Printf("}\n")
	}
	src, err := format.Source(d.Body.Bytes())
	if err != nil {
		return fmt.Errorf("go snippet: %w", err)
	}
	d.Body.Reset()
	d.Body.Write(src)
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(slices.Clone(list), ", ")
}

// policySource is the Policy type and Do, the same in every Go snippet.
const policySource = `// Policy is how the calls of one group are made.
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
// variable ` + target.RetriesOffEnv + ` when the process starts; the file is
// looked for on every call.
var RetriesOffFile = retriesOffFile()

func retriesOffFile() string {
	if f := os.Getenv("` + target.RetriesOffEnv + `"); f != "" {
		return f
	}
	return "` + target.RetriesOffDefault + `"
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
const DeadlineHeader = "` + target.DeadlineHeader + `"

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

`

// dialSource is the dial function, the same in every Go snippet.
const dialSource = `// dial resolves the host within dnsTimeout, then connects to its addresses
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

`

// commentQuote quotes a group name for a Go comment.
func commentQuote(s string) string { return target.OneLine(strconv.Quote(s)) }
