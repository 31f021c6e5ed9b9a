package istio

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/kube"
)

// Reading Istio: the HTTP routes of VirtualServices (networking.istio.io,
// any version) with their timeout and retries, and DestinationRules with
// their connection pool, retry budget and subsets. Istio's defaults are
// those of istio.io/api v1.32 (networking/v1alpha3/*.proto) and of pilot's
// pilot/pkg/networking/core/route/retry/retry.go, which turns an HTTPRetry
// into Envoy's retry policy.

// Istio's defaults.
const (
	// istioDefaultRetries: HTTPRoute.retries, "the default cluster-wide
	// retry policy, if not specified, is attempts: 2" (retries beyond the
	// first call: pilot's DefaultPolicy sets Envoy's num_retries 2).
	istioDefaultRetries = 2
	// istioDefaultBackoff: HTTPRetry.backoff, "If unset, default minimum
	// duration of 25ms is used as base interval for exponential backoff";
	// Envoy caps it at 10 times the base and jitters it fully.
	istioDefaultBackoff = 25 * time.Millisecond
	// istioDefaultConnect: ConnectionPoolSettings.TCPSettings.connect_timeout,
	// "Default is 10s".
	istioDefaultConnect = 10 * time.Second
	// istioUnlimited: http2_max_requests, http1_max_pending_requests,
	// max_connections and max_retries all "Default 2^32-1"; 0 (proto3's
	// unset) means the default.
	istioUnlimited = 1<<32 - 1
	// istioDefaultBudget: TrafficPolicy.RetryBudget.percent, "Defaults to 20%".
	istioDefaultBudget = 0.2
)

// istioDefaultRetryOn is what Istio retries when a route sets no retryOn:
// the API documents "connect-failure,refused-stream,unavailable,cancelled";
// pilot's defaultPolicy adds retriable-status-codes with 503 (unless
// istiod runs with EXCLUDE_503_FROM_DEFAULT_RETRIES), which Istio's retryOn
// writes as a bare status code.
var istioDefaultRetryOn = []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "503"}

// istioRetryOnPolicies are the retryOn policies Istio's validation takes
// besides status codes (pkg/config/validation supportedRetryOnPolicies:
// Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on).
var istioRetryOnPolicies = map[string]bool{
	"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true, "connect-failure": true,
	"envoy-ratelimited": true, "retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true,
	"retriable-headers": true, "http3-post-connect-failure": true, "cancelled": true, "deadline-exceeded": true,
	"internal": true, "resource-exhausted": true, "unavailable": true,
}

// istioGroup is the API group of Istio's traffic resources.
const istioGroup = "networking.istio.io"

// Detect reports whether a file holds Istio resources.
func Detect(_ string, data []byte) bool {
	return kube.Detect(data, istioGroup+"/")
}

// ReadConfig reads the VirtualServices and DestinationRules of a
// manifest stream: one object per HTTP route of a VirtualService (Kind
// "VirtualService route"), one per DestinationRule and per subset with a
// traffic policy of its own (Kind "DestinationRule"). Other resources,
// Istio's Gateways and the tcp and tls routes included, are left out: they
// carry no request timeout or retries.
func ReadConfig(file string, data []byte, _ target.Opener, b *budget.Budget) ([]target.Object, error) {
	res, err := kube.Objects(target.OrNew(b), file, data)
	if err != nil {
		return nil, err
	}
	var out []target.Object
	for _, o := range res {
		if o.Group != istioGroup {
			continue
		}
		switch o.Kind {
		case "VirtualService":
			out, err = istioVirtualService(out, o)
		case "DestinationRule":
			out, err = istioDestinationRule(out, o)
		}
		if err != nil {
			return nil, err
		}
	}
	kube.Finish(out)
	return out, nil
}

