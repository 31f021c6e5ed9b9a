package target

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/littleslaw"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
)

// Plan is what every target writes: the numbers of each group, in whole
// milliseconds, each with the sentence that says where it comes from.
type Plan struct {
	Service   string
	Namespace string
	Opts      Options
	Routes    []Route // the most specific match first, catch-alls last
	// herdWindow is the jitter window the report's herd needs (--herd,
	// --clients); 0: no herd. Targets whose jitter spreads a first retry
	// over less than the base (gRPC) widen their backoff for it.
	HerdWindow time.Duration

	// The service-wide values (a cluster, a connection pool): from the one
	// group, or combined over all groups.
	Connect     *time.Duration
	ConnectWhy  string
	Bulkhead    *int
	BulkheadWhy string
	Budget      *float64 // fraction of requests that may be retried
	BudgetWhy   string
}

// Route is one group: a route, a method, a location, an instance.
type Route struct {
	Group string
	Match PathMatch
	// synthetic marks the catch-all added for the requests no group holds
	// (plan.catchAll); targets without path routing leave it out.
	Synthetic bool

	// deadline is the caller's deadline over all attempts; 0 = none.
	// timeout is what a target with a bound over the whole call writes:
	// the deadline with retries, the worst case of the attempts without
	// one, the per-try timeout with one attempt. perTry bounds one attempt.
	Deadline   time.Duration
	Timeout    time.Duration
	TimeoutWhy string
	PerTry     time.Duration
	PerTryWhy  string
	Attempts   int // 1 = no retries
	// attemptsWhy says where the attempts come from.
	AttemptsWhy string
	// minUseful: an attempt with less than this left is not worth sending;
	// minUsefulWhy says where it comes from.
	MinUseful    time.Duration
	MinUsefulWhy string
	BackoffBase  time.Duration
	BackoffCap   time.Duration
	BackoffWhy   string
	jitter       string   // full, equal, decorrelated
	RetryOn      []string // connect-failure, refused-stream, timeout, status codes
	Idempotent   bool
	// method is the request method of the group's calls, "" when unknown.
	Method string
	// idempotentWhy says why the calls are or are not idempotent.
	IdempotentWhy string
	Hedge         *report.Hedge // nil: no hedging

	Connect     *time.Duration
	ConnectWhy  string
	Bulkhead    *int
	BulkheadWhy string
	Budget      *float64
}

// Retries is the number of retries after the first attempt.
func (r Route) Retries() int { return r.Attempts - 1 }

// NeverSentOnly reports whether the route retries nothing but failures
// that prove the request never reached the application (a refused
// connection, an HTTP/2 refused stream): what a call that is not
// idempotent may retry (recommend.NeverSent).
func (r Route) NeverSentOnly() bool {
	for _, c := range r.RetryOn {
		if !slices.Contains(recommend.NeverSent, c) {
			return false
		}
	}
	return true
}

// RetriesOn reports whether the route retries on condition c.
func (r Route) RetriesOn(c string) bool { return r.Attempts > 1 && slices.Contains(r.RetryOn, c) }

// Statuses returns the status codes the route retries on.
func (r Route) Statuses() []string {
	var out []string
	for _, c := range r.RetryOn {
		if IsStatus(c) {
			out = append(out, c)
		}
	}
	return out
}

// NewPlan reads the numbers of a report, rounding every duration up to a
// whole millisecond: rounding a timeout up never cuts off more calls, and
// every target can write a whole millisecond.
func NewPlan(r *report.Report, o Options) (*Plan, error) {
	if r == nil || len(r.Groups) == 0 {
		return nil, errors.New("the report has no groups")
	}
	p := &Plan{Service: o.Service, Namespace: o.Namespace, Opts: o}
	if r.Herd != nil {
		p.HerdWindow = time.Duration(math.Ceil(r.Herd.WindowSeconds*1e3)) * time.Millisecond
	}
	if strings.TrimSpace(p.Service) == "" {
		p.Service = DefaultService
	}
	if strings.TrimSpace(p.Namespace) == "" {
		p.Namespace = "default"
	}
	for i := range r.Groups {
		rt, err := newRoute(&r.Groups[i])
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", r.Groups[i].Name, err)
		}
		p.Routes = append(p.Routes, rt)
	}
	// Targets that take the first match need the most specific first.
	sort.SliceStable(p.Routes, func(i, j int) bool { return p.Routes[i].Match.before(p.Routes[j].Match) })
	p.combine(r)
	p.addCatchAll()
	return p, nil
}

