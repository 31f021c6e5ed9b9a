// Package nginx is the config target of nginx: an upstream and locations per report, and the reading of
// nginx.conf (with its includes) for check.
package nginx

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes nginx configuration for the http context: an upstream
// with the bulkhead (max_conns) and one location per group with its proxy
// timeouts and proxy_next_upstream retries.
var Target = target.Target{
	Name:            "nginx",
	File:            "nginx.conf",
	Summary:         "nginx: upstream max_conns, proxy_*_timeout and proxy_next_upstream (tries within the deadline) per location",
	Language:        "nginx",
	Comment:         "#",
	MaxLine:         4000,
	Write:           renderNginx,
	Reader:          ReadConfig,
	Detect:          Detect,
	Duration:        target.UnitDur,
	Insert:          func(key, lit string) (string, string) { return key + " " + lit + ";", "{" },
	RegexSearch:     true,
	Precedence:      target.LocationOrder,
	RetriesFailOver: true,
	UpstreamKeys: func(ob target.Object) []string {
		if ob.Kind == "upstream" {
			return []string{strings.TrimPrefix(ob.Name, "upstream ")}
		}
		return nil
	},
}

// nginxNextUpstream lists the statuses proxy_next_upstream can retry.
var nginxNextUpstream = map[string]bool{"500": true, "502": true, "503": true, "504": true, "403": true, "404": true, "429": true}

func renderNginx(p *target.Plan, d *target.Doc) error {
	up := target.Identifier(p.Service, false)
	noteNginxHeader(p, d)
	tries := 1
	for _, rt := range p.PathRoutes() {
		if rt.Attempts > 1 {
			tries = max(tries, rt.Attempts)
		}
	}
	writeNginxUpstream(p, d, up, tries)
	d.Printf("}\n\nserver {\n    listen 80;  # or paste the locations into your own server block\n")
	p.NoteUnroutable(d, "an nginx location")
	routes := p.PathRoutes()
	chosen := nginxSharedLocations(routes)
	for i, rt := range routes {
		loc := nginxLocation(rt.Match)
		if j := chosen[loc]; j != i {
			d.Note("group %q: nginx matches paths only, so it shares the location %s of group %q, which needs the longest timeout: its numbers are not written", rt.Group, loc, routes[j].Group)
			continue
		}
		writeNginxLocation(p, d, rt, loc, up, tries)
	}
	d.Printf("}\n")
	return nil
}

// noteNginxHeader notes what holds for the whole file: what nginx's
// timeouts bound, the deadline header it cannot read, and how to turn its
// retries off during an incident.
func noteNginxHeader(p *target.Plan, d *target.Doc) {
	d.Note("nginx upstream and locations for %q, written by tunetimeout from measured latency (http context).", p.Service)
	p.NoRetryAfter(d, "nginx (proxy_next_upstream retries at once)")
	d.Note("proxy_read_timeout bounds the wait for the response header and then between two reads of one try, not the whole response; nginx has no deadline over all tries, but starts no new try after proxy_next_upstream_timeout, set so that a try begun before it ends within the deadline.")
	// proxy_*_timeout take a constant (ngx_conf_set_msec_slot in
	// ngx_http_proxy_module.c), and proxy_pass_request_headers is on by
	// default (https://nginx.org/en/docs/http/ngx_http_proxy_module.html).
	d.Note("nginx cannot read the time its caller has left (%s, which the Go and httpx snippets set): its timeouts take no variables. It passes the header on unchanged, not lowered by its own tries and waits, so after a retry here the upstream is told more than is left.", target.DeadlineHeader)
	// A reload starts new worker processes with the new configuration and
	// shuts the old ones down gracefully (https://nginx.org/en/docs/control.html);
	// proxy_next_upstream off passes no request to the next server
	// (https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_next_upstream).
	d.Note("Retries off during an incident, without a deploy: set `proxy_next_upstream off;` in every location (sed -i -E '%s' nginx.conf; proxy_next_upstream_tries and proxy_next_upstream_timeout then do nothing), then `nginx -t && nginx -s reload`: new worker processes make one try per request, the old ones finish the requests they hold. Restore this file and reload to undo.", target.NginxRetriesOffSed)
}

