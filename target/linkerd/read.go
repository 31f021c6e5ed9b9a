package linkerd

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/kube"
)

// Reading Linkerd: the timeout and retry annotations of Linkerd 2.16 and
// later on HTTPRoutes and GRPCRoutes (policy.linkerd.io, and
// gateway.networking.k8s.io with a Service parent) and on Services, and
// the legacy ServiceProfile (linkerd.io/v1alpha2). The annotations are read
// as Linkerd's policy controller reads them
// (policy-controller/k8s/index/src/outbound: parse_timeouts,
// parse_http_retry, parse_grpc_retry, parse_duration); the retry backoff
// is fixed by the controller (25ms to 250ms, full jitter) and a request
// body over 64 KiB is never retried.

// Linkerd's annotations.
const (
	LkRequestTimeout  = "timeout.linkerd.io/request"
	LkResponseTimeout = "timeout.linkerd.io/response"
	lkIdleTimeout     = "timeout.linkerd.io/idle"
	lkRetryHTTP       = "retry.linkerd.io/http"
	lkRetryGRPC       = "retry.linkerd.io/grpc"
	lkRetryLimit      = "retry.linkerd.io/limit"
	LkRetryTimeout    = "retry.linkerd.io/timeout"
)

// Linkerd's fixed values and defaults.
const (
	lkDefaultLimit = 1 // retry.linkerd.io/limit: "If unspecified, the default is 1"
	lkBackoffMin   = 25 * time.Millisecond
	lkBackoffMax   = 250 * time.Millisecond
	// ServiceProfile: "If unspecified, the default timeout is 10 seconds";
	// "By default, retries may add at most an additional 20% to the
	// request load (plus an additional 10 "free" retries per second)".
	lkProfileTimeout = 10 * time.Second
	lkProfileBudget  = 0.2
)

// Detect reports whether a file holds Linkerd resources or
// Linkerd's annotations.
func Detect(_ string, data []byte) bool {
	return kube.Detect(data, "linkerd.io/v1alpha", "policy.linkerd.io/", "retry.linkerd.io/", "timeout.linkerd.io/")
}

// ReadConfig reads the Linkerd configuration of a manifest stream:
// one object per rule of a policy.linkerd.io HTTPRoute or GRPCRoute (Kind
// "HTTPRoute rule", "GRPCRoute rule"), per rule of a Gateway API route
// that carries Linkerd's annotations (Kind "HTTPRoute (Linkerd
// annotations)": its spec's own timeouts are the gateway-api target's),
// per Service with Linkerd's annotations (Kind "Service (Linkerd
// annotations)"), and per route of a ServiceProfile (Kind "ServiceProfile
// route").
func ReadConfig(file string, data []byte, _ target.Opener, b *budget.Budget) ([]target.Object, error) {
	res, err := kube.Objects(target.OrNew(b), file, data)
	if err != nil {
		return nil, err
	}
	var out []target.Object
	for _, o := range res {
		route := o.Kind == "HTTPRoute" || o.Kind == "GRPCRoute"
		switch {
		case o.Group == "linkerd.io" && o.Kind == "ServiceProfile":
			out, err = linkerdServiceProfile(out, o)
		case o.Group == "policy.linkerd.io" && route:
			out, err = linkerdRoute(out, o, o.Kind+" rule", true)
		case o.Group == kube.GatewayGroup && route:
			out, err = linkerdRoute(out, o, o.Kind+" (Linkerd annotations)", false)
		case o.APIVersion == "v1" && o.Kind == "Service":
			out, err = linkerdService(out, o)
		}
		if err != nil {
			return nil, err
		}
	}
	kube.Finish(out)
	return out, nil
}

