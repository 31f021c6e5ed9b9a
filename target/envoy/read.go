package envoy

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
)

// Reading Envoy configuration. One walker over YAML node trees reads every
// form a team runs Envoy's config in, YAML or JSON (JSON is YAML), with
// the proto field names (connect_timeout) or the JSON names protojson
// writes (connectTimeout):
//
//   - a bootstrap: static_resources.listeners (the routes of each HTTP
//     connection manager's inline route_config) and static_resources.clusters;
//   - xDS resources: a RouteConfiguration, Cluster or Listener, alone, in a
//     list, or in a discovery response (resources: [{"@type": ...}]);
//   - an admin /config_dump: the Routes, Clusters and Listeners config
//     dumps, static and dynamic, and the entries of a
//     /config_dump?resource= answer.
//
// Routes give their timeout, retry_policy (the virtual host's when the
// route has none: Envoy takes one or the other, never a merge) and
// hedge_policy; clusters their connect_timeout and the DEFAULT priority's
// circuit breakers and retry budget. A value the file leaves out is
// Envoy's default (route_components.proto, cluster.proto,
// circuit_breaker.proto), marked Default at the line of its object.

// Envoy's defaults for what a config leaves out.
const (
	envoyRouteTimeout        = 15.0  // RouteAction.timeout, seconds
	envoyConnectTimeout      = 5.0   // Cluster.connect_timeout, seconds
	envoyNumRetries          = 1     // RetryPolicy.num_retries
	envoyBackoffBase         = 0.025 // RetryPolicy.retry_back_off.base_interval, seconds
	envoyBackoffFactor       = 10    // max_interval defaults to 10 x base_interval
	envoyMaxRequests         = 1024  // CircuitBreakers.Thresholds.max_requests
	envoyMaxRetries          = 3     // CircuitBreakers.Thresholds.max_retries
	envoyBudgetPercent       = 20.0  // RetryBudget.budget_percent
	envoyMinRetryConcurrency = 3     // RetryBudget.min_retry_concurrency
)

// ReadConfig reads the routes and clusters of an Envoy config file. It
// returns what it could read and every value it refuses, each a ReadError
// at its line, joined in one error.
func ReadConfig(file string, data []byte, _ target.Opener, b *budget.Budget) ([]target.Object, error) {
	docs, err := target.YAMLDocuments(target.OrNew(b), file, data)
	if err != nil {
		return nil, err
	}
	r := &envoyReader{PBReader: target.PBReader{File: file}}
	for _, d := range docs {
		r.document(d)
	}
	return r.Objs, r.Err()
}

// envoyDetectExt are the file names an Envoy config has.
var envoyDetectExt = []string{".yaml", ".yml", ".json"}

// envoyDetectRe finds what only an Envoy config holds in its first bytes.
var envoyDetectRe = regexp.MustCompile(`static_resources|staticResources|virtual_hosts|virtualHosts|type\.googleapis\.com/envoy\.(config|api)\.|connect_timeout|connectTimeout`)

// envoyK8sAPIVersionRe and envoyK8sKindRe find the two fields of a
// Kubernetes manifest: an Istio EnvoyFilter holds Envoy words too, but is
// another target's.
var (
	envoyK8sAPIVersionRe = regexp.MustCompile(`(?m)^\s*(-\s+)?"?apiVersion"?\s*:`)
	envoyK8sKindRe       = regexp.MustCompile(`(?m)^\s*(-\s+)?"?kind"?\s*:`)
)

// Detect reports whether a file looks like an Envoy config: a .yaml,
// .yml or .json file with a bootstrap's static_resources, a route
// configuration's virtual_hosts, a cluster's connect_timeout, an Envoy
// "@type", or an admin config dump; not a Kubernetes manifest, not a gRPC
// service config.
func Detect(file string, data []byte) bool {
	if !slices.Contains(envoyDetectExt, strings.ToLower(filepath.Ext(file))) {
		return false
	}
	head := data[:min(len(data), 256<<10)]
	if envoyK8sAPIVersionRe.Match(head) && envoyK8sKindRe.Match(head) {
		return false
	}
	if strings.Contains(strings.ToLower(string(head)), "methodconfig") {
		return false
	}
	if envoyDetectRe.Match(head) {
		return true
	}
	s := string(head)
	return strings.Contains(s, "configs") && strings.Contains(s, "envoy.admin.")
}

