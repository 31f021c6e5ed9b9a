package target

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
)

// Kubernetes manifests, shared by the readers of the targets configured
// with Kubernetes resources (Istio, Gateway API, Linkerd): a stream of
// documents as kubectl, Helm and Kustomize print them, "---" between
// documents, "kind: List" holding items, comments anywhere. Each reader
// takes the resources of its own API group from a stream and leaves the
// rest, so that one file of mixed resources is read by all of them.

// kubeObject is one resource of a manifest stream.
type KubeObject struct {
	File       string
	Node       *yaml.Node // the resource's mapping
	APIVersion string     // as written: "networking.istio.io/v1"
	Group      string     // "networking.istio.io"; "" for the core group ("v1")
	Version    string     // "v1"
	Kind       string
	Name       string // metadata.name
	Namespace  string // metadata.namespace; "" when the manifest leaves it to kubectl -n
	Pos        Pos    // the line the resource starts on
	// budget is the run's: what an object repeats from its resource (each
	// host of a VirtualService in each of its routes) is taken from it.
	Budget *budget.Budget
}

// qualified is the resource's name as kubectl shows it with -A:
// "namespace/name", or the bare name when the manifest sets no namespace
// (which kubectl then takes from -n or the context).
func (o KubeObject) Qualified() string {
	name := o.Name
	if name == "" {
		name = fmt.Sprintf("(%s without a name, line %d)", o.Kind, o.Pos.Line)
	}
	if o.Namespace == "" {
		return name
	}
	return o.Namespace + "/" + name
}

// kubeMaxListDepth bounds Lists inside Lists: kubectl prints one level.
const kubeMaxListDepth = 4

// kubeObjects returns the resources of a manifest stream in the order they
// appear, the items of a List ("kind: List", or any *List kind with items)
// in place of the List. Documents that are not mappings, or have no
// apiVersion and kind (a Helm values file, an empty template), are left
// out; a document that is not YAML is an error.
func KubeObjects(b *budget.Budget, file string, data []byte) ([]KubeObject, error) {
	docs, err := YAMLDocuments(b, file, data)
	if err != nil {
		return nil, err
	}
	var out []KubeObject
	for _, d := range docs {
		if out, err = kubeAppend(out, file, d, 0); err != nil {
			return nil, err
		}
	}
	for i := range out {
		out[i].Budget = b
	}
	return out, nil
}

func kubeAppend(out []KubeObject, file string, n *yaml.Node, depth int) ([]KubeObject, error) {
	n = KubeResolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return out, nil
	}
	api, _ := KubeScalar(KubeField(n, "apiVersion"))
	kind, _ := KubeScalar(KubeField(n, "kind"))
	if api == "" || kind == "" {
		return out, nil
	}
	if items := KubeResolve(KubeField(n, "items")); strings.HasSuffix(kind, "List") && items != nil {
		if depth >= kubeMaxListDepth {
			return nil, ErrorAt(NodePos(file, n), "%s inside %d Lists: too deep", kind, depth)
		}
		if items.Kind != yaml.SequenceNode {
			if KubeNull(items) {
				return out, nil
			}
			return nil, ErrorAt(NodePos(file, items), "%s items: want a list", kind)
		}
		var err error
		for _, it := range items.Content {
			if out, err = kubeAppend(out, file, it, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	o := KubeObject{File: file, Node: n, APIVersion: api, Kind: kind, Pos: NodePos(file, n)}
	if i := strings.LastIndexByte(api, '/'); i >= 0 {
		o.Group, o.Version = api[:i], api[i+1:]
	} else {
		o.Version = api
	}
	meta := KubeResolve(KubeField(n, "metadata"))
	o.Name, _ = KubeScalar(KubeField(meta, "name"))
	o.Namespace, _ = KubeScalar(KubeField(meta, "namespace"))
	return append(out, o), nil
}

// kubeResolve follows YAML aliases (*anchor) to the node they name.
func KubeResolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// kubeField returns the value of key in a mapping, aliases followed; nil
// when n is not a mapping or has no such key. A key written twice takes
// its last value, as kubectl's JSON decoding does.
func KubeField(n *yaml.Node, key string) *yaml.Node {
	n = KubeResolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var v *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := KubeResolve(n.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			v = n.Content[i+1]
		}
	}
	v = KubeResolve(v)
	if KubeNull(v) {
		return nil
	}
	return v
}

// kubePath follows a path of keys through nested mappings.
func KubePath(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = KubeField(n, k)
	}
	return n
}

