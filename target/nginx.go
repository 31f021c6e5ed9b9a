package target

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/recommend"
)

// nginxTarget writes nginx configuration for the http context: an upstream
// with the bulkhead (max_conns) and one location per group with its proxy
// timeouts and proxy_next_upstream retries.
var nginxTarget = Target{
	Name:    "nginx",
	File:    "nginx.conf",
	Summary: "nginx: upstream max_conns, proxy_*_timeout and proxy_next_upstream (tries within the deadline) per location",
	Comment: "#",
	MaxLine: 4000,
	render:  renderNginx,
	read:    readNginxConfig,
	detect:  detectNginxConfig,
}

// nginxNextUpstream lists the statuses proxy_next_upstream can retry.
var nginxNextUpstream = map[string]bool{"500": true, "502": true, "503": true, "504": true, "403": true, "404": true, "429": true}

func renderNginx(p *plan, d *doc) error {
	up := identifier(p.service, false)
	host := dnsSubdomain(p.service)
	d.note("nginx upstream and locations for %q, written by tunetimeout from measured latency (http context).", p.service)
	p.noRetryAfter(d, "nginx (proxy_next_upstream retries at once)")
	d.note("proxy_read_timeout bounds the wait for the response header and then between two reads of one try, not the whole response; nginx has no deadline over all tries, but starts no new try after proxy_next_upstream_timeout, set so that a try begun before it ends within the deadline.")
	// proxy_*_timeout take a constant (ngx_conf_set_msec_slot in
	// ngx_http_proxy_module.c), and proxy_pass_request_headers is on by
	// default (https://nginx.org/en/docs/http/ngx_http_proxy_module.html).
	d.note("nginx cannot read the time its caller has left (%s, which the Go and httpx snippets set): its timeouts take no variables. It passes the header on unchanged, not lowered by its own tries and waits, so after a retry here the upstream is told more than is left.", deadlineHeader)
	// A reload starts new worker processes with the new configuration and
	// shuts the old ones down gracefully (https://nginx.org/en/docs/control.html);
	// proxy_next_upstream off passes no request to the next server
	// (https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_next_upstream).
	d.note("Retries off during an incident, without a deploy: set `proxy_next_upstream off;` in every location (sed -i -E '%s' nginx.conf; proxy_next_upstream_tries and proxy_next_upstream_timeout then do nothing), then `nginx -t && nginx -s reload`: new worker processes make one try per request, the old ones finish the requests they hold. Restore this file and reload to undo.", nginxRetriesOffSed)
	tries := 1
	for _, rt := range p.pathRoutes() {
		if rt.attempts > 1 {
			tries = max(tries, rt.attempts)
		}
	}
	d.p("upstream %s {\n", up)
	d.p("    zone %s 64k;  # max_conns counts across worker processes\n", up)
	server := fmt.Sprintf("server %s:80", host)
	if tries > 1 {
		d.note("upstream: nginx tries each server entry at most once per request, so the one address the report knows is listed %d times for %d tries; max_fails=0 keeps a failed entry in service (with the default max_fails=1 the entries are taken out for 10s, and later requests get 502). Listing your instances instead works too", tries, tries)
		server += " max_fails=0"
	}
	if b := p.bulkhead; b != nil {
		each := max(1, (*b+tries-1)/tries) // rounded up: the entries together hold the whole bulkhead
		if tries > 1 {
			d.note("upstream max_conns=%d on each of the %d entries, %d in all: %s", each, tries, each*tries, p.bulkheadWhy)
		} else {
			d.note("upstream max_conns %s; a request beyond it gets a 502 at once (open-source nginx has no queue)", p.bulkheadWhy)
		}
		server += fmt.Sprintf(" max_conns=%d", each)
	} else {
		d.note("no max_conns: the report has no call rate for a bulkhead (analyze --rate)")
	}
	for i := range tries {
		if i == 0 {
			d.p("    %s;  # every instance of the service\n", server)
		} else {
			d.p("    %s;  # the same address again: one more try\n", server)
		}
	}
	d.p("}\n\nserver {\n    listen 80;  # or paste the locations into your own server block\n")
	p.noteUnroutable(d, "an nginx location")
	// Groups of one path (by method) share a location: it takes the
	// numbers of the one that needs the longest timeout, so that it cuts
	// off none of them more than asked.
	routes := p.pathRoutes()
	chosen := map[string]int{}
	for i, rt := range routes {
		loc := nginxLocation(rt.match)
		if j, ok := chosen[loc]; !ok || rt.perTry > routes[j].perTry || (rt.perTry == routes[j].perTry && rt.timeout > routes[j].timeout) {
			chosen[loc] = i
		}
	}
	for i, rt := range routes {
		loc := nginxLocation(rt.match)
		if j := chosen[loc]; j != i {
			d.note("group %q: nginx matches paths only, so it shares the location %s of group %q, which needs the longest timeout: its numbers are not written", rt.group, loc, routes[j].group)
			continue
		}
		d.note("location %s (group %q, %s):", loc, rt.group, rt.describe())
		if rt.match.method != "" {
			d.note("  the group's method %s is not matched: a location matches paths", rt.match.method)
		}
		if rt.match.notPath {
			d.note("  the group is not a request path: replace this catch-all location with one that selects its calls")
		}
		tm := p.timers(rt, 0)
		connect, connectWhy, perTry, perTryWhy := tm.connect, tm.connectWhy, tm.perTry, tm.perTryWhy
		d.p("\n    location %s {\n        proxy_pass http://%s;\n", loc, up)
		d.note("  proxy_connect_timeout %s: %s", unitDur(connect), connectWhy)
		d.note("  proxy_read_timeout and proxy_send_timeout %s: %s", unitDur(perTry), perTryWhy)
		if n := tm.overNote(connect, rt.deadline); n != "" {
			d.note("  %s", n)
		}
		d.p("        proxy_connect_timeout %s;\n        proxy_send_timeout %s;\n        proxy_read_timeout %s;\n", unitDur(connect), unitDur(perTry), unitDur(perTry))
		one := connect + perTry
		n := min(rt.attempts, tries)
		var next time.Duration
		if rt.deadline > 0 && n > 1 {
			if next = rt.deadline - one; next < time.Millisecond {
				n = 1
			}
		}
		if n <= 1 {
			why := rt.attemptsWhy
			if rt.attempts > 1 {
				why = fmt.Sprintf("%s, but a try may take %s (connect %s + read %s) and a second would not begin within the deadline of %s", rt.attemptsWhy, fmtDur(one), fmtDur(connect), fmtDur(perTry), fmtDur(rt.deadline))
			}
			d.note("  proxy_next_upstream off: %s; worst case %s", why, fmtDur(one))
			d.p("        proxy_next_upstream off;\n    }\n")
			continue
		}
		conds, skipped := nginxConditions(rt)
		d.note("  proxy_next_upstream %s from %s; tries %d: %s", strings.Join(conds, " "), strings.Join(rt.retryOn, ", "), n, rt.attemptsWhy)
		if nginxNonIdempotent(rt) {
			d.note("  non_idempotent: %s, so POST, LOCK and PATCH are retried too", rt.idempotentWhy)
		} else {
			d.note("  %s: without non_idempotent nginx passes POST, LOCK and PATCH to the next try only when the request was never sent (a refused or timed-out connect); other methods it also retries after a timeout or an error reading the response header, which RFC 9110 allows for them", rt.idempotentWhy)
		}
		if len(skipped) > 0 {
			d.note("  not expressible in proxy_next_upstream, left out: %s", strings.Join(skipped, ", "))
		}
		if rt.deadline > 0 {
			d.note("  proxy_next_upstream_timeout %s = the deadline of %s less one try (%s): no try begins after it, so the worst case is %s", unitDur(next), fmtDur(rt.deadline), fmtDur(one), fmtDur(min(time.Duration(n)*one, next+one)))
		} else {
			next = time.Duration(n) * one
			d.note("  proxy_next_upstream_timeout %s = %d tries of %s: no deadline in the report", unitDur(next), n, fmtDur(one))
		}
		d.note("  a retry goes to the next entry at once: nginx has no backoff (the policy's %s to %s)", unitDur(rt.backoffBase), unitDur(rt.backoffCap))
		d.p("        proxy_next_upstream %s;\n        proxy_next_upstream_tries %d;\n        proxy_next_upstream_timeout %s;\n    }\n",
			strings.Join(conds, " "), n, unitDur(next))
	}
	d.p("}\n")
	return nil
}

