// Package gatewayapi is the config target of Kubernetes Gateway API: HTTPRoutes with timeouts and retry per
// rule, and their reading for check.
package gatewayapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes Kubernetes Gateway API HTTPRoutes: one rule per group
// with timeouts.request (the whole call) and timeouts.backendRequest (one
// attempt).
var Target = target.Target{
	Name:       "gateway-api",
	File:       "gateway-api.yaml",
	Summary:    "Kubernetes Gateway API HTTPRoute: rules[].timeouts{request, backendRequest}",
	Language:   "yaml",
	Comment:    "#",
	Write:      renderGateway,
	Reader:     ReadConfig,
	Detect:     Detect,
	Duration:   target.GatewayDur,
	Precedence: target.RouteRules,
}

// An HTTPRoute holds at most 16 rules; more groups take more HTTPRoutes.
const gatewayMaxRules = 16

func renderGateway(p *target.Plan, d *target.Doc) error {
	host := target.DNSLabel(p.Service, 63)
	if host == "" {
		host = target.DefaultService
	}
	ns := target.DNSLabel(p.Namespace, 63)
	if ns == "" {
		ns = "default"
	}
	d.Note("Gateway API HTTPRoute for Service %q, written by tunetimeout from measured latency.", host)
	p.NoRetryAfter(d, "HTTPRoute's retry")
	d.Note("Durations are whole units without decimals (^([0-9]{1,5}(h|m|s|ms)){1,4}$), rounded up to the millisecond.")
	d.Note("request covers the whole request, retries included; backendRequest one request to the backend; backendRequest <= request.")
	d.Note("Every rule has a retry (HTTPRouteRetry, GEP-1731): an unset retry is left to the implementation, whose default may retry a request that was applied (Istio's: 2 retries on connect-failure, refused-stream, unavailable, cancelled and 503), and attempts: 0 MUST disable retries.")
	d.Note("Needs the Gateway API v1.7.0 CRDs, either channel (retry moved to the standard channel, attempts' minimum lowered to 0): an older standard CRD drops retry without a word, an older experimental one refuses attempts: 0.")
	p.NoteUnroutable(d, "an HTTPRoute rule")
	ruleNames := target.NewUnique("-")
	routes := p.PathRoutes()
	var cmds []string
	var off []target.JSONPatchOp
	name := host
	for i, rt := range routes {
		if i%gatewayMaxRules == 0 {
			if len(off) > 0 {
				cmds = append(cmds, target.KubectlJSONPatch("httproute.gateway.networking.k8s.io", name, ns, off))
				off = nil
			}
			name = host
			if i > 0 {
				name = fmt.Sprintf("%s-%d", host, i/gatewayMaxRules+1)
				d.Printf("---\n")
			}
			d.Printf("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", target.YQ(name), target.YQ(ns))
			d.Printf("  parentRefs:\n  - name: gateway  # your Gateway; in a mesh (GAMMA): group: \"\", kind: Service, name: %s\n  rules:\n", host)
		}
		rn := target.DNSLabel(rt.Group, 63)
		if rt.Match.CatchAll && !rt.Match.NotPath {
			rn = "all"
		}
		if rn == "" {
			rn = "group"
		}
		rn = ruleNames.Name(rn)
		typ, value, why := target.GatewayPath(rt.Match)
		d.Note("rule %q (group %q, %s):", rn, rt.Group, rt.Describe())
		if why != "" {
			d.Note("  %s", why)
		}
		d.Note("  request %s: %s", target.GatewayDur(rt.Timeout), rt.TimeoutWhy)
		d.Note("  backendRequest %s: %s", target.GatewayDur(rt.PerTry), rt.PerTryWhy)
		d.Printf("  - name: %s\n    matches:\n    - path:\n        type: %s\n        value: %s\n", target.YQ(rn), typ, target.YQ(value))
		if rt.Match.Method != "" {
			d.Printf("      method: %s\n", rt.Match.Method)
		}
		d.Printf("    backendRefs:\n    - name: %s\n      port: 80  # the Service's port\n", target.YQ(host))
		d.Printf("    timeouts:\n      request: %s\n      backendRequest: %s\n", target.GatewayDur(rt.Timeout), target.GatewayDur(rt.PerTry))
		if gatewayRetry(d, rt) {
			off = append(off, target.JSONPatchOp{Op: "add", Path: fmt.Sprintf("/spec/rules/%d/retry", i%gatewayMaxRules), Value: map[string]int{"attempts": 0}})
		}
		if rt.Hedge != nil {
			d.Note("  no hedging: HTTPRoute cannot express it")
		}
	}
	if len(off) > 0 {
		cmds = append(cmds, target.KubectlJSONPatch("httproute.gateway.networking.k8s.io", name, ns, off))
	}
	// "An explicit zero value MUST disable retries" (HTTPRouteRetry): the
	// implementation applies the patched route without a restart.
	target.KubectlSwitchNote(d, "rule", cmds, "retry.attempts 0 MUST disable retries (HTTPRouteRetry), and the implementation applies the patched route to running proxies; kubectl apply -f gateway-api.yaml restores them.")
	connect, cwhy := p.ClusterConnect()
	d.Note("connect timeout %s (%s) and the bulkhead have no place in an HTTPRoute: set them in the implementation's backend policy", target.GatewayDur(connect), cwhy)
	return nil
}