// istioVirtualService appends the HTTP routes of a VirtualService.
func istioVirtualService(out []target.Object, o kube.Object) ([]target.Object, error) {
	f := o.File
	spec, err := kube.Mapping(f, kube.Field(o.Node, "spec"), "spec")
	if err != nil {
		return nil, err
	}
	hosts, err := kube.Strings(f, kube.Field(spec, "hosts"), "spec.hosts")
	if err != nil {
		return nil, err
	}
	gateways, err := kube.Strings(f, kube.Field(spec, "gateways"), "spec.gateways")
	if err != nil {
		return nil, err
	}
	routes, err := kube.List(f, kube.Field(spec, "http"), "spec.http")
	if err != nil {
		return nil, err
	}
	for i, h := range routes {
		where := fmt.Sprintf("spec.http[%d]", i)
		if h.Kind != yaml.MappingNode {
			return nil, target.ErrorAt(target.NodePos(f, h), "%s: want a mapping, got %s", where, kube.What(h))
		}
		obj := target.Object{Target: "istio", Kind: "VirtualService route", Pos: target.NodePos(f, h), Router: "istio " + o.Qualified()}
		name, _, err := kube.String(f, kube.Field(h, "name"), where+".name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = fmt.Sprintf("http[%d]", i)
		}
		obj.Name = strings.TrimSpace(o.Qualified() + " " + name)
		if err := o.Budget.Nodes(int64(len(hosts)), "hosts repeated in the routes of VirtualServices"); err != nil {
			return nil, target.ErrorAt(obj.Pos, "%w", err)
		}
		for _, host := range hosts {
			obj.Matches = kube.AppendMatch(obj.Matches, target.Match{Kind: target.MatchHost, Value: host})
		}
		if len(gateways) > 0 && !(len(gateways) == 1 && gateways[0] == "mesh") {
			obj.Notes = append(obj.Notes, fmt.Sprintf("applies at the gateways %s, not only between sidecars", strings.Join(gateways, ", ")))
		}
		if err := istioMatches(&obj, f, kube.Field(h, "match"), where); err != nil {
			return nil, err
		}
		if err := istioUpstream(&obj, f, h, where); err != nil {
			return nil, err
		}
		if t := kube.Field(h, "timeout"); t != nil {
			d, raw, err := istioDuration(f, t, where+".timeout")
			if err != nil {
				return nil, err
			}
			obj.Timeout = target.Set(d.Seconds(), target.NodePos(f, t), raw)
		} else {
			obj.Timeout = target.Defaulted(0.0, obj.Pos)
			obj.Notes = append(obj.Notes, "no timeout: Istio's route timeout is disabled by default (HTTPRoute.timeout), so only the caller's own deadline bounds the request")
		}
		if err := istioRetries(&obj, f, kube.Field(h, "retries"), where); err != nil {
			return nil, err
		}
		if kube.Field(h, "fault") != nil {
			obj.Notes = append(obj.Notes, "fault injection on this route: Istio enables no timeout or retries on the client side when faults are (HTTPRoute.fault)")
		}
		if d := kube.Field(h, "delegate"); d != nil {
			dn, _ := kube.Scalar(kube.Field(d, "name"))
			obj.Notes = append(obj.Notes, fmt.Sprintf("delegates to VirtualService %q, whose routes take the requests", dn))
		}
		out = append(out, obj)
	}
	return out, nil
}