// nginxConditions maps the route's retry conditions to proxy_next_upstream.
// error and timeout cover the connect, sending the request and reading the
// response header; nginx itself never passes a POST, LOCK or PATCH that was
// sent to the next server unless non_idempotent is set.
func nginxConditions(rt route) (conds, skipped []string) {
	add := func(c string) {
		for _, x := range conds {
			if x == c {
				return
			}
		}
		conds = append(conds, c)
	}
	for _, o := range rt.retryOn {
		switch o = strings.ToLower(strings.TrimSpace(o)); {
		case o == "connect-failure", o == "refused-stream":
			add("error")
			add("timeout")
		case o == "timeout":
			add("timeout")
		case nginxNextUpstream[o]:
			add("http_" + o)
		default:
			skipped = append(skipped, o)
		}
	}
	if len(conds) == 0 {
		conds = []string{"error", "timeout"}
	}
	if nginxNonIdempotent(rt) {
		add("non_idempotent")
	}
	return conds, skipped
}

// nginxNonIdempotent reports whether a route needs non_idempotent: calls
// marked idempotent whose method nginx counts as non-idempotent (POST,
// LOCK, PATCH), or whose method is unknown. A GET or a HEAD is retried
// without it, and with it a POST the data never showed would be too.
func nginxNonIdempotent(rt route) bool {
	return rt.idempotent && !slices.Contains(recommend.IdempotentMethods, rt.method)
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
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return fmt.Sprintf(`"%s"`, r.Replace(s))
}