func newRoute(g *report.Group) (Route, error) {
	rec := g.Recommendation
	if !(rec.TimeoutSeconds > 0) || math.IsInf(rec.TimeoutSeconds, 0) {
		return Route{}, fmt.Errorf("timeout_seconds %v is not a positive duration", rec.TimeoutSeconds)
	}
	rt := Route{Group: g.Name, Match: ParseMatch(g.Name), Attempts: 1, jitter: "full"}
	recTimeout := CeilMs(rec.TimeoutSeconds)
	recWhy := derivation(g, recTimeout)
	rt.IdempotentWhy = "the report has no call policy: the calls are not known to be idempotent"

	pol := g.Policy
	if pol == nil || pol.Attempts < 1 || !(pol.PerTryTimeoutSeconds > 0) {
		// No call policy in the report: one attempt at the recommendation.
		rt.PerTry, rt.PerTryWhy = recTimeout, recWhy
		rt.Timeout, rt.TimeoutWhy = recTimeout, recWhy
		rt.AttemptsWhy = "no call policy in the report: one attempt, no retries"
	} else {
		rt.readPolicy(pol, recTimeout, recWhy)
	}

	if c := rec.ConnectTimeoutSeconds; c != nil && *c > 0 && !math.IsInf(*c, 0) {
		d := CeilMs(*c)
		rt.Connect = &d
		rt.ConnectWhy = fmt.Sprintf("%s = recommended connect timeout", FmtDur(d))
		for _, s := range rec.Steps {
			if s.Rule == "connect" && s.Reason != "" {
				rt.ConnectWhy = s.Reason
			}
		}
	}
	if b := g.LittlesLaw.Bulkhead; b != nil && *b > 0 {
		rt.Bulkhead = b
		rt.BulkheadWhy = fmt.Sprintf("%d = bulkhead", *b)
		if ip := g.LittlesLaw.InFlightPeak; ip != nil {
			rt.BulkheadWhy = fmt.Sprintf("%d = bulkhead (Poisson p99.9 of %s calls in flight at the peak rate)", *b, human.Number(*ip))
		}
	}
	return rt, nil
}