// linkerdRoute appends the rules of a route. own is a policy.linkerd.io
// route, whose rules' timeouts.request Linkerd also reads (the annotation
// wins); a Gateway API route is read only when it has Linkerd annotations.
func linkerdRoute(out []target.Object, o kube.Object, kind string, own bool) ([]target.Object, error) {
	ann, err := kube.Annotations(o, kube.LinkerdAnnotationPrefixes...)
	if err != nil {
		return nil, err
	}
	if !own && !kube.LinkerdAnnotated(ann) {
		return out, nil
	}
	rules, err := kube.GatewayRules(o)
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		obj := r.Object("linkerd", kind)
		if err := linkerdAnnotations(&obj, o, ann, o.Kind == "GRPCRoute"); err != nil {
			return nil, err
		}
		if own && obj.Timeout == nil {
			tw := r.Where + ".timeouts"
			t, err := kube.Mapping(o.File, kube.Field(r.Node, "timeouts"), tw)
			if err != nil {
				return nil, err
			}
			if obj.Timeout, err = kube.GatewayDurationSetting(o.File, kube.Field(t, "request"), tw+".request"); err != nil {
				return nil, err
			}
			if kube.Field(t, "backendRequest") != nil {
				obj.Notes = append(obj.Notes, "timeouts.backendRequest: Linkerd's policy controller does not read it")
			}
		}
		if obj.Timeout == nil {
			obj.Notes = append(obj.Notes, "no request timeout on the route: the parent Service's timeout.linkerd.io annotations apply, else none")
		}
		if obj.Attempts == nil {
			obj.Notes = append(obj.Notes, "no retry annotations on the route: the parent Service's apply, else no retries")
		}
		obj.Notes = append(obj.Notes, "a ServiceProfile for the parent Service takes precedence over routes and annotations")
		out = append(out, obj)
	}
	return out, nil
}

// linkerdService appends a Service that carries Linkerd's annotations:
// they apply to the requests no route with annotations of its own takes.
func linkerdService(out []target.Object, o kube.Object) ([]target.Object, error) {
	ann, err := kube.Annotations(o, kube.LinkerdAnnotationPrefixes...)
	if err != nil || !kube.LinkerdAnnotated(ann) {
		return out, err
	}
	obj := target.Object{Target: "linkerd", Kind: "Service (Linkerd annotations)", Name: o.Qualified(), Pos: o.Pos}
	if o.Name != "" {
		obj.Matches = []target.Match{{Kind: target.MatchHost, Value: o.Name}}
	}
	if err := linkerdAnnotations(&obj, o, ann, false); err != nil {
		return nil, err
	}
	obj.Notes = append(obj.Notes, "Service annotations apply to requests of routes without timeout or retry annotations of their own")
	return append(out, obj), nil
}

// linkerdAnnotations reads Linkerd's timeout and retry annotations into an
// object. timeout.linkerd.io/request bounds the whole request, retries
// included; retry.linkerd.io/timeout bounds an attempt and retries it;
// timeout.linkerd.io/response bounds a backend response and is not
// retried, so the shorter of the two bounds an attempt.
func linkerdAnnotations(obj *target.Object, o kube.Object, ann map[string]*yaml.Node, grpc bool) error {
	resp, err := linkerdTimeouts(obj, o.File, ann)
	if err != nil {
		return err
	}
	r, err := readLinkerdRetry(obj, o, ann, grpc)
	if err != nil {
		return err
	}
	r.attempts(obj, o.File)
	if !r.set() {
		if resp != nil {
			obj.PerTryTimeout = resp
			obj.Notes = append(obj.Notes, LkResponseTimeout+" bounds the backend's response and is not retried")
		}
		return nil
	}
	r.policy(obj, o.File, resp)
	return nil
}

// annotationSetting reads a duration annotation (AnnotationDuration), nil
// when it is absent.
func annotationSetting(file string, ann map[string]*yaml.Node, key string) (*target.Setting[float64], error) {
	n := ann[key]
	if n == nil {
		return nil, nil
	}
	d, err := AnnotationDuration(n.Value)
	if err != nil {
		return nil, target.ErrorAt(target.NodePos(file, n), "%s %v", key, err)
	}
	return target.Set(d.Seconds(), target.NodePos(file, n), n.Value), nil
}

// linkerdTimeouts reads timeout.linkerd.io/request as the object's
// timeout and notes timeout.linkerd.io/idle; it returns
// timeout.linkerd.io/response, which bounds an attempt or not as the retry
// policy says.
func linkerdTimeouts(obj *target.Object, file string, ann map[string]*yaml.Node) (resp *target.Setting[float64], err error) {
	req, err := annotationSetting(file, ann, LkRequestTimeout)
	if err != nil {
		return nil, err
	}
	if req != nil {
		obj.Timeout = req
		if req.Value == 0 {
			obj.Notes = append(obj.Notes, LkRequestTimeout+" 0: no request timeout")
		}
	}
	resp, err = annotationSetting(file, ann, LkResponseTimeout)
	if err != nil {
		return nil, err
	}
	if idle, err := annotationSetting(file, ann, lkIdleTimeout); err != nil {
		return nil, err
	} else if idle != nil {
		obj.Notes = append(obj.Notes, fmt.Sprintf("%s %s: a stream idle that long is cut off (not modeled)", lkIdleTimeout, idle.Raw))
	}
	return resp, nil
}