// envoyReader walks the documents of one Envoy file.
type envoyReader struct {
	target.PBReader
	// dump: reading an admin config dump, whose RoutesConfigDump repeats
	// the route configs inlined in its listeners; seenRC names those read.
	dump   bool
	seenRC map[string]bool
}

// field returns the value of an Envoy message field by its proto name or
// the lowerCamelCase JSON name protojson writes; nil when absent or null.
func (r *envoyReader) field(n *yaml.Node, name string) *yaml.Node {
	camel := envoyCamel(name)
	return target.PBField(n, func(k string) bool { return k == name || k == camel })
}

// envoyCamel is protobuf's JSON name of a field: connect_timeout is
// connectTimeout.
func envoyCamel(name string) string {
	var b strings.Builder
	up := false
	for _, c := range name {
		switch {
		case c == '_':
			up = true
		case up && c >= 'a' && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
			up = false
		default:
			b.WriteRune(c)
			up = false
		}
	}
	return b.String()
}

// typeName is the message name of an "@type": type.googleapis.com/
// envoy.config.cluster.v3.Cluster is Cluster, and an admin config dump's
// envoy.admin.v3.RoutesConfigDump.DynamicRouteConfig is
// RoutesConfigDump.DynamicRouteConfig.
func (r *envoyReader) typeName(n *yaml.Node) string {
	t := r.Str(r.field(n, "@type"))
	t = t[strings.LastIndex(t, "/")+1:]
	parts := strings.Split(t, ".")
	if i := slices.Index(parts, "admin"); i >= 0 && i+2 <= len(parts) {
		return strings.Join(parts[i+2:], ".")
	}
	return parts[len(parts)-1]
}

// document reads one YAML document: a config dump, a bootstrap, a
// discovery response, a list of resources or one resource.
func (r *envoyReader) document(n *yaml.Node) {
	n = target.PBDeref(n)
	if n == nil {
		return
	}
	if n.Kind == yaml.SequenceNode {
		for _, item := range target.PBItems(n) {
			r.resource(item)
		}
		return
	}
	switch {
	case r.field(n, "configs") != nil:
		r.configDump(r.field(n, "configs"))
	case r.field(n, "resources") != nil && target.PBDeref(r.field(n, "resources")).Kind == yaml.SequenceNode:
		for _, item := range target.PBItems(r.field(n, "resources")) {
			r.resource(item)
		}
	default:
		r.resource(n)
	}
}

// resource reads one resource by its "@type", else by the fields it has:
// a RouteConfiguration has virtual_hosts, a Listener filter_chains, a
// Cluster connect_timeout or endpoints; the wrappers of a config dump
// (DynamicCluster, DynamicRouteConfig, DynamicListener) hold one.
func (r *envoyReader) resource(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	switch r.typeName(n) {
	case "RouteConfiguration":
		r.routeConfig(n, "")
		return
	case "Cluster":
		r.cluster(n)
		return
	case "Listener":
		r.listener(n)
		return
	case "Bootstrap":
		r.bootstrap(n)
		return
	}
	switch {
	case r.field(n, "static_resources") != nil:
		r.bootstrap(n)
	case r.field(n, "virtual_hosts") != nil:
		r.routeConfig(n, "")
	case r.field(n, "filter_chains") != nil || r.field(n, "default_filter_chain") != nil || r.field(n, "api_listener") != nil:
		r.listener(n)
	case target.PBMapping(r.field(n, "route_config")):
		r.routeConfig(r.field(n, "route_config"), "")
	case target.PBMapping(r.field(n, "cluster")):
		r.cluster(r.field(n, "cluster"))
	case target.PBMapping(r.field(n, "listener")):
		r.listener(r.field(n, "listener"))
	case target.PBMapping(r.field(n, "active_state")):
		if l := r.field(r.field(n, "active_state"), "listener"); target.PBMapping(l) {
			r.listener(l)
		}
	case r.isCluster(n):
		r.cluster(n)
	}
}

// isCluster reports whether a resource without "@type" is a Cluster.
func (r *envoyReader) isCluster(n *yaml.Node) bool {
	for _, f := range []string{"connect_timeout", "load_assignment", "circuit_breakers", "eds_cluster_config", "cluster_type", "lb_policy", "dns_lookup_family"} {
		if r.field(n, f) != nil {
			return true
		}
	}
	return false
}

