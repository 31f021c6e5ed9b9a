package snippet

import (
	"go/format"
	"strconv"
	"strings"
)

// goTarget writes a Go file (net/http): a Transport for the service (dial
// and TLS timeouts, MaxConnsPerHost as the bulkhead) and one http.Client
// per group with its per-try timeout, plus each group's retry policy as data
// for the caller's retry loop (net/http does not retry).
var goTarget = Target{
	Name:    "go",
	File:    "go.go",
	Summary: "Go net/http: Transport (Dialer, TLS, ResponseHeaderTimeout, MaxConnsPerHost) and an http.Client per group",
	Comment: "//",
	render:  renderGo,
}

func renderGo(p *plan, d *doc) error {
	pkg := strings.ToLower(identifier(p.service, false))
	pkg = strings.ReplaceAll(pkg, "_", "") + "client"
	d.note("Package %s holds the HTTP clients of %q, written by tunetimeout from measured latency.", pkg, p.service)
	d.note("http.Client.Timeout bounds one request, reading the body included: it is the per-try timeout.")
	d.note("Give each call a context deadline of its RetryPolicy's Deadline and retry in a loop that reads the RetryPolicy.")
	var perTry = p.routes[0].perTry
	for _, rt := range p.routes {
		perTry = max(perTry, rt.perTry)
	}
	d.p("package %s\n\nimport (\n\t\"net\"\n\t\"net/http\"\n\t\"time\"\n)\n\n", pkg)
	d.p("// RetryPolicy is the retry policy of a group: at most Attempts calls (the\n// first included), waiting a random time from 0 to Base x 2^n, at most Cap,\n// between them (full jitter), all within Deadline.\n")
	d.p("type RetryPolicy struct {\n\tAttempts  int\n\tBase, Cap time.Duration\n\tDeadline  time.Duration\n}\n\n")
	d.p("// transport is shared by the clients of the service.\nvar transport = &http.Transport{\n\tProxy: http.ProxyFromEnvironment,\n")
	if c := p.connect; c != nil {
		d.note("net.Dialer.Timeout %s: %s", goDurLit(*c), p.connectWhy)
		d.note("TLSHandshakeTimeout %s: the connect timeout again, a handshake costs about as many round trips", goDurLit(*c))
		d.p("\tDialContext: (&net.Dialer{\n\t\tTimeout:   %s,\n\t\tKeepAlive: 30 * time.Second,\n\t}).DialContext,\n", goDurLit(*c))
		d.p("\tTLSHandshakeTimeout: %s,\n", goDurLit(*c))
	} else {
		d.note("net.Dialer.Timeout and TLSHandshakeTimeout keep Go's defaults (30s, 10s): the report has no connect timeout (analyze --rtt)")
		d.p("\tDialContext: (&net.Dialer{\n\t\tTimeout:   30 * time.Second,\n\t\tKeepAlive: 30 * time.Second,\n\t}).DialContext,\n")
		d.p("\tTLSHandshakeTimeout: 10 * time.Second,\n")
	}
	d.note("ResponseHeaderTimeout %s: the longest per-try timeout of the groups", goDurLit(perTry))
	d.p("\tResponseHeaderTimeout: %s,\n", goDurLit(perTry))
	if b := p.bulkhead; b != nil {
		d.note("MaxConnsPerHost %s", p.bulkheadWhy)
		d.p("\tMaxConnsPerHost:       %d,\n\tMaxIdleConnsPerHost:   %d,\n", *b, *b)
	} else {
		d.note("MaxConnsPerHost not set (no limit): the report has no call rate for a bulkhead (analyze --rate)")
	}
	d.p("\tIdleConnTimeout:       90 * time.Second,\n}\n")

	names := newUnique("")
	for _, rt := range p.routes {
		id := ""
		if len(p.routes) > 1 {
			id = names.name(identifier(rt.group, true))
		}
		retry := id + "Retry"
		if id == "" {
			retry = "DefaultRetry"
		}
		d.note("New%sClient (group %q): Timeout %s: %s", id, rt.group, goDurLit(rt.perTry), rt.perTryWhy)
		d.note("  %s: %s; Deadline %s: %s", retry, rt.attemptsWhy, goDurLit(rt.timeout), rt.timeoutWhy)
		d.p("\n// New%sClient returns the client for group %s.\nfunc New%sClient() *http.Client {\n\treturn &http.Client{Transport: transport, Timeout: %s}\n}\n", id, goCommentQuote(rt.group), id, goDurLit(rt.perTry))
		d.p("\n// %s is the retry policy of group %s.\nvar %s = RetryPolicy{\n\tAttempts: %d,\n", retry, goCommentQuote(rt.group), retry, rt.attempts)
		if rt.attempts > 1 {
			d.p("\tBase:     %s,\n\tCap:      %s,\n", goDurLit(rt.backoffBase), goDurLit(rt.backoffCap))
		}
		d.p("\tDeadline: %s,\n}\n", goDurLit(rt.timeout))
	}
	src, err := format.Source(d.body.Bytes())
	if err != nil {
		return err
	}
	d.body.Reset()
	d.body.Write(src)
	return nil
}

// goCommentQuote quotes a group name for a Go comment.
func goCommentQuote(s string) string { return oneLine(strconv.Quote(s)) }
