// Package kube is the Kubernetes YAML reading the Istio, Linkerd and Gateway
// API targets share: objects of a stream or a List, their fields with
// positions, and the Gateway API rules Linkerd reads too.
package kube

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
	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/target"
)

// Kubernetes manifests, shared by the readers of the targets configured
// with Kubernetes resources (Istio, Gateway API, Linkerd): a stream of
// documents as kubectl, Helm and Kustomize print them, "---" between
// documents, "kind: List" holding items, comments anywhere. Each reader
// takes the resources of its own API group from a stream and leaves the
// rest, so that one file of mixed resources is read by all of them.

// Object is one resource of a manifest stream.
type Object struct {
	File       string
	Node       *yaml.Node // the resource's mapping
	APIVersion string     // as written: "networking.istio.io/v1"
	Group      string     // "networking.istio.io"; "" for the core group ("v1")
	Version    string     // "v1"
	Kind       string
	Name       string     // metadata.name
	Namespace  string     // metadata.namespace; "" when the manifest leaves it to kubectl -n
	Pos        target.Pos // the line the resource starts on
	// budget is the run's: what an object repeats from its resource (each
	// host of a VirtualService in each of its routes) is taken from it.
	Budget *budget.Budget
}

// Qualified is the resource's name as kubectl shows it with -A:
// "namespace/name", or the bare name when the manifest sets no namespace
// (which kubectl then takes from -n or the context).
func (o Object) Qualified() string {
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

// Objects returns the resources of a manifest stream in the order they
// appear, the items of a List ("kind: List", or any *List kind with items)
// in place of the List. Documents that are not mappings, or have no
// apiVersion and kind (a Helm values file, an empty template), are left
// out; a document that is not YAML is an error.
func Objects(b *budget.Budget, file string, data []byte) ([]Object, error) {
	docs, err := target.YAMLDocuments(b, file, data)
	if err != nil {
		return nil, err
	}
	var out []Object
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

func kubeAppend(out []Object, file string, n *yaml.Node, depth int) ([]Object, error) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return out, nil
	}
	api, _ := Scalar(Field(n, "apiVersion"))
	kind, _ := Scalar(Field(n, "kind"))
	if api == "" || kind == "" {
		return out, nil
	}
	if items := Resolve(Field(n, "items")); strings.HasSuffix(kind, "List") && items != nil {
		if depth >= kubeMaxListDepth {
			return nil, target.ErrorAt(target.NodePos(file, n), "%s inside %d Lists: too deep", kind, depth)
		}
		if items.Kind != yaml.SequenceNode {
			if Null(items) {
				return out, nil
			}
			return nil, target.ErrorAt(target.NodePos(file, items), "%s items: want a list", kind)
		}
		var err error
		for _, it := range items.Content {
			if out, err = kubeAppend(out, file, it, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	o := Object{File: file, Node: n, APIVersion: api, Kind: kind, Pos: target.NodePos(file, n)}
	if i := strings.LastIndexByte(api, '/'); i >= 0 {
		o.Group, o.Version = api[:i], api[i+1:]
	} else {
		o.Version = api
	}
	meta := Resolve(Field(n, "metadata"))
	o.Name, _ = Scalar(Field(meta, "name"))
	o.Namespace, _ = Scalar(Field(meta, "namespace"))
	return append(out, o), nil
}

// Resolve follows YAML aliases (*anchor) to the node they name.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// Field returns the value of key in a mapping, aliases followed; nil
// when n is not a mapping or has no such key. A key written twice takes
// its last value, as kubectl's JSON decoding does.
func Field(n *yaml.Node, key string) *yaml.Node {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var v *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := Resolve(n.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			v = n.Content[i+1]
		}
	}
	v = Resolve(v)
	if Null(v) {
		return nil
	}
	return v
}

// Path follows a path of keys through nested mappings.
func Path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = Field(n, k)
	}
	return n
}

// Null reports whether a node is YAML's null (~, null, or nothing).
func Null(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// Scalar returns a scalar's text.
func Scalar(n *yaml.Node) (string, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return n.Value, true
}

// Keys returns the keys of a mapping in order.
func Keys(n *yaml.Node) []string {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if s, ok := Scalar(n.Content[i]); ok {
			keys = append(keys, s)
		}
	}
	return keys
}

// Mapping returns n when it is a mapping, nil when it is absent, and
// an error that points at it when it is something else.
func Mapping(file string, n *yaml.Node, what string) (*yaml.Node, error) {
	n = Resolve(n)
	switch {
	case n == nil || Null(n):
		return nil, nil
	case n.Kind != yaml.MappingNode:
		return nil, target.ErrorAt(target.NodePos(file, n), "%s: want a mapping, got %s", what, What(n))
	}
	return n, nil
}