// readPolicy takes the route's numbers from its call policy.
func (rt *Route) readPolicy(pol *report.Policy, recTimeout time.Duration, recWhy string) {
	rt.Attempts = pol.Attempts
	rt.PerTry = CeilMs(pol.PerTryTimeoutSeconds)
	if rt.PerTry == recTimeout {
		rt.PerTryWhy = recWhy
	} else {
		rt.PerTryWhy = fmt.Sprintf("%s = the call policy's per-try timeout (%s)", FmtDur(rt.PerTry), policyReason(pol))
	}
	if d := pol.DeadlineSeconds; d != nil && *d > 0 && !math.IsInf(*d, 0) {
		rt.Deadline = CeilMs(*d)
		if rt.PerTry > rt.Deadline {
			rt.PerTry = rt.Deadline
			rt.PerTryWhy = fmt.Sprintf("%s = the caller's deadline", FmtDur(rt.Deadline))
		}
	}
	rt.AttemptsWhy = fmt.Sprintf("%d attempts from the call policy", pol.Attempts)
	if pol.Attempts == 1 {
		rt.AttemptsWhy = "1 attempt from the call policy: no retries"
	}
	if pol.RequestedAttempts > pol.Attempts {
		rt.AttemptsWhy += fmt.Sprintf(" (%d requested; %d are sure to be sent within the deadline)", pol.RequestedAttempts, pol.Attempts)
	}
	if pol.Jitter != "" {
		rt.jitter = pol.Jitter
	}
	rt.MinUseful = time.Duration(math.Round(pol.MinUsefulTrySeconds*1e9)) / time.Millisecond * time.Millisecond
	rt.MinUsefulWhy = "the call policy's min-useful-try"
	for _, st := range pol.Steps {
		if st.Rule == "min-useful-try" && st.Reason != "" {
			rt.MinUsefulWhy += ": " + st.Reason
		}
	}
	rt.Idempotent = pol.Idempotent
	if pol.Method != nil {
		rt.Method = *pol.Method
	}
	switch {
	case pol.Method != nil && pol.Idempotent:
		rt.IdempotentWhy = fmt.Sprintf("%s calls are idempotent", *pol.Method)
	case pol.Method != nil:
		rt.IdempotentWhy = fmt.Sprintf("%s is not idempotent (RFC 9110 section 9.2.2)", *pol.Method)
	case pol.Idempotent:
		rt.IdempotentWhy = fmt.Sprintf("the call policy says the calls are idempotent (%s)", usage.Idempotent)
	default:
		rt.IdempotentWhy = fmt.Sprintf("the calls are not marked idempotent (%s)", usage.Idempotent)
	}
	rt.RetryOn = append(rt.RetryOn, pol.RetryOn...)
	if !rt.Idempotent && pol.RetryOn == nil {
		rt.RetryOn = slices.Clone(recommend.NeverSent)
	}
	rt.Budget = pol.RetryBudget
	if h := pol.Hedge; h != nil && rt.Idempotent && safeMethod(pol.Method) && h.Attempts > 1 && h.DelaySeconds > 0 {
		hd := *h
		rt.Hedge = &hd
	}
	if rt.Attempts > 1 && len(rt.RetryOn) == 0 {
		rt.Attempts = 1
		rt.AttemptsWhy = fmt.Sprintf("1 attempt: the call policy's %d attempts have nothing to retry on", pol.Attempts)
	}
	if rt.Attempts > 1 || rt.Hedge != nil {
		rt.BackoffBase = CeilMs(pol.BackoffBaseSeconds)
		rt.BackoffCap = CeilMs(pol.BackoffCapSeconds)
		rt.BackoffWhy = fmt.Sprintf("backoff %s doubling up to %s, %s jitter, from the call policy", FmtDur(rt.BackoffBase), FmtDur(rt.BackoffCap), rt.jitter)
		for _, st := range pol.Steps {
			if st.Rule == "herd" { // sized from the crowd (--herd, --clients)
				rt.BackoffWhy += ", sized for the herd: " + herdWhy(st.Reason)
			}
		}
		if rt.BackoffCap < rt.BackoffBase {
			rt.BackoffCap = rt.BackoffBase
			rt.BackoffWhy += fmt.Sprintf("; its cap is below its base, so the cap is raised to %s", FmtDur(rt.BackoffCap))
		}
		if rt.Deadline > 0 {
			rt.Timeout = rt.Deadline
			rt.TimeoutWhy = fmt.Sprintf("%s = the caller's deadline: it bounds every attempt and the backoff between them, the last attempt getting only what is left", FmtDur(rt.Deadline))
		} else {
			rt.Timeout = rt.PerTry*time.Duration(rt.Attempts) + rt.BackoffCap*time.Duration(rt.Attempts-1)
			rt.TimeoutWhy = fmt.Sprintf("%s = worst case of %d attempts x %s plus %d waits at the backoff cap of %s (no deadline in the report)",
				FmtDur(rt.Timeout), rt.Attempts, FmtDur(rt.PerTry), rt.Attempts-1, FmtDur(rt.BackoffCap))
		}
	}
	switch h := rt.Hedge; {
	case rt.Attempts > 1:
	case h != nil && rt.Deadline > 0:
		rt.Timeout = rt.Deadline
		rt.TimeoutWhy = fmt.Sprintf("%s = the caller's deadline: it bounds the first request and its hedges", FmtDur(rt.Deadline))
	case h != nil:
		rt.Timeout = rt.PerTry
		rt.TimeoutWhy = fmt.Sprintf("%s: it bounds the first request and its hedges (no deadline in the report)", rt.PerTryWhy)
	default:
		rt.Timeout, rt.TimeoutWhy = rt.PerTry, rt.PerTryWhy
	}
}