// bootstrap reads a bootstrap's static listeners and clusters.
func (r *envoyReader) bootstrap(n *yaml.Node) {
	sr := r.field(n, "static_resources")
	for _, l := range target.PBItems(r.field(sr, "listeners")) {
		r.listener(l)
	}
	for _, c := range target.PBItems(r.field(sr, "clusters")) {
		r.cluster(c)
	}
}

// configDump reads an admin /config_dump: routes first, so that the route
// configs of static listeners, which its RoutesConfigDump repeats, are read
// once; the bootstrap only when the dump has no clusters or listeners
// dump, which hold its static resources too. Warming and draining
// resources are left out: they serve no traffic yet, or no longer.
func (r *envoyReader) configDump(configs *yaml.Node) {
	r.dump, r.seenRC = true, map[string]bool{}
	var entries []*yaml.Node
	if c := target.PBDeref(configs); c != nil && c.Kind == yaml.MappingNode { // istioctl's older dumps: a map of dumps
		for i := 1; i < len(c.Content); i += 2 {
			entries = append(entries, target.PBDeref(c.Content[i]))
		}
	} else {
		entries = target.PBItems(configs)
	}
	hasResources := false
	for _, e := range entries {
		switch r.typeName(e) {
		case "ClustersConfigDump", "ListenersConfigDump":
			hasResources = true
		}
	}
	for pass := 0; pass < 2; pass++ {
		for _, e := range entries {
			if e == nil {
				return
			}
			kind := r.typeName(e)
			if (kind == "RoutesConfigDump" || strings.HasPrefix(kind, "RoutesConfigDump.")) != (pass == 0) {
				continue
			}
			switch kind {
			case "RoutesConfigDump":
				for _, f := range []string{"static_route_configs", "dynamic_route_configs"} {
					for _, rc := range target.PBItems(r.field(e, f)) {
						if rc = r.field(rc, "route_config"); target.PBMapping(rc) {
							r.routeConfig(rc, "")
						}
					}
				}
			case "ClustersConfigDump":
				for _, f := range []string{"static_clusters", "dynamic_active_clusters"} {
					for _, c := range target.PBItems(r.field(e, f)) {
						if c = r.field(c, "cluster"); target.PBMapping(c) {
							r.cluster(c)
						}
					}
				}
			case "ListenersConfigDump":
				for _, l := range target.PBItems(r.field(e, "static_listeners")) {
					if l = r.field(l, "listener"); target.PBMapping(l) {
						r.listener(l)
					}
				}
				for _, l := range target.PBItems(r.field(e, "dynamic_listeners")) {
					if l = r.field(r.field(l, "active_state"), "listener"); target.PBMapping(l) {
						r.listener(l)
					}
				}
				for _, l := range target.PBItems(r.field(e, "dynamic_active_listeners")) { // v2alpha
					if l = r.field(l, "listener"); target.PBMapping(l) {
						r.listener(l)
					}
				}
			case "BootstrapConfigDump":
				if !hasResources {
					r.bootstrap(r.field(e, "bootstrap"))
				}
			default:
				if strings.Contains(kind, "ConfigDump.") { // one resource of /config_dump?resource=
					r.resource(e)
				}
			}
		}
	}
}

// listener reads the route configs inlined in a listener's HTTP connection
// managers (its filter chains, its default chain, an API listener's); a
// connection manager that takes its routes by RDS has none here.
func (r *envoyReader) listener(n *yaml.Node) {
	name := r.Str(r.field(n, "name"))
	chains := target.PBItems(r.field(n, "filter_chains"))
	if d := r.field(n, "default_filter_chain"); target.PBMapping(d) {
		chains = append(chains, d)
	}
	for _, fc := range chains {
		for _, f := range target.PBItems(r.field(fc, "filters")) {
			r.networkFilter(f, name)
		}
	}
	if api := r.field(r.field(n, "api_listener"), "api_listener"); target.PBMapping(api) {
		r.connectionManager(api, name)
	}
}

// networkFilter reads an HTTP connection manager filter, by the type of
// its typed_config or, for configs older than v3, its name and config.
func (r *envoyReader) networkFilter(f *yaml.Node, listener string) {
	tc := r.field(f, "typed_config")
	if tc == nil {
		tc = r.field(f, "config")
	}
	if r.typeName(tc) == "HttpConnectionManager" || (r.Str(r.field(tc, "@type")) == "" && strings.Contains(r.Str(r.field(f, "name")), "http_connection_manager")) {
		r.connectionManager(tc, listener)
	}
}

