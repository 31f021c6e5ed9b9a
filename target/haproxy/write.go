// Package haproxy is the config target of HAProxy: a backend per group, and the reading of haproxy.cfg for
// check.
package haproxy

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes one HAProxy backend per group: timeout queue,
// connect and server, retries and retry-on fitted to the deadline, option
// redispatch, and maxconn on the server line as the bulkhead.
var Target = target.Target{
	Name:    "haproxy",
	File:    "haproxy.cfg",
	Summary: "HAProxy backends: timeout queue/connect/server, retries and retry-on fitted to the deadline, redispatch, server maxconn",
	Comment: "#",
	Write:   renderHAProxy,
	// The HAProxy reader reads no include and no YAML: its bounds are
	// its own (read.go).
	Reader: func(file string, data []byte, open target.Opener, _ *budget.Budget) ([]target.Object, error) {
		return ReadConfig(file, data, open)
	},
	Detect:      Detect,
	Naming:      naming,
	Duration:    target.UnitDur,
	Insert:      func(key, lit string) (string, string) { return key + " " + lit, "" },
	RegexSearch: true,
	Precedence:  target.FirstRule,
}

func renderHAProxy(p *target.Plan, d *target.Doc) error {
	host := target.DNSSubdomain(p.Service)
	noteHAProxyLimits(p, d)
	names := target.NewUnique("_")
	// HAProxy takes the first use_backend that matches: the default last.
	var frontend, defaults []string
	p.NoteUnroutable(d, "an HAProxy ACL")
	routes := p.PathRoutes()
	for i, rt := range routes {
		be := naming.Service(p.Service)
		if len(routes) > 1 {
			be = naming.Of(be, rt.Group)
		}
		be = names.Name(be)
		if i > 0 {
			d.Printf("\n")
		}
		writeHAProxyBackend(p, d, be, host, rt)
		if len(routes) > 1 {
			if rule := haproxyUseBackend(be, rt.Match); rule != "" {
				frontend = append(frontend, rule)
			} else if len(defaults) == 0 { // a group that is no path, or the catch-all
				defaults = append(defaults, "default_backend "+be)
			}
		}
	}
	frontend = append(frontend, defaults...)
	if len(frontend) > 0 {
		d.Printf("\n# In your frontend (mode http):\n")
		for _, f := range frontend {
			d.Printf("#   %s\n", target.OneLine(f))
		}
	}
	return nil
}

// noteHAProxyLimits opens the snippet: whose backends these are, what
// HAProxy cannot do that a call policy asks (honour Retry-After, bound the
// call over its retries, take the caller's time left as its deadline) and
// how to turn the retries off during an incident.
func noteHAProxyLimits(p *target.Plan, d *target.Doc) {
	d.Note("HAProxy backends for %q, written by tunetimeout from measured latency.", p.Service)
	p.NoRetryAfter(d, "HAProxy (retry-on retries at once, and takes no 429)")
	d.Note("HAProxy has no deadline over all retries (timeout client is suspended while the server is awaited): each backend makes only as many attempts as fit the deadline when every one runs into its timers (queue + connect + server).")
	d.Note("timeout server counts from the connection to the response headers, then between reads; retry-on replaces HAProxy's default (conn-failure) rather than adding to it.")
	// http-request set-timeout { server | tunnel } { <timeout> | <expr> }
	// (configuration.txt, 2.4 and later): an expression's number is read as
	// milliseconds, for the current stream only.
	d.Note("The time its caller has left (%s, which the Go and httpx snippets set) is not read here: HAProxy 2.4 and later could take it as this request's timeout server (http-request set-timeout server req.hdr(%s)), but that bounds each wait for the server, per attempt, not the request over its retries, and replaces the timeout server below. HAProxy passes the header on unchanged, not lowered by its queue and retries.", target.DeadlineHeader, target.DeadlineHeader)
	// retries 0: no new attempt after a failed one (configuration.txt,
	// retries). A reload in master-worker mode (SIGUSR2 to the master, what
	// the packaged systemd unit's reload sends) starts a new worker with the
	// new configuration while the old one finishes its connections
	// (management.txt 2.6, section 4, stopping and restarting HAProxy; the
	// Debian unit's ExecReload runs haproxy -c, then kill -USR2); the
	// Runtime API's set commands change servers, maps, tables, limits and
	// the CLI's timeout, not a backend's retries (section 9.3).
	d.Note("Retries off during an incident, without a deploy: set `retries 0` in every backend (sed -i -E '%s' haproxy.cfg), check it with `haproxy -c -f haproxy.cfg`, then reload: `systemctl reload haproxy`, or send SIGUSR2 to the master process (master-worker mode, -W): the new worker makes one attempt per request, the old one finishes its connections. The Runtime API has no command that changes a backend's retries. Restore this file and reload to undo.", target.HAProxyRetriesOffSed)
}