// linkerdRetry is the retry policy of Linkerd's annotations, as
// parse_http_retry and parse_grpc_retry read it.
type linkerdRetry struct {
	limitNode *yaml.Node // retry.linkerd.io/limit; nil when absent
	limit     int
	perTry    *target.Setting[float64] // retry.linkerd.io/timeout; nil when absent or zero
	conds     []string
	condNode  *yaml.Node // the first conditions annotation read; nil when none is
	condKey   string     // the conditions annotations read on the object, "a or b"
}

// readLinkerdRetry reads retry.linkerd.io/limit, retry.linkerd.io/timeout
// and the conditions.
func readLinkerdRetry(obj *target.Object, o kube.Object, ann map[string]*yaml.Node, grpc bool) (linkerdRetry, error) {
	f := o.File
	r := linkerdRetry{limitNode: ann[lkRetryLimit]}
	if ln := r.limitNode; ln != nil {
		v, err := strconv.ParseUint(strings.TrimPrefix(ln.Value, "+"), 10, 16)
		if err != nil {
			return r, target.ErrorAt(target.NodePos(f, ln), "%s %q: not a whole number from 0 to 65535 (Linkerd then ignores the whole route)", lkRetryLimit, ln.Value)
		}
		r.limit = int(v)
	}
	perTry, err := annotationSetting(f, ann, LkRetryTimeout)
	if err != nil {
		return r, err
	}
	if perTry != nil && perTry.Value == 0 {
		perTry = nil
	}
	r.perTry = perTry
	// The conditions: retry.linkerd.io/http on an HTTPRoute,
	// retry.linkerd.io/grpc on a GRPCRoute, either on a Service (for the
	// HTTP and the gRPC requests to it).
	keys := []string{lkRetryHTTP}
	switch {
	case grpc:
		keys = []string{lkRetryGRPC}
	case o.Kind == "Service":
		keys = []string{lkRetryHTTP, lkRetryGRPC}
	}
	for _, k := range []string{lkRetryHTTP, lkRetryGRPC} {
		if ann[k] != nil && !slices.Contains(keys, k) {
			obj.Notes = append(obj.Notes, fmt.Sprintf("%s is not read on a %s", k, o.Kind))
		}
	}
	for _, k := range keys {
		n := ann[k]
		if n == nil {
			continue
		}
		if r.condNode == nil {
			r.condNode = n
		}
		for _, c := range strings.Split(n.Value, ",") {
			if !Condition(c, k == lkRetryGRPC) {
				return r, target.ErrorAt(target.NodePos(f, n), "%s %q: invalid retry condition %q (%s; no spaces; Linkerd then ignores the whole route)", k, n.Value, c, linkerdConditionsHelp(k == lkRetryGRPC))
			}
			r.conds = append(r.conds, c)
		}
	}
	r.condKey = strings.Join(keys, " or ")
	return r, nil
}

// set reports whether the annotations make a retry policy: any of limit,
// timeout and conditions does, a limit of 0 and a zero timeout counting as
// unset.
func (r linkerdRetry) set() bool { return r.limit != 0 || r.perTry != nil || r.condNode != nil }

// attempts sets the object's attempts: the limit and the first, the limit
// 1 unless set (or 0) where there is a policy, 1 where a limit of 0 is
// all there is.
func (r linkerdRetry) attempts(obj *target.Object, file string) {
	ln := r.limitNode
	switch retry := r.set(); {
	case retry && ln != nil:
		attempts := r.limit + 1
		if r.limit == 0 {
			attempts = lkDefaultLimit + 1
			obj.Notes = append(obj.Notes, lkRetryLimit+" 0 counts as unset: Linkerd retries once")
		}
		obj.Attempts = target.Set(attempts, target.NodePos(file, ln), ln.Value)
	case retry:
		obj.Attempts = target.Defaulted(lkDefaultLimit+1, obj.Pos)
	case ln != nil:
		obj.Attempts = target.Set(1, target.NodePos(file, ln), ln.Value)
		obj.Notes = append(obj.Notes, lkRetryLimit+" 0 without conditions or a retry timeout: no retries")
	}
}