// connectionManager reads the inline route_config of an HTTP connection
// manager.
func (r *envoyReader) connectionManager(hcm *yaml.Node, listener string) {
	rc := r.field(hcm, "route_config")
	if !target.PBMapping(rc) {
		return
	}
	if name := r.Str(r.field(rc, "name")); r.dump && name != "" && r.seenRC[name] {
		return // the config dump's RoutesConfigDump had it
	}
	r.routeConfig(rc, listener)
}

// envoyVHost is what the routes of a virtual host share.
type envoyVHost struct {
	label       string // route config/virtual host
	hosts       []target.Match
	retryPolicy *yaml.Node
	hedgePolicy *yaml.Node
	name        string
}

// routeConfig reads the virtual hosts of a route configuration; routes are
// named route config/virtual host/route, the route config by its name, else
// its listener's.
func (r *envoyReader) routeConfig(rc *yaml.Node, listener string) {
	name := r.Str(r.field(rc, "name"))
	if r.dump && name != "" {
		r.seenRC[name] = true
	}
	label := name
	if label == "" {
		label = listener
	}
	if label == "" {
		label = "route_config"
	}
	for i, vh := range target.PBItems(r.field(rc, "virtual_hosts")) {
		vname := r.Str(r.field(vh, "name"))
		if vname == "" {
			vname = "virtual_host " + strconv.Itoa(i+1)
		}
		v := envoyVHost{
			label:       label + "/" + vname,
			name:        vname,
			retryPolicy: r.field(vh, "retry_policy"),
			hedgePolicy: r.field(vh, "hedge_policy"),
		}
		for _, d := range target.PBItems(r.field(vh, "domains")) {
			if s := r.Str(d); s != "" && s != "*" { // "*" holds every host: no condition
				v.hosts = append(v.hosts, target.Match{Kind: target.MatchHost, Value: s})
			}
		}
		for j, rt := range target.PBItems(r.field(vh, "routes")) {
			r.route(rt, j, v)
		}
	}
}

// envoyIdempotent are the methods a retry cannot apply twice.
var envoyIdempotent = []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"}

// route reads one route: its matches, upstream, timeout, retries, backoff
// and hedging.
func (r *envoyReader) route(n *yaml.Node, i int, vh envoyVHost) {
	name := r.Str(r.field(n, "name"))
	if name == "" {
		name = "route " + strconv.Itoa(i+1)
	}
	o := target.Object{Target: "envoy", Kind: "route", Name: vh.label + "/" + name, Pos: r.Pos(n), Router: "envoy " + r.Pos(n).File + " " + vh.label}
	r.routeMatch(n, &o)
	o.Matches = append(o.Matches, vh.hosts...)
	ra := r.field(n, "route")
	if !target.PBMapping(ra) {
		switch {
		case r.field(n, "redirect") != nil:
			o.Notes = append(o.Notes, "redirect: Envoy answers it, no upstream")
		case r.field(n, "direct_response") != nil:
			o.Notes = append(o.Notes, "direct_response: Envoy answers it, no upstream")
		default:
			o.Notes = append(o.Notes, "no route action: no upstream")
		}
		r.Add(o)
		return
	}
	r.upstream(ra, &o)
	if t := r.field(ra, "timeout"); t != nil {
		if v, raw, ok := r.Duration(t, "timeout"); ok {
			o.Timeout = target.Set(v, r.Pos(t), raw)
			if v == 0 {
				o.Notes = append(o.Notes, "timeout 0s: no route timeout (Envoy's 0 disables it)")
			}
		}
	} else {
		o.Timeout = target.Defaulted(envoyRouteTimeout, o.Pos)
	}
	if t := r.field(ra, "idle_timeout"); t != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("idle_timeout %s: a stream with no activity for that long is reset, whatever the timeout", r.Str(t)))
	}
	msd := r.field(ra, "max_stream_duration")
	if t := r.field(msd, "max_stream_duration"); t != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("max_stream_duration %s bounds the stream as well", r.Str(t)))
	}
	if t := r.field(msd, "grpc_timeout_header_max"); t != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("grpc_timeout_header_max %s: a gRPC call's grpc-timeout header sets the timeout instead (capped there; 0s: uncapped)", r.Str(t)))
	} else if t := r.field(ra, "max_grpc_timeout"); t != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("max_grpc_timeout %s (deprecated): a gRPC call's grpc-timeout header sets the timeout instead", r.Str(t)))
	}

	rp, hp, from := r.field(ra, "retry_policy"), r.field(ra, "hedge_policy"), ""
	if rp == nil && vh.retryPolicy != nil {
		rp, from = vh.retryPolicy, vh.name
	}
	if hp == nil {
		hp = vh.hedgePolicy
	}
	r.retries(&o, rp, hp, from)
	r.Add(o)
}

