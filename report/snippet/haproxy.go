package snippet

import (
	"strconv"
	"strings"
)

// haproxyTarget writes one HAProxy backend per group: timeout connect,
// timeout server, retries, retry-on, option redispatch, and maxconn on the
// server line as the bulkhead.
var haproxyTarget = Target{
	Name:    "haproxy",
	File:    "haproxy.cfg",
	Summary: "HAProxy backends: timeout connect/server, retries, retry-on, redispatch, server maxconn",
	Comment: "#",
	render:  renderHAProxy,
}

// haproxyRetryStatus lists the statuses HAProxy's retry-on accepts (2.6).
var haproxyRetryStatus = map[string]bool{"401": true, "403": true, "404": true, "408": true, "425": true, "500": true, "501": true, "502": true, "503": true, "504": true}

func renderHAProxy(p *plan, d *doc) error {
	host := dnsSubdomain(p.service)
	d.note("HAProxy backends for %q, written by tunetimeout from measured latency.", p.service)
	d.note("timeout server is the longest silence of the server during one try; HAProxy has no deadline over all retries.")
	names := newUnique("_")
	var frontend []string
	for i, rt := range p.routes {
		be := identifier(p.service, false)
		if len(p.routes) > 1 {
			be += "_" + strings.ToLower(identifier(rt.group, false))
		}
		be = names.name(be)
		if i > 0 {
			d.p("\n")
		}
		d.note("backend %s (group %q, %s):", be, rt.group, rt.match.describe())
		d.p("backend %s\n    mode http\n", be)
		if c := p.connect; c != nil {
			d.note("  timeout connect %s: %s", unitDur(*c), p.connectWhy)
			d.p("    timeout connect %s\n", unitDur(*c))
		} else {
			d.note("  timeout connect 5s, a common default: the report has no connect timeout (analyze --rtt)")
			d.p("    timeout connect 5s\n")
		}
		d.note("  timeout server %s: %s", unitDur(rt.perTry), rt.perTryWhy)
		d.p("    timeout server %s\n", unitDur(rt.perTry))
		if rt.attempts <= 1 {
			d.note("  retries 0 (HAProxy retries failed connects 3 times by default): %s", rt.attemptsWhy)
			d.p("    retries 0\n")
		} else {
			var conds, skipped []string
			for _, o := range rt.retryOn {
				switch o = strings.ToLower(strings.TrimSpace(o)); {
				case o == "connect-failure":
					conds = append(conds, "conn-failure")
				case o == "timeout":
					conds = append(conds, "response-timeout")
				case haproxyRetryStatus[o]:
					conds = append(conds, o)
				default:
					skipped = append(skipped, o)
				}
			}
			if len(conds) == 0 {
				conds = []string{"conn-failure"}
			}
			d.note("  retries %d = %s, less the first; retry-on %s from %s", rt.retries(), rt.attemptsWhy, strings.Join(conds, " "), strings.Join(rt.retryOn, ", "))
			if len(skipped) > 0 {
				d.note("  not accepted by retry-on, left out: %s", strings.Join(skipped, ", "))
			}
			d.note("  option redispatch: a retry may go to another server; HAProxy has no backoff (the policy's %s to %s)", unitDur(rt.backoffBase), unitDur(rt.backoffCap))
			d.p("    retries %d\n    option redispatch\n    retry-on %s\n", rt.retries(), strings.Join(conds, " "))
		}
		b, why := p.bulkhead, p.bulkheadWhy
		if rt.bulkhead != nil {
			b, why = rt.bulkhead, rt.bulkheadWhy
		}
		// init-addr: the check and the start do not fail while the name does
		// not resolve.
		server := "    server s1 " + host + ":80"
		if b != nil {
			d.note("  server maxconn %s; calls beyond it wait in the queue for at most timeout connect", why)
			server += " maxconn " + strconv.Itoa(*b)
		} else {
			d.note("  no maxconn: the report has no call rate for a bulkhead (analyze --rate)")
		}
		d.p("%s init-addr last,libc,none  # every instance of the service\n", server)
		if len(p.routes) > 1 {
			switch {
			case rt.match.regex != "":
				frontend = append(frontend, "use_backend "+be+" if { path_reg "+haproxyArg(rt.match.regex)+" }")
			case rt.match.exact != "":
				frontend = append(frontend, "use_backend "+be+" if { path "+haproxyArg(rt.match.exact)+" }")
			default:
				frontend = append(frontend, "default_backend "+be)
			}
		}
	}
	if len(frontend) > 0 {
		d.p("\n# In your frontend (mode http):\n")
		for _, f := range frontend {
			d.p("#   %s\n", oneLine(f))
		}
	}
	return nil
}

// haproxyArg quotes an ACL argument when it holds spaces or quotes.
func haproxyArg(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\#") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