// istioMatches reads an HTTP route's match blocks: the uri as a path
// prefix, exact path or regex (ignoreUriCase: case-insensitive), the
// method when it is an exact one. Each block is a condition of its own,
// and the object's matches say "any of these": a route that pairs
// different paths with different methods applies, as read, to more
// requests than it does.
func istioMatches(obj *target.Object, f string, n *yaml.Node, where string) error {
	blocks, err := kube.List(f, n, where+".match")
	if err != nil {
		return err
	}
	var other []string
	methods := 0
	for j, b := range blocks {
		bw := fmt.Sprintf("%s.match[%d]", where, j)
		if _, err := kube.Mapping(f, b, bw); err != nil {
			return err
		}
		ci, _, _, err := kube.Bool(f, kube.Field(b, "ignoreUriCase"), bw+".ignoreUriCase")
		if err != nil {
			return err
		}
		for _, key := range kube.Keys(b) {
			switch key {
			case "uri":
				m, err := istioStringMatch(f, kube.Field(b, key), bw+".uri")
				if err != nil {
					return err
				}
				if m != nil {
					m.CaseInsensitive = ci
					obj.Matches = kube.AppendMatch(obj.Matches, *m)
				}
			case "method":
				m, err := istioStringMatch(f, kube.Field(b, key), bw+".method")
				if err != nil {
					return err
				}
				if m != nil && m.Kind == target.MatchExact {
					obj.Matches = kube.AppendMatch(obj.Matches, target.Match{Kind: target.MatchMethod, Value: m.Value})
					methods++
				} else if m != nil {
					other = append(other, "method "+m.Kind+" "+strconv.Quote(m.Value))
				}
			case "ignoreUriCase", "name":
			default:
				other = append(other, key)
			}
		}
	}
	if len(other) > 0 {
		obj.Notes = append(obj.Notes, fmt.Sprintf("matches on %s are not modeled: the route applies to fewer requests than its paths and methods say", strings.Join(other, ", ")))
	}
	if len(blocks) > 1 && methods > 0 {
		obj.Notes = append(obj.Notes, "several match blocks, each a path AND a method: read as any of the paths with any of the methods")
	}
	return nil
}

// istioStringMatch reads an Istio StringMatch: exactly one of exact,
// prefix and regex. The Match's Kind is MatchExact, MatchPrefix or
// MatchRegex.
func istioStringMatch(f string, n *yaml.Node, where string) (*target.Match, error) {
	if _, err := kube.Mapping(f, n, where); err != nil || n == nil {
		return nil, err
	}
	var m *target.Match
	for _, k := range []struct{ key, kind string }{{"exact", target.MatchExact}, {"prefix", target.MatchPrefix}, {"regex", target.MatchRegex}} {
		v, ok, err := kube.String(f, kube.Field(n, k.key), where+"."+k.key)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if m != nil {
			return nil, target.ErrorAt(target.NodePos(f, n), "%s: %s and %s both set; Istio takes one of exact, prefix and regex", where, m.Kind, k.key)
		}
		m = &target.Match{Kind: k.kind, Value: v}
	}
	return m, nil
}

// istioUpstream is the route's first destination host.
func istioUpstream(obj *target.Object, f string, h *yaml.Node, where string) error {
	dests, err := kube.List(f, kube.Field(h, "route"), where+".route")
	if err != nil {
		return err
	}
	for j, d := range dests {
		host, ok, err := kube.String(f, kube.Path(d, "destination", "host"), fmt.Sprintf("%s.route[%d].destination.host", where, j))
		if err != nil {
			return err
		}
		if ok && obj.Upstream == "" {
			obj.Upstream = host
		}
	}
	if len(dests) > 1 {
		obj.Notes = append(obj.Notes, fmt.Sprintf("%d weighted destinations; the first, %s, is its upstream", len(dests), obj.Upstream))
	}
	return nil
}