// routeMatch reads a route's match: its path condition, its :method
// header, and notes for the conditions it does not model.
func (r *envoyReader) routeMatch(n *yaml.Node, o *target.Object) {
	m := r.field(n, "match")
	ci := r.Str(r.field(m, "case_sensitive")) == "false"
	path := func(kind, v string) {
		o.Matches = append(o.Matches, target.Match{Kind: kind, Value: v, CaseInsensitive: ci})
	}
	switch {
	case r.field(m, "prefix") != nil:
		path(target.MatchPrefix, r.Str(r.field(m, "prefix")))
	case r.field(m, "path") != nil:
		path(target.MatchExact, r.Str(r.field(m, "path")))
	case r.field(m, "safe_regex") != nil:
		path(target.MatchRegex, r.Str(r.field(r.field(m, "safe_regex"), "regex")))
	case r.field(m, "regex") != nil: // v2
		path(target.MatchRegex, r.Str(r.field(m, "regex")))
	case r.field(m, "path_separated_prefix") != nil:
		path(target.MatchPrefix, r.Str(r.field(m, "path_separated_prefix")))
		o.Notes = append(o.Notes, "path_separated_prefix: the prefix matches only up to a path segment boundary")
	case r.field(m, "path_match_policy") != nil:
		o.Notes = append(o.Notes, "path_match_policy: a URI template match, not modelled")
	case r.field(m, "connect_matcher") != nil:
		o.Notes = append(o.Notes, "connect_matcher: matches CONNECT requests")
	default:
		o.Notes = append(o.Notes, "match has no path condition")
	}
	for _, h := range target.PBItems(r.field(m, "headers")) {
		hname := r.Str(r.field(h, "name"))
		exact := r.Str(r.field(r.field(h, "string_match"), "exact"))
		if exact == "" {
			exact = r.Str(r.field(h, "exact_match"))
		}
		switch {
		case strings.EqualFold(hname, ":method") && exact != "" && r.Str(r.field(h, "invert_match")) != "true":
			o.Matches = append(o.Matches, target.Match{Kind: target.MatchMethod, Value: exact})
		default:
			o.Notes = append(o.Notes, fmt.Sprintf("header %q matched: not modelled", hname))
		}
	}
	if r.field(m, "grpc") != nil {
		o.Notes = append(o.Notes, "match.grpc: only gRPC requests (content-type application/grpc)")
	}
	if r.field(m, "query_parameters") != nil {
		o.Notes = append(o.Notes, "query_parameters matched: not modelled")
	}
	if r.field(m, "runtime_fraction") != nil {
		o.Notes = append(o.Notes, "runtime_fraction: the route takes a share of its requests")
	}
}

// upstream reads the cluster a route action sends to.
func (r *envoyReader) upstream(ra *yaml.Node, o *target.Object) {
	switch {
	case r.field(ra, "cluster") != nil:
		o.Upstream = r.Str(r.field(ra, "cluster"))
	case r.field(ra, "weighted_clusters") != nil:
		var all []string
		for _, c := range target.PBItems(r.field(r.field(ra, "weighted_clusters"), "clusters")) {
			name := r.Str(r.field(c, "name"))
			if o.Upstream == "" {
				o.Upstream = name
			}
			all = append(all, fmt.Sprintf("%s (weight %s)", name, r.Str(r.field(c, "weight"))))
		}
		o.Notes = append(o.Notes, "weighted_clusters: "+strings.Join(all, ", ")+"; Upstream is the first")
	case r.field(ra, "cluster_header") != nil:
		o.Notes = append(o.Notes, fmt.Sprintf("cluster_header %q: the request names its cluster", r.Str(r.field(ra, "cluster_header"))))
	default:
		o.Notes = append(o.Notes, "the cluster is chosen by a plugin: not modelled")
	}
}