// kubeNull reports whether a node is YAML's null (~, null, or nothing).
func KubeNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// kubeScalar returns a scalar's text.
func KubeScalar(n *yaml.Node) (string, bool) {
	n = KubeResolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return n.Value, true
}

// kubeKeys returns the keys of a mapping in order.
func KubeKeys(n *yaml.Node) []string {
	n = KubeResolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if s, ok := KubeScalar(n.Content[i]); ok {
			keys = append(keys, s)
		}
	}
	return keys
}

// kubeMapping returns n when it is a mapping, nil when it is absent, and
// an error that points at it when it is something else.
func KubeMapping(file string, n *yaml.Node, what string) (*yaml.Node, error) {
	n = KubeResolve(n)
	switch {
	case n == nil || KubeNull(n):
		return nil, nil
	case n.Kind != yaml.MappingNode:
		return nil, ErrorAt(NodePos(file, n), "%s: want a mapping, got %s", what, KubeWhat(n))
	}
	return n, nil
}

// kubeList returns the elements of a sequence, none when it is absent,
// and an error that points at it when it is something else.
func KubeList(file string, n *yaml.Node, what string) ([]*yaml.Node, error) {
	n = KubeResolve(n)
	switch {
	case n == nil || KubeNull(n):
		return nil, nil
	case n.Kind != yaml.SequenceNode:
		return nil, ErrorAt(NodePos(file, n), "%s: want a list, got %s", what, KubeWhat(n))
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		if c = KubeResolve(c); c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// kubeString returns a scalar's text; ok is false when n is absent, and
// the error points at a value that is not a scalar.
func KubeString(file string, n *yaml.Node, what string) (s string, ok bool, err error) {
	n = KubeResolve(n)
	switch {
	case n == nil || KubeNull(n):
		return "", false, nil
	case n.Kind != yaml.ScalarNode:
		return "", false, ErrorAt(NodePos(file, n), "%s: want a value, got %s", what, KubeWhat(n))
	}
	return n.Value, true, nil
}

// kubeStrings returns a list of scalars.
func KubeStrings(file string, n *yaml.Node, what string) ([]string, error) {
	items, err := KubeList(file, n, what)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, it := range items {
		s, ok, err := KubeString(file, it, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// kubeInt reads an integer of the given bit size; JSON's quoted numbers
// ("3") are taken as the protobuf and Kubernetes decoders take them.
func KubeInt(file string, n *yaml.Node, what string, bits int) (v int64, raw string, ok bool, err error) {
	raw, ok, err = KubeString(file, n, what)
	if !ok || err != nil {
		return 0, raw, ok, err
	}
	v, perr := strconv.ParseInt(strings.TrimSpace(raw), 10, bits)
	if perr != nil {
		return 0, raw, false, ErrorAt(NodePos(file, n), "%s %q: not a whole number of %d bits", what, raw, bits)
	}
	return v, raw, true, nil
}

// kubeFloat reads a number.
func KubeFloat(file string, n *yaml.Node, what string) (v float64, raw string, ok bool, err error) {
	raw, ok, err = KubeString(file, n, what)
	if !ok || err != nil {
		return 0, raw, ok, err
	}
	v, perr := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, raw, false, ErrorAt(NodePos(file, n), "%s %q: not a number", what, raw)
	}
	return v, raw, true, nil
}

// kubeBool reads a boolean as JSON has them: true or false.
func KubeBool(file string, n *yaml.Node, what string) (v bool, raw string, ok bool, err error) {
	raw, ok, err = KubeString(file, n, what)
	if !ok || err != nil {
		return false, raw, ok, err
	}
	switch raw {
	case "true", "True", "TRUE":
		return true, raw, true, nil
	case "false", "False", "FALSE":
		return false, raw, true, nil
	}
	return false, raw, false, ErrorAt(NodePos(file, n), "%s %q: want true or false", what, raw)
}

// kubeWhat names a node's kind for messages.
func KubeWhat(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// kubeAnnotations returns the annotations whose keys start with one of
// the prefixes, each value with the node that holds it. Kubernetes takes
// only strings: an unquoted number or boolean (retry.linkerd.io/limit: 3)
// is refused, as the API server refuses it; other annotations are left
// alone.
func KubeAnnotations(o KubeObject, prefixes ...string) (map[string]*yaml.Node, error) {
	n, err := KubeMapping(o.File, KubePath(o.Node, "metadata", "annotations"), "metadata.annotations")
	if n == nil || err != nil {
		return nil, err
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, _ := KubeScalar(n.Content[i])
		wanted := false
		for _, p := range prefixes {
			wanted = wanted || strings.HasPrefix(k, p)
		}
		v := KubeResolve(n.Content[i+1])
		if !wanted || v == nil || KubeNull(v) {
			continue
		}
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "") {
			return nil, ErrorAt(NodePos(o.File, v), "annotation %s: %s is not a string: quote it (annotation values are strings)", k, KubeWhat(v))
		}
		out[k] = v
	}
	return out, nil
}

// kubeGoDuration parses a Go duration (time.ParseDuration): what
// Kubernetes' metav1.Duration takes, what Istio's durations are (its jsonpb
// decoder, github.com/golang/protobuf/jsonpb, parses them with
// time.ParseDuration), and Linkerd's ServiceProfile timeouts.
func KubeGoDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: not a duration (want a number and a unit: 800ms, 1.5s, 1m30s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: negative", s)
	}
	return d, nil
}

// gepDurationRE is GEP-2257's pattern, the CRD's validation of every
// Gateway API duration.
var gepDurationRE = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// gepDuration parses a Gateway API duration (GEP-2257): one to four
// components of one to five digits and a unit of h, m, s or ms, summed
// ("1h30m", "1s500ms", "0s"); no sign, no decimals, no spaces, and a bare
// number is not one. The GEP: match the pattern, then parse as
// time.ParseDuration.
func GEPDuration(s string) (time.Duration, error) {
	if !gepDurationRE.MatchString(s) {
		return 0, fmt.Errorf("%q: not a Gateway API duration (GEP-2257: whole numbers with h, m, s or ms, such as 500ms, 10s, 1h30m)", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return d, nil
}

// kubeFinish readies the objects a Kubernetes reader returns: each
// object's matches without repeats (kubeAppendMatch keeps them), and the
// names made unique.
func KubeFinish(objs []Object) {
	for i := range objs {
		objs[i].Matches = kubeDedupMatches(objs[i].Matches)
	}
	kubeUnique(objs)
}

// kubeDedupMatches drops the repeats of a match, keeping the first of each
// in its place.
func kubeDedupMatches(ms []Match) []Match {
	if len(ms) < 2 {
		return ms
	}
	seen := make(map[Match]bool, len(ms))
	out := ms[:0]
	for _, m := range ms {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// kubeUnique makes the names of objects unique by numbering repeats
// ("default/reviews http[0] #2"): two resources of one kind and name in a
// stream (a List printed twice, two namespaces left to -n) would
// otherwise have one name.
func kubeUnique(objs []Object) {
	var u UniqueNames
	for i := range objs {
		n := objs[i].Name
		objs[i].Name = u.Name(n, func(c int) string { return fmt.Sprintf("%s #%d", n, c) })
	}
}

// kubeDetect reports whether data looks like a Kubernetes manifest (YAML
// or JSON) that holds one of the markers.
func KubeDetect(data []byte, markers ...string) bool {
	if !bytes.Contains(data, []byte("apiVersion")) {
		return false
	}
	for _, m := range markers {
		if bytes.Contains(data, []byte(m)) {
			return true
		}
	}
	return false
}

// kubeIdempotentMethods are the HTTP methods RFC 9110 calls idempotent.
var kubeIdempotentMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "PUT": true, "DELETE": true}

// kubeRetriesNonIdempotent reports whether an object's retries reach requests
// that are not idempotent: it matches no method, or a method that is not
// idempotent (a gRPC method is a POST).
func KubeRetriesNonIdempotent(matches []Match) bool {
	methods := false
	for _, m := range matches {
		if m.Kind != MatchMethod {
			continue
		}
		methods = true
		if !kubeIdempotentMethods[m.Value] {
			return true
		}
	}
	return !methods
}

// kubeRetrySetting is a setting derived from the attempts setting: where the
// attempts come from, and as default as they are.
func KubeRetrySetting[T any](v T, attempts *Setting[int]) *Setting[T] {
	return &Setting[T]{Value: v, Pos: attempts.Pos, Default: attempts.Default}
}

// kubeAppendMatch adds a match. Repeats are dropped once, by kubeFinish,
// when the reader returns: dropping them here, each against all before it,
// took a route of many hosts the square of their number.
func KubeAppendMatch(ms []Match, m Match) []Match {
	return append(ms, m)
}

// gatewayGroup is the Gateway API's group.
const GatewayGroup = "gateway.networking.k8s.io"

// gatewayRule is one rule of an HTTPRoute or GRPCRoute as the Gateway API
// and Linkerd readers see it.
type GatewayRule struct {
	Node     *yaml.Node
	Where    string // "spec.rules[0]"
	name     string // "ns/route rule[0]", or the rule's name
	pos      Pos
	matches  []Match
	upstream string
	notes    []string
}

// object starts the Object of a rule. The rules of the routes of one file
// that send to one backend compete for a request by the Gateway API's
// precedence (Object.Router).
func (r GatewayRule) Object(target, kind string) Object {
	return Object{Target: target, Kind: kind, Name: r.name, Pos: r.pos, Matches: r.matches, Upstream: r.upstream, Notes: append([]string(nil), r.notes...),
		Router: target + " " + r.pos.File + " " + r.upstream}
}

// gatewayRules reads the rules of an HTTPRoute or GRPCRoute (its spec is
// the same in policy.linkerd.io): the matches with the CRD's defaults (a
// rule without matches, or a match without a path, matches PathPrefix
// "/"), spec.hostnames as MatchHost, and the first backendRef as the
// upstream (else the parent Service, as in a mesh).
func GatewayRules(o KubeObject) ([]GatewayRule, error) {
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
	var out []GatewayRule
	for i, rn := range rules {
		r := GatewayRule{Node: rn, Where: fmt.Sprintf("spec.rules[%d]", i), pos: NodePos(f, rn)}
		if rn.Kind != yaml.MappingNode {
			return nil, ErrorAt(r.pos, "%s: want a mapping, got %s", r.Where, KubeWhat(rn))
		}
		name, _, err := KubeString(f, KubeField(rn, "name"), r.Where+".name")
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
		refs, err := KubeList(f, KubeField(rn, "backendRefs"), r.Where+".backendRefs")
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

// gatewayDurationSetting reads a Gateway API duration into a setting in
// seconds; nil when absent.
func GatewayDurationSetting(f string, n *yaml.Node, what string) (*Setting[float64], error) {
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

// lkAnnotationPrefixes are the prefixes of Linkerd's timeout and retry
// annotations.
var LinkerdAnnotationPrefixes = []string{"retry.linkerd.io/", "timeout.linkerd.io/"}

// linkerdAnnotated reports whether annotations, as kubeAnnotations returns
// them for lkAnnotationPrefixes, hold Linkerd's timeout or retry
// configuration.
func LinkerdAnnotated(ann map[string]*yaml.Node) bool {
	return len(ann) > 0
}

// gatewayHTTPMatches reads an HTTPRoute rule's matches: the path (type
// PathPrefix unless said, value "/" unless said) and the method; headers
// and query parameters are noted, not modeled.
func gatewayHTTPMatches(r *GatewayRule, f string) error {
	ms, err := KubeList(f, KubeField(r.Node, "matches"), r.Where+".matches")
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
		mw := fmt.Sprintf("%s.matches[%d]", r.Where, j)
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
func gatewayGRPCMatches(r *GatewayRule, f string) error {
	ms, err := KubeList(f, KubeField(r.Node, "matches"), r.Where+".matches")
	if err != nil {
		return err
	}
	var other []string
	for j, m := range ms {
		mw := fmt.Sprintf("%s.matches[%d]", r.Where, j)
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