// gatewayRetry writes a rule's retry and reports whether it retries, attempts: 0 where the rule must not
// retry: HTTPRouteRetry (apis/v1/httproute_types.go, v1.7.0) says "An
// explicit zero value MUST disable retries", and with attempts > 0 retries a
// connection that could not be made, a request the backend refused before
// processing it, the listed codes, and an attempt that reaches
// backendRequest, which may have been applied.
func gatewayRetry(d *target.Doc, rt target.Route) bool {
	switch {
	case rt.Attempts <= 1:
		d.Note("  retry.attempts 0: %s", rt.AttemptsWhy)
		d.Printf("    retry:\n      attempts: 0\n")
		return false
	case rt.NeverSentOnly():
		d.Note("  retry.attempts 0: %s, and HTTPRoute's retry also repeats a request that reaches backendRequest or gets a listed code, after it was sent: the call policy's retries of never-sent failures (%s) are given up", rt.IdempotentWhy, strings.Join(rt.RetryOn, ", "))
		d.Printf("    retry:\n      attempts: 0\n")
		return false
	}
	var codes, implied, skipped []string
	for _, c := range rt.RetryOn {
		switch n, err := strconv.Atoi(c); {
		case err == nil && n >= 400 && n <= 599:
			codes = append(codes, c)
		case slices.Contains(recommend.NeverSent, c):
			implied = append(implied, c)
		case c != recommend.RetryTimeout:
			skipped = append(skipped, c)
		}
	}
	d.Note("  retry.attempts %d = %s, less the first; codes %s; backoff %s: %s (at least this long between attempts; the implementation may grow and jitter it)",
		rt.Retries(), rt.AttemptsWhy, strings.Join(codes, ", "), target.GatewayDur(rt.BackoffBase), rt.BackoffWhy)
	if rt.RetriesOn("timeout") {
		d.Note("  an attempt that reaches backendRequest is cancelled and retried (GEP-1731), within request")
	} else {
		d.Note("  timeouts are not retried by the call policy, but GEP-1731 retries an attempt that reaches backendRequest: set backendRequest equal to request to avoid it")
	}
	if len(implied) > 0 {
		d.Note("  %s: no code needed, with attempts above 0 an implementation SHOULD retry a connection that could not be made and a request the backend refused before processing it (HTTPRouteRetry)", strings.Join(implied, ", "))
	}
	if len(skipped) > 0 {
		d.Note("  not expressible in retry (status codes 400-599 only), left out: %s", strings.Join(skipped, ", "))
	}
	d.Printf("    retry:\n      attempts: %d\n", rt.Retries())
	if len(codes) > 0 {
		d.Printf("      codes: [%s]\n", strings.Join(codes, ", "))
	}
	d.Printf("      backoff: %s\n", target.GatewayDur(rt.BackoffBase))
	return true
}