// safeMethod reports whether a call of the method may be hedged: a safe
// method (RFC 9110 section 9.2.1, recommend.SafeMethods), or an unknown one
// (the caller declared the calls idempotent and asked for hedging). A hedge
// runs a second request while the first is still running, which no write
// survives, idempotent or not; a report that hedges one (written before
// the rule, or by hand) is not followed.
func safeMethod(m *string) bool {
	return m == nil || *m == "" || slices.Contains(recommend.SafeMethods, strings.ToUpper(*m))
}

// NoRetryAfter is for a target that cannot wait for a Retry-After (nginx,
// HAProxy, Istio's HTTPRetry, Gateway API's HTTPRouteRetry, Linkerd): its
// routes do not retry 429. A 429 asks the client to wait (RFC 6585 section
// 4) for its Retry-After (RFC 9110 section 10.2.3); retried at once it adds
// load to a server that asked for less. A route left with nothing to retry
// makes one attempt. The header says so, naming the target (what).
func (p *Plan) NoRetryAfter(d *Doc, what string) {
	dropped := false
	for i := range p.Routes {
		rt := &p.Routes[i]
		if !slices.Contains(rt.RetryOn, "429") {
			continue
		}
		rt.RetryOn = slices.DeleteFunc(slices.Clone(rt.RetryOn), func(c string) bool { return c == "429" })
		if rt.Attempts > 1 {
			dropped = true
			if len(rt.RetryOn) == 0 {
				rt.Attempts = 1
				rt.AttemptsWhy = "1 attempt: 429, the only condition the call policy retries, is not retried"
			}
		}
	}
	if dropped {
		d.Note("429 is not retried: %s cannot wait for the Retry-After a 429 asks for (RFC 6585 section 4, RFC 9110 section 10.2.3), and a retry at once adds load to a server that asked for less; a 503's Retry-After is not waited for either.", what)
	}
}

// addCatchAll ends the routes with one for every request no group holds,
// unless a group already matches them all: a route config that matches
// only the measured paths answers every other path with a 404 once pasted.
// It takes the numbers of the group with the longest timeout (the most
// patient), and retries as a call that is not idempotent unless every group
// is idempotent and none matches a method: nothing is known of the requests
// it will see, and when the groups match methods it takes every other
// method (a POST where only GETs were measured).
func (p *Plan) addCatchAll() {
	idempotent, byMethod := true, false
	var longest *Route
	for i := range p.Routes {
		rt := &p.Routes[i]
		if rt.Match.CatchAll && !rt.Match.NotPath {
			return
		}
		idempotent = idempotent && rt.Idempotent
		byMethod = byMethod || rt.Match.Method != ""
		if longest == nil || rt.Timeout > longest.Timeout || (rt.Timeout == longest.Timeout && rt.PerTry > longest.PerTry) {
			longest = rt
		}
	}
	if longest == nil {
		return
	}
	c := *longest
	c.Group, c.Synthetic = "catch-all", true
	c.Match = PathMatch{CatchAll: true}
	c.RetryOn = slices.Clone(longest.RetryOn)
	c.Idempotent = idempotent && !byMethod
	c.IdempotentWhy = longest.IdempotentWhy
	if !c.Idempotent {
		c.Hedge = nil
		c.IdempotentWhy = "the other requests are not known to be idempotent"
		if idempotent {
			c.IdempotentWhy = "the catch-all takes the methods no group measured, and they are not known to be idempotent"
		}
		c.RetryOn = slices.DeleteFunc(c.RetryOn, func(x string) bool { return !slices.Contains(recommend.NeverSent, x) })
		if c.Attempts > 1 && len(c.RetryOn) == 0 {
			c.RetryOn = slices.Clone(recommend.NeverSent)
		}
	}
	c.TimeoutWhy = fmt.Sprintf("%s (the numbers of group %q, the longest timeout: these requests were not measured)", c.TimeoutWhy, longest.Group)
	p.Routes = append(p.Routes, c)
}

// Describe says in a header line which requests a route matches.
func (rt Route) Describe() string {
	if rt.Synthetic {
		return "every request no group holds, which were not measured"
	}
	return rt.Match.describe()
}

