package snippet

import (
	"regexp"
	"strings"
)

// linkerdTarget writes a ServiceProfile (linkerd.io/v1alpha2): one route per
// group with its timeout and whether it is retryable, and the retry budget.
var linkerdTarget = Target{
	Name:    "linkerd",
	File:    "linkerd.yaml",
	Summary: "Linkerd ServiceProfile: routes with timeout and isRetryable, retryBudget",
	Comment: "#",
	render:  renderLinkerd,
}

// Linkerd's defaults for the budget fields the report does not set.
const (
	linkerdMinRetriesPerSecond = 10
	linkerdTTL                 = "10s"
	linkerdDefaultRatio        = 0.2
)

func renderLinkerd(p *plan, d *doc) error {
	ns := dnsLabel(p.namespace, 63)
	if ns == "" {
		ns = "default"
	}
	host := dnsLabel(p.service, 63)
	if host == "" {
		host = DefaultService
	}
	// A ServiceProfile is named after the service's FQDN.
	name := host + "." + ns + ".svc.cluster.local"
	d.note("Linkerd ServiceProfile for %q, written by tunetimeout from measured latency.", name)
	d.note("A route's timeout covers the whole request, retries included; Linkerd retries a retryable route as long as the budget allows (there is no retry count or per-try timeout).")
	d.p("apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  routes:\n", yq(name), yq(ns))
	names := newUnique(" ")
	retryable := false
	for _, rt := range p.routes {
		rn := names.name(routeName(rt.group))
		d.note("route %q (%s):", rn, rt.match.describe())
		d.note("  timeout %s: %s", rt.timeout, rt.timeoutWhy)
		d.p("  - name: %s\n    condition:\n", yq(rn))
		if rt.match.method != "" {
			d.p("      method: %s\n", rt.match.method)
		}
		if re := linkerdPathRegex(rt.match); re != "" {
			d.p("      pathRegex: %s\n", yq(re))
		}
		retry := rt.attempts > 1
		retryable = retryable || retry
		if retry {
			d.note("  isRetryable: %s (the per-try timeout %s cannot be written)", rt.attemptsWhy, rt.perTry)
		} else {
			d.note("  not retryable: %s", rt.attemptsWhy)
		}
		d.p("    isRetryable: %t\n    timeout: %s\n", retry, rt.timeout)
	}
	switch {
	case p.budget != nil:
		d.note("retryBudget: retryRatio %s = %s; minRetriesPerSecond %d and ttl %s are Linkerd's defaults", ratio(*p.budget), p.budgetWhy, linkerdMinRetriesPerSecond, linkerdTTL)
		d.p("  retryBudget:\n    retryRatio: %s\n    minRetriesPerSecond: %d\n    ttl: %s\n", ratio(*p.budget), linkerdMinRetriesPerSecond, linkerdTTL)
	case retryable:
		d.note("retryBudget: Linkerd's defaults written out (retryRatio %s, minRetriesPerSecond %d, ttl %s): the report has no retry budget", ratio(linkerdDefaultRatio), linkerdMinRetriesPerSecond, linkerdTTL)
		d.p("  retryBudget:\n    retryRatio: %s\n    minRetriesPerSecond: %d\n    ttl: %s\n", ratio(linkerdDefaultRatio), linkerdMinRetriesPerSecond, linkerdTTL)
	}
	if p.connect != nil || p.bulkhead != nil {
		d.note("the connect timeout and the bulkhead have no place in a ServiceProfile")
	}
	return nil
}

// linkerdPathRegex is the route's path as Linkerd's pathRegex, which must
// match the whole path (it is anchored by Linkerd): no ^ and $.
func linkerdPathRegex(m match) string {
	switch {
	case m.regex != "":
		return strings.TrimSuffix(strings.TrimPrefix(m.regex, "^"), "$")
	case m.exact != "":
		return regexp.QuoteMeta(m.exact)
	case m.method == "":
		return "/.*"
	}
	return ""
}
