# httpx timeouts and limits for "shop-api", written by tunetimeout from measured latency.
# read and write bound each network read or write of one attempt (the per-try timeout); httpx has no timeout for a whole request.
# connect 0.006 s: a TCP handshake and TLS take 1 to 3 round trips, so the connect timeout is 3 x the RTT of 2ms, rounded up: 6ms; Linux retransmits a lost SYN after about 1 s, so a connect timeout under 1 s turns one lost SYN into a failed connect rather than a slow one (fine when the call is retried)
# pool 0.006 s: the wait for a free connection; as short as a connect, so a full bulkhead fails fast
# max_connections 26 = bulkhead for the whole service (Poisson p99.9 of 13 calls in flight at the peak rate, summed over 3 groups)
# group "POST /api/orders": read and write 0.8 s: 800ms = p99.9 of 59,978 calls (796ms), rounded up
# group "GET /api/users/{id}": read and write 0.8 s: 800ms = p99.9 of 120,114 calls (790ms), rounded up
# group "GET /api/search/*": read and write 0.351 s: 351ms = the call policy's per-try timeout (p99 of the search calls, 350.4ms)
# group "POST /api/orders": 1 attempt from the call policy: no retries; deadline 0.8 s: 800ms = p99.9 of 59,978 calls (796ms), rounded up
# group "GET /api/users/{id}": 3 attempts from the call policy; deadline 2.475 s: 2.475s = worst case of 3 attempts x 800ms plus the backoff between them, within the 2.5s deadline
# group "GET /api/search/*": 7 attempts from the call policy; deadline 5.007 s: 5.007s = worst case of 7 attempts x 351ms plus the backoff between them

import httpx

LIMITS = httpx.Limits(max_connections=26, max_keepalive_connections=26)

# Per group: the timeouts of one attempt.
TIMEOUTS = {
    "POST /api/orders": httpx.Timeout(connect=0.006, read=0.8, write=0.8, pool=0.006),
    "GET /api/users/{id}": httpx.Timeout(connect=0.006, read=0.8, write=0.8, pool=0.006),
    "GET /api/search/*": httpx.Timeout(connect=0.006, read=0.351, write=0.351, pool=0.006),
}

# Per group: attempts (the first included), full-jitter backoff from base to
# cap seconds, and the deadline of the whole call in seconds.
RETRIES = {
    "POST /api/orders": {"attempts": 1, "backoff_base": None, "backoff_cap": None, "deadline": 0.8},
    "GET /api/users/{id}": {"attempts": 3, "backoff_base": 0.025, "backoff_cap": 0.25, "deadline": 2.475},
    "GET /api/search/*": {"attempts": 7, "backoff_base": 0.05, "backoff_cap": 1.0, "deadline": 5.007},
}


def client(group="POST /api/orders"):
    """Return an httpx.Client with the timeouts of one group."""
    return httpx.Client(timeout=TIMEOUTS[group], limits=LIMITS)
