package target

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
)

// Reading the Kubernetes Gateway API (gateway.networking.k8s.io, any
// version): the rules of HTTPRoutes with their timeouts (GEP-1742) and
// retry (GEP-1731; standard channel since v1.7.0), and the rules of
// GRPCRoutes, which have neither. The fields' meaning is that of the doc
// comments of sigs.k8s.io/gateway-api v1.7.0 apis/v1 (HTTPRouteTimeouts,
// HTTPRouteRetry).

// gatewayGroup is the Gateway API's group.
const gatewayGroup = "gateway.networking.k8s.io"

// detectGatewayAPIConfig reports whether a file holds Gateway API
// resources.
func DetectGatewayAPIConfig(_ string, data []byte) bool {
	return KubeDetect(data, gatewayGroup+"/")
}

// readGatewayAPIConfig reads the HTTPRoutes and GRPCRoutes of a manifest
// stream, one object per rule (Kind "HTTPRoute rule", "GRPCRoute rule").
// Gateways, TCP, TLS and UDP routes and policies are left out. The Linkerd
// annotations an HTTPRoute may carry are the linkerd target's to read.
func ReadGatewayAPIConfig(file string, data []byte, _ Opener, b *budget.Budget) ([]Object, error) {
	res, err := KubeObjects(OrNew(b), file, data)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, o := range res {
		if o.Group != gatewayGroup || (o.Kind != "HTTPRoute" && o.Kind != "GRPCRoute") {
			continue
		}
		rules, err := gatewayRules(o)
		if err != nil {
			return nil, err
		}
		ann, err := KubeAnnotations(o, lkAnnotationPrefixes...)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			obj := r.object("gateway-api", o.Kind+" rule")
			if o.Kind == "HTTPRoute" {
				if err := gatewayTimeouts(&obj, o.File, r); err != nil {
					return nil, err
				}
			} else {
				obj.Notes = append(obj.Notes, "a GRPCRoute has no timeouts or retry (GEP-1742 and GEP-1731 cover HTTPRoute): the implementation's defaults apply")
			}
			if linkerdAnnotated(ann) {
				obj.Notes = append(obj.Notes, "Linkerd's timeout and retry annotations on this route are read by the linkerd target")
			}
			out = append(out, obj)
		}
	}
	KubeFinish(out)
	return out, nil
}

// gatewayRule is one rule of an HTTPRoute or GRPCRoute as the Gateway API
// and Linkerd readers see it.
type gatewayRule struct {
	node     *yaml.Node
	where    string // "spec.rules[0]"
	name     string // "ns/route rule[0]", or the rule's name
	pos      Pos
	matches  []Match
	upstream string
	notes    []string
}

// object starts the Object of a rule. The rules of the routes of one file
// that send to one backend compete for a request by the Gateway API's
// precedence (Object.Router).
func (r gatewayRule) object(target, kind string) Object {
	return Object{Target: target, Kind: kind, Name: r.name, Pos: r.pos, Matches: r.matches, Upstream: r.upstream, Notes: append([]string(nil), r.notes...),
		Router: target + " " + r.pos.File + " " + r.upstream}
}

// gatewayRules reads the rules of an HTTPRoute or GRPCRoute (its spec is
// the same in policy.linkerd.io): the matches with the CRD's defaults (a
// rule without matches, or a match without a path, matches PathPrefix
// "/"), spec.hostnames as MatchHost, and the first backendRef as the
// upstream (else the parent Service, as in a mesh).
func gatewayRules(o KubeObject) ([]gatewayRule, error) {
	f := o.File
	spec, err := KubeMapping(f, KubeField(o.Node, "spec"), "spec")
	if err != nil {
		return nil, err
	}
	hostnames, err := KubeStrings(f, KubeField(spec, "hostnames"), "spec.hostnames")
	if err != nil {
		return nil, err
	}
	parent := ""
	parents, err := KubeList(f, KubeField(spec, "parentRefs"), "spec.parentRefs")
	if err != nil {
		return nil, err
	}
	for _, p := range parents {
		if k, _ := KubeScalar(KubeField(p, "kind")); k == "Service" && parent == "" {
			parent, _ = KubeScalar(KubeField(p, "name"))
		}
	}
	rules, err := KubeList(f, KubeField(spec, "rules"), "spec.rules")
	if err != nil {
		return nil, err
	}
	grpc := o.Kind == "GRPCRoute"
	var out []gatewayRule
	for i, rn := range rules {
		r := gatewayRule{node: rn, where: fmt.Sprintf("spec.rules[%d]", i), pos: NodePos(f, rn)}
		if rn.Kind != yaml.MappingNode {
			return nil, ErrorAt(r.pos, "%s: want a mapping, got %s", r.where, KubeWhat(rn))
		}
		name, _, err := KubeString(f, KubeField(rn, "name"), r.where+".name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = fmt.Sprintf("rule[%d]", i)
		}
		r.name = strings.TrimSpace(o.Qualified() + " " + name)
		if err := o.Budget.Nodes(int64(len(hostnames)), "hostnames repeated in the rules of routes"); err != nil {
			return nil, ErrorAt(r.pos, "%w", err)
		}
		for _, h := range hostnames {
			r.matches = KubeAppendMatch(r.matches, Match{Kind: MatchHost, Value: h})
		}
		if grpc {
			err = gatewayGRPCMatches(&r, f)
		} else {
			err = gatewayHTTPMatches(&r, f)
		}
		if err != nil {
			return nil, err
		}
		refs, err := KubeList(f, KubeField(rn, "backendRefs"), r.where+".backendRefs")
		if err != nil {
			return nil, err
		}
		for _, b := range refs {
			if n, ok := KubeScalar(KubeField(b, "name")); ok {
				r.upstream = n
				break
			}
		}
		if len(refs) > 1 {
			r.notes = append(r.notes, fmt.Sprintf("%d weighted backends; the first, %s, is its upstream", len(refs), r.upstream))
		}
		if r.upstream == "" {
			r.upstream = parent
		}
		out = append(out, r)
	}
	return out, nil
}

