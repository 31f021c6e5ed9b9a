# httpx timeouts, limits and retries for "shop-api", written by tunetimeout from measured latency.
# Call send(client(group), request, group). httpx has no timeout over a whole request: its timeouts bound each phase of one attempt (the wait for a pooled connection, the connect, each write, each read).
# send() sends a retry only while the worst case of one attempt (pool + connect + write + read) fits in what is left of the deadline, and bounds each phase of an attempt by what is left, so the call never outlasts it, unless a server trickles its answer: read bounds each read, not the whole response.
# The time left is passed down: send() sets x-envoy-expected-rq-timeout-ms on every attempt to the whole milliseconds the attempt has left (the smaller of what is left and one attempt's worst case), as Envoy's router sets it on the requests it sends; an Envoy whose router filter has respect_expected_rq_timeout: true takes it as the route's timeout. In a handler, time_left(headers) reads the header its caller set: pass it as send(..., time_left=...), and a call with less than min_useful left is not sent at all (NoUsefulTime): the work is dropped at once.
# send() retries a request that was never sent (httpx.ConnectError, httpx.ConnectTimeout) for every call, and after it was sent only when retry_sent is set (idempotent calls); httpx's own retries (HTTPTransport(retries=)) are left off, for their fixed 0.5s, 1s waits.
# A retried status with a Retry-After (seconds or an HTTP-date, RFC 9110 section 10.2.3) is retried no sooner; when that wait does not leave room for an attempt before the deadline (or, without one, exceeds backoff_cap), send() returns the response at once.
# Retries off during an incident, without a deploy or a restart: create the file named by the environment variable TUNETIMEOUT_RETRIES_OFF_FILE (default /etc/tunetimeout/retries-off; the variable is read when the process starts), e.g. `touch /etc/tunetimeout/retries-off`, or add the key retries-off to a ConfigMap mounted at /etc/tunetimeout (not with subPath: the kubelet then updates it in running pods). send() looks for the file on every call and, while it exists, makes one attempt per call whatever the policy; remove the file to restore retries.
# max_connections 26 = bulkhead for the whole service (Poisson p99.9 of 13 calls in flight at the peak rate, summed over 3 groups); a request beyond it waits at most the pool timeout, then fails (httpx.PoolTimeout)
# group "POST /api/orders":
#   connect 0.006 s: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
#   pool and write 0.006 s: as long as the connect: on a healthy server it takes no longer
#   read 0.8 s: 800ms = p99.9 of 59,978 calls (796ms), rounded up
#   deadline 1.0 s: the caller's; one attempt takes at most 0.818 s, so send() stops when less is left
#   attempts 3: 3 attempts from the call policy; retry_sent False: POST is not idempotent (RFC 9110 section 9.2.2)
#   min_useful 0.04 s: the call policy's min-useful-try
# group "GET /api/users/{id}":
#   connect 0.006 s: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
#   pool and write 0.006 s: as long as the connect: on a healthy server it takes no longer
#   read 0.8 s: 800ms = p99.9 of 120,114 calls (790ms), rounded up
#   deadline 2.5 s: the caller's; one attempt takes at most 0.818 s, so send() stops when less is left
#   attempts 3: 3 attempts from the call policy; retry_sent: GET calls are idempotent; retry_status [429, 502, 503, 504]
#   retry_budget Budget(0.1): retry budget 10 % of requests, from the call policy; a token bucket for the group's calls in this process: each call earns 0.1 of a token, at most 10 kept, each retry spends one (as the simulation's, docs/method.md#retry-budgets)
#   min_useful 0.04 s: the call policy's min-useful-try
# group "GET /api/search/*":
#   connect 0.006 s: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
#   pool and write 0.006 s: as long as the connect: on a healthy server it takes no longer
#   read 0.351 s: 351ms = the call policy's per-try timeout (p99 of the search calls, 350.4ms)
#   no deadline in the report: send() makes every attempt (at most 8.583 s in all)
#   attempts 7: 7 attempts from the call policy; retry_sent: GET calls are idempotent; retry_status [408, 503]
#   retry_budget Budget(0.2): retry budget 20 % of requests, from the call policy; a token bucket for the group's calls in this process: each call earns 0.2 of a token, at most 10 kept, each retry spends one (as the simulation's, docs/method.md#retry-budgets)
#   min_useful 0.001 s: the call policy's min-useful-try; 1ms, the least a header can carry