// HangText says what a hang of the dependency does with the route's
// attempts on a target whose per-try timeout ends an attempt (perTry), or
// on one that has none (gRPC: one attempt runs into the whole timeout).
func (rt Route) HangText(perTry bool) string {
	timeouts := rt.RetriesOn(recommend.RetryTimeout)
	switch {
	case !perTry && rt.Attempts > 1:
		return fmt.Sprintf("in a hang the first attempt waits the whole timeout of %s: there is no per-try timeout to end it and retry", FmtDur(rt.Timeout))
	case !perTry || rt.Attempts <= 1:
		return fmt.Sprintf("in a hang the one attempt waits %s", FmtDur(rt.Timeout))
	case !timeouts:
		why := "timeout is not in the call policy's retry conditions"
		if !rt.Idempotent {
			why = rt.IdempotentWhy + ": a timed-out request may have taken effect"
		}
		return fmt.Sprintf("in a hang the one attempt times out at %s and the call fails: timeouts are not retried (%s)", FmtDur(rt.PerTry), why)
	case rt.Deadline > 0:
		return fmt.Sprintf("in a hang each attempt times out at %s and is retried until the timeout of %s ends the call: the caller waits at most %s", FmtDur(rt.PerTry), FmtDur(rt.Timeout), FmtDur(rt.Timeout))
	}
	return fmt.Sprintf("in a hang each of the %d attempts times out at %s: the caller waits up to the timeout of %s", rt.Attempts, FmtDur(rt.PerTry), FmtDur(rt.Timeout))
}

// Secs, Percent and QuantileName show report values in header lines.
func Secs(s float64) string         { return human.Seconds(s) }
func Percent(f float64) string      { return human.Percent(f) }
func QuantileName(q float64) string { return human.Quantile(q) }

// PathRoutes returns the routes of a target that routes by path, the
// catch-all included, but for the groups whose names hold control or
// bidirectional characters: a router matches the decoded request path, a
// route with such characters would match a different path than the group's
// (or none), and splitting the name where it breaks would route a
// different path. They are left to the catch-all, and each target's header
// names them (NoteUnroutable).
func (p *Plan) PathRoutes() []Route {
	var out []Route
	for _, rt := range p.Routes {
		if !rt.unroutable() {
			out = append(out, rt)
		}
	}
	return out
}

// unroutable reports whether a group's name cannot be a route.
func (rt Route) unroutable() bool {
	return !rt.Synthetic && strings.IndexFunc(rt.Group, escape.Unsafe) >= 0
}

// NoteUnroutable says in the header which groups a routing target left to
// its catch-all; what names the target's kind of route ("an Envoy route").
func (p *Plan) NoteUnroutable(d *Doc, what string) {
	for _, rt := range p.Routes {
		if rt.unroutable() {
			d.Note("group %s is not written: %s cannot match the control characters of its name as the group's path; the catch-all takes its requests", strconv.Quote(rt.Group), what)
		}
	}
}

// GroupRoutes returns the routes of the measured groups alone, for targets
// that configure a client per group (Go, httpx, resilience4j) rather than
// route requests.
func (p *Plan) GroupRoutes() []Route {
	var out []Route
	for _, rt := range p.Routes {
		if !rt.Synthetic {
			out = append(out, rt)
		}
	}
	return out
}

// defaultConnect is the connect timeout a snippet writes when the report
// has none (no --rtt, no measured connect times): long enough for any
// healthy connection, short next to most deadlines.
const defaultConnect = time.Second

// connectTimer is the connect timeout the route's snippet writes, with its
// reason: the report's, else defaultConnect shortened so that a connect and
// one attempt fit the deadline.
func (p *Plan) connectTimer(rt Route) (time.Duration, string) {
	t := p.Timers(rt, 0)
	return t.Connect, t.ConnectWhy
}

// Timers are the timers of one attempt of a target that has, before the
// request is sent, a connect and others waits (a queue slot, a pooled
// connection, the write), each with its reason.
type Timers struct {
	Connect, Other, PerTry          time.Duration
	ConnectWhy, OtherWhy, PerTryWhy string
	// over: the waits before the request and the attempt together may
	// outlast the deadline (timers does not shorten the attempt for them).
	over bool
}