// istioRetries reads a route's retries, or Istio's default policy when
// there are none. attempts counts the retries after the first call
// (HTTPRetry.attempts: "The maximum possible number of requests made will
// be 1 + attempts"), and 0 disables them.
func istioRetries(obj *target.Object, f string, r *yaml.Node, where string) error {
	defaultBackoff := func(pos target.Pos) {
		obj.BackoffBase = target.Defaulted(istioDefaultBackoff.Seconds(), pos)
		obj.BackoffMax = target.Defaulted(10*istioDefaultBackoff.Seconds(), pos)
	}
	if r == nil {
		obj.Attempts = target.Defaulted(istioDefaultRetries+1, obj.Pos)
		obj.RetryOn = target.Defaulted(istioDefaultRetryOn, obj.Pos)
		defaultBackoff(obj.Pos)
		obj.Jitter = "full"
		obj.RetryNonIdempotent = kube.RetrySetting(kube.RetriesNonIdempotent(obj.Matches), obj.Attempts)
		obj.Notes = append(obj.Notes, "no retries: Istio's default policy retries twice on connect-failure, refused-stream, unavailable, cancelled and 503 (meshConfig.defaultHttpRetryPolicy may change it)")
		return nil
	}
	where += ".retries"
	if _, err := kube.Mapping(f, r, where); err != nil {
		return err
	}
	pos := target.NodePos(f, r)
	an := kube.Field(r, "attempts")
	n, raw, ok, err := kube.Int(f, an, where+".attempts", 32)
	if err != nil {
		return err
	}
	if n < 0 {
		return target.ErrorAt(target.NodePos(f, an), "%s.attempts %s: negative (Istio: attempts cannot be negative)", where, raw)
	}
	if n == 0 {
		if ok {
			obj.Attempts = target.Set(1, target.NodePos(f, an), raw)
		} else {
			obj.Attempts = target.Defaulted(1, pos)
		}
		obj.Notes = append(obj.Notes, "retries disabled: attempts is 0 (Istio turns the policy off)")
		if kube.Field(r, "perTryTimeout") != nil || kube.Field(r, "retryOn") != nil || kube.Field(r, "retryRemoteLocalities") != nil {
			obj.Notes = append(obj.Notes, "perTryTimeout or retryOn with attempts 0: Istio's validation refuses this policy (\"http retry policy configured when attempts are set to 0\"); without it they do nothing")
		}
		return nil
	}
	obj.Attempts = target.Set(int(n)+1, target.NodePos(f, an), raw)
	if t := kube.Field(r, "perTryTimeout"); t != nil {
		d, raw, err := istioDuration(f, t, where+".perTryTimeout")
		if err != nil {
			return err
		}
		obj.PerTryTimeout = target.Set(d.Seconds(), target.NodePos(f, t), raw)
	}
	if on := kube.Field(r, "retryOn"); on != nil {
		raw, _, err := kube.String(f, on, where+".retryOn")
		if err != nil {
			return err
		}
		// Split as Istio's validation does, without trimming: "5xx, 503"
		// is refused there.
		var conds []string
		for _, c := range strings.Split(raw, ",") {
			if code, err := strconv.Atoi(c); !(err == nil && http.StatusText(code) != "") && !istioRetryOnPolicies[c] {
				return target.ErrorAt(target.NodePos(f, on), "%s.retryOn: %q is not a valid retryOn policy (Envoy's retry-on conditions or an HTTP status code)", where, c)
			}
			conds = append(conds, c)
		}
		obj.RetryOn = target.Set(conds, target.NodePos(f, on), raw)
	} else {
		obj.RetryOn = target.Defaulted(istioDefaultRetryOn, pos)
	}
	if b := kube.Field(r, "backoff"); b != nil {
		d, raw, err := istioDuration(f, b, where+".backoff")
		if err != nil {
			return err
		}
		obj.BackoffBase = target.Set(d.Seconds(), target.NodePos(f, b), raw)
		obj.BackoffMax = target.Defaulted(10*d.Seconds(), target.NodePos(f, b))
	} else {
		defaultBackoff(pos)
	}
	obj.Jitter = "full"
	obj.RetryNonIdempotent = kube.RetrySetting(kube.RetriesNonIdempotent(obj.Matches), obj.Attempts)
	return nil
}

// istioDuration reads an Istio duration: what Go's time.ParseDuration
// takes (Istio's jsonpb decoder parses durations with it), at least 1ms and
// whole milliseconds (pkg/config/validation ValidateDuration: "duration
// must be greater than 1ms", "only durations to ms precision are
// supported"). 0s is refused too.
func istioDuration(f string, n *yaml.Node, what string) (time.Duration, string, error) {
	raw, _, err := kube.String(f, n, what)
	if err != nil {
		return 0, raw, err
	}
	d, err := kube.GoDuration(raw)
	switch {
	case err != nil:
		return 0, raw, target.ErrorAt(target.NodePos(f, n), "%s %v", what, err)
	case d < time.Millisecond:
		return 0, raw, target.ErrorAt(target.NodePos(f, n), "%s %q: Istio refuses durations under 1ms", what, raw)
	case d%time.Millisecond != 0:
		return 0, raw, target.ErrorAt(target.NodePos(f, n), "%s %q: Istio takes whole milliseconds", what, raw)
	}
	return d, raw, nil
}