import datetime
import email.utils
import os
import random
import threading
import time

import httpx

LIMITS = httpx.Limits(max_connections=26, max_keepalive_connections=26)

# The switch that turns retries off during an incident, without a deploy:
# while a file exists at RETRIES_OFF_FILE, send() makes one attempt per call
# whatever the policy. The path is read from the environment variable
# TUNETIMEOUT_RETRIES_OFF_FILE when the module is imported; the file is
# looked for on every call.
RETRIES_OFF_FILE = os.environ.get("TUNETIMEOUT_RETRIES_OFF_FILE") or "/etc/tunetimeout/retries-off"


def retries_off():
    """Return whether the switch is on: a file at RETRIES_OFF_FILE."""
    return os.path.exists(RETRIES_OFF_FILE)


# DEADLINE_HEADER carries the time a call has left, in whole milliseconds
# counted from when the request is sent: Envoy's x-envoy-expected-rq-timeout-ms,
# which Envoy's router sets on the requests it sends (the route's per-try
# timeout, or its timeout) and, with respect_expected_rq_timeout: true in its
# router filter, takes from its caller as the route's timeout. send() sets it
# on every attempt; time_left() reads it. Envoy removes it from requests it
# does not count as internal: trust it from your own services only.
DEADLINE_HEADER = "x-envoy-expected-rq-timeout-ms"


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



class Budget:
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


# Per group: the timeouts of one attempt (seconds), and how attempts are made:
# deadline bounds the whole call (None: no deadline), attempts counts the first,
# waits are random from 0 to min(backoff_cap, backoff_base x 2^n) (full jitter),
# retry_sent allows a retry after the request was sent (idempotent calls only),
# retry_budget is the group's retry budget, a Budget (None: no budget),
# min_useful the least time left worth an attempt: with less, send() drops the call.
GROUPS = {
    "POST /api/orders": {
        "timeout": httpx.Timeout(connect=0.006, read=0.8, write=0.006, pool=0.006),
        "deadline": 1.0,
        "attempts": 3,
        "backoff_base": 0.025,
        "backoff_cap": 0.25,
        "retry_sent": False,
        "retry_status": [],
        "retry_budget": None,
        "min_useful": 0.04,
    },
    "GET /api/users/{id}": {
        "timeout": httpx.Timeout(connect=0.006, read=0.8, write=0.006, pool=0.006),
        "deadline": 2.5,
        "attempts": 3,
        "backoff_base": 0.025,
        "backoff_cap": 0.25,
        "retry_sent": True,
        "retry_status": [429, 502, 503, 504],
        "retry_budget": Budget(0.1),
        "min_useful": 0.04,
    },
    "GET /api/search/*": {
        "timeout": httpx.Timeout(connect=0.006, read=0.351, write=0.006, pool=0.006),
        "deadline": None,
        "attempts": 7,
        "backoff_base": 0.05,
        "backoff_cap": 1.0,
        "retry_sent": True,
        "retry_status": [408, 503],
        "retry_budget": Budget(0.2),
        "min_useful": 0.001,
    },
}

# Failures after which the request was never sent: safe to retry for any call.
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout)


def client(group="POST /api/orders"):
    """Return an httpx.Client with the timeouts of one group."""
    return httpx.Client(timeout=GROUPS[group]["timeout"], limits=LIMITS)


def send(client, request, group, time_left=None):
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