// Timers fits the timers of one attempt to the route's deadline: the
// report's connect timeout, else defaultConnect shortened so that every
// attempt, each with its waits before the request, fits (or when that
// leaves less than 10ms a wait, one attempt, never below a tenth of the
// deadline shared among its waits); the other waits as long as the connect
// (on a healthy server a pooled connection or a write takes no longer),
// shortened first when they do not fit. The per-try timeout is never
// shortened for them (over says when the sum may outlast the deadline).
// Every timer is at least 1ms.
func (p *Plan) Timers(rt Route, others int) Timers {
	const ms = time.Millisecond
	t := Timers{PerTry: rt.PerTry, PerTryWhy: rt.PerTryWhy}
	dl, k := rt.Deadline, time.Duration(others)
	if p.Connect != nil {
		t.Connect, t.ConnectWhy = *p.Connect, p.ConnectWhy
	} else {
		t.Connect = defaultConnect
		t.ConnectWhy = fmt.Sprintf("%s, a default: the report has no connect timeout (analyze %s, or logs with connect times)", FmtDur(t.Connect), usage.RTT)
		if dl > 0 {
			// Room for every attempt with its waits when there is some (a
			// tenth of the deadline's share at least), else for one.
			n := time.Duration(max(rt.Attempts, 1))
			what := fmt.Sprintf("%d attempts of %s, each with the waits before its request,", n, FmtDur(t.PerTry))
			fit := ((dl - n*t.PerTry) / (n * (1 + k))).Truncate(ms)
			if n == 1 || fit < 10*ms {
				what = fmt.Sprintf("the waits before a request and an attempt of %s", FmtDur(t.PerTry))
				fit = (max(dl/10, dl-t.PerTry) / (1 + k)).Truncate(ms)
			}
			if fit < t.Connect {
				t.Connect = max(fit, ms)
				t.ConnectWhy = fmt.Sprintf("%s, a default shortened from %s so that %s fit the deadline of %s: the report has no connect timeout (analyze %s, or logs with connect times)",
					FmtDur(t.Connect), FmtDur(defaultConnect), what, FmtDur(dl), usage.RTT)
			}
		}
	}
	t.Other, t.OtherWhy = t.Connect, "as long as the connect: on a healthy server it takes no longer"
	if dl == 0 || t.Connect+k*t.Other+t.PerTry <= dl {
		return t
	}
	if others > 0 {
		t.Other = max(((dl - t.Connect - t.PerTry) / k).Truncate(ms), ms)
		t.OtherWhy = fmt.Sprintf("%s each: what the deadline of %s leaves after the connect (%s) and one attempt (%s)", FmtDur(t.Other), FmtDur(dl), FmtDur(t.Connect), FmtDur(t.PerTry))
		if t.Connect+k*t.Other+t.PerTry <= dl {
			return t
		}
	}
	// The waits before the request and the attempt do not fit the
	// deadline together. The attempt's timer is not shortened for them:
	// that would cut off calls the caller waits for (a connect, when
	// there is one at all, takes a round trip or three, not its timeout).
	// A try whose connect is slow may outlast the deadline; no wait is
	// longer than the deadline itself.
	if t.Connect > dl {
		t.Connect = dl
		t.ConnectWhy += fmt.Sprintf("; shortened to the deadline of %s: nobody waits longer", FmtDur(dl))
	}
	t.Other = min(t.Other, dl)
	t.over = true
	return t
}

// OverNote says, when the timers of one attempt may outlast the deadline
// (over), why the attempt's own timer is not shortened for it; "" when
// they fit. before is the sum of the waits before the request.
func (t Timers) OverNote(before, dl time.Duration) string {
	if !t.over {
		return ""
	}
	return fmt.Sprintf("a try may take %s when the waits before its request (%s) run out in full, more than the deadline of %s, which ends the caller's wait first: the read timer of %s is not shortened for them, as that would cut off calls the caller waits for (a connect takes a round trip or three, when there is one at all)",
		FmtDur(before+t.PerTry), FmtDur(before), FmtDur(dl), FmtDur(t.PerTry))
}

// ClusterConnect is the connect timeout of a target that has one for the
// whole service (Envoy, Istio): the shortest any route needs.
func (p *Plan) ClusterConnect() (time.Duration, string) {
	c, why := p.connectTimer(p.Routes[0])
	for _, rt := range p.Routes[1:] {
		if d, w := p.connectTimer(rt); d < c {
			c, why = d, w
		}
	}
	return c, why
}

