package snippet

import (
	"math"
	"strings"
)

// istioTarget writes a VirtualService (per-route timeout and retries) and a
// DestinationRule (connect timeout and connection pool: the bulkhead).
var istioTarget = Target{
	Name:    "istio",
	File:    "istio.yaml",
	Summary: "Istio VirtualService (timeout, retries) and DestinationRule (connectTimeout, connection pool)",
	Comment: "#",
	render:  renderIstio,
}

func renderIstio(p *plan, d *doc) error {
	host := dnsSubdomain(p.service)
	ns := dnsLabel(p.namespace, 63)
	if ns == "" {
		ns = "default"
	}
	d.note("Istio VirtualService and DestinationRule for host %q, written by tunetimeout from measured latency.", host)
	d.note("Durations are whole milliseconds (Istio refuses less than 1ms). timeout covers every attempt; retries.attempts counts the retries after the first call.")
	d.p("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  hosts:\n  - %s\n  http:\n", yq(host), yq(ns), yq(host))
	names := newUnique("-")
	for _, rt := range p.routes {
		name := names.name(routeName(rt.group))
		d.note("http route %q (%s):", name, rt.match.describe())
		d.note("  timeout %s: %s", unitDur(rt.timeout), rt.timeoutWhy)
		d.p("  - name: %s\n", yq(name))
		if !rt.match.catchAll {
			d.p("    match:\n    - ")
			indent := ""
			switch {
			case rt.match.regex != "":
				d.p("uri:\n        regex: %s\n", yq(rt.match.regex))
				indent = "      "
			case rt.match.exact != "":
				d.p("uri:\n        exact: %s\n", yq(rt.match.exact))
				indent = "      "
			}
			if rt.match.method != "" {
				d.p("%smethod:\n        exact: %s\n", indent, rt.match.method)
			}
		}
		d.p("    route:\n    - destination:\n        host: %s\n    timeout: %s\n", yq(host), unitDur(rt.timeout))
		if rt.attempts <= 1 {
			// Istio retries twice by default: one attempt must be said.
			d.note("  retries.attempts 0 (Istio would retry twice by default): %s", rt.attemptsWhy)
			d.p("    retries:\n      attempts: 0\n")
			continue
		}
		on := istioRetryOn(rt.retryOn)
		d.note("  retries.attempts %d = %s, less the first; perTryTimeout %s: %s", rt.retries(), rt.attemptsWhy, unitDur(rt.perTry), rt.perTryWhy)
		d.note("  retryOn %s from %s", on, strings.Join(rt.retryOn, ", "))
		d.note("  backoff %s: %s; Envoy caps it at 10x and jitters it fully (the policy's %s cap cannot be written)", unitDur(rt.backoffBase), rt.backoffWhy, unitDur(rt.backoffCap))
		d.p("    retries:\n      attempts: %d\n      perTryTimeout: %s\n      retryOn: %s\n      backoff: %s\n", rt.retries(), unitDur(rt.perTry), yq(on), unitDur(rt.backoffBase))
	}

	d.p("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  host: %s\n", yq(host), yq(ns), yq(host))
	if p.connect == nil && p.bulkhead == nil {
		d.note("DestinationRule: no connect timeout and no bulkhead in the report (analyze --rtt and --rate): Istio's defaults apply")
		d.p("  trafficPolicy: {}\n")
		return nil
	}
	d.p("  trafficPolicy:\n    connectionPool:\n      tcp:\n")
	if b := p.bulkhead; b != nil {
		d.note("tcp.maxConnections, http.http1MaxPendingRequests and http.http2MaxRequests %s", p.bulkheadWhy)
		d.p("        maxConnections: %d\n", *b)
	}
	if c := p.connect; c != nil {
		d.note("tcp.connectTimeout %s: %s", unitDur(*c), p.connectWhy)
		d.p("        connectTimeout: %s\n", unitDur(*c))
	} else {
		d.note("tcp.connectTimeout not set (Istio's default 10s): the report has no connect timeout (analyze --rtt)")
	}
	if b := p.bulkhead; b != nil {
		d.p("      http:\n        http1MaxPendingRequests: %d\n        http2MaxRequests: %d\n", *b, *b)
		if maxAttempts(p) > 1 {
			mr := *b
			why := "the whole bulkhead"
			if p.budget != nil {
				mr = max(1, int(math.Ceil(float64(*b)**p.budget)))
				why = p.budgetWhy + ", of the bulkhead (Istio has no retry budget: maxRetries caps retries in flight)"
			}
			d.note("http.maxRetries %d = %s", mr, why)
			d.p("        maxRetries: %d\n", mr)
		}
	}
	return nil
}

// istioRetryOn maps retry conditions to Istio's retryOn, which takes
// Envoy's conditions and bare status codes: a timeout is "reset" (no
// response: disconnect, reset or per-try timeout).
func istioRetryOn(on []string) string {
	var out []string
	seen := map[string]bool{}
	for _, o := range on {
		o = strings.ToLower(strings.TrimSpace(o))
		switch {
		case o == "timeout":
			o = "reset"
		case o == "connect-failure" || o == "refused-stream" || o == "reset" || o == "5xx" || o == "gateway-error" || isStatus(o):
		default:
			continue
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		out = []string{"connect-failure"}
	}
	return strings.Join(out, ",")
}