// gatewayHTTPMatches reads an HTTPRoute rule's matches: the path (type
// PathPrefix unless said, value "/" unless said) and the method; headers
// and query parameters are noted, not modeled.
func gatewayHTTPMatches(r *gatewayRule, f string) error {
	ms, err := KubeList(f, KubeField(r.node, "matches"), r.where+".matches")
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		r.matches = KubeAppendMatch(r.matches, Match{Kind: MatchPrefix, Value: "/"})
		return nil
	}
	var other []string
	methods := 0
	for j, m := range ms {
		mw := fmt.Sprintf("%s.matches[%d]", r.where, j)
		if _, err := KubeMapping(f, m, mw); err != nil {
			return err
		}
		p, err := KubeMapping(f, KubeField(m, "path"), mw+".path")
		if err != nil {
			return err
		}
		typ, _, err := KubeString(f, KubeField(p, "type"), mw+".path.type")
		if err != nil {
			return err
		}
		value, ok, err := KubeString(f, KubeField(p, "value"), mw+".path.value")
		if err != nil {
			return err
		}
		if !ok {
			value = "/"
		}
		var kind string
		switch typ {
		case "", "PathPrefix":
			kind = MatchPrefix
		case "Exact":
			kind = MatchExact
		case "RegularExpression":
			kind = MatchRegex
		default:
			return ErrorAt(NodePos(f, KubeField(p, "type")), "%s.path.type %q: want PathPrefix, Exact or RegularExpression", mw, typ)
		}
		r.matches = KubeAppendMatch(r.matches, Match{Kind: kind, Value: value})
		method, ok, err := KubeString(f, KubeField(m, "method"), mw+".method")
		if err != nil {
			return err
		}
		if ok {
			if !HTTPMethods[method] {
				return ErrorAt(NodePos(f, KubeField(m, "method")), "%s.method %q: not an HTTP method the CRD takes (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH)", mw, method)
			}
			r.matches = KubeAppendMatch(r.matches, Match{Kind: MatchMethod, Value: method})
			methods++
		}
		for _, k := range KubeKeys(m) {
			if k != "path" && k != "method" {
				other = append(other, k)
			}
		}
	}
	if len(other) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("matches on %s are not modeled: the rule applies to fewer requests than its paths and methods say", strings.Join(other, ", ")))
	}
	if len(ms) > 1 && methods > 0 {
		r.notes = append(r.notes, "several matches, each a path AND a method: read as any of the paths with any of the methods")
	}
	return nil
}

// gatewayGRPCMatches reads a GRPCRoute rule's method matches: an Exact
// service and method is MatchMethod "service/method", a service alone
// "service"; a method of any service and regular expressions are noted.
func gatewayGRPCMatches(r *gatewayRule, f string) error {
	ms, err := KubeList(f, KubeField(r.node, "matches"), r.where+".matches")
	if err != nil {
		return err
	}
	var other []string
	for j, m := range ms {
		mw := fmt.Sprintf("%s.matches[%d]", r.where, j)
		if _, err := KubeMapping(f, m, mw); err != nil {
			return err
		}
		mm, err := KubeMapping(f, KubeField(m, "method"), mw+".method")
		if err != nil {
			return err
		}
		if mm != nil {
			typ, _ := KubeScalar(KubeField(mm, "type"))
			svc, _ := KubeScalar(KubeField(mm, "service"))
			method, _ := KubeScalar(KubeField(mm, "method"))
			switch {
			case typ != "" && typ != "Exact":
				other = append(other, fmt.Sprintf("method type %s (%s/%s)", typ, svc, method))
			case svc != "" && method != "":
				r.matches = KubeAppendMatch(r.matches, Match{Kind: MatchMethod, Value: svc + "/" + method})
			case svc != "":
				r.matches = KubeAppendMatch(r.matches, Match{Kind: MatchMethod, Value: svc})
			case method != "":
				other = append(other, "method "+method+" of any service")
			default:
				return ErrorAt(NodePos(f, mm), "%s.method: neither service nor method (the CRD requires one)", mw)
			}
		}
		for _, k := range KubeKeys(m) {
			if k != "method" {
				other = append(other, k)
			}
		}
	}
	if len(other) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("matches on %s are not modeled: the rule applies to fewer requests than its methods say", strings.Join(other, ", ")))
	}
	return nil
}