// policy sets the rest of a retry policy: what is retried (the conditions,
// and a timeout where retry.linkerd.io/timeout is set), what bounds an
// attempt (the shorter of the retry timeout and resp, the response
// timeout) and the controller's fixed backoff.
func (r linkerdRetry) policy(obj *target.Object, file string, resp *target.Setting[float64]) {
	cn, perTry := r.condNode, r.perTry
	switch {
	case cn != nil && perTry != nil:
		obj.RetryOn = target.Set(append(r.conds, "timeout"), target.NodePos(file, cn), cn.Value)
	case cn != nil:
		obj.RetryOn = target.Set(r.conds, target.NodePos(file, cn), cn.Value)
	case perTry != nil:
		obj.RetryOn = target.Set([]string{"timeout"}, perTry.Pos, perTry.Raw)
	default:
		obj.Notes = append(obj.Notes, "a retry limit without "+r.condKey+" or "+LkRetryTimeout+": the conditions are the proxy's")
	}
	obj.PerTryTimeout = perTry
	if resp != nil && (perTry == nil || resp.Value < perTry.Value) {
		obj.PerTryTimeout = resp
		obj.Notes = append(obj.Notes, LkResponseTimeout+" "+resp.Raw+" ends an attempt first, and is not retried")
	}
	obj.BackoffBase = target.Defaulted(lkBackoffMin.Seconds(), obj.Attempts.Pos)
	obj.BackoffMax = target.Defaulted(lkBackoffMax.Seconds(), obj.Attempts.Pos)
	obj.Jitter = "full"
	obj.RetryNonIdempotent = kube.RetrySetting(kube.RetriesNonIdempotent(obj.Matches), obj.Attempts)
	obj.Notes = append(obj.Notes, "Linkerd never retries a request whose body is over 64 KiB; its backoff is fixed, 25ms to 250ms with full jitter")
}

// AnnotationDuration parses a duration as Linkerd's policy controller does
// (parse_duration): a whole number and one unit of ms, s, m, h or d ("0"
// alone is zero); no decimals, no second unit ("1m30s" is refused).
func AnnotationDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	i := strings.LastIndexFunc(t, func(r rune) bool { return r >= '0' && r <= '9' })
	if i < 0 {
		return 0, fmt.Errorf("%q: not a duration (a whole number and ms, s, m, h or d: 800ms, 2s)", s)
	}
	num, unit := t[:i+1], t[i+1:]
	v, err := strconv.ParseUint(strings.TrimPrefix(num, "+"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: not a duration (a whole number and ms, s, m, h or d: 800ms, 2s)", s)
	}
	var ms uint64
	switch unit {
	case "":
		if v != 0 {
			return 0, fmt.Errorf("%q: no unit (ms, s, m, h or d)", s)
		}
	case "ms":
		ms = 1
	case "s":
		ms = 1000
	case "m":
		ms = 60_000
	case "h":
		ms = 3_600_000
	case "d":
		ms = 86_400_000
	default:
		return 0, fmt.Errorf("%q: unit %q is not one of ms, s, m, h or d", s, unit)
	}
	const most = uint64(1<<63-1) / uint64(time.Millisecond)
	if ms != 0 && v > most/ms {
		return 0, fmt.Errorf("%q: too long", s)
	}
	return time.Duration(v*ms) * time.Millisecond, nil
}

var lkStatusRange = regexp.MustCompile(`^([0-9]+)-([0-9]+)$`)

// Condition reports whether c is a condition Linkerd takes: for
// HTTP 5xx, gateway-error, a status or a range of statuses from 100 to
// 599; for gRPC cancelled, deadline-exceeded, internal,
// resource-exhausted, unavailable. Case is ignored; spaces are not.
func Condition(c string, grpc bool) bool {
	lc := strings.ToLower(c)
	if grpc {
		switch lc {
		case "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable":
			return true
		}
		return false
	}
	code := func(s string) (int, bool) {
		n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 32)
		return int(n), err == nil && n >= 100 && n < 600
	}
	if lc == "5xx" || lc == "gateway-error" {
		return true
	}
	if _, ok := code(c); ok {
		return true
	}
	if m := lkStatusRange.FindStringSubmatch(c); m != nil {
		lo, ok1 := code(m[1])
		hi, ok2 := code(m[2])
		return ok1 && ok2 && lo <= hi
	}
	return false
}

