package target

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Reading configuration: the other direction of a target. A reader takes a
// config file a team runs (an Envoy bootstrap, an nginx.conf, an Istio
// VirtualService...) and returns the objects a timeout or retry policy
// applies to, each value with the file and line that set it, or the
// target's documented default where the file sets none. `tunetimeout
// check` holds those values against measured latency.

// Pos is where a value stands in a config file: 1-based line, 0 when the
// format has no lines (a value from a default has the line of its object).
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// Setting is one value of an object: what the file says, or the target's
// default when the file says nothing (Default true; Pos is then the
// object's, Raw ""). Raw is the value as written ("0.25s", "60", "PT2S"),
// for messages and for --suggest to find and replace.
type Setting[T any] struct {
	Value   T
	Pos     Pos
	Raw     string
	Default bool
	// Key is the target's name of the value where a reader knows it
	// ("proxy_read_timeout", "timeout server"): what an edit that sets a
	// defaulted value writes.
	Key string
}

// Keyed returns s with its Key set; nil stays nil.
func Keyed[T any](s *Setting[T], key string) *Setting[T] {
	if s != nil {
		s.Key = key
	}
	return s
}

// Set returns a setting read from the file.
func Set[T any](v T, pos Pos, raw string) *Setting[T] {
	return &Setting[T]{Value: v, Pos: pos, Raw: raw}
}

// Defaulted returns the target's default for a value the file leaves out.
func Defaulted[T any](v T, pos Pos) *Setting[T] {
	return &Setting[T]{Value: v, Pos: pos, Default: true}
}

// How a config object selects the requests it applies to.
const (
	MatchPrefix = "prefix" // path prefix (Envoy prefix, nginx "location /x", Gateway API PathPrefix)
	MatchExact  = "exact"  // whole path (Envoy path, nginx "location = /x", Istio exact)
	MatchRegex  = "regex"  // RE2 over the path (Envoy safe_regex, Istio regex, nginx "~" in PCRE, kept as written)
	MatchMethod = "method" // HTTP method, or a gRPC "package.Service/Method" (Value "package.Service" for a whole service)
	MatchHost   = "host"   // a virtual host's domain, an Istio host, a Gateway API hostname
)

// Match is one condition of an object; an object applies to a request when
// all its matches of different kinds hold and, within one kind, any does.
type Match struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
	// CaseInsensitive: nginx "~*", Envoy case_sensitive false.
	CaseInsensitive bool `json:"case_insensitive,omitempty"`
	// NoRegex: nginx "^~": when this prefix is the longest that matches,
	// the regular expressions are not tried.
	NoRegex bool `json:"no_regex,omitempty"`
	// Rule numbers the rule the match belongs to where an object is
	// reached by several (an HAProxy backend's use_backend rules), in the
	// order its Router tries them, from 1: the matches of one rule hold
	// together as above, and the rules are alternatives, the first that
	// holds taking the request. 0: the object's matches are one rule.
	Rule int `json:"rule,omitempty"`
}

