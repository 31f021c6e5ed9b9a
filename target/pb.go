package target

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// PBReader is what the readers of protobuf-shaped configs (Envoy's, gRPC's
// service config) share: the objects read, their names made unique, and
// the problems found, each at its line.
type PBReader struct {
	File  string
	Objs  []Object
	names UniqueNames
	errs  []error
}

// Err joins the problems found, nil when none.
func (r *PBReader) Err() error {
	if len(r.errs) == 1 {
		return r.errs[0]
	}
	return errors.Join(r.errs...)
}

// Fail records a value the reader refuses.
func (r *PBReader) Fail(n *yaml.Node, format string, args ...any) {
	if len(r.errs) < envoyMaxErrors {
		r.errs = append(r.errs, ErrorAt(r.Pos(n), format, args...))
	}
}

// Add appends an object, its name made unique.
func (r *PBReader) Add(o Object) {
	base := o.Name
	o.Name = r.names.Name(base, func(i int) string { return fmt.Sprintf("%s (%d)", base, i) })
	r.Objs = append(r.Objs, o)
}

// Pos is where a node stands in the file.
func (r *PBReader) Pos(n *yaml.Node) Pos { return NodePos(r.File, n) }

// PBField returns the value of the first key of a mapping that match
// accepts, following aliases and, after the mapping's own keys, its merge
// keys (<<: *defaults); nil when absent or null.
func PBField(n *yaml.Node, match func(string) bool) *yaml.Node {
	budget := pbMaxMerges
	return pbFieldIn(n, match, &budget)
}

// pbFieldIn is PBField within a budget of merged mappings.
func pbFieldIn(n *yaml.Node, match func(string) bool, budget *int) *yaml.Node {
	n = PBDeref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if match(k.Value) {
			v = PBDeref(v)
			if pbNull(v) {
				return nil
			}
			return v
		}
	}
	for _, m := range merges {
		m = PBDeref(m)
		list := []*yaml.Node{m}
		if m != nil && m.Kind == yaml.SequenceNode {
			list = m.Content
		}
		for _, item := range list {
			if *budget <= 0 {
				return nil
			}
			*budget--
			if v := pbFieldIn(item, match, budget); v != nil {
				return v
			}
		}
	}
	return nil
}

// PBDeref follows aliases to the node they name.
func PBDeref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// pbNull reports whether a node is absent or null.
func pbNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// PBItems returns the items of a sequence, aliases followed; a mapping
// given for a repeated field is its one item, as Envoy's loader takes it.
func PBItems(n *yaml.Node) []*yaml.Node {
	n = PBDeref(n)
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.MappingNode:
		return []*yaml.Node{n}
	case n.Kind != yaml.SequenceNode:
		return nil
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		if c = PBDeref(c); c != nil && !pbNull(c) {
			out = append(out, c)
		}
	}
	return out
}

// Str returns a scalar's text, "" for anything else.
func (r *PBReader) Str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || pbNull(n) {
		return ""
	}
	return n.Value
}

// PBMapping reports whether a node is a mapping.
func PBMapping(n *yaml.Node) bool { return n != nil && n.Kind == yaml.MappingNode }

// Uint reads a whole number of at most max: a JSON or YAML number, or the
// string form proto JSON allows for integers.
func (r *PBReader) Uint(n *yaml.Node, field string, max uint64) (uint64, bool) {
	if n.Kind != yaml.ScalarNode {
		r.Fail(n, "field %q is not a number", field)
		return 0, false
	}
	v, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil {
		if f, ferr := strconv.ParseFloat(n.Value, 64); ferr == nil && f >= 0 && f == math.Trunc(f) && f <= float64(max) {
			v, err = uint64(f), nil
		}
	}
	if err != nil {
		r.Fail(n, "field %q: %q is not a whole number", field, n.Value)
		return 0, false
	}
	if v > max {
		r.Fail(n, "field %q: %d is above %d", field, v, max)
		return 0, false
	}
	return v, true
}

// Duration reads a protobuf Duration, recording a ReadError when it is not
// one.
func (r *PBReader) Duration(n *yaml.Node, field string) (float64, string, bool) {
	v, raw, err := PbDuration(n)
	if err != nil {
		r.Fail(n, "field %q: %v", field, err)
		return 0, raw, false
	}
	return v, raw, true
}

