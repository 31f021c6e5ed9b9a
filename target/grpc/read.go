package grpc

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/target"
)

// Reading a gRPC service config (grpc/grpc doc/service_config.md, gRFC A6
// for retries and hedging), as grpc-go 1.85 parses it
// (service_config.go): a JSON object whose keys encoding/json matches
// without regard to case ("MaxAttempts" is maxAttempts), durations in
// proto JSON ("0.8s"), status codes by name or number. Each methodConfig
// is an object; a value grpc-go would refuse the whole config for is a
// ReadError at its line.

// grpcCodeNames are the status codes by number, as a service config names
// them (grpc-go codes.Code's JSON names).
var grpcCodeNames = []string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// grpcJitter is how grpc-go (stream.go) and grpc-java (RetriableStream)
// spread a retry's wait: uniform within 20 % of min(initialBackoff x
// backoffMultiplier^n, maxBackoff), as gRFC A6 now says; the first A6
// said full jitter, uniform from 0.
const grpcJitter = "±20 %"

// grpcUnset is the label of a method config's name {} (every method).
const grpcUnset = "(every method)"

// ReadConfig reads the method configs of a gRPC service config. It returns
// what it could read and every value it refuses, each a ReadError at its
// line, joined in one error.
func ReadConfig(file string, data []byte, _ target.Opener, b *budget.Budget) ([]target.Object, error) {
	body := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(body) == 0 || body[0] != '{' {
		line := 1 + bytes.Count(data[:len(data)-len(body)], []byte("\n"))
		return nil, target.ErrorAt(target.Pos{File: file, Line: line}, "a gRPC service config is a JSON object, {\"methodConfig\": [...]}")
	}
	docs, err := target.YAMLDocuments(target.OrNew(b), file, data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 || docs[0].Kind != yaml.MappingNode {
		return nil, target.ErrorAt(target.Pos{File: file, Line: 1}, "a gRPC service config is one JSON object")
	}
	r := &grpcReader{PBReader: target.PBReader{File: file}, seen: map[string]int{}}
	root := docs[0]
	r.throttling(root)
	mcs := r.field(root, "methodConfig")
	if mcs != nil && mcs.Kind != yaml.SequenceNode {
		r.Fail(mcs, "field %q is not a list", "methodConfig")
	}
	if mcs != nil && mcs.Kind == yaml.SequenceNode {
		for i, mc := range mcs.Content {
			r.methodConfig(target.PBDeref(mc), i)
		}
	}
	return r.Objs, r.Err()
}

// Detect reports whether a file looks like a gRPC service config: a
// JSON object (in a .json file, or one without a name's extension, as
// stdin) with a methodConfig.
func Detect(file string, data []byte) bool {
	if ext := strings.ToLower(filepath.Ext(file)); ext != ".json" && ext != "" {
		return false
	}
	head := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	head = head[:min(len(head), 256<<10)]
	return len(head) > 0 && head[0] == '{' && bytes.Contains(bytes.ToLower(head), []byte(`"methodconfig"`))
}

// grpcReader reads one service config.
type grpcReader struct {
	target.PBReader
	seen       map[string]int // method paths named so far, and their lines
	budget     *target.Setting[float64]
	budgetNote string
}

// field returns the value of a key as encoding/json finds it for grpc-go:
// the exact key, else one equal without regard to case; nil when absent or
// null.
func (r *grpcReader) field(n *yaml.Node, name string) *yaml.Node {
	if v := target.PBField(n, func(k string) bool { return k == name }); v != nil {
		return v
	}
	return target.PBField(n, func(k string) bool { return strings.EqualFold(k, name) })
}

// text reads a JSON string; ok false (and a ReadError) for anything else.
func (r *grpcReader) text(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		r.Fail(n, "field %q: %s is not a string", field, n.Value)
		return "", false
	}
	return n.Value, true
}

// integer reads a JSON whole number, as encoding/json reads an int.
func (r *grpcReader) integer(n *yaml.Node, field string) (int, bool) {
	v, err := strconv.ParseInt(n.Value, 10, 32)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
		r.Fail(n, "field %q: %s is not a whole number", field, n.Value)
		return 0, false
	}
	return int(v), true
}

// number reads a JSON number.
func (r *grpcReader) number(n *yaml.Node, field string) (float64, bool) {
	v, err := strconv.ParseFloat(n.Value, 64)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		r.Fail(n, "field %q: %s is not a number", field, n.Value)
		return 0, false
	}
	return v, true
}