// Object is one thing a timeout or retry policy applies to: an Envoy route
// or cluster, an nginx location, an HAProxy backend, an Istio HTTP route, a
// gRPC methodConfig, a resilience4j instance. Settings it does not have are
// nil; a setting the target defaults (Envoy's 15 s route timeout, nginx's
// 60 s proxy_read_timeout) is set with Default true.
type Object struct {
	Target string // the registry name of the target that read it: "envoy", "nginx"
	// Kind is the target's own word for it: "route", "cluster", "location",
	// "backend", "methodConfig", "VirtualService", "HTTPRoute rule",
	// "timelimiter"...
	Kind string
	// Name is unique within what one reader returns and says where the
	// object is in the terms of the target: "listener_0/local_route/backend
	// route 2", "server example.com location /api", "backend app".
	Name    string
	Pos     Pos
	Matches []Match
	// Router names the objects that compete for one request, of which the
	// target's own rules pick one (FirstMatch): the routes of one Envoy
	// virtual host, the http routes of one Istio VirtualService, the
	// locations of one nginx server. "" when an object is not picked
	// against others: it serves every request its matches select.
	Router string
	// Upstream names what it sends to (an Envoy cluster, an nginx upstream
	// or proxy_pass host, an HAProxy backend, an Istio destination host);
	// "" when the object is the upstream itself or sends nowhere.
	Upstream string

	// Timeout bounds the whole request, in seconds, retries included; 0
	// means the target's "no timeout" (Envoy "0s"). TimeoutIdle says it is
	// a timeout between two reads or writes (nginx proxy_read_timeout,
	// HAProxy timeout server), which cuts a call off only while no byte
	// arrives: the same as a request timeout for calls that answer at once
	// when ready, longer for a response that streams.
	Timeout     *Setting[float64]
	TimeoutIdle bool
	// PerTryTimeout bounds each attempt, in seconds.
	PerTryTimeout *Setting[float64]
	// Attempts counts all attempts, the first included (Envoy num_retries
	// 2 is 3 attempts; nginx proxy_next_upstream_tries 0 is one per server).
	Attempts *Setting[int]
	// RetryOn lists the conditions retried, in the target's words
	// ("5xx", "reset", "UNAVAILABLE", "error timeout").
	RetryOn *Setting[[]string]
	// RetryNonIdempotent says non-idempotent requests (POST, LOCK, PATCH)
	// are retried too (nginx "non_idempotent", a retry policy on a route
	// that takes POST).
	RetryNonIdempotent *Setting[bool]
	// RetryWindow: no retry starts later than this many seconds after the
	// first attempt began (nginx proxy_next_upstream_timeout).
	RetryWindow *Setting[float64]
	// BackoffBase and BackoffMax are the retry backoff in seconds; Jitter
	// is how the target spreads it: "full" (Envoy, gRFC A6), "±20 %"
	// (grpc-go), "none" (nginx, HAProxy: retries at once), "" unknown.
	BackoffBase, BackoffMax *Setting[float64]
	Jitter                  string
	// BackoffGrowth, when set, is how each wait grows (resilience4j's
	// exponentialBackoffMultiplier), and JitterAbove the share a wait may
	// be drawn above its nominal value before the cap (resilience4j's
	// randomizedWaitFactor): each wait's largest is then min(BackoffMax,
	// BackoffBase x BackoffGrowth^retry x (1 + JitterAbove)). 0: any wait
	// may reach BackoffMax.
	BackoffGrowth, JitterAbove float64
	// RetryBudget is the share of requests that may be retries (Envoy
	// retry_budget budget_percent / 100, gRPC retryThrottling's ratio).
	RetryBudget *Setting[float64]
	// RetryAfterMax is the longest Retry-After, in seconds, the object
	// waits for before a retry (Envoy rate_limited_retry_back_off with a
	// retry-after reset header in SECONDS: its max_interval, 300 s when
	// left out); nil when a Retry-After is not honoured.
	RetryAfterMax *Setting[float64]
	// HedgeDelay and HedgeAttempts: another request when none has answered
	// after the delay, up to that many in all.
	HedgeDelay    *Setting[float64]
	HedgeAttempts *Setting[int]
	// ConnectTimeout bounds setting up a connection, in seconds.
	ConnectTimeout *Setting[float64]
	// MaxInFlight is the most requests the object lets wait or run at once
	// towards its upstream: Envoy circuit_breakers max_requests, HAProxy
	// maxconn, resilience4j bulkhead maxConcurrentCalls, Istio
	// http2MaxRequests.
	MaxInFlight *Setting[int]
	// QueueTimeout bounds the wait for a free slot (HAProxy timeout queue,
	// resilience4j maxWaitDuration).
	QueueTimeout *Setting[float64]
	// Notes say what the reader saw and did not model ("retry_on
	// 'retriable-headers' depends on headers the data does not have").
	Notes []string
}

// Opener reads a file a config refers to (an nginx include, an HAProxy
// config directory), by the path the reader made of it (nginx's relative
// to the main file's directory, its conf prefix); a directory is answered
// with the names in it, one a line, for globs (a name that ends in "/" is
// a directory, which a glob's inner elements match). A reader never opens files
// itself, so that tests and stdin work alike and every read is bounded by
// whoever opens.
type Opener func(path string) ([]byte, error)

// ReadError is a config the reader refuses: where and why.
type ReadError struct {
	Pos Pos
	Err error
}

func (e *ReadError) Error() string { return e.Pos.String() + ": " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// ErrorAt returns a ReadError at pos.
func ErrorAt(pos Pos, format string, args ...any) error {
	return &ReadError{Pos: pos, Err: fmt.Errorf(format, args...)}
}

// YAMLDocuments decodes every document of a YAML (or JSON) stream, as
// kubectl, Helm and Kustomize print them, keeping each node's line. Empty
// documents ("---" twice) are left out. It is the one way a reader decodes
// YAML, within the run's budget: a file whose words outnumber the nodes
// left is refused before it is decoded (a node costs some 180 bytes held),
// and each document is refused when its nodes, counted with every alias
// expanded, pass what is left, so that no walk of a reader, however it
// follows aliases, meets more nodes than the budget (a 486-byte file of
// anchors nested nine deep, nine aliases wide, names 387 million). The
// bytes that aliases repeat count against the byte budget.
func YAMLDocuments(b *budget.Budget, file string, data []byte) ([]*yaml.Node, error) {
	if w := YAMLWordCount(data); w > b.NodesLeft() {
		return nil, &ReadError{Pos: Pos{File: file, Line: 1}, Err: b.Nodes(w, human.Count(w)+" words of YAML, before decoding")}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) {
				return nil, &ReadError{Pos: Pos{File: file}, Err: err}
			}
			return nil, fmt.Errorf("%s: %w", file, err) // yaml's message carries "line N"
		}
		if err := yamlSpend(b, file, &n); err != nil {
			return nil, err
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue
		}
		docs = append(docs, n.Content[0])
	}
}