// envoyNeverSentConds are the retry_on conditions that prove the request
// never reached the upstream: retrying them repeats nothing.
var envoyNeverSentConds = []string{"connect-failure", "refused-stream", "reset-before-request"}

// retries reads a route's retry policy (from names the virtual host it
// comes from, "" for the route's own) and hedge policy. Without a retry
// policy Envoy makes one attempt. RetryOn holds retry_on's conditions, then
// retriable_status_codes when retry_on has retriable-status-codes.
func (r *envoyReader) retries(o *target.Object, rp, hp *yaml.Node, from string) {
	if !target.PBMapping(rp) {
		o.Attempts = target.Defaulted(1, o.Pos)
		if hp != nil {
			o.Notes = append(o.Notes, "hedge_policy without a retry_policy: Envoy sends no hedge")
		}
		return
	}
	if from != "" {
		o.Notes = append(o.Notes, fmt.Sprintf("retry_policy of virtual host %q (line %d): the route has none of its own", from, rp.Line))
	}
	if nr := r.field(rp, "num_retries"); nr != nil {
		if v, ok := r.Uint(nr, "num_retries", math.MaxUint32); ok {
			o.Attempts = target.Set(int(v)+1, r.Pos(nr), nr.Value)
		}
	} else {
		o.Attempts = target.Defaulted(envoyNumRetries+1, o.Pos)
	}
	var retryOnPos target.Pos
	var retryOnRaw string
	if ro := r.field(rp, "retry_on"); ro != nil {
		retryOnPos, retryOnRaw = r.Pos(ro), r.Str(ro)
		var conds []string
		for _, c := range strings.Split(retryOnRaw, ",") {
			if c = strings.TrimSpace(c); c != "" {
				conds = append(conds, c)
			}
		}
		var codes []string
		for _, c := range target.PBItems(r.field(rp, "retriable_status_codes")) {
			if v, ok := r.Uint(c, "retriable_status_codes", 999); ok {
				codes = append(codes, strconv.FormatUint(v, 10))
			}
		}
		switch {
		case slices.Contains(conds, "retriable-status-codes"):
			if len(codes) == 0 {
				o.Notes = append(o.Notes, "retry_on retriable-status-codes without retriable_status_codes: no status is retried")
			}
			conds = append(conds, codes...)
		case len(codes) > 0:
			o.Notes = append(o.Notes, "retriable_status_codes without retriable-status-codes in retry_on: Envoy ignores them")
		}
		if slices.Contains(conds, "retriable-headers") {
			o.Notes = append(o.Notes, "retry_on retriable-headers depends on response headers the data does not have")
		}
		o.RetryOn = target.Set(conds, retryOnPos, retryOnRaw)
		if o.Attempts != nil && o.Attempts.Value > 1 {
			o.RetryNonIdempotent = target.Set(envoyRisky(conds) && !envoyIdempotentOnly(o.Matches), retryOnPos, retryOnRaw)
		}
	} else {
		o.Notes = append(o.Notes, "retry_policy without retry_on: Envoy retries nothing unless a request sends x-envoy-retry-on")
	}
	if t := r.field(rp, "per_try_timeout"); t != nil {
		if v, raw, ok := r.Duration(t, "per_try_timeout"); ok {
			o.PerTryTimeout = target.Set(v, r.Pos(t), raw)
			if o.Timeout != nil && o.Timeout.Value > 0 && v >= o.Timeout.Value {
				o.Notes = append(o.Notes, "per_try_timeout is not below the route timeout: Envoy ignores it")
			}
		}
	}
	if t := r.field(rp, "per_try_idle_timeout"); t != nil {
		o.Notes = append(o.Notes, fmt.Sprintf("per_try_idle_timeout %s: an attempt with no response bytes for that long is retried", r.Str(t)))
	}
	r.backoff(o, rp)
	o.Jitter = "full"
	r.rateLimitedBackoff(o, r.field(rp, "rate_limited_retry_back_off"))
	if r.field(rp, "retriable_request_headers") != nil {
		o.Notes = append(o.Notes, "retriable_request_headers: only requests with those headers are retried")
	}
	r.hedge(o, hp)
}