// dur reads a duration, which grpc-go takes only as a JSON string.
func (r *grpcReader) dur(n *yaml.Node, field string) (float64, string, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!str" {
		r.Fail(n, "field %q: %s is not a duration: gRPC takes a string of seconds, as \"%ss\"", field, n.Value, n.Value)
		return 0, n.Value, false
	}
	if n.Kind != yaml.ScalarNode {
		r.Fail(n, "field %q is not a duration string", field)
		return 0, "", false
	}
	return r.Duration(n, field)
}

// codes reads a list of status codes, by name or number.
func (r *grpcReader) codes(n *yaml.Node, field string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		r.Fail(n, "field %q is not a list of status codes", field)
		return nil, false
	}
	var out []string
	ok := true
	for _, c := range n.Content {
		c = target.PBDeref(c)
		switch {
		case c == nil || c.Kind != yaml.ScalarNode:
			r.Fail(n, "field %q holds something that is not a status code", field)
			ok = false
		case c.Tag == "!!int":
			v, err := strconv.Atoi(c.Value)
			if err != nil || v < 0 || v >= len(grpcCodeNames) {
				r.Fail(c, "field %q: %s is not a status code (0 to %d)", field, c.Value, len(grpcCodeNames)-1)
				ok = false
				continue
			}
			out = append(out, grpcCodeNames[v])
		case c.Tag == "!!str" && slices.Contains(grpcCodeNames, c.Value):
			out = append(out, c.Value)
		default:
			r.Fail(c, "field %q: %q is not a status code (gRPC names them in capitals: UNAVAILABLE)", field, c.Value)
			ok = false
		}
	}
	return out, ok
}