// YAMLWordCount is an upper bound of a third of the nodes a YAML stream
// decodes to, found without decoding it: its runs of bytes between blanks
// and commas, and each "[" and "{". Every node has a byte of its own or
// shares a word with at most two others (a key with no value, "? ", a
// block mapping and its first key); FuzzYAMLWords holds the bound.
func YAMLWordCount(data []byte) int64 {
	var w int64
	in := false
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n', ',':
			in = false
			continue
		case '[', '{':
			w++
		}
		if !in {
			w++
			in = true
		}
	}
	return w
}

// yamlSize is what a node stands for with its aliases expanded: nodes, and
// the bytes of their values.
type yamlSize struct{ nodes, bytes int64 }

// yamlSaturate bounds the sums, far above any budget: nine aliases of
// nine, thirty deep, would overflow.
const yamlSaturate = 1 << 60

func (s yamlSize) plus(t yamlSize) yamlSize {
	return yamlSize{min(s.nodes+t.nodes, yamlSaturate), min(s.bytes+t.bytes, yamlSaturate)}
}

// yamlSpend takes from the budget what one decoded document stands for:
// its nodes with every alias expanded, and the bytes its aliases repeat.
// An anchor's size is counted once and remembered, so the count costs one
// walk of the nodes as decoded, whatever the aliases multiply.
func yamlSpend(b *budget.Budget, file string, doc *yaml.Node) error {
	c := yamlCounter{memo: map[*yaml.Node]yamlSize{}, busy: map[*yaml.Node]bool{}}
	size := c.size(doc)
	if c.cycle != nil {
		return ErrorAt(NodePos(file, c.cycle), "the alias *%s stands inside its own anchor: it would repeat for ever", c.cycle.Value)
	}
	if err := b.Nodes(size.nodes, "YAML nodes with aliases expanded"); err != nil {
		return &ReadError{Pos: NodePos(file, doc), Err: err}
	}
	if err := b.Bytes(size.bytes-c.literal, "values YAML aliases repeat"); err != nil {
		return &ReadError{Pos: NodePos(file, doc), Err: err}
	}
	return nil
}

// yamlCounter counts nodes with aliases expanded.
type yamlCounter struct {
	memo    map[*yaml.Node]yamlSize // anchored nodes counted
	busy    map[*yaml.Node]bool     // anchored nodes being counted
	literal int64                   // bytes of the values as written, each node once
	cycle   *yaml.Node              // an alias inside its own anchor
}

func (c *yamlCounter) size(n *yaml.Node) yamlSize {
	if n == nil || c.cycle != nil {
		return yamlSize{}
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return yamlSize{nodes: 1}
		}
		if c.busy[n.Alias] {
			c.cycle = n
			return yamlSize{}
		}
		return c.size(n.Alias)
	}
	if s, ok := c.memo[n]; ok {
		return s
	}
	anchored := n.Anchor != ""
	if anchored {
		c.busy[n] = true
	}
	s := yamlSize{nodes: 1, bytes: int64(len(n.Value))}
	c.literal += int64(len(n.Value))
	for _, k := range n.Content {
		s = s.plus(c.size(k))
	}
	if anchored {
		delete(c.busy, n)
		c.memo[n] = s
	}
	return s
}

// UniqueNames makes names unique by numbering the repeats of a name: the
// first keeps it, the others take alt(2), alt(3)... For each name it
// remembers the next number to try, so that n objects of one name cost n
// steps, not the n²/2 of trying from 2 each time (20,000 Envoy virtual
// hosts of one name took a minute), and a number is skipped when another
// object already has its name ("a (2)" written in the file).
type UniqueNames struct {
	Taken map[string]bool
	next  map[string]int
}

// Name returns name, or the first alt(i) from the name's next number on
// that no other object has, and takes it.
func (u *UniqueNames) Name(name string, alt func(i int) string) string {
	if u.Taken == nil {
		u.Taken, u.next = map[string]bool{}, map[string]int{}
	}
	if !u.Taken[name] {
		u.Taken[name] = true
		return name
	}
	i := max(u.next[name], 2)
	out := alt(i)
	for u.Taken[out] {
		i++
		out = alt(i)
	}
	u.next[name] = i + 1
	u.Taken[out] = true
	return out
}

// OrNew is b, or a budget of its own for a read outside a run (nil).
func OrNew(b *budget.Budget) *budget.Budget {
	if b == nil {
		return budget.New()
	}
	return b
}

// MapValue returns the value of key in a YAML mapping, nil when absent or
// n is not a mapping.
func MapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// NodePos is where a YAML node stands.
func NodePos(file string, n *yaml.Node) Pos { return Pos{File: file, Line: n.Line} }

// haproxySectionLine is a line that starts a proxy section: at the start
// of the line, not ending like an nginx directive or block.
var haproxySectionLine = regexp.MustCompile(`(?m)^(global|defaults|frontend|backend|listen)([ \t][^;{}\n]*)?$`)

// LooksHAProxy reports whether data starts sections as HAProxy does.
func LooksHAProxy(data []byte) bool { return haproxySectionLine.Match(data) }

func HasMatchKind(ms []Match, kind string) bool {
	for _, m := range ms {
		if m.Kind == kind {
			return true
		}
	}
	return false
}
