// Package istio is the config target of Istio: a VirtualService and a DestinationRule per report, and
// their reading for check.
package istio

import (
	"fmt"
	"math"
	"strings"

	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes a VirtualService (per-route timeout and retries) and a
// DestinationRule (connect timeout and connection pool: the bulkhead).
var Target = target.Target{
	Name:     "istio",
	File:     "istio.yaml",
	Summary:  "Istio VirtualService (timeout, retries) and DestinationRule (connectTimeout, connection pool)",
	Language: "yaml",
	Comment:  "#",
	Write:    renderIstio,
	Reader:   ReadConfig,
	Detect:   Detect,
	Duration: target.UnitDur,
	UpstreamKeys: func(ob target.Object) []string {
		if ob.Kind != "DestinationRule" {
			return nil
		}
		keys := []string{}
		for _, m := range ob.Matches {
			if m.Kind == target.MatchHost {
				keys = append(keys, m.Value, strings.SplitN(m.Value, ".", 2)[0])
			}
		}
		return keys
	},
}

func renderIstio(p *target.Plan, d *target.Doc) error {
	host := target.DNSSubdomain(p.Service)
	ns := target.DNSLabel(p.Namespace, 63)
	if ns == "" {
		ns = "default"
	}
	d.Note("Istio VirtualService and DestinationRule for host %q, written by tunetimeout from measured latency.", host)
	p.NoRetryAfter(d, "Istio's HTTPRetry")
	d.Note("Durations are whole milliseconds (Istio refuses less than 1ms). timeout covers every attempt and the backoff; retries.attempts counts the retries after the first call.")
	d.Note("The time a caller has left (%s, set by Envoy on the requests it sends and by the Go and httpx snippets) replaces a sidecar's route timeout only with respect_expected_rq_timeout: true in its router filter, which Istio's API has no field for: an EnvoyFilter that merges it into envoy.filters.http.router does it.", target.DeadlineHeader)
	d.Printf("apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  hosts:\n  - %s\n  http:\n", target.YQ(host), target.YQ(ns), target.YQ(host))
	p.NoteUnroutable(d, "an Istio route")
	names := target.NewUnique("-")
	var off []target.JSONPatchOp
	for i, rt := range p.PathRoutes() {
		name := names.Name(target.RouteName(rt.Group))
		if rt.Attempts > 1 {
			off = append(off, target.JSONPatchOp{Op: "add", Path: fmt.Sprintf("/spec/http/%d/retries", i), Value: map[string]int{"attempts": 0}})
		}
		d.Note("http route %q (%s):", name, rt.Describe())
		d.Note("  timeout %s: %s", target.UnitDur(rt.Timeout), rt.TimeoutWhy)
		d.Printf("  - name: %s\n", target.YQ(name))
		if !rt.Match.CatchAll {
			d.Printf("    match:\n    - ")
			indent := ""
			switch {
			case rt.Match.Regex != "":
				d.Printf("uri:\n        regex: %s\n", target.YQ(rt.Match.Regex))
				indent = "      "
			case rt.Match.Exact != "":
				d.Printf("uri:\n        exact: %s\n", target.YQ(rt.Match.Exact))
				indent = "      "
			}
			if rt.Match.Method != "" {
				d.Printf("%smethod:\n        exact: %s\n", indent, rt.Match.Method)
			}
		}
		d.Printf("    route:\n    - destination:\n        host: %s\n    timeout: %s\n", target.YQ(host), target.UnitDur(rt.Timeout))
		if rt.Attempts <= 1 {
			// Istio retries twice by default (on connect-failure,
			// refused-stream, unavailable, cancelled): one attempt must be said.
			d.Note("  retries.attempts 0 (Istio would retry twice by default, gRPC's unavailable and cancelled included): %s", rt.AttemptsWhy)
			d.Printf("    retries:\n      attempts: 0\n")
			continue
		}
		on := RetryOn(rt)
		d.Note("  retries.attempts %d = %s, less the first; perTryTimeout %s: %s", rt.Retries(), rt.AttemptsWhy, target.UnitDur(rt.PerTry), rt.PerTryWhy)
		if rt.NeverSentOnly() {
			d.Note("  retryOn %s: %s, so only failures that prove the request never reached the upstream are retried; reset-before-request needs Istio 1.23 (Envoy 1.31) or later", on, rt.IdempotentWhy)
		} else {
			d.Note("  retryOn %s from %s", on, strings.Join(rt.RetryOn, ", "))
		}
		d.Note("  backoff %s: %s; Istio sets only the base: Envoy caps it at 10x and jitters it fully (the policy's %s cap cannot be written)", target.UnitDur(rt.BackoffBase), rt.BackoffWhy, target.UnitDur(rt.BackoffCap))
		d.Note("  %s", rt.HangText(true))
		if rt.Hedge != nil {
			d.Note("  no hedging: Istio's HTTPRetry cannot express Envoy's hedge_policy")
		}
		d.Printf("    retries:\n      attempts: %d\n      perTryTimeout: %s\n      retryOn: %s\n      backoff: %s\n", rt.Retries(), target.UnitDur(rt.PerTry), target.YQ(on), target.UnitDur(rt.BackoffBase))
	}

	d.Printf("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  host: %s\n", target.YQ(host), target.YQ(ns), target.YQ(host))
	connect, why := p.ClusterConnect()
	d.Printf("  trafficPolicy:\n    connectionPool:\n      tcp:\n")
	if b := p.Bulkhead; b != nil {
		d.Note("tcp.maxConnections, http.http1MaxPendingRequests and http.http2MaxRequests %s", p.BulkheadWhy)
		d.Printf("        maxConnections: %d\n", *b)
	}
	d.Note("tcp.connectTimeout %s: %s", target.UnitDur(connect), why)
	d.Printf("        connectTimeout: %s\n", target.UnitDur(connect))
	if b := p.Bulkhead; b != nil {
		d.Printf("      http:\n        http1MaxPendingRequests: %d\n        http2MaxRequests: %d\n", *b, *b)
	}
	if target.MaxAttempts(p) > 1 {
		if bud := p.Budget; bud != nil {
			pct := math.Min(100, math.Round(*bud*100*1000)/1000)
			d.Note("retryBudget percent %s: %s; minRetryConcurrency 3 (Envoy's default). Envoy's budget caps the retries outstanding at once to that share of the active requests; it needs Istio 1.27 or later, and replaces connectionPool.http.maxRetries", target.Ratio(pct), p.BudgetWhy)
			d.Printf("    retryBudget:\n      percent: %s\n      minRetryConcurrency: 3\n", target.Ratio(pct))
		} else if b := p.Bulkhead; b != nil {
			mr := max(1, int(math.Ceil(float64(*b)*0.1)))
			d.Note("http.maxRetries %d = 10 %% of the bulkhead retried at once (no retry budget in the report)", mr)
			d.Printf("        maxRetries: %d\n", mr)
		}
	}
	// HTTPRetry.attempts: "If 0, retries will be disabled"
	// (https://istio.io/latest/docs/reference/config/networking/virtual-service/#HTTPRetry);
	// istiod pushes the patched route to the sidecars, no restart. A JSON
	// patch addresses routes by index, in the order written here.
	var cmds []string
	if len(off) > 0 {
		cmds = append(cmds, target.KubectlJSONPatch("virtualservice.networking.istio.io", host, ns, off))
	}
	target.KubectlSwitchNote(d, "route", cmds, "istiod pushes the change to the sidecars, which then make one attempt per request; kubectl apply -f istio.yaml restores the retries.")
	return nil
}

// RetryOn maps the route's retry conditions to Istio's retryOn, which
// takes Envoy's conditions and bare status codes: target.EnvoyNeverSent for a call
// that retries only never-sent failures, else a timeout is "reset" (Envoy
// counts a per-try timeout as a local reset).
func RetryOn(rt target.Route) string {
	if rt.NeverSentOnly() {
		return target.EnvoyNeverSent
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range rt.RetryOn {
		o = strings.ToLower(strings.TrimSpace(o))
		switch {
		case o == "timeout":
			o = "reset"
		case o == "connect-failure" || o == "refused-stream" || o == "reset" || o == "5xx" || o == "gateway-error" || target.IsStatus(o):
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