// envoyRisky reports whether retry conditions may repeat a request the
// upstream has applied: any but the never-sent ones.
func envoyRisky(conds []string) bool {
	for _, c := range conds {
		if !slices.Contains(envoyNeverSentConds, c) {
			return true
		}
	}
	return false
}

// envoyIdempotentOnly reports whether a route matches idempotent methods
// alone.
func envoyIdempotentOnly(ms []target.Match) bool {
	seen := false
	for _, m := range ms {
		if m.Kind == target.MatchMethod {
			if !slices.Contains(envoyIdempotent, strings.ToUpper(m.Value)) {
				return false
			}
			seen = true
		}
	}
	return seen
}

// envoyRetryAfterMax is RateLimitedRetryBackOff.max_interval's default,
// seconds.
const envoyRetryAfterMax = 300

// rateLimitedBackoff reads rate_limited_retry_back_off (RetryPolicy,
// route_components.proto): a reset header named Retry-After (matched case
// insensitive) in SECONDS makes Envoy wait what it says, jittered to 1 to
// 1.5 x, unless it exceeds max_interval (300s by default): then the header
// is discarded and the exponential backoff applies. An HTTP-date is not
// read (SECONDS is an integer).
func (r *envoyReader) rateLimitedBackoff(o *target.Object, rl *yaml.Node) {
	if rl == nil {
		return
	}
	o.Notes = append(o.Notes, "rate_limited_retry_back_off: a Retry-After or reset header replaces the backoff")
	honoured := false
	for _, h := range target.PBItems(r.field(rl, "reset_headers")) {
		f := r.field(h, "format")
		if strings.EqualFold(r.Str(r.field(h, "name")), "retry-after") && (f == nil || r.Str(f) == "SECONDS" || r.Str(f) == "0") {
			honoured = true
		}
	}
	if !honoured {
		return
	}
	o.RetryAfterMax = target.Defaulted(float64(envoyRetryAfterMax), o.Pos)
	if m := r.field(rl, "max_interval"); m != nil {
		if v, raw, ok := r.Duration(m, "max_interval"); ok {
			o.RetryAfterMax = target.Set(v, r.Pos(m), raw)
		}
	}
}

// backoff reads retry_back_off: base_interval is required and above 0,
// max_interval defaults to 10 x base and may not be below it (Envoy
// refuses the route); without retry_back_off, 25 ms and 250 ms.
func (r *envoyReader) backoff(o *target.Object, rp *yaml.Node) {
	bo := r.field(rp, "retry_back_off")
	if !target.PBMapping(bo) {
		o.BackoffBase = target.Defaulted(envoyBackoffBase, o.Pos)
		o.BackoffMax = target.Defaulted(envoyBackoffBase*envoyBackoffFactor, o.Pos)
		return
	}
	b := r.field(bo, "base_interval")
	if b == nil {
		r.Fail(bo, "retry_back_off has no base_interval: Envoy requires one")
		return
	}
	base, raw, ok := r.Duration(b, "base_interval")
	if !ok {
		return
	}
	if base <= 0 {
		r.Fail(b, "field %q: %q: Envoy needs a base_interval above 0", "base_interval", raw)
		return
	}
	o.BackoffBase = target.Set(base, r.Pos(b), raw)
	m := r.field(bo, "max_interval")
	if m == nil {
		o.BackoffMax = target.Defaulted(base*envoyBackoffFactor, o.Pos)
		return
	}
	maxi, mraw, ok := r.Duration(m, "max_interval")
	if !ok {
		return
	}
	if maxi < base {
		r.Fail(m, "field %q: %q is below base_interval %q: Envoy refuses the route", "max_interval", mraw, raw)
		return
	}
	o.BackoffMax = target.Set(maxi, r.Pos(m), mraw)
}

