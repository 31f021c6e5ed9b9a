package target

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// linkerdTarget writes Linkerd's routes with the timeout and retry
// annotations of Linkerd 2.16 and later: an HTTPRoute (policy.linkerd.io)
// per group, or a GRPCRoute when the groups are gRPC methods, each attached
// to the Service; a ServiceProfile for older meshes on request.
var linkerdTarget = Target{
	Name:    "linkerd",
	File:    "linkerd.yaml",
	Summary: "Linkerd 2.16+ HTTPRoute or GRPCRoute per group with timeout.linkerd.io and retry.linkerd.io annotations (ServiceProfile on request)",
	Comment: "#",
	render:  renderLinkerd,
	read:    readLinkerdConfig,
	detect:  detectLinkerdConfig,
}

// What the Linkerd snippet writes (Options.LinkerdResource).
const (
	LinkerdAuto           = "auto"
	LinkerdHTTPRoute      = "httproute"
	LinkerdGRPCRoute      = "grpcroute"
	LinkerdServiceProfile = "serviceprofile"
)

var linkerdResources = []string{LinkerdAuto, LinkerdHTTPRoute, LinkerdGRPCRoute, LinkerdServiceProfile}

// Linkerd's defaults for the ServiceProfile budget fields the report does
// not set.
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
	kind := p.opts.LinkerdResource
	if kind == "" || kind == LinkerdAuto {
		kind = LinkerdHTTPRoute
		if grpcGroups(p) {
			kind = LinkerdGRPCRoute
		}
	}
	if kind == LinkerdServiceProfile {
		return renderServiceProfile(p, d, host, ns)
	}
	grpc := kind == LinkerdGRPCRoute
	what := "HTTPRoute (policy.linkerd.io/v1beta3)"
	if grpc {
		what = "GRPCRoute (gateway.networking.k8s.io/v1)"
	}
	d.note("Linkerd %s per group for Service %q, written by tunetimeout from measured latency, with the annotations of Linkerd 2.16 and later.", what, host)
	p.noRetryAfter(d, "Linkerd (25-250ms between attempts)")
	d.note("timeout.linkerd.io/request bounds the whole request, retries included; retry.linkerd.io/timeout bounds one attempt and retries it; retry.linkerd.io/limit counts the retries after the first. Durations are one number and a unit (800ms, 2500ms).")
	d.note("Linkerd waits 25ms to 250ms, full jitter, between attempts (not configurable), never retries a request whose body is over 64KiB, and has no retry budget in this model.")
	d.note("A ServiceProfile for the same Service takes precedence over these annotations: remove it, or use --linkerd-resource serviceprofile. Requests matching no route get a 404, hence the catch-all.")
	p.noteUnroutable(d, "a Linkerd route")
	names := newUnique("-")
	resource := "httproute.policy.linkerd.io"
	if grpc {
		resource = "grpcroute.gateway.networking.k8s.io"
	}
	var cmds []string
	for i, rt := range p.pathRoutes() {
		if i > 0 {
			d.p("---\n")
		}
		name := host
		if g := dnsLabel(rt.group, 40); g != "" {
			name += "-" + g
		}
		if rt.match.catchAll {
			name = host + "-all"
		}
		name = names.name(name)
		d.note("route %s (group %q, %s):", name, rt.group, rt.describe())
		ann := [][2]string{{"timeout.linkerd.io/request", unitDur(rt.timeout)}}
		d.note("  timeout.linkerd.io/request %s: %s", unitDur(rt.timeout), rt.timeoutWhy)
		ann = append(ann, linkerdRetries(d, rt, grpc)...)
		if c := linkerdRetriesOff(resource, name, ns, ann); c != "" {
			cmds = append(cmds, c)
		}
		if rt.hedge != nil {
			d.note("  no hedging: Linkerd cannot express it")
		}
		api, k := "policy.linkerd.io/v1beta3", "HTTPRoute"
		if grpc {
			api, k = "gateway.networking.k8s.io/v1", "GRPCRoute"
		}
		d.p("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n", api, k, yq(name), yq(ns))
		for _, a := range ann {
			d.p("    %s: %s\n", a[0], jsonString(a[1]))
		}
		d.p("spec:\n  parentRefs:\n  - group: \"\"\n    kind: Service\n    name: %s\n    port: 80  # the Service's port\n  rules:\n", yq(host))
		backend := fmt.Sprintf("backendRefs:\n    - name: %s\n      port: 80\n", yq(host))
		switch n := grpcMethodPath(rt.group); {
		case grpc && n != nil:
			d.p("  - matches:\n    - method:\n        service: %s\n        method: %s\n    %s", yq(n.Service), yq(n.Method), backend)
		case grpc:
			d.p("  - %s", backend) // a rule without matches matches every method
		default:
			typ, value, why := gatewayPath(rt.match)
			if why != "" {
				d.note("  %s", why)
			}
			d.p("  - matches:\n    - path:\n        type: %s\n        value: %s\n", typ, yq(value))
			if rt.match.method != "" {
				d.p("      method: %s\n", rt.match.method)
			}
			d.p("    %s", backend)
		}
	}
	_, why := p.clusterConnect()
	d.note("the connect timeout (%s) and the bulkhead have no place in Linkerd's routes", why)
	kubectlSwitchNote(d, "route", cmds, "with no retry.linkerd.io/http, grpc or timeout a route retries nothing, and its retry.linkerd.io/limit, kept, still overrides the Service's retry annotations (a route's retry annotations override all of its parent Service's); the proxies follow the change without a restart, and kubectl apply -f linkerd.yaml restores the retries.")
	return nil
}

