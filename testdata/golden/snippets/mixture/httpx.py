# httpx timeouts and limits for "backend", written by tunetimeout from measured latency.
# read and write bound each network read or write of one attempt (the per-try timeout); httpx has no timeout for a whole request.
# connect 0.006 s: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
# pool 0.006 s: the wait for a free connection; as short as a connect, so a full bulkhead fails fast
# max_connections 25 = bulkhead (Poisson p99.9 of 13 calls in flight at the peak rate)
# group "all": read and write 0.8 s: 800ms = p99.9 of 200,000 calls (792ms), rounded up
# group "all": no call policy in the report: one attempt, no retries; deadline 0.8 s: 800ms = p99.9 of 200,000 calls (792ms), rounded up

import httpx

LIMITS = httpx.Limits(max_connections=25, max_keepalive_connections=25)

# Per group: the timeouts of one attempt.
TIMEOUTS = {
    "all": httpx.Timeout(connect=0.006, read=0.8, write=0.8, pool=0.006),
}

# Per group: attempts (the first included), full-jitter backoff from base to
# cap seconds, and the deadline of the whole call in seconds.
RETRIES = {
    "all": {"attempts": 1, "backoff_base": None, "backoff_cap": None, "deadline": 0.8},
}


def client(group="all"):
    """Return an httpx.Client with the timeouts of one group."""
    return httpx.Client(timeout=TIMEOUTS[group], limits=LIMITS)