// writeNginxUpstream writes the upstream block up to its closing brace:
// the service's one address listed once per try, with the bulkhead
// spread over the entries.
func writeNginxUpstream(p *target.Plan, d *target.Doc, up string, tries int) {
	d.Printf("upstream %s {\n", up)
	d.Printf("    zone %s 64k;  # max_conns counts across worker processes\n", up)
	server := fmt.Sprintf("server %s:80", target.DNSSubdomain(p.Service))
	if tries > 1 {
		d.Note("upstream: nginx tries each server entry at most once per request, so the one address the report knows is listed %d times for %d tries; max_fails=0 keeps a failed entry in service (with the default max_fails=1 the entries are taken out for 10s, and later requests get 502). Listing your instances instead works too", tries, tries)
		server += " max_fails=0"
	}
	if b := p.Bulkhead; b != nil {
		each := max(1, (*b+tries-1)/tries) // rounded up: the entries together hold the whole bulkhead
		if tries > 1 {
			d.Note("upstream max_conns=%d on each of the %d entries, %d in all: %s", each, tries, each*tries, p.BulkheadWhy)
		} else {
			d.Note("upstream max_conns %s; a request beyond it gets a 502 at once (open-source nginx has no queue)", p.BulkheadWhy)
		}
		server += fmt.Sprintf(" max_conns=%d", each)
	} else {
		d.Note("no max_conns: the report has no call rate for a bulkhead (analyze %s)", usage.Rate)
	}
	for i := range tries {
		if i == 0 {
			d.Printf("    %s;  # every instance of the service\n", server)
		} else {
			d.Printf("    %s;  # the same address again: one more try\n", server)
		}
	}
}

// nginxSharedLocations picks, for each location, the route whose numbers
// it takes: groups of one path (by method) share a location, which takes
// the numbers of the one that needs the longest timeout, so that it cuts
// off none of them more than asked.
func nginxSharedLocations(routes []target.Route) map[string]int {
	chosen := map[string]int{}
	for i, rt := range routes {
		loc := nginxLocation(rt.Match)
		if j, ok := chosen[loc]; !ok || rt.PerTry > routes[j].PerTry || (rt.PerTry == routes[j].PerTry && rt.Timeout > routes[j].Timeout) {
			chosen[loc] = i
		}
	}
	return chosen
}

// writeNginxLocation writes the location of a route: its timeouts, and its
// retries within the deadline (at most tries, the upstream's entries).
func writeNginxLocation(p *target.Plan, d *target.Doc, rt target.Route, loc, up string, tries int) {
	d.Note("location %s (group %q, %s):", loc, rt.Group, rt.Describe())
	if rt.Match.Method != "" {
		d.Note("  the group's method %s is not matched: a location matches paths", rt.Match.Method)
	}
	if rt.Match.NotPath {
		d.Note("  the group is not a request path: replace this catch-all location with one that selects its calls")
	}
	tm := p.Timers(rt, 0)
	connect, connectWhy, perTry, perTryWhy := tm.Connect, tm.ConnectWhy, tm.PerTry, tm.PerTryWhy
	d.Printf("\n    location %s {\n        proxy_pass http://%s;\n", loc, up)
	d.Note("  proxy_connect_timeout %s: %s", target.UnitDur(connect), connectWhy)
	d.Note("  proxy_read_timeout and proxy_send_timeout %s: %s", target.UnitDur(perTry), perTryWhy)
	if n := tm.OverNote(connect, rt.Deadline); n != "" {
		d.Note("  %s", n)
	}
	d.Printf("        proxy_connect_timeout %s;\n        proxy_send_timeout %s;\n        proxy_read_timeout %s;\n", target.UnitDur(connect), target.UnitDur(perTry), target.UnitDur(perTry))
	one := connect + perTry
	n := min(rt.Attempts, tries)
	var next time.Duration
	if rt.Deadline > 0 && n > 1 {
		if next = rt.Deadline - one; next < time.Millisecond {
			n = 1
		}
	}
	if n <= 1 {
		why := rt.AttemptsWhy
		if rt.Attempts > 1 {
			why = fmt.Sprintf("%s, but a try may take %s (connect %s + read %s) and a second would not begin within the deadline of %s", rt.AttemptsWhy, target.FmtDur(one), target.FmtDur(connect), target.FmtDur(perTry), target.FmtDur(rt.Deadline))
		}
		d.Note("  proxy_next_upstream off: %s; worst case %s", why, target.FmtDur(one))
		d.Printf("        proxy_next_upstream off;\n    }\n")
		return
	}
	writeNginxRetries(d, rt, n, one, next)
}