// linkerdRetriesOff is the command that removes the retry conditions of a
// route's annotations (the status codes to retry, and retrying an attempt
// that times out), keeping retry.linkerd.io/limit so that the route's
// annotations still override the Service's
// (https://linkerd.io/2/reference/retries/); "" when it has none.
func linkerdRetriesOff(resource, name, ns string, ann [][2]string) string {
	var keys []string
	for _, a := range ann {
		if strings.HasPrefix(a[0], "retry.linkerd.io/") && a[0] != "retry.linkerd.io/limit" {
			keys = append(keys, a[0]+"-")
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf("kubectl annotate -n %s %s/%s %s", ns, resource, name, strings.Join(keys, " "))
}

// linkerdRetries returns a route's retry annotations, noting why.
func linkerdRetries(d *doc, rt route, grpc bool) [][2]string {
	switch {
	case rt.attempts <= 1:
		d.note("  no retry annotations: %s", rt.attemptsWhy)
		return nil
	case rt.neverSentOnly():
		d.note("  no retry annotations: %s, and Linkerd retries on status codes and timeouts, after the request was sent", rt.idempotentWhy)
		return nil
	}
	var out [][2]string
	var conds, skipped []string
	for _, c := range rt.retryOn {
		switch {
		case c == "timeout":
		case grpc && (c == "connect-failure" || c == "refused-stream" || c == "502" || c == "503" || c == "504"):
			conds = appendNew(conds, "unavailable")
		case grpc && c == "429":
			conds = appendNew(conds, "resource-exhausted")
		case !grpc && isStatus(c):
			// Any status from 100 to 599, 408 and 429 included:
			// linkerd2 policy-controller/k8s/index/src/outbound/index/
			// http.rs, parse_http_retry, takes a comma-separated list of
			// statuses, ranges (500-504), 5xx and gateway-error.
			conds = appendNew(conds, c)
		default:
			skipped = append(skipped, c)
		}
	}
	if len(conds) == 0 && !rt.retriesOn("timeout") {
		d.note("  no retry annotations: Linkerd cannot retry on %s", strings.Join(rt.retryOn, ", "))
		return nil
	}
	key := "retry.linkerd.io/http"
	if grpc {
		key = "retry.linkerd.io/grpc"
	}
	if len(conds) > 0 {
		out = append(out, [2]string{key, strings.Join(conds, ",")})
		d.note("  %s %s from %s", key, strings.Join(conds, ","), strings.Join(rt.retryOn, ", "))
	}
	if len(skipped) > 0 {
		d.note("  not expressible in %s, left out: %s", key, strings.Join(skipped, ", "))
	}
	out = append(out, [2]string{"retry.linkerd.io/limit", strconv.Itoa(rt.retries())})
	d.note("  retry.linkerd.io/limit %d = %s, less the first", rt.retries(), rt.attemptsWhy)
	if rt.retriesOn("timeout") {
		out = append(out, [2]string{"retry.linkerd.io/timeout", unitDur(rt.perTry)})
		d.note("  retry.linkerd.io/timeout %s: %s", unitDur(rt.perTry), rt.perTryWhy)
		d.note("  %s", rt.hangText(true))
	} else {
		d.note("  no per-attempt timeout: Linkerd retries an attempt that reaches retry.linkerd.io/timeout, and timeouts are not retried here")
	}
	return out
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// grpcGroups reports whether every measured group looks like a gRPC
// method, "/package.Service/Method": a path of two segments is one only
// when its service is qualified by a package or its method is capitalized,
// as protobuf names are (so "/api/orders" stays an HTTP path).
func grpcGroups(p *plan) bool {
	for _, rt := range p.groupRoutes() {
		n := grpcMethodPath(rt.group)
		if n == nil || !(strings.Contains(n.Service, ".") || unicode.IsUpper(rune(n.Method[0]))) {
			return false
		}
	}
	return true
}

// renderServiceProfile writes the legacy ServiceProfile (linkerd.io/v1alpha2):
// one route per group with its timeout and whether it is retryable, and the
// retry budget.
func renderServiceProfile(p *plan, d *doc, host, ns string) error {
	// A ServiceProfile is named after the service's FQDN.
	name := host + "." + ns + ".svc.cluster.local"
	d.note("Linkerd ServiceProfile for %q, written by tunetimeout from measured latency, for meshes older than 2.16 (newer ones configure routes with annotations).", name)
	d.note("A route's timeout covers the whole request, retries included; Linkerd retries a retryable route as long as the budget allows (there is no retry count or per-try timeout).")
	d.p("apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  routes:\n", yq(name), yq(ns))
	p.noteUnroutable(d, "a ServiceProfile route")
	names := newUnique(" ")
	retryable := false
	var off []jsonPatchOp
	for i, rt := range p.pathRoutes() {
		rn := names.name(routeName(rt.group))
		d.note("route %q (%s):", rn, rt.describe())
		d.note("  timeout %s: %s", rt.timeout, rt.timeoutWhy)
		d.p("  - name: %s\n    condition:\n", yq(rn))
		if rt.match.method != "" {
			d.p("      method: %s\n", rt.match.method)
		}
		if re := linkerdPathRegex(rt.match); re != "" {
			d.p("      pathRegex: %s\n", yq(re))
		}
		retry := rt.attempts > 1 && !rt.neverSentOnly()
		retryable = retryable || retry
		if retry {
			off = append(off, jsonPatchOp{"replace", fmt.Sprintf("/spec/routes/%d/isRetryable", i), false})
		}
		switch {
		case retry:
			d.note("  isRetryable: %s (the per-try timeout %s cannot be written); a retryable route is retried on 5xx", rt.attemptsWhy, rt.perTry)
		case rt.attempts > 1:
			d.note("  not retryable: %s, and Linkerd retries a retryable route on any 5xx, after the request was sent", rt.idempotentWhy)
		default:
			d.note("  not retryable: %s", rt.attemptsWhy)
		}
		d.p("    isRetryable: %t\n    timeout: %s\n", retry, goDur(rt.timeout))
	}
	switch {
	case p.budget != nil && retryable:
		d.note("retryBudget: retryRatio %s = %s; minRetriesPerSecond %d and ttl %s are Linkerd's defaults", ratio(*p.budget), p.budgetWhy, linkerdMinRetriesPerSecond, linkerdTTL)
		d.p("  retryBudget:\n    retryRatio: %s\n    minRetriesPerSecond: %d\n    ttl: %s\n", ratio(*p.budget), linkerdMinRetriesPerSecond, linkerdTTL)
	case retryable:
		d.note("retryBudget: Linkerd's defaults written out (retryRatio %s, minRetriesPerSecond %d, ttl %s): the report has no retry budget", ratio(linkerdDefaultRatio), linkerdMinRetriesPerSecond, linkerdTTL)
		d.p("  retryBudget:\n    retryRatio: %s\n    minRetriesPerSecond: %d\n    ttl: %s\n", ratio(linkerdDefaultRatio), linkerdMinRetriesPerSecond, linkerdTTL)
	}
	d.note("the connect timeout and the bulkhead have no place in a ServiceProfile")
	var cmds []string
	if len(off) > 0 {
		cmds = append(cmds, kubectlJSONPatch("serviceprofile.linkerd.io", name, ns, off))
	}
	kubectlSwitchNote(d, "route", cmds, "a route that is not retryable is not retried, and the proxies follow the change without a restart; kubectl apply -f linkerd.yaml restores the retries.")
	return nil
}

// goDur is a Go duration: 2.475s, 800ms.
func goDur(d time.Duration) string { return d.String() }

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