// istioTrafficPolicy holds the parts of a DestinationRule's traffic policy
// that a subset's own policy replaces whole (pilot's MergeTrafficPolicy).
type istioTrafficPolicy struct {
	pos                                                      target.Pos
	connectionPool, outlierDetection, retryBudget, portLevel *yaml.Node
}

func istioPolicyOf(f string, n *yaml.Node, where string) (istioTrafficPolicy, error) {
	tp := istioTrafficPolicy{}
	m, err := kube.Mapping(f, n, where)
	if m == nil || err != nil {
		return tp, err
	}
	tp.pos = target.NodePos(f, m)
	tp.connectionPool = kube.Field(m, "connectionPool")
	tp.outlierDetection = kube.Field(m, "outlierDetection")
	tp.retryBudget = kube.Field(m, "retryBudget")
	tp.portLevel = kube.Field(m, "portLevelSettings")
	return tp, nil
}

// over returns the policy of a subset: its own parts, the rule's where it
// has none.
func (sub istioTrafficPolicy) over(top istioTrafficPolicy) istioTrafficPolicy {
	if sub.connectionPool == nil {
		sub.connectionPool = top.connectionPool
	}
	if sub.outlierDetection == nil {
		sub.outlierDetection = top.outlierDetection
	}
	if sub.retryBudget == nil {
		sub.retryBudget = top.retryBudget
	}
	if sub.portLevel == nil {
		sub.portLevel = top.portLevel
	}
	return sub
}

// istioDestinationRule appends a DestinationRule's traffic policy and each
// subset's that has one.
func istioDestinationRule(out []target.Object, o kube.Object) ([]target.Object, error) {
	f := o.File
	spec, err := kube.Mapping(f, kube.Field(o.Node, "spec"), "spec")
	if err != nil {
		return nil, err
	}
	host, _, err := kube.String(f, kube.Field(spec, "host"), "spec.host")
	if err != nil {
		return nil, err
	}
	top, err := istioPolicyOf(f, kube.Field(spec, "trafficPolicy"), "spec.trafficPolicy")
	if err != nil {
		return nil, err
	}
	obj := target.Object{Target: "istio", Kind: "DestinationRule", Name: o.Qualified(), Pos: o.Pos}
	if host != "" {
		obj.Matches = []target.Match{{Kind: target.MatchHost, Value: host}}
	}
	if err := istioPolicy(&obj, f, top, "spec.trafficPolicy"); err != nil {
		return nil, err
	}
	out = append(out, obj)
	subsets, err := kube.List(f, kube.Field(spec, "subsets"), "spec.subsets")
	if err != nil {
		return nil, err
	}
	for i, s := range subsets {
		where := fmt.Sprintf("spec.subsets[%d]", i)
		tpn := kube.Field(s, "trafficPolicy")
		if tpn == nil {
			continue // the rule's policy, read above
		}
		name, _, err := kube.String(f, kube.Field(s, "name"), where+".name")
		if err != nil {
			return nil, err
		}
		sub, err := istioPolicyOf(f, tpn, where+".trafficPolicy")
		if err != nil {
			return nil, err
		}
		so := target.Object{Target: "istio", Kind: "DestinationRule", Name: o.Qualified() + " subset " + name, Pos: target.NodePos(f, s), Matches: obj.Matches}
		if err := istioPolicy(&so, f, sub.over(top), where+".trafficPolicy"); err != nil {
			return nil, err
		}
		so.Notes = append(so.Notes, "subset "+name+": its traffic policy replaces the rule's connectionPool, outlierDetection and retryBudget where it sets them")
		out = append(out, so)
	}
	return out, nil
}