// envoyMaxErrors bounds the problems one read reports.
const envoyMaxErrors = 50

// pbMaxMerges bounds the mappings one field lookup searches through merge
// keys: merges of merges of aliases can name a mapping exponentially often.
const pbMaxMerges = 64

// PbDuration reads a google.protobuf.Duration as Envoy and gRPC configs
// write it: the proto JSON string (PbParseDuration), or the object form
// {seconds, nanos} some YAML configs use. It returns the seconds and the
// value as written.
func PbDuration(n *yaml.Node) (float64, string, error) {
	n = PBDeref(n)
	if n == nil {
		return 0, "", errors.New("no duration")
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!int" || n.Tag == "!!float" {
			return 0, n.Value, fmt.Errorf("%s is not a duration: a proto JSON duration is a string of seconds with an \"s\", as %q", n.Value, n.Value+"s")
		}
		v, err := PbParseDuration(n.Value)
		return v, n.Value, err
	case yaml.MappingNode:
		var sec, nanos int64
		var parts []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, PBDeref(n.Content[i+1])
			if v == nil || v.Kind != yaml.ScalarNode {
				return 0, "", fmt.Errorf("duration field %q is not a number", k)
			}
			x, err := strconv.ParseInt(v.Value, 10, 64)
			switch {
			case err != nil:
				return 0, "", fmt.Errorf("duration field %q: %q is not a whole number", k, v.Value)
			case k == "seconds" && (x < 0 || x > pbMaxSeconds):
				return 0, "", fmt.Errorf("duration seconds %d is outside 0 to %d", x, int64(pbMaxSeconds))
			case k == "seconds":
				sec = x
			case k == "nanos" && (x < 0 || x > 999_999_999):
				return 0, "", fmt.Errorf("duration nanos %d is outside 0 to 999999999", x)
			case k == "nanos":
				nanos = x
			default:
				return 0, "", fmt.Errorf("duration has a field %q: only seconds and nanos", k)
			}
			parts = append(parts, k+": "+v.Value)
		}
		return float64(sec) + float64(nanos)/1e9, "{" + strings.Join(parts, ", ") + "}", nil
	}
	return 0, "", errors.New("not a duration")
}

// PbParseDuration parses a proto JSON duration as protojson does: optional
// "+", whole seconds without leading zeros, at most nine decimals, then
// "s" ("0.25s", "15s", ".01s", "1.5s", "0.000000001s"); at most 10,000
// years. A negative duration is refused: no timeout, backoff or delay may
// be one.
func PbParseDuration(s string) (float64, error) {
	bad := func(why string) error {
		return fmt.Errorf("%q is not a duration: %s (a proto JSON duration is seconds with an \"s\", as \"1.5s\")", s, why)
	}
	body, ok := strings.CutSuffix(s, "s")
	if !ok {
		return 0, bad("it does not end in s")
	}
	if strings.HasPrefix(body, "-") {
		return 0, bad("it is negative")
	}
	body = strings.TrimPrefix(body, "+")
	whole, frac, dot := strings.Cut(body, ".")
	digits := func(x string) bool {
		for _, c := range x {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	switch {
	case whole == "" && frac == "":
		return 0, bad("it has no digits")
	case !digits(whole) || !digits(frac):
		return 0, bad("it is not a number of seconds")
	case len(whole) > 1 && whole[0] == '0':
		return 0, bad("it has a leading zero")
	case dot && len(frac) > 9:
		return 0, bad("it has more than nine decimals")
	}
	var sec int64
	if whole != "" {
		var err error
		if sec, err = strconv.ParseInt(whole, 10, 64); err != nil || sec > pbMaxSeconds {
			return 0, bad("it is longer than 10,000 years")
		}
	}
	var nanos int64
	if frac != "" {
		n, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		nanos = n
	}
	return float64(sec) + float64(nanos)/1e9, nil
}

// pbMaxSeconds is the longest google.protobuf.Duration, 10,000 years.
const pbMaxSeconds = 315_576_000_000