// hedge reads a hedge policy. With hedge_on_per_try_timeout an attempt
// that reaches its per_try_timeout is not cancelled: Envoy sends another
// beside it, up to num_retries+1 in all, and the first good answer wins;
// the per-try timeout is then the hedge delay, not a bound on an attempt.
// initial_requests and additional_request_chance Envoy does not implement.
func (r *envoyReader) hedge(o *target.Object, hp *yaml.Node) {
	if !target.PBMapping(hp) {
		return
	}
	if n := r.field(hp, "initial_requests"); n != nil && r.Str(n) != "1" {
		o.Notes = append(o.Notes, fmt.Sprintf("hedge_policy initial_requests %s: not implemented by Envoy", r.Str(n)))
	}
	if r.field(hp, "additional_request_chance") != nil {
		o.Notes = append(o.Notes, "hedge_policy additional_request_chance: not implemented by Envoy")
	}
	if r.Str(r.field(hp, "hedge_on_per_try_timeout")) != "true" {
		return
	}
	if o.PerTryTimeout == nil {
		o.Notes = append(o.Notes, "hedge_on_per_try_timeout without a per_try_timeout: Envoy sends no hedge")
		return
	}
	o.HedgeDelay, o.PerTryTimeout = o.PerTryTimeout, nil
	if o.Attempts != nil {
		a := *o.Attempts
		o.HedgeAttempts = &a
	}
	o.Notes = append(o.Notes, "hedge_on_per_try_timeout: an attempt unanswered after per_try_timeout is not cancelled; Envoy sends another beside it, up to num_retries+1 in all, and the route timeout ends them all")
}

// cluster reads a cluster: its connect_timeout, and the circuit breaker
// thresholds of priority DEFAULT (the requests of priority HIGH have their
// own): max_requests, the retry budget or max_retries.
func (r *envoyReader) cluster(n *yaml.Node) {
	name := r.Str(r.field(n, "name"))
	if name == "" {
		name = "cluster"
	}
	o := target.Object{Target: "envoy", Kind: "cluster", Name: name, Pos: r.Pos(n)}
	if t := r.field(n, "connect_timeout"); t != nil {
		if v, raw, ok := r.Duration(t, "connect_timeout"); ok {
			if v <= 0 {
				r.Fail(t, "field %q: %q: Envoy needs a connect_timeout above 0", "connect_timeout", raw)
			} else {
				o.ConnectTimeout = target.Set(v, r.Pos(t), raw)
			}
		}
	} else {
		o.ConnectTimeout = target.Defaulted(envoyConnectTimeout, o.Pos)
	}
	var th *yaml.Node
	for _, t := range target.PBItems(r.field(r.field(n, "circuit_breakers"), "thresholds")) {
		if p := r.Str(r.field(t, "priority")); p == "" || strings.EqualFold(p, "DEFAULT") || p == "0" { // Envoy reads enums in any case
			th = t
			break
		}
	}
	if mr := r.field(th, "max_requests"); mr != nil {
		if v, ok := r.Uint(mr, "max_requests", math.MaxUint32); ok {
			o.MaxInFlight = target.Set(int(v), r.Pos(mr), mr.Value)
		}
	} else {
		o.MaxInFlight = target.Defaulted(envoyMaxRequests, o.Pos)
	}
	for _, f := range []string{"max_connections", "max_pending_requests"} {
		if v := r.field(th, f); v != nil {
			o.Notes = append(o.Notes, fmt.Sprintf("%s %s", f, r.Str(v)))
		}
	}
	rb := r.field(th, "retry_budget")
	if !target.PBMapping(rb) {
		if mr := r.field(th, "max_retries"); mr != nil {
			o.Notes = append(o.Notes, fmt.Sprintf("max_retries %s: at most that many retries outstanding at once to the cluster", r.Str(mr)))
		} else {
			o.Notes = append(o.Notes, fmt.Sprintf("max_retries %d (Envoy's default): at most that many retries outstanding at once to the cluster", envoyMaxRetries))
		}
		r.Add(o)
		return
	}
	if v := r.field(r.field(rb, "budget_percent"), "value"); v != nil {
		p, err := strconv.ParseFloat(r.Str(v), 64)
		if err != nil || v.Kind != yaml.ScalarNode || math.IsNaN(p) || p < 0 || p > 100 {
			r.Fail(v, "field %q: %q is not a percentage from 0 to 100", "budget_percent", r.Str(v))
		} else {
			o.RetryBudget = target.Set(p/100, r.Pos(v), r.Str(v))
		}
	} else {
		o.RetryBudget = target.Defaulted(envoyBudgetPercent/100, o.Pos)
	}
	mrc := strconv.Itoa(envoyMinRetryConcurrency) + " (Envoy's default)"
	if v := r.field(rb, "min_retry_concurrency"); v != nil {
		mrc = r.Str(v)
	}
	o.Notes = append(o.Notes, "retry_budget: retries outstanding at once are at most budget_percent of the active requests, and at least min_retry_concurrency "+mrc+"; it replaces max_retries")
	r.Add(o)
}
