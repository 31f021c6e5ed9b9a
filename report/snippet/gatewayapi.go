package snippet

import (
	"fmt"
	"strings"
)

// gatewayTarget writes Kubernetes Gateway API HTTPRoutes: one rule per group
// with timeouts.request (the whole call) and timeouts.backendRequest (one
// attempt).
var gatewayTarget = Target{
	Name:    "gateway-api",
	File:    "gateway-api.yaml",
	Summary: "Kubernetes Gateway API HTTPRoute: rules[].timeouts{request, backendRequest}",
	Comment: "#",
	render:  renderGateway,
}

// An HTTPRoute holds at most 16 rules; more groups take more HTTPRoutes.
const gatewayMaxRules = 16

// gatewayMaxPath is the longest path value the CRD accepts.
const gatewayMaxPath = 1024

func renderGateway(p *plan, d *doc) error {
	host := dnsLabel(p.service, 63)
	if host == "" {
		host = DefaultService
	}
	ns := dnsLabel(p.namespace, 63)
	if ns == "" {
		ns = "default"
	}
	d.note("Gateway API HTTPRoute for Service %q, written by tunetimeout from measured latency.", host)
	d.note("Durations are whole units without decimals (^([0-9]{1,5}(h|m|s|ms)){1,4}$), rounded up to the millisecond.")
	d.note("request covers the whole request, retries included; backendRequest one request to the backend; backendRequest <= request.")
	ruleNames := newUnique("-")
	for i, rt := range p.routes {
		if i%gatewayMaxRules == 0 {
			name := host
			if i > 0 {
				name = fmt.Sprintf("%s-%d", host, i/gatewayMaxRules+1)
				d.p("---\n")
			}
			d.p("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", yq(name), yq(ns))
			d.p("  parentRefs:\n  - name: gateway  # your Gateway; in a mesh (GAMMA): group: \"\", kind: Service, name: %s\n  rules:\n", host)
		}
		rn := dnsLabel(rt.group, 63)
		if rt.match.catchAll && !rt.match.notPath {
			rn = "all"
		}
		if rn == "" {
			rn = "group"
		}
		rn = ruleNames.name(rn)
		typ, value, why := gatewayPath(rt.match)
		d.note("rule %q (group %q, %s):", rn, rt.group, rt.match.describe())
		if why != "" {
			d.note("  %s", why)
		}
		d.note("  request %s: %s", gatewayDur(rt.timeout), rt.timeoutWhy)
		d.note("  backendRequest %s: %s", gatewayDur(rt.perTry), rt.perTryWhy)
		if rt.attempts > 1 {
			d.note("  retries (%s) are not written: HTTPRoute's retry field is experimental; configure them in the implementation", rt.attemptsWhy)
		}
		d.p("  - name: %s\n    matches:\n    - path:\n        type: %s\n        value: %s\n", yq(rn), typ, yq(value))
		if rt.match.method != "" {
			d.p("      method: %s\n", rt.match.method)
		}
		d.p("    backendRefs:\n    - name: %s\n      port: 80  # the Service's port\n", yq(host))
		d.p("    timeouts:\n      request: %s\n      backendRequest: %s\n", gatewayDur(rt.timeout), gatewayDur(rt.perTry))
	}
	if p.connect != nil || p.bulkhead != nil {
		d.note("the connect timeout and the bulkhead have no place in an HTTPRoute (see the implementation's backend policy)")
	}
	return nil
}

// gatewayPath is the path match of a route in the types of the core
// conformance level (Exact and PathPrefix): a route with variable segments
// matches the prefix before the first one, which is broader than the group.
// Characters the CRD refuses are percent-encoded.
func gatewayPath(m match) (typ, value, why string) {
	switch {
	case m.exact != "":
		typ, value = "Exact", m.exact
	case m.regex != "":
		typ, value = "PathPrefix", strings.TrimSuffix(m.prefix, "/")
		why = "PathPrefix " + value + " is broader than the group's path: RegularExpression matching is implementation-specific"
	default:
		return "PathPrefix", "/", ""
	}
	value = gatewayEncode(value)
	if value == "" {
		value = "/"
	}
	if len(value) > gatewayMaxPath {
		cut := gatewayMaxPath
		for cut > 0 && value[cut-1] != '/' {
			cut--
		}
		typ, value = "PathPrefix", strings.TrimSuffix(value[:cut], "/")
		if value == "" {
			value = "/"
		}
		why = "the path is longer than the 1024 characters the CRD accepts: PathPrefix of its first segments"
	}
	return typ, value, why
}

// gatewayEncode makes a path acceptable to the HTTPRoute CRD: only
// [-A-Za-z0-9/._~!$&'()*+,;=:@] and %XX; no "//", no "." or ".." segment.
func gatewayEncode(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			strings.IndexByte("-/._~!$&'()*+,;=:@", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	segs := strings.Split(b.String(), "/")
	out := segs[:0]
	for i, s := range segs {
		switch {
		case s == "" && i > 0 && i < len(segs)-1:
			continue // "//"
		case s == ".":
			s = "%2E"
		case s == "..":
			s = "%2E%2E"
		}
		out = append(out, s)
	}
	return strings.Join(out, "/")
}