// List returns the elements of a sequence, none when it is absent,
// and an error that points at it when it is something else.
func List(file string, n *yaml.Node, what string) ([]*yaml.Node, error) {
	n = Resolve(n)
	switch {
	case n == nil || Null(n):
		return nil, nil
	case n.Kind != yaml.SequenceNode:
		return nil, target.ErrorAt(target.NodePos(file, n), "%s: want a list, got %s", what, What(n))
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		if c = Resolve(c); c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// String returns a scalar's text; ok is false when n is absent, and
// the error points at a value that is not a scalar.
func String(file string, n *yaml.Node, what string) (s string, ok bool, err error) {
	n = Resolve(n)
	switch {
	case n == nil || Null(n):
		return "", false, nil
	case n.Kind != yaml.ScalarNode:
		return "", false, target.ErrorAt(target.NodePos(file, n), "%s: want a value, got %s", what, What(n))
	}
	return n.Value, true, nil
}

// Strings returns a list of scalars.
func Strings(file string, n *yaml.Node, what string) ([]string, error) {
	items, err := List(file, n, what)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, it := range items {
		s, ok, err := String(file, it, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// Int reads an integer of the given bit size; JSON's quoted numbers
// ("3") are taken as the protobuf and Kubernetes decoders take them.
func Int(file string, n *yaml.Node, what string, bits int) (v int64, raw string, ok bool, err error) {
	raw, ok, err = String(file, n, what)
	if !ok || err != nil {
		return 0, raw, ok, err
	}
	v, perr := strconv.ParseInt(strings.TrimSpace(raw), 10, bits)
	if perr != nil {
		return 0, raw, false, target.ErrorAt(target.NodePos(file, n), "%s %q: not a whole number of %d bits", what, raw, bits)
	}
	return v, raw, true, nil
}

// Float reads a number.
func Float(file string, n *yaml.Node, what string) (v float64, raw string, ok bool, err error) {
	raw, ok, err = String(file, n, what)
	if !ok || err != nil {
		return 0, raw, ok, err
	}
	v, perr := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, raw, false, target.ErrorAt(target.NodePos(file, n), "%s %q: not a number", what, raw)
	}
	return v, raw, true, nil
}

// Bool reads a boolean as JSON has them: true or false.
func Bool(file string, n *yaml.Node, what string) (v bool, raw string, ok bool, err error) {
	raw, ok, err = String(file, n, what)
	if !ok || err != nil {
		return false, raw, ok, err
	}
	switch raw {
	case "true", "True", "TRUE":
		return true, raw, true, nil
	case "false", "False", "FALSE":
		return false, raw, true, nil
	}
	return false, raw, false, target.ErrorAt(target.NodePos(file, n), "%s %q: want true or false", what, raw)
}

// What names a node's kind for messages.
func What(n *yaml.Node) string {
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

// Annotations returns the annotations whose keys start with one of
// the prefixes, each value with the node that holds it. Kubernetes takes
// only strings: an unquoted number or boolean (retry.linkerd.io/limit: 3)
// is refused, as the API server refuses it; other annotations are left
// alone.
func Annotations(o Object, prefixes ...string) (map[string]*yaml.Node, error) {
	n, err := Mapping(o.File, Path(o.Node, "metadata", "annotations"), "metadata.annotations")
	if n == nil || err != nil {
		return nil, err
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, _ := Scalar(n.Content[i])
		wanted := false
		for _, p := range prefixes {
			wanted = wanted || strings.HasPrefix(k, p)
		}
		v := Resolve(n.Content[i+1])
		if !wanted || v == nil || Null(v) {
			continue
		}
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "") {
			return nil, target.ErrorAt(target.NodePos(o.File, v), "annotation %s: %s is not a string: quote it (annotation values are strings)", k, What(v))
		}
		out[k] = v
	}
	return out, nil
}

// GoDuration parses a Go duration (time.ParseDuration): what
// Kubernetes' metav1.Duration takes, what Istio's durations are (its jsonpb
// decoder, github.com/golang/protobuf/jsonpb, parses them with
// time.ParseDuration), and Linkerd's ServiceProfile timeouts.
func GoDuration(s string) (time.Duration, error) {
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

// GEPDuration parses a Gateway API duration (GEP-2257): one to four
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

// Finish readies the objects a Kubernetes reader returns: each
// object's matches without repeats (AppendMatch keeps them), and the
// names made unique.
func Finish(objs []target.Object) {
	for i := range objs {
		objs[i].Matches = kubeDedupMatches(objs[i].Matches)
	}
	kubeUnique(objs)
}

// kubeDedupMatches drops the repeats of a match, keeping the first of each
// in its place.
func kubeDedupMatches(ms []target.Match) []target.Match {
	if len(ms) < 2 {
		return ms
	}
	seen := make(map[target.Match]bool, len(ms))
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
func kubeUnique(objs []target.Object) {
	var u target.UniqueNames
	for i := range objs {
		n := objs[i].Name
		objs[i].Name = u.Name(n, func(c int) string { return fmt.Sprintf("%s #%d", n, c) })
	}
}

// Detect reports whether data looks like a Kubernetes manifest (YAML
// or JSON) that holds one of the markers.
func Detect(data []byte, markers ...string) bool {
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

// RetriesNonIdempotent reports whether an object's retries reach requests
// that are not idempotent: it matches no method, or a method that is not
// idempotent (a gRPC method is a POST).
func RetriesNonIdempotent(matches []target.Match) bool {
	methods := false
	for _, m := range matches {
		if m.Kind != target.MatchMethod {
			continue
		}
		methods = true
		if !kubeIdempotentMethods[m.Value] {
			return true
		}
	}
	return !methods
}

// RetrySetting is a setting derived from the attempts setting: where the
// attempts come from, and as default as they are.
func RetrySetting[T any](v T, attempts *target.Setting[int]) *target.Setting[T] {
	return &target.Setting[T]{Value: v, Pos: attempts.Pos, Default: attempts.Default}
}

// AppendMatch adds a match. Repeats are dropped once, by Finish,
// when the reader returns: dropping them here, each against all before it,
// took a route of many hosts the square of their number.
func AppendMatch(ms []target.Match, m target.Match) []target.Match {
	return append(ms, m)
}

// GatewayGroup is the Gateway API's group.
const GatewayGroup = "gateway.networking.k8s.io"

// GatewayRule is one rule of an HTTPRoute or GRPCRoute as the Gateway API
// and Linkerd readers see it.
type GatewayRule struct {
	Node     *yaml.Node
	Where    string // "spec.rules[0]"
	name     string // "ns/route rule[0]", or the rule's name
	pos      target.Pos
	matches  []target.Match
	upstream string
	notes    []string
}

// Object starts the Object of a rule. The rules of the routes of one file
// that send to one backend compete for a request by the Gateway API's
// precedence (Object.Router).
func (r GatewayRule) Object(name, kind string) target.Object {
	return target.Object{Target: name, Kind: kind, Name: r.name, Pos: r.pos, Matches: r.matches, Upstream: r.upstream, Notes: append([]string(nil), r.notes...),
		Router: name + " " + r.pos.File + " " + r.upstream}
}

// GatewayRules reads the rules of an HTTPRoute or GRPCRoute (its spec is
// the same in policy.linkerd.io): the matches with the CRD's defaults (a
// rule without matches, or a match without a path, matches PathPrefix
// "/"), spec.hostnames as MatchHost, and the first backendRef as the
// upstream (else the parent Service, as in a mesh).
func GatewayRules(o Object) ([]GatewayRule, error) {
	f := o.File
	spec, err := Mapping(f, Field(o.Node, "spec"), "spec")
	if err != nil {
		return nil, err
	}
	hostnames, err := Strings(f, Field(spec, "hostnames"), "spec.hostnames")
	if err != nil {
		return nil, err
	}
	parent := ""
	parents, err := List(f, Field(spec, "parentRefs"), "spec.parentRefs")
	if err != nil {
		return nil, err
	}
	for _, p := range parents {
		if k, _ := Scalar(Field(p, "kind")); k == "Service" && parent == "" {
			parent, _ = Scalar(Field(p, "name"))
		}
	}
	rules, err := List(f, Field(spec, "rules"), "spec.rules")
	if err != nil {
		return nil, err
	}
	grpc := o.Kind == "GRPCRoute"
	var out []GatewayRule
	for i, rn := range rules {
		r := GatewayRule{Node: rn, Where: fmt.Sprintf("spec.rules[%d]", i), pos: target.NodePos(f, rn)}
		if rn.Kind != yaml.MappingNode {
			return nil, target.ErrorAt(r.pos, "%s: want a mapping, got %s", r.Where, What(rn))
		}
		name, _, err := String(f, Field(rn, "name"), r.Where+".name")
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = fmt.Sprintf("rule[%d]", i)
		}
		r.name = strings.TrimSpace(o.Qualified() + " " + name)
		if err := o.Budget.Nodes(int64(len(hostnames)), "hostnames repeated in the rules of routes"); err != nil {
			return nil, target.ErrorAt(r.pos, "%w", err)
		}
		for _, h := range hostnames {
			r.matches = AppendMatch(r.matches, target.Match{Kind: target.MatchHost, Value: h})
		}
		if grpc {
			err = gatewayGRPCMatches(&r, f)
		} else {
			err = gatewayHTTPMatches(&r, f)
		}
		if err != nil {
			return nil, err
		}
		refs, err := List(f, Field(rn, "backendRefs"), r.Where+".backendRefs")
		if err != nil {
			return nil, err
		}
		for _, b := range refs {
			if n, ok := Scalar(Field(b, "name")); ok {
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

// GatewayDurationSetting reads a Gateway API duration into a setting in
// seconds; nil when absent.
func GatewayDurationSetting(f string, n *yaml.Node, what string) (*target.Setting[float64], error) {
	raw, ok, err := String(f, n, what)
	if !ok || err != nil {
		return nil, err
	}
	d, err := GEPDuration(raw)
	if err != nil {
		return nil, target.ErrorAt(target.NodePos(f, n), "%s %v", what, err)
	}
	return target.Set(d.Seconds(), target.NodePos(f, n), raw), nil
}

// LinkerdAnnotationPrefixes are the prefixes of Linkerd's timeout and retry
// annotations.
var LinkerdAnnotationPrefixes = []string{"retry.linkerd.io/", "timeout.linkerd.io/"}

// LinkerdAnnotated reports whether annotations, as Annotations returns
// them for LinkerdAnnotationPrefixes, hold Linkerd's timeout or retry
// configuration.
func LinkerdAnnotated(ann map[string]*yaml.Node) bool {
	return len(ann) > 0
}

// gatewayHTTPMatches reads an HTTPRoute rule's matches: the path (type
// PathPrefix unless said, value "/" unless said) and the method; headers
// and query parameters are noted, not modeled.
func gatewayHTTPMatches(r *GatewayRule, f string) error {
	ms, err := List(f, Field(r.Node, "matches"), r.Where+".matches")
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		r.matches = AppendMatch(r.matches, target.Match{Kind: target.MatchPrefix, Value: "/"})
		return nil
	}
	var other []string
	methods := 0
	for j, m := range ms {
		mw := fmt.Sprintf("%s.matches[%d]", r.Where, j)
		if _, err := Mapping(f, m, mw); err != nil {
			return err
		}
		p, err := Mapping(f, Field(m, "path"), mw+".path")
		if err != nil {
			return err
		}
		typ, _, err := String(f, Field(p, "type"), mw+".path.type")
		if err != nil {
			return err
		}
		value, ok, err := String(f, Field(p, "value"), mw+".path.value")
		if err != nil {
			return err
		}
		if !ok {
			value = "/"
		}
		var kind string
		switch typ {
		case "", "PathPrefix":
			kind = target.MatchPrefix
		case "Exact":
			kind = target.MatchExact
		case "RegularExpression":
			kind = target.MatchRegex
		default:
			return target.ErrorAt(target.NodePos(f, Field(p, "type")), "%s.path.type %q: want PathPrefix, Exact or RegularExpression", mw, typ)
		}
		r.matches = AppendMatch(r.matches, target.Match{Kind: kind, Value: value})
		method, ok, err := String(f, Field(m, "method"), mw+".method")
		if err != nil {
			return err
		}
		if ok {
			if !names.IsHTTPMethod(method) {
				return target.ErrorAt(target.NodePos(f, Field(m, "method")), "%s.method %q: not an HTTP method the CRD takes (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH)", mw, method)
			}
			r.matches = AppendMatch(r.matches, target.Match{Kind: target.MatchMethod, Value: method})
			methods++
		}
		for _, k := range Keys(m) {
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
	ms, err := List(f, Field(r.Node, "matches"), r.Where+".matches")
	if err != nil {
		return err
	}
	var other []string
	for j, m := range ms {
		mw := fmt.Sprintf("%s.matches[%d]", r.Where, j)
		if _, err := Mapping(f, m, mw); err != nil {
			return err
		}
		mm, err := Mapping(f, Field(m, "method"), mw+".method")
		if err != nil {
			return err
		}
		if mm != nil {
			typ, _ := Scalar(Field(mm, "type"))
			svc, _ := Scalar(Field(mm, "service"))
			method, _ := Scalar(Field(mm, "method"))
			switch {
			case typ != "" && typ != "Exact":
				other = append(other, fmt.Sprintf("method type %s (%s/%s)", typ, svc, method))
			case svc != "" && method != "":
				r.matches = AppendMatch(r.matches, target.Match{Kind: target.MatchMethod, Value: svc + "/" + method})
			case svc != "":
				r.matches = AppendMatch(r.matches, target.Match{Kind: target.MatchMethod, Value: svc})
			case method != "":
				other = append(other, "method "+method+" of any service")
			default:
				return target.ErrorAt(target.NodePos(f, mm), "%s.method: neither service nor method (the CRD requires one)", mw)
			}
		}
		for _, k := range Keys(m) {
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
