// Package linkerd is the config target of Linkerd: HTTPRoute, GRPCRoute or ServiceProfile with Linkerd's
// timeout and retry annotations, and their reading for check.
package linkerd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	"github.com/tunetimeout/tunetimeout/target"
)

// Target writes Linkerd's routes with the timeout and retry
// annotations of Linkerd 2.16 and later: an HTTPRoute (policy.linkerd.io)
// per group, or a GRPCRoute when the groups are gRPC methods, each attached
// to the Service; a ServiceProfile for older meshes on request.
var Target = target.Target{
	Name:       "linkerd",
	File:       "linkerd.yaml",
	Summary:    "Linkerd 2.16+ HTTPRoute or GRPCRoute per group with timeout.linkerd.io and retry.linkerd.io annotations (ServiceProfile on request)",
	Language:   "yaml",
	Comment:    "#",
	Write:      renderLinkerd,
	Reader:     ReadConfig,
	Detect:     Detect,
	Duration:   target.UnitDur,
	Precedence: target.RouteRules,
}

// Linkerd's defaults for the ServiceProfile budget fields the report does
// not set.
const (
	linkerdMinRetriesPerSecond = 10
	linkerdTTL                 = "10s"
	linkerdDefaultRatio        = 0.2
)

func renderLinkerd(p *target.Plan, d *target.Doc) error {
	ns := target.DNSLabel(p.Namespace, 63)
	if ns == "" {
		ns = "default"
	}
	host := target.DNSLabel(p.Service, 63)
	if host == "" {
		host = target.DefaultService
	}
	kind := p.Opts.LinkerdResource
	if kind == "" || kind == target.LinkerdAuto {
		kind = target.LinkerdHTTPRoute
		if grpcGroups(p) {
			kind = target.LinkerdGRPCRoute
		}
	}
	if kind == target.LinkerdServiceProfile {
		return renderServiceProfile(p, d, host, ns)
	}
	grpc := kind == target.LinkerdGRPCRoute
	what := "HTTPRoute (policy.linkerd.io/v1beta3)"
	if grpc {
		what = "GRPCRoute (gateway.networking.k8s.io/v1)"
	}
	d.Note("Linkerd %s per group for Service %q, written by tunetimeout from measured latency, with the annotations of Linkerd 2.16 and later.", what, host)
	p.NoRetryAfter(d, "Linkerd (25-250ms between attempts)")
	d.Note("timeout.linkerd.io/request bounds the whole request, retries included; retry.linkerd.io/timeout bounds one attempt and retries it; retry.linkerd.io/limit counts the retries after the first. Durations are one number and a unit (800ms, 2500ms).")
	d.Note("Linkerd waits 25ms to 250ms, full jitter, between attempts (not configurable), never retries a request whose body is over 64KiB, and has no retry budget in this model.")
	d.Note("A ServiceProfile for the same Service takes precedence over these annotations: remove it, or use %s serviceprofile. Requests matching no route get a 404, hence the catch-all.", usage.LinkerdResource)
	p.NoteUnroutable(d, "a Linkerd route")
	names := target.NewUnique("-")
	resource := "httproute.policy.linkerd.io"
	if grpc {
		resource = "grpcroute.gateway.networking.k8s.io"
	}
	var cmds []string
	for i, rt := range p.PathRoutes() {
		if i > 0 {
			d.Printf("---\n")
		}
		name := host
		if g := target.DNSLabel(rt.Group, 40); g != "" {
			name += "-" + g
		}
		if rt.Match.CatchAll {
			name = host + "-all"
		}
		name = names.Name(name)
		d.Note("route %s (group %q, %s):", name, rt.Group, rt.Describe())
		ann := [][2]string{{"timeout.linkerd.io/request", target.UnitDur(rt.Timeout)}}
		d.Note("  timeout.linkerd.io/request %s: %s", target.UnitDur(rt.Timeout), rt.TimeoutWhy)
		ann = append(ann, linkerdRetries(d, rt, grpc)...)
		if c := linkerdRetriesOff(resource, name, ns, ann); c != "" {
			cmds = append(cmds, c)
		}
		if rt.Hedge != nil {
			d.Note("  no hedging: Linkerd cannot express it")
		}
		api, k := "policy.linkerd.io/v1beta3", "HTTPRoute"
		if grpc {
			api, k = "gateway.networking.k8s.io/v1", "GRPCRoute"
		}
		d.Printf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n", api, k, target.YQ(name), target.YQ(ns))
		for _, a := range ann {
			d.Printf("    %s: %s\n", a[0], target.JSONString(a[1]))
		}
		d.Printf("spec:\n  parentRefs:\n  - group: \"\"\n    kind: Service\n    name: %s\n    port: 80  # the Service's port\n  rules:\n", target.YQ(host))
		backend := fmt.Sprintf("backendRefs:\n    - name: %s\n      port: 80\n", target.YQ(host))
		switch n := target.GRPCMethodPath(rt.Group); {
		case grpc && n != nil:
			d.Printf("  - matches:\n    - method:\n        service: %s\n        method: %s\n    %s", target.YQ(n.Service), target.YQ(n.Method), backend)
		case grpc:
			d.Printf("  - %s", backend) // a rule without matches matches every method
		default:
			typ, value, why := target.GatewayPath(rt.Match)
			if why != "" {
				d.Note("  %s", why)
			}
			d.Printf("  - matches:\n    - path:\n        type: %s\n        value: %s\n", typ, target.YQ(value))
			if rt.Match.Method != "" {
				d.Printf("      method: %s\n", rt.Match.Method)
			}
			d.Printf("    %s", backend)
		}
	}
	_, why := p.ClusterConnect()
	d.Note("the connect timeout (%s) and the bulkhead have no place in Linkerd's routes", why)
	target.KubectlSwitchNote(d, "route", cmds, "with no retry.linkerd.io/http, grpc or timeout a route retries nothing, and its retry.linkerd.io/limit, kept, still overrides the Service's retry annotations (a route's retry annotations override all of its parent Service's); the proxies follow the change without a restart, and kubectl apply -f linkerd.yaml restores the retries.")
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
func linkerdRetries(d *target.Doc, rt target.Route, grpc bool) [][2]string {
	switch {
	case rt.Attempts <= 1:
		d.Note("  no retry annotations: %s", rt.AttemptsWhy)
		return nil
	case rt.NeverSentOnly():
		d.Note("  no retry annotations: %s, and Linkerd retries on status codes and timeouts, after the request was sent", rt.IdempotentWhy)
		return nil
	}
	var out [][2]string
	var conds, skipped []string
	for _, c := range rt.RetryOn {
		switch {
		case c == "timeout":
		case grpc && (c == "connect-failure" || c == "refused-stream" || c == "502" || c == "503" || c == "504"):
			conds = appendNew(conds, "unavailable")
		case grpc && c == "429":
			conds = appendNew(conds, "resource-exhausted")
		case !grpc && target.IsStatus(c):
			// Any status from 100 to 599, 408 and 429 included:
			// linkerd2 policy-controller/k8s/index/src/outbound/index/
			// http.rs, parse_http_retry, takes a comma-separated list of
			// statuses, ranges (500-504), 5xx and gateway-error.
			conds = appendNew(conds, c)
		default:
			skipped = append(skipped, c)
		}
	}
	if len(conds) == 0 && !rt.RetriesOn("timeout") {
		d.Note("  no retry annotations: Linkerd cannot retry on %s", strings.Join(rt.RetryOn, ", "))
		return nil
	}
	key := "retry.linkerd.io/http"
	if grpc {
		key = "retry.linkerd.io/grpc"
	}
	if len(conds) > 0 {
		out = append(out, [2]string{key, strings.Join(conds, ",")})
		d.Note("  %s %s from %s", key, strings.Join(conds, ","), strings.Join(rt.RetryOn, ", "))
	}
	if len(skipped) > 0 {
		d.Note("  not expressible in %s, left out: %s", key, strings.Join(skipped, ", "))
	}
	out = append(out, [2]string{"retry.linkerd.io/limit", strconv.Itoa(rt.Retries())})
	d.Note("  retry.linkerd.io/limit %d = %s, less the first", rt.Retries(), rt.AttemptsWhy)
	if rt.RetriesOn("timeout") {
		out = append(out, [2]string{"retry.linkerd.io/timeout", target.UnitDur(rt.PerTry)})
		d.Note("  retry.linkerd.io/timeout %s: %s", target.UnitDur(rt.PerTry), rt.PerTryWhy)
		d.Note("  %s", rt.HangText(true))
	} else {
		d.Note("  no per-attempt timeout: Linkerd retries an attempt that reaches retry.linkerd.io/timeout, and timeouts are not retried here")
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
func grpcGroups(p *target.Plan) bool {
	for _, rt := range p.GroupRoutes() {
		n := target.GRPCMethodPath(rt.Group)
		if n == nil || !(strings.Contains(n.Service, ".") || unicode.IsUpper(rune(n.Method[0]))) {
			return false
		}
	}
	return true
}

// renderServiceProfile writes the legacy ServiceProfile (linkerd.io/v1alpha2):
// one route per group with its timeout and whether it is retryable, and the
// retry budget.
func renderServiceProfile(p *target.Plan, d *target.Doc, host, ns string) error {
	// A ServiceProfile is named after the service's FQDN.
	name := host + "." + ns + ".svc.cluster.local"
	d.Note("Linkerd ServiceProfile for %q, written by tunetimeout from measured latency, for meshes older than 2.16 (newer ones configure routes with annotations).", name)
	d.Note("A route's timeout covers the whole request, retries included; Linkerd retries a retryable route as long as the budget allows (there is no retry count or per-try timeout).")
	d.Printf("apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  routes:\n", target.YQ(name), target.YQ(ns))
	p.NoteUnroutable(d, "a ServiceProfile route")
	names := target.NewUnique(" ")
	retryable := false
	var off []target.JSONPatchOp
	for i, rt := range p.PathRoutes() {
		rn := names.Name(target.RouteName(rt.Group))
		d.Note("route %q (%s):", rn, rt.Describe())
		d.Note("  timeout %s: %s", rt.Timeout, rt.TimeoutWhy)
		d.Printf("  - name: %s\n    condition:\n", target.YQ(rn))
		if rt.Match.Method != "" {
			d.Printf("      method: %s\n", rt.Match.Method)
		}
		if re := linkerdPathRegex(rt.Match); re != "" {
			d.Printf("      pathRegex: %s\n", target.YQ(re))
		}
		retry := rt.Attempts > 1 && !rt.NeverSentOnly()
		retryable = retryable || retry
		if retry {
			off = append(off, target.JSONPatchOp{Op: "replace", Path: fmt.Sprintf("/spec/routes/%d/isRetryable", i), Value: false})
		}
		switch {
		case retry:
			d.Note("  isRetryable: %s (the per-try timeout %s cannot be written); a retryable route is retried on 5xx", rt.AttemptsWhy, rt.PerTry)
		case rt.Attempts > 1:
			d.Note("  not retryable: %s, and Linkerd retries a retryable route on any 5xx, after the request was sent", rt.IdempotentWhy)
		default:
			d.Note("  not retryable: %s", rt.AttemptsWhy)
		}
		d.Printf("    isRetryable: %t\n    timeout: %s\n", retry, goDur(rt.Timeout))
	}
	switch {
	case p.Budget != nil && retryable:
		d.Note("retryBudget: retryRatio %s = %s; minRetriesPerSecond %d and ttl %s are Linkerd's defaults", target.Ratio(*p.Budget), p.BudgetWhy, linkerdMinRetriesPerSecond, linkerdTTL)
		d.Printf("  retryBudget:\n    retryRatio: %s\n    minRetriesPerSecond: %d\n    ttl: %s\n", target.Ratio(*p.Budget), linkerdMinRetriesPerSecond, linkerdTTL)
	case retryable:
		d.Note("retryBudget: Linkerd's defaults written out (retryRatio %s, minRetriesPerSecond %d, ttl %s): the report has no retry budget", target.Ratio(linkerdDefaultRatio), linkerdMinRetriesPerSecond, linkerdTTL)
		d.Printf("  retryBudget:\n    retryRatio: %s\n    minRetriesPerSecond: %d\n    ttl: %s\n", target.Ratio(linkerdDefaultRatio), linkerdMinRetriesPerSecond, linkerdTTL)
	}
	d.Note("the connect timeout and the bulkhead have no place in a ServiceProfile")
	var cmds []string
	if len(off) > 0 {
		cmds = append(cmds, target.KubectlJSONPatch("serviceprofile.linkerd.io", name, ns, off))
	}
	target.KubectlSwitchNote(d, "route", cmds, "a route that is not retryable is not retried, and the proxies follow the change without a restart; kubectl apply -f linkerd.yaml restores the retries.")
	return nil
}

// goDur is a Go duration: 2.475s, 800ms.
func goDur(d time.Duration) string { return d.String() }

// linkerdPathRegex is the route's path as Linkerd's pathRegex, which must
// match the whole path (it is anchored by Linkerd): no ^ and $.
func linkerdPathRegex(m target.PathMatch) string {
	switch {
	case m.Regex != "":
		return strings.TrimSuffix(strings.TrimPrefix(m.Regex, "^"), "$")
	case m.Exact != "":
		return regexp.QuoteMeta(m.Exact)
	case m.Method == "":
		return "/.*"
	}
	return ""
}