func linkerdConditionsHelp(grpc bool) string {
	if grpc {
		return "cancelled, deadline-exceeded, internal, resource-exhausted or unavailable, comma-separated"
	}
	return "5xx, gateway-error, a status such as 503 or a range such as 500-504, comma-separated"
}

// linkerdServiceProfile appends the routes of a ServiceProfile. A route's
// timeout bounds the request, retries included (10s unless set); a
// retryable route is retried on failures (5xx unless responseClasses say
// otherwise) while the retry budget allows, with no count and no per-try
// timeout.
func linkerdServiceProfile(out []target.Object, o kube.Object) ([]target.Object, error) {
	f := o.File
	spec, err := kube.Mapping(f, kube.Field(o.Node, "spec"), "spec")
	if err != nil {
		return nil, err
	}
	budget, budgetNote, err := linkerdBudget(f, kube.Field(spec, "retryBudget"), o.Pos)
	if err != nil {
		return nil, err
	}
	routes, err := kube.List(f, kube.Field(spec, "routes"), "spec.routes")
	if err != nil {
		return nil, err
	}
	if kube.Field(spec, "dstOverrides") != nil {
		budgetNote = append(budgetNote, "dstOverrides split the traffic between services: not modeled")
	}
	for i, rn := range routes {
		where := fmt.Sprintf("spec.routes[%d]", i)
		if rn.Kind != yaml.MappingNode {
			return nil, target.ErrorAt(target.NodePos(f, rn), "%s: want a mapping, got %s", where, kube.What(rn))
		}
		name, _, err := kube.String(f, kube.Field(rn, "name"), where+".name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, target.ErrorAt(target.NodePos(f, rn), "%s: a route without a name (Linkerd requires one)", where)
		}
		obj := target.Object{Target: "linkerd", Kind: "ServiceProfile route", Name: strings.TrimSpace(o.Qualified() + " " + name), Pos: target.NodePos(f, rn), Upstream: o.Name}
		if o.Name != "" {
			obj.Matches = []target.Match{{Kind: target.MatchHost, Value: o.Name}}
		}
		cond, err := kube.Mapping(f, kube.Field(rn, "condition"), where+".condition")
		if err != nil {
			return nil, err
		}
		if cond == nil {
			return nil, target.ErrorAt(target.NodePos(f, rn), "%s: a route without a condition (Linkerd requires one)", where)
		}
		if err := linkerdRequestMatch(&obj, f, cond, where+".condition", 0); err != nil {
			return nil, err
		}
		if t := kube.Field(rn, "timeout"); t != nil {
			raw, _, err := kube.String(f, t, where+".timeout")
			if err != nil {
				return nil, err
			}
			d, err := kube.GoDuration(raw)
			if err == nil && d == 0 {
				err = fmt.Errorf("%q: want a positive duration", raw)
			}
			if err != nil {
				return nil, target.ErrorAt(target.NodePos(f, t), "%s.timeout %v", where, err)
			}
			obj.Timeout = target.Set(d.Seconds(), target.NodePos(f, t), raw)
		} else {
			obj.Timeout = target.Defaulted(lkProfileTimeout.Seconds(), obj.Pos)
		}
		rt := kube.Field(rn, "isRetryable")
		retryable, raw, ok, err := kube.Bool(f, rt, where+".isRetryable")
		if err != nil {
			return nil, err
		}
		switch {
		case retryable:
			obj.RetryOn = target.Set([]string{"5xx"}, target.NodePos(f, rt), raw)
			obj.RetryNonIdempotent = &target.Setting[bool]{Value: kube.RetriesNonIdempotent(obj.Matches), Pos: target.NodePos(f, rt)}
			obj.RetryBudget = budget
			obj.Notes = append(obj.Notes, "retryable: retried on failures, as many times as the retry budget allows within the timeout (no count, no per-try timeout); a request with a body is never retried")
			obj.Notes = append(obj.Notes, budgetNote...)
			if kube.Field(rn, "responseClasses") != nil {
				obj.Notes = append(obj.Notes, "responseClasses decide which responses are failures, hence retried: not modeled")
			}
		case ok:
			obj.Attempts = target.Set(1, target.NodePos(f, rt), raw)
		default:
			obj.Attempts = target.Defaulted(1, obj.Pos)
		}
		out = append(out, obj)
	}
	return out, nil
}