// combine sets the service-wide values from the groups.
func (p *Plan) combine(r *report.Report) {
	if len(p.Routes) == 1 {
		rt := p.Routes[0]
		p.Connect, p.ConnectWhy = rt.Connect, rt.ConnectWhy
		p.Bulkhead, p.BulkheadWhy = rt.Bulkhead, rt.BulkheadWhy
	} else {
		// The connect timeout is the longest: connecting does not depend on the
		// route.
		differ := false
		for _, rt := range p.Routes {
			if rt.Connect == nil {
				continue
			}
			if p.Connect != nil && *rt.Connect != *p.Connect {
				differ = true
			}
			if p.Connect == nil || *rt.Connect > *p.Connect {
				p.Connect, p.ConnectWhy = rt.Connect, rt.ConnectWhy+fmt.Sprintf(" (group %q, the longest)", rt.Group)
			}
		}
		if p.Connect != nil && !differ {
			p.ConnectWhy = p.Routes[0].ConnectWhy
			for _, rt := range p.Routes {
				if rt.Connect != nil {
					p.ConnectWhy = rt.ConnectWhy
					break
				}
			}
		}
		// The calls in flight of all groups add up; the sum of Poisson
		// variables is Poisson, so the service's bulkhead is the quantile of
		// the summed mean, never less than the largest group's.
		var mean float64
		largest := 0
		known := true
		for i := range r.Groups {
			ll := r.Groups[i].LittlesLaw
			if ll.InFlightPeak == nil || ll.Bulkhead == nil {
				known = false
				break
			}
			mean += *ll.InFlightPeak
			largest = max(largest, *ll.Bulkhead)
		}
		if known {
			b := max(largest, 1, littleslaw.PoissonQuantile(mean, 0.999))
			p.Bulkhead = &b
			p.BulkheadWhy = fmt.Sprintf("%d = bulkhead for the whole service (Poisson p99.9 of %s calls in flight at the peak rate, summed over %d groups)", b, human.Number(mean), len(r.Groups))
		}
	}
	// The retry budget is the smallest any group asks for.
	for _, rt := range p.Routes {
		if b := rt.Budget; b != nil && *b > 0 && (p.Budget == nil || *b < *p.Budget) {
			v := *b
			p.Budget = &v
			p.BudgetWhy = fmt.Sprintf("retry budget %s of requests, from the call policy", human.Percent(v))
		}
	}
}

// derivation says how the recommended timeout was reached: "800ms = p99.9
// of 200,000 calls (792ms), rounded up".
func derivation(g *report.Group, t time.Duration) string {
	rec := g.Recommendation
	base := human.Seconds(rec.BaseSeconds)
	if rec.LowerBound {
		base = "at least " + base
	}
	s := fmt.Sprintf("%s = %s of %s (%s)", FmtDur(t), human.Quantile(rec.Quantile), human.Calls(g.Samples), base)
	for _, st := range rec.Steps {
		switch st.Rule {
		case "quantile", "connect":
		case "tight-tail":
			s += fmt.Sprintf(", raised to %s by the tight-tail rule", human.Seconds(st.Seconds))
		case "network-allowance":
			s += fmt.Sprintf(", %s with the network allowance", human.Seconds(st.Seconds))
		case "round":
			s += ", rounded up"
		case "min", "floor":
			s += fmt.Sprintf(", raised to the %s %s", st.Rule, human.Seconds(st.Seconds))
		case "max":
			s += fmt.Sprintf(", capped at the max %s", human.Seconds(st.Seconds))
		default:
			s += fmt.Sprintf(", %s %s", st.Rule, human.Seconds(st.Seconds))
		}
	}
	return s
}

// policyReason is the call policy's reason for its per-try timeout, or a
// summary.
func policyReason(pol *report.Policy) string {
	for _, st := range pol.Steps {
		if st.Rule == "per-try" && st.Reason != "" {
			return st.Reason
		}
	}
	if pol.DeadlineSeconds != nil {
		return fmt.Sprintf("%d attempts within the %s deadline", pol.Attempts, human.Seconds(*pol.DeadlineSeconds))
	}
	return fmt.Sprintf("%d attempts", pol.Attempts)
}

