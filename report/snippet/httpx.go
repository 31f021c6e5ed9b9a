package snippet

import "time"

// httpxTarget writes Python for httpx: an httpx.Timeout per group (seconds
// as floats), httpx.Limits with the bulkhead, and each group's retry policy
// as data (httpx retries only failed connects).
var httpxTarget = Target{
	Name:    "httpx",
	File:    "httpx.py",
	Summary: "Python httpx: httpx.Timeout(connect, read, write, pool) per group and httpx.Limits(max_connections)",
	Comment: "#",
	render:  renderHTTPX,
}

// httpxDefault is httpx's default timeout, kept where the report has no value.
const httpxDefault = 5 * time.Second

func renderHTTPX(p *plan, d *doc) error {
	d.note("httpx timeouts and limits for %q, written by tunetimeout from measured latency.", p.service)
	d.note("read and write bound each network read or write of one attempt (the per-try timeout); httpx has no timeout for a whole request.")
	connect, pool := httpxDefault, httpxDefault
	if c := p.connect; c != nil {
		connect, pool = *c, *c
		d.note("connect %s s: %s", pySeconds(connect), p.connectWhy)
		d.note("pool %s s: the wait for a free connection; as short as a connect, so a full bulkhead fails fast", pySeconds(pool))
	} else {
		d.note("connect and pool keep httpx's default 5.0 s: the report has no connect timeout (analyze --rtt)")
	}
	d.p("import httpx\n\n")
	if b := p.bulkhead; b != nil {
		d.note("max_connections %s", p.bulkheadWhy)
		d.p("LIMITS = httpx.Limits(max_connections=%d, max_keepalive_connections=%d)\n\n", *b, *b)
	} else {
		d.note("httpx's default limits (100 connections): the report has no call rate for a bulkhead (analyze --rate)")
		d.p("LIMITS = httpx.Limits()\n\n")
	}
	d.p("# Per group: the timeouts of one attempt.\nTIMEOUTS = {\n")
	for _, rt := range p.routes {
		d.note("group %q: read and write %s s: %s", rt.group, pySeconds(rt.perTry), rt.perTryWhy)
		d.p("    %s: httpx.Timeout(connect=%s, read=%s, write=%s, pool=%s),\n", jsonString(rt.group), pySeconds(connect), pySeconds(rt.perTry), pySeconds(rt.perTry), pySeconds(pool))
	}
	d.p("}\n\n# Per group: attempts (the first included), full-jitter backoff from base to\n# cap seconds, and the deadline of the whole call in seconds.\nRETRIES = {\n")
	for _, rt := range p.routes {
		d.note("group %q: %s; deadline %s s: %s", rt.group, rt.attemptsWhy, pySeconds(rt.timeout), rt.timeoutWhy)
		base, cp := "None", "None"
		if rt.attempts > 1 {
			base, cp = pySeconds(rt.backoffBase), pySeconds(rt.backoffCap)
		}
		d.p("    %s: {\"attempts\": %d, \"backoff_base\": %s, \"backoff_cap\": %s, \"deadline\": %s},\n", jsonString(rt.group), rt.attempts, base, cp, pySeconds(rt.timeout))
	}
	first := p.routes[0]
	d.p("}\n\n\ndef client(group=%s):\n", jsonString(first.group))
	d.p("    \"\"\"Return an httpx.Client with the timeouts of one group.\"\"\"\n")
	d.p("    return httpx.Client(timeout=TIMEOUTS[group], limits=LIMITS)\n")
	return nil
}