// gatewayTimeouts reads an HTTPRoute rule's timeouts and retry.
// timeouts.request bounds the whole request, retries included, and
// timeouts.backendRequest one request to the backend; "0s" disables either
// (HTTPRouteTimeouts); unspecified, the behaviour is the implementation's.
// retry.attempts counts the retries ("the maximum number of times an
// individual request from the gateway to a backend should be retried").
func gatewayTimeouts(obj *Object, f string, r gatewayRule) error {
	tw := r.where + ".timeouts"
	t, err := KubeMapping(f, KubeField(r.node, "timeouts"), tw)
	if err != nil {
		return err
	}
	req, err := gatewayDurationSetting(f, KubeField(t, "request"), tw+".request")
	if err != nil {
		return err
	}
	back, err := gatewayDurationSetting(f, KubeField(t, "backendRequest"), tw+".backendRequest")
	if err != nil {
		return err
	}
	obj.Timeout, obj.PerTryTimeout = req, back
	if req != nil && back != nil && req.Value != 0 && back.Value > req.Value {
		return ErrorAt(back.Pos, "%s.backendRequest %s is longer than request %s: the CRD refuses it (\"backendRequest timeout cannot be longer than request timeout\")", tw, back.Raw, req.Raw)
	}
	if req == nil {
		obj.Notes = append(obj.Notes, "no timeouts.request: the request timeout is the implementation's (GEP-1742)")
	}
	rw := r.where + ".retry"
	rt, err := KubeMapping(f, KubeField(r.node, "retry"), rw)
	if rt == nil || err != nil {
		return err
	}
	obj.Notes = append(obj.Notes, "retry is a standard-channel field since Gateway API v1.7.0 (experimental before): an older standard-channel CRD drops it without a word")
	an := KubeField(rt, "attempts")
	n, raw, ok, err := KubeInt(f, an, rw+".attempts", 32)
	switch {
	case err != nil:
		return err
	case ok && n < 0:
		return ErrorAt(NodePos(f, an), "%s.attempts %s: the CRD's minimum is 0", rw, raw)
	case ok && n == 0:
		// "An explicit zero value MUST disable retries" (v1.7.0).
		obj.Attempts = Set(1, NodePos(f, an), raw)
		obj.Notes = append(obj.Notes, "retries disabled: attempts is 0 (Gateway API v1.7.0; an older experimental-channel CRD refuses it, its minimum was 1)")
		return nil
	case ok:
		obj.Attempts = Set(int(n)+1, NodePos(f, an), raw)
		obj.RetryNonIdempotent = KubeRetrySetting(KubeRetriesNonIdempotent(obj.Matches), obj.Attempts)
	default:
		obj.Notes = append(obj.Notes, "retry without attempts: the v1.7.0 CRD defaults it to 1 retry; with older CRDs how often is the implementation's")
	}
	if cn := KubeField(rt, "codes"); cn != nil {
		items, err := KubeList(f, cn, rw+".codes")
		if err != nil {
			return err
		}
		var codes []string
		for j, it := range items {
			c, raw, _, err := KubeInt(f, it, fmt.Sprintf("%s.codes[%d]", rw, j), 32)
			if err != nil {
				return err
			}
			if c < 400 || c > 599 {
				return ErrorAt(NodePos(f, it), "%s.codes[%d] %s: the CRD takes 400 to 599", rw, j, raw)
			}
			codes = append(codes, strconv.Itoa(int(c)))
		}
		obj.RetryOn = Set(codes, NodePos(f, cn), strings.Join(codes, ","))
	}
	obj.Notes = append(obj.Notes, "HTTPRouteRetry (v1.7.0): implementations SHOULD also retry a connection that could not be made and a request refused before processing, and an attempt that reaches backendRequest is retried")
	if b, err := gatewayDurationSetting(f, KubeField(rt, "backoff"), rw+".backoff"); err != nil {
		return err
	} else if b != nil {
		obj.BackoffBase = b
		obj.Notes = append(obj.Notes, "retry.backoff is a minimum: the implementation may grow, cap and jitter it")
	}
	return nil
}

// gatewayDurationSetting reads a Gateway API duration into a setting in
// seconds; nil when absent.
func gatewayDurationSetting(f string, n *yaml.Node, what string) (*Setting[float64], error) {
	raw, ok, err := KubeString(f, n, what)
	if !ok || err != nil {
		return nil, err
	}
	d, err := GEPDuration(raw)
	if err != nil {
		return nil, ErrorAt(NodePos(f, n), "%s %v", what, err)
	}
	return Set(d.Seconds(), NodePos(f, n), raw), nil
}