// raw is a list node as written, for Setting.Raw.
func (r *grpcReader) raw(n *yaml.Node) string {
	var parts []string
	for _, c := range n.Content {
		if c = target.PBDeref(c); c != nil {
			parts = append(parts, c.Value)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// throttling reads retryThrottling into the retry budget every method
// config shares. gRPC keeps one token bucket per channel: it starts full
// at maxTokens, each attempt that fails costs 1, each success earns
// tokenRatio, and while at most half of maxTokens is left no retry or
// hedge is sent. Retries then go on only while failures stay below
// tokenRatio x successes (after a first burst of about maxTokens/2), and a
// retry follows a failure: in the long run at most about tokenRatio
// retries for each request, which is what Envoy's budget_percent/100
// says. tokenRatio is a ratio per success, not a percentage: the budget is
// approximate, and capped at 1.
func (r *grpcReader) throttling(root *yaml.Node) {
	th := r.field(root, "retryThrottling")
	if th == nil {
		return
	}
	if th.Kind != yaml.MappingNode {
		r.Fail(th, "field %q is not an object", "retryThrottling")
		return
	}
	mt, tr := r.field(th, "maxTokens"), r.field(th, "tokenRatio")
	if mt == nil || tr == nil {
		r.Fail(th, "retryThrottling needs maxTokens and tokenRatio: gRPC refuses it without")
		return
	}
	maxTokens, ok1 := r.number(mt, "maxTokens")
	ratio, ok2 := r.number(tr, "tokenRatio")
	if !ok1 || !ok2 {
		return
	}
	if maxTokens <= 0 || maxTokens > 1000 {
		r.Fail(mt, "field %q: %s is outside (0, 1000]: gRPC refuses it", "maxTokens", mt.Value)
		return
	}
	if ratio <= 0 {
		r.Fail(tr, "field %q: %s is not above 0: gRPC refuses it", "tokenRatio", tr.Value)
		return
	}
	r.budget = target.Set(min(1, ratio), r.Pos(tr), tr.Value)
	r.budgetNote = fmt.Sprintf("retryThrottling maxTokens %s, tokenRatio %s (line %d): one token bucket for the channel; a failed attempt costs 1, a success earns %s, and below half of maxTokens nothing is retried or hedged; RetryBudget %s is tokenRatio, about the most retries per request in the long run (not a percentage: an approximation)",
		mt.Value, tr.Value, th.Line, tr.Value, strconv.FormatFloat(r.budget.Value, 'f', -1, 64))
	if f := strings.SplitN(tr.Value, ".", 2); len(f) == 2 && len(strings.TrimRight(f[1], "0")) > 3 {
		r.budgetNote += "; gRPC reads tokenRatio to 3 decimals"
	}
}

// methodConfig reads one method config: the methods it names, its
// timeout, and its retry or hedging policy.
func (r *grpcReader) methodConfig(mc *yaml.Node, i int) {
	if mc == nil || mc.Kind != yaml.MappingNode {
		r.Fail(mc, "methodConfig %d is not an object", i+1)
		return
	}
	// The method configs of one service config compete for a call: gRPC
	// takes the one that names its method, else its service, else the
	// default (doc/service_config.md; gRFC A6).
	o := target.Object{Target: "grpc", Kind: "methodConfig", Pos: r.Pos(mc), Router: "service config " + r.File}
	names := r.field(mc, "name")
	if names == nil || (names.Kind == yaml.SequenceNode && len(names.Content) == 0) {
		return // gRPC applies a method config without a name to no method
	}
	if names.Kind != yaml.SequenceNode {
		r.Fail(names, "field %q is not a list of {service, method}", "name")
		return
	}
	var labels []string
	every := false
	for _, nm := range names.Content {
		nm = target.PBDeref(nm)
		if nm == nil || nm.Kind != yaml.MappingNode {
			r.Fail(names, "field %q holds something that is not a {service, method}", "name")
			continue
		}
		var svc, method string
		ok := true
		if s := r.field(nm, "service"); s != nil {
			svc, ok = r.text(s, "service")
		}
		if m := r.field(nm, "method"); m != nil && ok {
			method, ok = r.text(m, "method")
		}
		if !ok {
			continue
		}
		path := svc + "/" + method
		if svc == "" && method != "" {
			r.Fail(nm, "name: method %q without a service: gRPC refuses it", method)
			continue
		}
		if line, dup := r.seen[path]; dup {
			r.Fail(nm, "name %s is also named at line %d: gRPC refuses a service config that names a method twice", strings.TrimSuffix(path, "/"), line)
			continue
		}
		r.seen[path] = nm.Line
		switch {
		case svc == "":
			every = true
			labels = append(labels, grpcUnset)
		case method == "":
			o.Matches = append(o.Matches, target.Match{Kind: target.MatchMethod, Value: svc})
			labels = append(labels, svc)
		default:
			o.Matches = append(o.Matches, target.Match{Kind: target.MatchMethod, Value: path})
			labels = append(labels, path)
		}
	}
	if len(labels) == 0 {
		return
	}
	if every {
		o.Matches = nil
		o.Notes = append(o.Notes, "name {}: the config of every method that has none of its own or of its service")
	}
	o.Name = strings.Join(labels, ", ")
	if t := r.field(mc, "timeout"); t != nil {
		if v, raw, ok := r.dur(t, "timeout"); ok {
			if v == 0 {
				r.Fail(t, "field %q: %q: every call would fail at once with DEADLINE_EXCEEDED; leave timeout out for no deadline", "timeout", raw)
			} else {
				o.Timeout = target.Set(v, r.Pos(t), raw)
			}
		}
	}
	if w := r.field(mc, "waitForReady"); w != nil && w.Value == "true" {
		o.Notes = append(o.Notes, "waitForReady: a call waits for a ready connection until its deadline instead of failing at once")
	}
	rp, hp := r.field(mc, "retryPolicy"), r.field(mc, "hedgingPolicy")
	switch {
	case rp != nil:
		r.retryPolicy(&o, rp)
		if hp != nil {
			o.Notes = append(o.Notes, "retryPolicy and hedgingPolicy both: gRFC A6 makes them exclusive; grpc-go reads only retryPolicy")
		}
	case hp != nil:
		r.hedgingPolicy(&o, hp)
	default:
		o.Attempts = target.Defaulted(1, o.Pos)
		o.Notes = append(o.Notes, "no retryPolicy: gRPC retries only transparently, the calls that never reached the server's application")
	}
	if r.budget != nil {
		b := *r.budget
		o.RetryBudget = &b
		o.Notes = append(o.Notes, r.budgetNote)
	}
	r.Add(o)
}

// retryPolicy reads a retryPolicy, refusing what grpc-go refuses:
// maxAttempts below 2, a backoff or multiplier not above 0, no status
// codes. gRPC makes at most 5 attempts unless the channel raises the limit
// (grpc-go WithMaxCallAttempts).
func (r *grpcReader) retryPolicy(o *target.Object, rp *yaml.Node) {
	if rp.Kind != yaml.MappingNode {
		r.Fail(rp, "field %q is not an object", "retryPolicy")
		return
	}
	fields := map[string]*yaml.Node{}
	for _, f := range []string{"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes"} {
		if fields[f] = r.field(rp, f); fields[f] == nil {
			r.Fail(rp, "retryPolicy has no %s: gRPC refuses it", f)
			return
		}
	}
	{
		n := fields["maxAttempts"]
		if v, ok := r.integer(n, "maxAttempts"); ok {
			switch {
			case v < 2:
				r.Fail(n, "field %q: %d: gRPC needs at least 2 for a retryPolicy", "maxAttempts", v)
			case v > MaxAttempts:
				o.Attempts = target.Set(MaxAttempts, r.Pos(n), n.Value)
				o.Notes = append(o.Notes, fmt.Sprintf("maxAttempts %d: gRPC makes at most %d attempts unless the channel raises the limit (grpc-go WithMaxCallAttempts)", v, MaxAttempts))
			default:
				o.Attempts = target.Set(v, r.Pos(n), n.Value)
			}
		}
	}
	for _, f := range []string{"initialBackoff", "maxBackoff"} {
		n := fields[f]
		v, raw, ok := r.dur(n, f)
		if !ok {
			continue
		}
		if v <= 0 {
			r.Fail(n, "field %q: %q: gRPC needs a backoff above 0", f, raw)
			continue
		}
		if f == "initialBackoff" {
			o.BackoffBase = target.Set(v, r.Pos(n), raw)
		} else {
			o.BackoffMax = target.Set(v, r.Pos(n), raw)
		}
	}
	if o.BackoffBase != nil && o.BackoffMax != nil && o.BackoffMax.Value < o.BackoffBase.Value {
		o.Notes = append(o.Notes, "maxBackoff is below initialBackoff: every wait is about maxBackoff")
	}
	{
		n := fields["backoffMultiplier"]
		if v, ok := r.number(n, "backoffMultiplier"); ok {
			switch {
			case v <= 0:
				r.Fail(n, "field %q: %s: gRPC needs a multiplier above 0", "backoffMultiplier", n.Value)
			case v != 2:
				o.Notes = append(o.Notes, fmt.Sprintf("backoffMultiplier %s: each wait is %s times the one before, up to maxBackoff", n.Value, n.Value))
			}
		}
	}
	{
		n := fields["retryableStatusCodes"]
		if codes, ok := r.codes(n, "retryableStatusCodes"); ok {
			if len(codes) == 0 {
				r.Fail(n, "field %q is empty: gRPC refuses a retryPolicy that retries no status", "retryableStatusCodes")
			} else {
				o.RetryOn = target.Set(codes, r.Pos(n), r.raw(n))
			}
		}
	}
	o.Jitter = grpcJitter
}

// hedgingPolicy reads a hedgingPolicy: maxAttempts requests, hedgingDelay
// apart (0 by default: all at once), until one answers. grpc-java hedges;
// grpc-go 1.85 and C-core ignore the policy, so their clients make one
// attempt.
func (r *grpcReader) hedgingPolicy(o *target.Object, hp *yaml.Node) {
	if hp.Kind != yaml.MappingNode {
		r.Fail(hp, "field %q is not an object", "hedgingPolicy")
		return
	}
	o.Notes = append(o.Notes, "hedgingPolicy: grpc-java hedges; grpc-go (1.85) and C-core ignore it, and their clients neither hedge nor retry this method")
	if n := r.field(hp, "maxAttempts"); n == nil {
		r.Fail(hp, "hedgingPolicy has no maxAttempts: gRPC refuses it")
	} else if v, ok := r.integer(n, "maxAttempts"); ok {
		switch {
		case v < 2:
			o.Notes = append(o.Notes, fmt.Sprintf("hedgingPolicy maxAttempts %d: no hedge is sent", v))
			o.HedgeAttempts = target.Set(max(v, 1), r.Pos(n), n.Value)
		case v > MaxAttempts:
			o.HedgeAttempts = target.Set(MaxAttempts, r.Pos(n), n.Value)
			o.Notes = append(o.Notes, fmt.Sprintf("hedgingPolicy maxAttempts %d: gRPC sends at most %d unless the channel raises the limit", v, MaxAttempts))
		default:
			o.HedgeAttempts = target.Set(v, r.Pos(n), n.Value)
		}
	}
	if n := r.field(hp, "hedgingDelay"); n != nil {
		if v, raw, ok := r.dur(n, "hedgingDelay"); ok {
			o.HedgeDelay = target.Set(v, r.Pos(n), raw)
		}
	} else {
		o.HedgeDelay = target.Defaulted(0.0, o.Pos)
	}
	if n := r.field(hp, "nonFatalStatusCodes"); n != nil {
		if codes, ok := r.codes(n, "nonFatalStatusCodes"); ok && len(codes) > 0 {
			o.Notes = append(o.Notes, "nonFatalStatusCodes "+strings.Join(codes, ", ")+": such an answer sends the next hedge at once")
		}
	}
}