// istioPolicy reads a traffic policy into an object: the connect timeout,
// http2MaxRequests as the most requests in flight, the retry budget, and
// what it does not model as notes.
func istioPolicy(obj *target.Object, f string, tp istioTrafficPolicy, where string) error {
	cp, err := kube.Mapping(f, tp.connectionPool, where+".connectionPool")
	if err != nil {
		return err
	}
	tcp, err := kube.Mapping(f, kube.Field(cp, "tcp"), where+".connectionPool.tcp")
	if err != nil {
		return err
	}
	hp, err := kube.Mapping(f, kube.Field(cp, "http"), where+".connectionPool.http")
	if err != nil {
		return err
	}
	if t := kube.Field(tcp, "connectTimeout"); t != nil {
		d, raw, err := istioDuration(f, t, where+".connectionPool.tcp.connectTimeout")
		if err != nil {
			return err
		}
		obj.ConnectTimeout = target.Set(d.Seconds(), target.NodePos(f, t), raw)
	} else {
		obj.ConnectTimeout = target.Defaulted(istioDefaultConnect.Seconds(), obj.Pos)
	}
	limit := func(m *yaml.Node, key, what string) (int64, string, *yaml.Node, error) {
		n := kube.Field(m, key)
		v, raw, _, err := kube.Int(f, n, what+"."+key, 32)
		if err == nil && v < 0 {
			err = target.ErrorAt(target.NodePos(f, n), "%s.%s %s: negative", what, key, raw)
		}
		return v, raw, n, err
	}
	hw := where + ".connectionPool.http"
	mr, raw, n, err := limit(hp, "http2MaxRequests", hw)
	if err != nil {
		return err
	}
	switch {
	case n == nil:
		obj.MaxInFlight = target.Defaulted(istioUnlimited, obj.Pos)
	case mr == 0:
		obj.MaxInFlight = target.Set(istioUnlimited, target.NodePos(f, n), raw)
		obj.Notes = append(obj.Notes, "http2MaxRequests 0 means Istio's default, 2^32-1: no limit")
	default:
		obj.MaxInFlight = target.Set(int(mr), target.NodePos(f, n), raw)
	}
	var limits []string
	for _, l := range []struct {
		m         *yaml.Node
		key, what string
	}{{tcp, "maxConnections", where + ".connectionPool.tcp"}, {hp, "http1MaxPendingRequests", hw}, {hp, "maxRetries", hw}, {hp, "maxRequestsPerConnection", hw}} {
		v, raw, n, err := limit(l.m, l.key, l.what)
		if err != nil {
			return err
		}
		if n != nil && v > 0 {
			limits = append(limits, l.key+" "+raw)
		}
	}
	if len(limits) > 0 {
		obj.Notes = append(obj.Notes, "connection pool: "+strings.Join(limits, ", ")+" (over HTTP/1.1 at most maxConnections requests run and http1MaxPendingRequests wait; Envoy answers 503 beyond)")
	}
	if b, err := kube.Mapping(f, tp.retryBudget, where+".retryBudget"); err != nil {
		return err
	} else if b != nil {
		pn := kube.Field(b, "percent")
		p, raw, ok, err := kube.Float(f, pn, where+".retryBudget.percent")
		switch {
		case err != nil:
			return err
		case !ok:
			obj.RetryBudget = target.Defaulted(istioDefaultBudget, target.NodePos(f, b))
		case p < 0 || p > 100:
			return target.ErrorAt(target.NodePos(f, pn), "%s.retryBudget.percent %s: outside 0 to 100", where, raw)
		default:
			obj.RetryBudget = target.Set(p/100, target.NodePos(f, pn), raw)
		}
		mc, _ := kube.Scalar(kube.Field(b, "minRetryConcurrency"))
		if mc == "" {
			mc = "3 (the default)"
		}
		obj.Notes = append(obj.Notes, "retryBudget: retries outstanding at once are limited to that share of the active and pending requests, at least minRetryConcurrency "+mc)
	}
	if od, err := kube.Mapping(f, tp.outlierDetection, where+".outlierDetection"); err != nil {
		return err
	} else if od != nil {
		var parts []string
		for _, k := range kube.Keys(od) {
			if v, ok := kube.Scalar(kube.Field(od, k)); ok {
				parts = append(parts, k+" "+v)
			}
		}
		obj.Notes = append(obj.Notes, "outlier detection ejects failing hosts ("+strings.Join(parts, ", ")+"): not modeled")
	}
	if tp.portLevel != nil {
		obj.Notes = append(obj.Notes, "portLevelSettings override this policy for their ports: not read")
	}
	return nil
}