// writeNginxRetries writes the end of a location that retries: n tries of
// one each, none begun after next (the deadline less one try; with no
// deadline, computed here from the tries).
func writeNginxRetries(d *target.Doc, rt target.Route, n int, one, next time.Duration) {
	conds, skipped := Conditions(rt)
	d.Note("  proxy_next_upstream %s from %s; tries %d: %s", strings.Join(conds, " "), strings.Join(rt.RetryOn, ", "), n, rt.AttemptsWhy)
	if NonIdempotent(rt) {
		d.Note("  non_idempotent: %s, so POST, LOCK and PATCH are retried too", rt.IdempotentWhy)
	} else {
		d.Note("  %s: without non_idempotent nginx passes POST, LOCK and PATCH to the next try only when the request was never sent (a refused or timed-out connect); other methods it also retries after a timeout or an error reading the response header, which RFC 9110 allows for them", rt.IdempotentWhy)
	}
	if len(skipped) > 0 {
		d.Note("  not expressible in proxy_next_upstream, left out: %s", strings.Join(skipped, ", "))
	}
	if rt.Deadline > 0 {
		d.Note("  proxy_next_upstream_timeout %s = the deadline of %s less one try (%s): no try begins after it, so the worst case is %s", target.UnitDur(next), target.FmtDur(rt.Deadline), target.FmtDur(one), target.FmtDur(min(time.Duration(n)*one, next+one)))
	} else {
		next = time.Duration(n) * one
		d.Note("  proxy_next_upstream_timeout %s = %d tries of %s: no deadline in the report", target.UnitDur(next), n, target.FmtDur(one))
	}
	d.Note("  a retry goes to the next entry at once: nginx has no backoff (the policy's %s to %s)", target.UnitDur(rt.BackoffBase), target.UnitDur(rt.BackoffCap))
	d.Printf("        proxy_next_upstream %s;\n        proxy_next_upstream_tries %d;\n        proxy_next_upstream_timeout %s;\n    }\n",
		strings.Join(conds, " "), n, target.UnitDur(next))
}

// Conditions maps the route's retry conditions to proxy_next_upstream.
// error and timeout cover the connect, sending the request and reading the
// response header; nginx itself never passes a POST, LOCK or PATCH that was
// sent to the next server unless non_idempotent is set.
func Conditions(rt target.Route) (conds, skipped []string) {
	add := func(c string) {
		for _, x := range conds {
			if x == c {
				return
			}
		}
		conds = append(conds, c)
	}
	for _, o := range rt.RetryOn {
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
	if NonIdempotent(rt) {
		add("non_idempotent")
	}
	return conds, skipped
}

// NonIdempotent reports whether a route needs non_idempotent: calls
// marked idempotent whose method nginx counts as non-idempotent (POST,
// LOCK, PATCH), or whose method is unknown. A GET or a HEAD is retried
// without it, and with it a POST the data never showed would be too.
func NonIdempotent(rt target.Route) bool {
	return rt.Idempotent && !slices.Contains(recommend.IdempotentMethods, rt.Method)
}

// nginxLocation is the location of a route: = for an exact path, ~ for a
// regex, / for a catch-all; quoted where the path holds characters nginx
// would read as syntax.
func nginxLocation(m target.PathMatch) string {
	switch {
	case m.Exact != "":
		return "= " + nginxQuote(m.Exact)
	case m.Regex != "":
		return "~ " + nginxQuote(m.Regex)
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