// haproxyNoWait is the wait before a retry as the fit counts it: none. A
// layer-7 retry goes at once, and a refused connect's turn-around,
// min(timeout connect, 1s), is no more than the connect timeout the fit
// counts for a failure that was never sent.
func haproxyNoWait(int) time.Duration { return 0 }

// writeHAProxyBackend writes a group's backend: its timeouts, its retries
// fitted to the deadline with every attempt running into its timers, and
// its server.
func writeHAProxyBackend(p *target.Plan, d *target.Doc, be, host string, rt target.Route) {
	d.Note("backend %s (group %q, %s):", be, rt.Group, rt.Describe())
	d.Printf("backend %s\n    mode http\n", be)
	tm := p.Timers(rt, 1)
	setup := tm.Connect + tm.Other
	// A refused connect waits min(timeout connect, 1s) before the next
	// try on the same server (the turn-around timer), no more than a
	// connect that times out; layer-7 retries do not wait. Each attempt
	// is counted with the queue, as a redispatch may queue again.
	asked := rt
	asked.PerTry = tm.PerTry
	// HAProxy has no backoff: a layer-7 retry (response-timeout, a
	// status) goes at once, every client's in the same instant, to a
	// server that is failing, which the call policy's backoff with
	// jitter is there to spare (docs/method.md#backoff-with-jitter;
	// check's TT-CHECK-NO-JITTER). A failed connection never reached
	// the server, and HAProxy waits min(timeout connect, 1s) before
	// retrying it on the same server (configuration.txt, retries): it
	// alone is retried.
	var atOnce []string
	if asked.Attempts > 1 && !asked.NeverSentOnly() {
		atOnce = slices.DeleteFunc(slices.Clone(asked.RetryOn), func(c string) bool { return slices.Contains(recommend.NeverSent, c) })
		asked.RetryOn = slices.Clone(recommend.NeverSent)
	}
	// asked now retries never-sent failures alone (or makes one attempt),
	// so the fit has nothing to fall back on: Route.StaticFit.
	rt = asked
	n, worst := rt.StaticFit(setup, setup, haproxyNoWait, rt.Attempts)
	perTry := rt.PerTry
	d.Note("  timeout connect %s: %s", target.UnitDur(tm.Connect), tm.ConnectWhy)
	d.Note("  timeout queue %s: %s", target.UnitDur(tm.Other), tm.OtherWhy)
	d.Note("  timeout server %s: %s", target.UnitDur(perTry), tm.PerTryWhy)
	if n := tm.OverNote(setup, rt.Deadline); n != "" {
		d.Note("  %s", n)
	}
	d.Printf("    timeout queue %s\n    timeout connect %s\n    timeout server %s\n", target.UnitDur(tm.Other), target.UnitDur(tm.Connect), target.UnitDur(perTry))
	writeHAProxyRetries(d, haproxyFit{rt: rt, n: n, worst: worst, atOnce: atOnce})
	if rt.Hedge != nil {
		d.Note("  no hedging: HAProxy cannot express it")
	}
	writeHAProxyServer(p, d, host, rt)
}

// haproxyFit is how a backend's attempts fit the deadline (Route.StaticFit).
type haproxyFit struct {
	rt     target.Route  // the route fitted: it retries never-sent failures alone
	n      int           // the attempts that fit
	worst  time.Duration // their worst case
	atOnce []string      // the conditions left out as HAProxy would retry them at once
}

