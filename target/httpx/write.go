// Package httpx is the Python httpx target: a client module per report,
// its timeouts, limits and retry loop.
package httpx

import (
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes Python for httpx: per group an httpx.Timeout (each
// phase of one attempt) and its policy, httpx.Limits with the bulkhead, and
// send(), which makes the attempts: httpx has no timeout for a whole
// request and retries nothing but connects by itself.
var Target = target.Target{
	Name:     "httpx",
	File:     "httpx.py",
	Summary:  "Python httpx: httpx.Timeout(connect, read, write, pool) and a policy per group, httpx.Limits(max_connections), send(): the retry loop within the deadline",
	Language: "python",
	Comment:  "#",
	Write:    write,
}

func write(p *target.Plan, d *target.Doc) error {
	routes := p.GroupRoutes()
	d.Note("httpx timeouts, limits and retries for %q, written by tunetimeout from measured latency.", p.Service)
	d.Note("Call send(client(group), request, group). httpx has no timeout over a whole request: its timeouts bound each phase of one attempt (the wait for a pooled connection, the connect, each write, each read).")
	d.Note("send() sends a retry only while the worst case of one attempt (pool + connect + write + read) fits in what is left of the deadline, and bounds each phase of an attempt by what is left, so the call never outlasts it, unless a server trickles its answer: read bounds each read, not the whole response.")
	d.Note("The time left is passed down: send() sets %s on every attempt to the whole milliseconds the attempt has left (the smaller of what is left and one attempt's worst case), as Envoy's router sets it on the requests it sends; an Envoy whose router filter has respect_expected_rq_timeout: true takes it as the route's timeout. In a handler, time_left(headers) reads the header its caller set: pass it as send(..., time_left=...), and a call with less than min_useful left is not sent at all (NoUsefulTime): the work is dropped at once.", target.DeadlineHeader)
	d.Note("send() retries a request that was never sent (httpx.ConnectError, httpx.ConnectTimeout) for every call, and after it was sent only when retry_sent is set (idempotent calls); httpx's own retries (HTTPTransport(retries=)) are left off, for their fixed 0.5s, 1s waits.")
	d.Note("A retried status with a Retry-After (seconds or an HTTP-date, RFC 9110 section 10.2.3) is retried no sooner; when that wait does not leave room for an attempt before the deadline (or, without one, exceeds backoff_cap), send() returns the response at once.")
	target.NoteRetriesOffFile(d, "send()")
	d.Printf("import datetime\nimport email.utils\nimport os\nimport random\nimport threading\nimport time\n\nimport httpx\n\n")
	if b := p.Bulkhead; b != nil {
		d.Note("max_connections %s; a request beyond it waits at most the pool timeout, then fails (httpx.PoolTimeout)", p.BulkheadWhy)
		d.Printf("LIMITS = httpx.Limits(max_connections=%d, max_keepalive_connections=%d)\n\n", *b, *b)
	} else {
		d.Note("httpx's default limits (100 connections): the report has no call rate for a bulkhead (analyze %s)", usage.Rate)
		d.Printf("LIMITS = httpx.Limits()\n\n")
	}
	d.Printf("%s", retriesOffCode)
	d.Printf("%s", deadlineCode)
	d.Printf("\n%s", budgetCode)
	d.Printf("# Per group: the timeouts of one attempt (seconds), and how attempts are made:\n")
	d.Printf("# deadline bounds the whole call (None: no deadline), attempts counts the first,\n")
	d.Printf("# waits are random from 0 to min(backoff_cap, backoff_base x 2^n) (full jitter),\n")
	d.Printf("# retry_sent allows a retry after the request was sent (idempotent calls only),\n")
	d.Printf("# retry_budget is the group's retry budget, a Budget (None: no budget),\n")
	d.Printf("# min_useful the least time left worth an attempt: with less, send() drops the call.\n")
	d.Printf("GROUPS = {\n")
	for _, rt := range routes {
		tm := p.Timers(rt, 2)
		perTry := tm.PerTry
		setup := tm.Connect + 2*tm.Other
		d.Note("group %q:", rt.Group)
		d.Note("  connect %s s: %s", target.PySeconds(tm.Connect), tm.ConnectWhy)
		d.Note("  pool and write %s s: %s", target.PySeconds(tm.Other), tm.OtherWhy)
		d.Note("  read %s s: %s", target.PySeconds(perTry), tm.PerTryWhy)
		if n := tm.OverNote(setup, rt.Deadline); n != "" {
			d.Note("  %s", n)
		}
		dl := "None"
		if rt.Deadline > 0 {
			dl = target.PySeconds(rt.Deadline)
			d.Note("  deadline %s s: the caller's; one attempt takes at most %s s, so send() stops when less is left", dl, target.PySeconds(setup+perTry))
		} else {
			d.Note("  no deadline in the report: send() makes every attempt (at most %s s in all)", target.PySeconds(time.Duration(rt.Attempts)*(setup+perTry)+time.Duration(rt.Attempts-1)*rt.BackoffCap))
		}
		retrySent := rt.Attempts > 1 && !rt.NeverSentOnly()
		codes := "[]"
		if retrySent {
			codes = "[" + strings.Join(rt.Statuses(), ", ") + "]"
			d.Note("  attempts %d: %s; retry_sent: %s; retry_status %s", rt.Attempts, rt.AttemptsWhy, rt.IdempotentWhy, codes)
		} else {
			d.Note("  attempts %d: %s; retry_sent False: %s", rt.Attempts, rt.AttemptsWhy, rt.IdempotentWhy)
		}
		if rt.Hedge != nil {
			d.Note("  no hedging: send() does not hedge")
		}
		budget := "None"
		if b := rt.Budget; b != nil && *b > 0 && rt.Attempts > 1 {
			budget = "Budget(" + target.Ratio(*b) + ")"
			d.Note("  retry_budget %s: retry budget %s of requests, from the call policy; a token bucket for the group's calls in this process: each call earns %s of a token, at most 10 kept, each retry spends one (as the simulation's, docs/method.md#retry-budgets)", budget, human.Percent(*b), target.Ratio(*b))
		}
		base, cp := "0.0", "0.0"
		if rt.Attempts > 1 {
			base, cp = target.PySeconds(rt.BackoffBase), target.PySeconds(rt.BackoffCap)
		}
		py := map[bool]string{true: "True", false: "False"}
		d.Printf("    %s: {\n", target.JSONString(rt.Group))
		d.Printf("        \"timeout\": httpx.Timeout(connect=%s, read=%s, write=%s, pool=%s),\n", target.PySeconds(tm.Connect), target.PySeconds(perTry), target.PySeconds(tm.Other), target.PySeconds(tm.Other))
		d.Printf("        \"deadline\": %s,\n        \"attempts\": %d,\n        \"backoff_base\": %s,\n        \"backoff_cap\": %s,\n", dl, rt.Attempts, base, cp)
		d.Note("  min_useful %s s: %s", target.PySeconds(max(rt.MinUseful, time.Millisecond)), rt.UsefulWhy())
		d.Printf("        \"retry_sent\": %s,\n        \"retry_status\": %s,\n        \"retry_budget\": %s,\n", py[retrySent], codes, budget)
		d.Printf("        \"min_useful\": %s,\n    },\n", target.PySeconds(max(rt.MinUseful, time.Millisecond)))
	}
	d.Printf("}\n\n")
	d.Printf("# Failures after which the request was never sent: safe to retry for any call.\nNEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout)\n\n\n")
	d.Printf("def client(group=%s):\n    \"\"\"Return an httpx.Client with the timeouts of one group.\"\"\"\n    return httpx.Client(timeout=GROUPS[group][\"timeout\"], limits=LIMITS)\n\n\n", target.JSONString(routes[0].Group))
	d.Printf("%s", sendCode)
	return nil
}

// retriesOffCode is the switch that turns retries off without a deploy,
// the same in every httpx snippet (as the Go snippet's RetriesOffFile).
const retriesOffCode = `# The switch that turns retries off during an incident, without a deploy:
# while a file exists at RETRIES_OFF_FILE, send() makes one attempt per call
# whatever the policy. The path is read from the environment variable
# ` + target.RetriesOffEnv + ` when the module is imported; the file is
# looked for on every call.
RETRIES_OFF_FILE = os.environ.get("` + target.RetriesOffEnv + `") or "` + target.RetriesOffDefault + `"


def retries_off():
    """Return whether the switch is on: a file at RETRIES_OFF_FILE."""
    return os.path.exists(RETRIES_OFF_FILE)


`

// budgetCode is the retry budget's token bucket, the same in every
// httpx snippet (as the Go snippet's Budget).
const budgetCode = `class Budget:
    """A retry budget as one token bucket for the calls that share it:
    each call earns ratio of a token, at most 10 are kept, each retry
    spends one, and a call is not retried without one. It starts full."""

    MAX = 10.0

    def __init__(self, ratio):
        self.ratio = ratio
        self.tokens = Budget.MAX
        self.lock = threading.Lock()

    def earn(self):
        with self.lock:
            self.tokens = min(Budget.MAX, self.tokens + self.ratio)

    def spend(self):
        with self.lock:
            if self.tokens < 1 - 1e-9:
                return False
            self.tokens -= 1
            return True


`

// deadlineCode is the header that passes the time left down and its
// reader, the same in every httpx snippet (as the Go snippet's
// DeadlineHeader and DeadlineFromRequest).
const deadlineCode = `# DEADLINE_HEADER carries the time a call has left, in whole milliseconds
# counted from when the request is sent: Envoy's ` + target.DeadlineHeader + `,
# which Envoy's router sets on the requests it sends (the route's per-try
# timeout, or its timeout) and, with respect_expected_rq_timeout: true in its
# router filter, takes from its caller as the route's timeout. send() sets it
# on every attempt; time_left() reads it. Envoy removes it from requests it
# does not count as internal: trust it from your own services only.
DEADLINE_HEADER = "` + target.DeadlineHeader + `"


class NoUsefulTime(Exception):
    """The call was not sent: less than the group's min_useful was left of
    its deadline, too little for an attempt to succeed, so the work is
    dropped at once."""


def time_left(headers):
    """Return the seconds the caller of an incoming request has left, from
    DEADLINE_HEADER in headers (any mapping of names to values, names in any
    case: a framework's request headers, http.server's, a dict), or None
    without a positive whole number there (Envoy reads 0 as no timeout).
    Pass it, less the time spent since the request came in, as
    send(..., time_left=...)."""
    for name, value in headers.items():
        if name.lower() == DEADLINE_HEADER:
            value = value.strip()
            if value.isascii() and value.isdigit() and int(value) > 0:
                return int(value) / 1000
            return None
    return None


`

// sendCode is send(), the same in every httpx snippet.
const sendCode = `def send(client, request, group, time_left=None):
    """Send request with the policy of group: return the response, the last
    one when every attempt answered with a retryable status, or raise the
    last error. The request's body must be replayable (bytes, not a stream)
    for a retry to resend it. time_left, the seconds the caller has left
    (time_left() of the incoming request's headers), shortens the group's
    deadline; with less than min_useful left the call is not sent and
    NoUsefulTime is raised."""
    policy = GROUPS[group]
    t = policy["timeout"]
    one_attempt = t.pool + t.connect + t.write + t.read
    deadline = policy["deadline"]
    if time_left is not None:
        deadline = time_left if deadline is None else min(deadline, time_left)
    start = time.monotonic()
    if deadline is not None and deadline < policy["min_useful"]:
        raise NoUsefulTime(
            "%.3f s left, less than min_useful %.3f s: the call is dropped, not sent"
            % (max(deadline, 0.0), policy["min_useful"]))
    last = None
    after = 0.0  # the Retry-After of the last response
    budget = policy["retry_budget"]
    if budget is not None:
        budget.earn()
    attempts = 1 if retries_off() else policy["attempts"]
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            window = min(policy["backoff_cap"], policy["backoff_base"] * 2 ** (attempt - 2))
            wait = max(random.uniform(0, window), after)
            if deadline is not None and deadline - (time.monotonic() - start) - wait < one_attempt:
                break
            if deadline is None and after > policy["backoff_cap"]:
                break
            if budget is not None and not budget.spend():
                break
            time.sleep(wait)
        after = 0.0
        left = one_attempt
        if deadline is not None:
            left = min(left, deadline - (time.monotonic() - start))
            request.extensions["timeout"] = httpx.Timeout(
                connect=min(t.connect, left), read=min(t.read, left),
                write=min(t.write, left), pool=min(t.pool, left)).as_dict()
        request.headers[DEADLINE_HEADER] = str(max(1, int(left * 1000)))
        try:
            response = client.send(request)
        except NEVER_SENT as e:
            last = e
            continue
        except httpx.TransportError as e:
            if not policy["retry_sent"]:
                raise
            last = e
            continue
        if policy["retry_sent"] and response.status_code in policy["retry_status"]:
            last = response
            after = retry_after(response)
            continue
        return response
    if isinstance(last, httpx.Response):
        return last
    raise last


def retry_after(response):
    """Return the wait response asks for before a retry, in seconds
    (Retry-After: delay-seconds or an HTTP-date, RFC 9110 section 10.2.3);
    0 when it asks for none or cannot be read."""
    value = response.headers.get("retry-after", "").strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - time.time())
`
