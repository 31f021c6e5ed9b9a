package snippet

import (
	"fmt"
	"strings"
)

// nginxTarget writes nginx configuration for the http context: an upstream
// with the bulkhead (max_conns) and one location per group with its proxy
// timeouts and proxy_next_upstream retries.
var nginxTarget = Target{
	Name:    "nginx",
	File:    "nginx.conf",
	Summary: "nginx: upstream max_conns, proxy_*_timeout and proxy_next_upstream per location",
	Comment: "#",
	render:  renderNginx,
}

// nginxNextUpstream lists the statuses proxy_next_upstream can retry.
var nginxNextUpstream = map[string]bool{"500": true, "502": true, "503": true, "504": true, "403": true, "404": true, "429": true}

func renderNginx(p *plan, d *doc) error {
	up := identifier(p.service, false)
	host := dnsSubdomain(p.service)
	d.note("nginx upstream and locations for %q, written by tunetimeout from measured latency (http context).", p.service)
	d.note("proxy_read_timeout and proxy_send_timeout bound the wait between two reads or writes of one try, not the whole response.")
	d.p("upstream %s {\n", up)
	d.p("    zone %s 64k;  # max_conns counts across worker processes\n", up)
	if b := p.bulkhead; b != nil {
		d.note("upstream max_conns %s", p.bulkheadWhy)
		d.p("    server %s:80 max_conns=%d;  # every instance of the service, each with its share\n", host, *b)
	} else {
		d.note("no max_conns: the report has no call rate for a bulkhead (analyze --rate)")
		d.p("    server %s:80;  # every instance of the service\n", host)
	}
	d.p("}\n\nserver {\n    listen 80;  # or paste the locations into your own server block\n")
	seen := map[string]string{}
	for _, rt := range p.routes {
		loc := nginxLocation(rt.match)
		if g, dup := seen[loc]; dup {
			d.note("group %q: nginx matches paths only, so it shares the location %s of group %q: its numbers are not written", rt.group, loc, g)
			continue
		}
		seen[loc] = rt.group
		d.note("location %s (group %q):", loc, rt.group)
		if rt.match.method != "" {
			d.note("  the group's method %s is not matched: a location matches paths", rt.match.method)
		}
		if rt.match.notPath {
			d.note("  the group is not a request path: replace this catch-all location with one that selects its calls")
		}
		d.p("\n    location %s {\n        proxy_pass http://%s;\n", loc, up)
		if c := p.connect; c != nil {
			d.note("  proxy_connect_timeout %s: %s", unitDur(*c), p.connectWhy)
			d.p("        proxy_connect_timeout %s;\n", unitDur(*c))
		}
		d.note("  proxy_read_timeout and proxy_send_timeout %s: %s", unitDur(rt.perTry), rt.perTryWhy)
		d.p("        proxy_send_timeout %s;\n        proxy_read_timeout %s;\n", unitDur(rt.perTry), unitDur(rt.perTry))
		if rt.attempts <= 1 {
			d.note("  proxy_next_upstream off: %s", rt.attemptsWhy)
			d.p("        proxy_next_upstream off;\n    }\n")
			continue
		}
		var conds, skipped []string
		for _, o := range rt.retryOn {
			switch o = strings.ToLower(strings.TrimSpace(o)); {
			case o == "connect-failure":
				conds = append(conds, "error")
			case o == "timeout":
				conds = append(conds, "timeout")
			case nginxNextUpstream[o]:
				conds = append(conds, "http_"+o)
			default:
				skipped = append(skipped, o)
			}
		}
		if len(conds) == 0 {
			conds = []string{"error"}
		}
		if rt.idempotent {
			conds = append(conds, "non_idempotent")
			d.note("  non_idempotent: the call policy says these calls are safe to repeat")
		} else {
			d.note("  nginx does not retry POST, LOCK or PATCH requests (non_idempotent is not set)")
		}
		d.note("  proxy_next_upstream %s from %s; tries %d: %s", strings.Join(conds, " "), strings.Join(rt.retryOn, ", "), rt.attempts, rt.attemptsWhy)
		if len(skipped) > 0 {
			d.note("  not expressible in proxy_next_upstream, left out: %s", strings.Join(skipped, ", "))
		}
		d.note("  proxy_next_upstream_timeout %s: %s", unitDur(rt.timeout), rt.timeoutWhy)
		d.note("  a retry goes to the next server of the upstream, at once: nginx has no backoff (the policy's %s to %s)", unitDur(rt.backoffBase), unitDur(rt.backoffCap))
		d.p("        proxy_next_upstream %s;\n        proxy_next_upstream_tries %d;\n        proxy_next_upstream_timeout %s;\n    }\n",
			strings.Join(conds, " "), rt.attempts, unitDur(rt.timeout))
	}
	d.p("}\n")
	return nil
}

// nginxLocation is the location of a route: = for an exact path, ~ for a
// regex, / for a catch-all; quoted where the path holds characters nginx
// would read as syntax.
func nginxLocation(m match) string {
	switch {
	case m.exact != "":
		return "= " + nginxQuote(m.exact)
	case m.regex != "":
		return "~ " + nginxQuote(m.regex)
	}
	return "/"
}

// nginxQuote quotes a location argument when it needs it: inside double
// quotes nginx reads \" and \\ as escapes.
func nginxQuote(s string) string {
	if !strings.ContainsAny(s, " \t\r\n\"'{};#$\\") && s != "" {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return fmt.Sprintf(`"%s"`, r.Replace(s))
}