// writeHAProxyRetries writes a backend's retries: retries 0 where no
// retry fits, else retries, option redispatch and retry-on conn-failure.
// HAProxy retries nothing at layer 7 here (writeHAProxyBackend), so no
// retry resends the request and no option http-buffer-request is needed.
func writeHAProxyRetries(d *target.Doc, f haproxyFit) {
	rt, n, worst := f.rt, f.n, f.worst
	switch {
	case rt.Attempts <= 1:
		d.Note("  retries 0 (HAProxy retries failed connects 3 times by default): %s; worst case %s", rt.AttemptsWhy, target.FmtDur(worst))
		d.Printf("    retries 0\n")
		return
	case n <= 1:
		d.Note("  retries 0: %s, but HAProxy cannot bound the whole call and one attempt may take %s (queue, connect, server), so a second would not fit the deadline of %s", rt.AttemptsWhy, target.FmtDur(worst), target.FmtDur(rt.Deadline))
		d.Printf("    retries 0\n")
		return
	}
	// rt retries connect-failure and refused-stream at most (the fit's
	// route): both are HAProxy's conn-failure, and retry-on replaces the
	// default rather than adding to it, so it is written whatever rt
	// lists.
	const conds = "conn-failure"
	d.Note("  retries %d = %s, less the first; retry-on %s from %s", n-1, rt.AttemptsWhy, conds, strings.Join(rt.RetryOn, ", "))
	if n < rt.Attempts {
		d.Note("  %d attempts of the %d: more would not fit the deadline of %s", n, rt.Attempts, target.FmtDur(rt.Deadline))
	}
	if len(f.atOnce) > 0 {
		d.Note("  conn-failure only: HAProxy has no backoff, so a retry on %s would go at once, every client's in the same instant, to a server that is failing (the policy backs off %s to %s with jitter); a connection failure never reached the server, and HAProxy waits min(timeout connect, 1s) before retrying it on the same server", strings.Join(f.atOnce, ", "), target.UnitDur(rt.BackoffBase), target.UnitDur(rt.BackoffCap))
	} else {
		d.Note("  conn-failure only: %s, and a connection failure is the one failure after which HAProxy knows the request was never sent (its documentation calls any other retry-on value very dangerous without that guarantee)", rt.IdempotentWhy)
	}
	if rt.Deadline > 0 {
		d.Note("  worst case %s, within the deadline of %s", target.FmtDur(worst), target.FmtDur(rt.Deadline))
	} else {
		d.Note("  worst case %s: no deadline in the report", target.FmtDur(worst))
	}
	d.Note("  option redispatch: a retry may go to another server; HAProxy has no backoff (the policy's %s to %s)", target.UnitDur(rt.BackoffBase), target.UnitDur(rt.BackoffCap))
	d.Printf("    retries %d\n    option redispatch\n    retry-on %s\n", n-1, conds)
}

// writeHAProxyServer writes a backend's server line, with the bulkhead as
// its maxconn.
func writeHAProxyServer(p *target.Plan, d *target.Doc, host string, rt target.Route) {
	b, bwhy := p.Bulkhead, p.BulkheadWhy
	if rt.Bulkhead != nil {
		b, bwhy = rt.Bulkhead, rt.BulkheadWhy
	}
	// init-addr: the check and the start do not fail while the name does
	// not resolve.
	server := "    server s1 " + host + ":80"
	if b != nil {
		d.Note("  server maxconn %s; calls beyond it wait in the queue for at most timeout queue", bwhy)
		server += " maxconn " + strconv.Itoa(*b)
	} else {
		d.Note("  no maxconn: the report has no call rate for a bulkhead (analyze %s)", usage.Rate)
	}
	d.Printf("%s init-addr last,libc,none  # every instance of the service\n", server)
}

// haproxyUseBackend is the frontend's use_backend rule for a group's
// backend, "" for a group that is no path and no method (the catch-all,
// which default_backend takes).
func haproxyUseBackend(be string, m target.PathMatch) string {
	// The group's method too: HAProxy takes the first use_backend
	// whose condition holds (configuration.txt, use_backend), and a
	// group of one method must not take the others'. "{ method X }"
	// rather than the pre-defined METH_X: METH_GET also matches
	// HEAD, and there is no METH_PATCH (section 7.4).
	method := ""
	if m.Method != "" {
		method = " { method " + m.Method + " }"
	}
	switch {
	case m.Regex != "":
		return "use_backend " + be + " if { path_reg " + haproxyArg(m.Regex) + " }" + method
	case m.Exact != "":
		return "use_backend " + be + " if { path " + haproxyArg(m.Exact) + " }" + method
	case m.Method != "":
		return "use_backend " + be + " if" + method
	}
	return ""
}

// haproxyArg quotes an ACL argument when it holds spaces or quotes.
func haproxyArg(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\#") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// naming: "backend <service>_<group>", in lower case
// (renderHAProxy).
var naming = &target.Naming{
	Service: func(s string) string { return target.Identifier(s, false) },
	Of: func(svc, group string) string {
		return svc + "_" + strings.ToLower(target.Identifier(group, false))
	},
	Names: func(ob target.Object) []string {
		if ob.Kind != "backend" && ob.Kind != "listen" {
			return nil
		}
		return []string{strings.TrimPrefix(ob.Name, ob.Kind+" ")}
	},
}
