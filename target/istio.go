package target

import (
	"fmt"
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
	read:    readIstioConfig,
	detect:  detectIstioConfig,
}

func renderIstio(p *plan, d *doc) error {
	host := dnsSubdomain(p.service)
	ns := dnsLabel(p.namespace, 63)
	if ns == "" {
		ns = "default"
	}
	d.note("Istio VirtualService and DestinationRule for host %q, written by tunetimeout from measured latency.", host)
	p.noRetryAfter(d, "Istio's HTTPRetry")
	d.note("Durations are whole milliseconds (Istio refuses less than 1ms). timeout covers every attempt and the backoff; retries.attempts counts the retries after the first call.")
	d.note("The time a caller has left (%s, set by Envoy on the requests it sends and by the Go and httpx snippets) replaces a sidecar's route timeout only with respect_expected_rq_timeout: true in its router filter, which Istio's API has no field for: an EnvoyFilter that merges it into envoy.filters.http.router does it.", deadlineHeader)
	d.p("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  hosts:\n  - %s\n  http:\n", yq(host), yq(ns), yq(host))
	p.noteUnroutable(d, "an Istio route")
	names := newUnique("-")
	var off []jsonPatchOp
	for i, rt := range p.pathRoutes() {
		name := names.name(routeName(rt.group))
		if rt.attempts > 1 {
			off = append(off, jsonPatchOp{"add", fmt.Sprintf("/spec/http/%d/retries", i), map[string]int{"attempts": 0}})
		}
		d.note("http route %q (%s):", name, rt.describe())
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
			// Istio retries twice by default (on connect-failure,
			// refused-stream, unavailable, cancelled): one attempt must be said.
			d.note("  retries.attempts 0 (Istio would retry twice by default, gRPC's unavailable and cancelled included): %s", rt.attemptsWhy)
			d.p("    retries:\n      attempts: 0\n")
			continue
		}
		on := istioRetryOn(rt)
		d.note("  retries.attempts %d = %s, less the first; perTryTimeout %s: %s", rt.retries(), rt.attemptsWhy, unitDur(rt.perTry), rt.perTryWhy)
		if rt.neverSentOnly() {
			d.note("  retryOn %s: %s, so only failures that prove the request never reached the upstream are retried; reset-before-request needs Istio 1.23 (Envoy 1.31) or later", on, rt.idempotentWhy)
		} else {
			d.note("  retryOn %s from %s", on, strings.Join(rt.retryOn, ", "))
		}
		d.note("  backoff %s: %s; Istio sets only the base: Envoy caps it at 10x and jitters it fully (the policy's %s cap cannot be written)", unitDur(rt.backoffBase), rt.backoffWhy, unitDur(rt.backoffCap))
		d.note("  %s", rt.hangText(true))
		if rt.hedge != nil {
			d.note("  no hedging: Istio's HTTPRetry cannot express Envoy's hedge_policy")
		}
		d.p("    retries:\n      attempts: %d\n      perTryTimeout: %s\n      retryOn: %s\n      backoff: %s\n", rt.retries(), unitDur(rt.perTry), yq(on), unitDur(rt.backoffBase))
	}

	d.p("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  host: %s\n", yq(host), yq(ns), yq(host))
	connect, why := p.clusterConnect()
	d.p("  trafficPolicy:\n    connectionPool:\n      tcp:\n")
	if b := p.bulkhead; b != nil {
		d.note("tcp.maxConnections, http.http1MaxPendingRequests and http.http2MaxRequests %s", p.bulkheadWhy)
		d.p("        maxConnections: %d\n", *b)
	}
	d.note("tcp.connectTimeout %s: %s", unitDur(connect), why)
	d.p("        connectTimeout: %s\n", unitDur(connect))
	if b := p.bulkhead; b != nil {
		d.p("      http:\n        http1MaxPendingRequests: %d\n        http2MaxRequests: %d\n", *b, *b)
	}
	if maxAttempts(p) > 1 {
		if bud := p.budget; bud != nil {
			pct := math.Min(100, math.Round(*bud*100*1000)/1000)
			d.note("retryBudget percent %s: %s; minRetryConcurrency 3 (Envoy's default). Envoy's budget caps the retries outstanding at once to that share of the active requests; it needs Istio 1.27 or later, and replaces connectionPool.http.maxRetries", ratio(pct), p.budgetWhy)
			d.p("    retryBudget:\n      percent: %s\n      minRetryConcurrency: 3\n", ratio(pct))
		} else if b := p.bulkhead; b != nil {
			mr := max(1, int(math.Ceil(float64(*b)*0.1)))
			d.note("http.maxRetries %d = 10 %% of the bulkhead retried at once (no retry budget in the report)", mr)
			d.p("        maxRetries: %d\n", mr)
		}
	}
	// HTTPRetry.attempts: "If 0, retries will be disabled"
	// (https://istio.io/latest/docs/reference/config/networking/virtual-service/#HTTPRetry);
	// istiod pushes the patched route to the sidecars, no restart. A JSON
	// patch addresses routes by index, in the order written here.
	var cmds []string
	if len(off) > 0 {
		cmds = append(cmds, kubectlJSONPatch("virtualservice.networking.istio.io", host, ns, off))
	}
	kubectlSwitchNote(d, "route", cmds, "istiod pushes the change to the sidecars, which then make one attempt per request; kubectl apply -f istio.yaml restores the retries.")
	return nil
}

// istioRetryOn maps the route's retry conditions to Istio's retryOn, which
// takes Envoy's conditions and bare status codes: envoyNeverSent for a call
// that retries only never-sent failures, else a timeout is "reset" (Envoy
// counts a per-try timeout as a local reset).
func istioRetryOn(rt route) string {
	if rt.neverSentOnly() {
		return envoyNeverSent
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range rt.retryOn {
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