// linkerdBudget reads a ServiceProfile's retryBudget: all three fields are
// required (Linkerd's profile validation), retryRatio is the share of
// requests that may be retries. Without one Linkerd's default applies.
func linkerdBudget(f string, n *yaml.Node, pos target.Pos) (*target.Setting[float64], []string, error) {
	b, err := kube.Mapping(f, n, "spec.retryBudget")
	if err != nil {
		return nil, nil, err
	}
	if b == nil {
		return target.Defaulted(lkProfileBudget, pos), []string{"retry budget: Linkerd's default, 20 % of the requests plus 10 retries a second (ttl 10s)"}, nil
	}
	rn := kube.Field(b, "retryRatio")
	ratio, raw, ok, err := kube.Float(f, rn, "spec.retryBudget.retryRatio")
	if err != nil {
		return nil, nil, err
	}
	mn := kube.Field(b, "minRetriesPerSecond")
	mps, mraw, mok, err := kube.Int(f, mn, "spec.retryBudget.minRetriesPerSecond", 64)
	if err != nil {
		return nil, nil, err
	}
	tn := kube.Field(b, "ttl")
	ttl, tok, err := kube.String(f, tn, "spec.retryBudget.ttl")
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !ok || !mok || !tok:
		return nil, nil, target.ErrorAt(target.NodePos(f, b), "spec.retryBudget: retryRatio, minRetriesPerSecond and ttl are all required")
	case ratio < 0:
		return nil, nil, target.ErrorAt(target.NodePos(f, rn), "spec.retryBudget.retryRatio %s: negative", raw)
	case mps < 0 || mps > 1<<32-1:
		return nil, nil, target.ErrorAt(target.NodePos(f, mn), "spec.retryBudget.minRetriesPerSecond %s: outside 0 to 4294967295", mraw)
	}
	if _, err := kube.GoDuration(ttl); err != nil {
		return nil, nil, target.ErrorAt(target.NodePos(f, tn), "spec.retryBudget.ttl %v", err)
	}
	return target.Set(ratio, target.NodePos(f, rn), raw), []string{fmt.Sprintf("retry budget: retryRatio %s of the requests, plus %s retries a second, over %s", raw, mraw, ttl)}, nil
}

// linkerdRequestMatch reads a ServiceProfile request match: method and
// pathRegex (which Linkerd anchors: it must match the whole path), and
// the same inside all; any, not, and a field given twice are noted, not
// modeled.
func linkerdRequestMatch(obj *target.Object, f string, c *yaml.Node, where string, depth int) error {
	var other []string
	kinds := map[string]int{}
	for _, k := range kube.Keys(c) {
		v := kube.Field(c, k)
		switch k {
		case "method":
			m, _, err := kube.String(f, v, where+".method")
			if err != nil {
				return err
			}
			kinds[target.MatchMethod]++
			obj.Matches = kube.AppendMatch(obj.Matches, target.Match{Kind: target.MatchMethod, Value: m})
		case "pathRegex":
			re, _, err := kube.String(f, v, where+".pathRegex")
			if err != nil {
				return err
			}
			if _, err := regexp.Compile("^(?:" + re + ")$"); err != nil {
				return target.ErrorAt(target.NodePos(f, v), "%s.pathRegex %q: %v", where, re, err)
			}
			kinds[target.MatchRegex]++
			obj.Matches = kube.AppendMatch(obj.Matches, target.Match{Kind: target.MatchRegex, Value: re})
		case "all":
			items, err := kube.List(f, v, where+".all")
			if err != nil {
				return err
			}
			if depth > 0 {
				other = append(other, "nested all")
				continue
			}
			for j, it := range items {
				iw := fmt.Sprintf("%s.all[%d]", where, j)
				if _, err := kube.Mapping(f, it, iw); err != nil {
					return err
				}
				for _, ik := range kube.Keys(it) {
					switch ik {
					case "method":
						kinds[target.MatchMethod]++
					case "pathRegex":
						kinds[target.MatchRegex]++
					default:
						other = append(other, "all["+strconv.Itoa(j)+"]."+ik)
					}
				}
				if err := linkerdRequestMatch(obj, f, it, iw, depth+1); err != nil {
					return err
				}
			}
		default:
			other = append(other, k)
		}
	}
	for kind, n := range kinds {
		if n > 1 {
			other = append(other, "two "+kind+" conditions that must both hold")
		}
	}
	if len(other) > 0 && depth == 0 {
		obj.Notes = append(obj.Notes, "conditions "+strings.Join(other, ", ")+" are not modeled: the route applies to other requests than its matches say")
	}
	return nil
}