// CeilMs converts seconds to a duration rounded up to a whole millisecond,
// at least 1ms. The seconds are first rounded to the nanosecond so that
// binary noise (0.8 = 0.80000000000000004) does not add a millisecond.
func CeilMs(s float64) time.Duration {
	if !(s > 0) {
		return time.Millisecond
	}
	const maxSeconds = 100 * 365 * 24 * 3600 // far beyond any timeout; keeps int64 nanoseconds
	s = min(s, maxSeconds)
	ns := int64(math.Round(s * 1e9))
	ms := (ns + 999_999) / 1_000_000
	return time.Duration(max(ms, 1)) * time.Millisecond
}

// FmtDur shows a whole-millisecond duration as a Go duration for the
// header lines: 800ms, 1.25s, 2m0.5s.
func FmtDur(d time.Duration) string { return d.String() }

// StaticFit is what a client with no bound over the whole call (HAProxy,
// resilience4j's Retry without an outer TimeLimiter) may be given: every
// attempt costs setup (connect, queue: what comes before the per-try
// timer) plus the per-try timeout; one whose failure is retried costs that
// in full when the call retries failures after the request was sent, and
// neverSent (the most a refused or timed-out connect can take) when it
// retries only never-sent failures; before retry i the client waits at
// most wait(i). It returns how many attempts (at most most) fit the
// deadline that way and their worst case. Without a deadline every
// attempt is kept. The per-try timeout, rt.PerTry, is never lowered for
// the setup (Plan.Timers): when setup and one attempt do not fit, one
// attempt is made, and the worst case outlasts the deadline.
func (rt Route) StaticFit(setup, neverSent time.Duration, wait func(retry int) time.Duration, most int) (n int, worst time.Duration) {
	perTry := rt.PerTry
	fail := setup + perTry
	if rt.NeverSentOnly() {
		fail = min(neverSent, fail)
	}
	worstOf := func(k int) time.Duration {
		w := setup + perTry
		for i := range k - 1 {
			w += fail + wait(i)
		}
		return w
	}
	n = max(1, min(rt.Attempts, most))
	for rt.Deadline > 0 && n > 1 && worstOf(n) > rt.Deadline {
		n--
	}
	return n, worstOf(n)
}

// Window is the largest wait before retry i of a capped exponential
// backoff: min(cap, base x 2^i), as the simulation draws it.
func (rt Route) Window(i int) time.Duration {
	return recommend.Backoff{Base: rt.BackoffBase, Cap: rt.BackoffCap}.Window(i)
}

// herdWhy is the herd step's reason, short enough for a comment: what
// the crowd needs, without the arithmetic of the jitter.
func herdWhy(reason string) string {
	_, rest, ok := strings.Cut(reason, "for the herd: ")
	if !ok {
		return reason
	}
	need, _, _ := strings.Cut(rest, ";")
	return need
}

// DeadlineHeader is the header that passes the time a call has left down
// the chain, in whole milliseconds: Envoy's x-envoy-expected-rq-timeout-ms,
// which Envoy's router sets on every request it sends to the route's
// per-try timeout, or its timeout without one (router.cc,
// FilterUtility::finalTimeout), and, with respect_expected_rq_timeout:
// true in the router filter, takes from its caller as the route's timeout
// in place of the configured one (router.proto; configuration/http/
// http_filters/router_filter.rst). The HTTP connection manager removes it
// from requests it does not count as internal (ConnectionManagerUtility::
// cleanInternalHeaders). Relative, as gRPC's grpc-timeout: the network's
// one-way time is not taken off. Envoy reads 0 as no timeout, so the
// snippets never send it.
const DeadlineHeader = "x-envoy-expected-rq-timeout-ms"

// UsefulWhy says where the route's least useful time comes from; without
// a call policy any time left is worth the one attempt.
func (r Route) UsefulWhy() string {
	if r.MinUsefulWhy == "" {
		return "no call policy in the report: any time left is worth its one attempt (1ms, the least a header can carry)"
	}
	if r.MinUseful < time.Millisecond {
		return r.MinUsefulWhy + "; 1ms, the least a header can carry"
	}
	return r.MinUsefulWhy
}
