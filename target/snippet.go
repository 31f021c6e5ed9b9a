// Package snippet turns a report into client configuration: the timeouts,
// retries, backoff, retry budget, connect timeout and bulkhead of each group,
// written in the syntax of one target (Envoy, gRPC, Istio, Linkerd, Gateway
// API, resilience4j, Go net/http, Python httpx, nginx, HAProxy).
//
// Snippets are rendered from a report alone, so a saved JSON report renders
// the same snippets as the analysis that produced it. Each target has its own
// duration format and limits (docs/method.md#9-config-targets); a value a target would
// reject is adjusted to the nearest value it accepts and the snippet's header
// says so. Every snippet starts with that header: which data and which rule
// produced each number. Formats without comments (gRPC's JSON) return the
// header separately through Explain.
package target

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tunetimeout/tunetimeout/internal/budget"
	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/report"
)

// Options name what the report does not know.
type Options struct {
	// Service names the service, cluster or upstream the calls go to; it
	// becomes the Envoy cluster, the Kubernetes host, the gRPC service.
	// Default "backend".
	Service string
	// Namespace is the Kubernetes namespace of the Istio, Linkerd and Gateway
	// API resources. Default "default".
	Namespace string
	// GatewayAPIChannel is the Gateway API release channel whose CRD the
	// cluster runs: GatewayStandard (default) or GatewayExperimental. Since
	// v1.7.0 both have rules[].retry, and the snippet is the same for both.
	GatewayAPIChannel string
	// LinkerdResource is what the Linkerd snippet writes: LinkerdAuto
	// (default: GRPCRoute when every group is a gRPC method, else
	// HTTPRoute), LinkerdHTTPRoute, LinkerdGRPCRoute, or
	// LinkerdServiceProfile for meshes older than 2.16.
	LinkerdResource string
}

// Check reports an option no target knows.
func (o Options) Check() error {
	switch o.GatewayAPIChannel {
	case "", GatewayStandard, GatewayExperimental:
	default:
		return fmt.Errorf("unknown Gateway API channel %q (known: %s, %s)", o.GatewayAPIChannel, GatewayStandard, GatewayExperimental)
	}
	switch o.LinkerdResource {
	case "", LinkerdAuto, LinkerdHTTPRoute, LinkerdGRPCRoute, LinkerdServiceProfile:
	default:
		return fmt.Errorf("unknown Linkerd resource %q (known: %s)", o.LinkerdResource, strings.Join(linkerdResources, ", "))
	}
	return nil
}

// Gateway API release channels (--gateway-api-channel). Since Gateway API
// v1.7.0 both have rules[].retry (HTTPRouteRetry, GEP-1731, moved to the
// standard channel; CHANGELOG/1.7-CHANGELOG.md), and attempts' minimum is 0
// "so retries can be disabled per rule": every rule is written with a
// retry, on either channel, since an unset retry is left to the
// implementation, whose default may retry a POST.
const (
	GatewayStandard     = "standard"
	GatewayExperimental = "experimental"
)

// What the Linkerd snippet writes (Options.LinkerdResource).
const (
	LinkerdAuto           = "auto"
	LinkerdHTTPRoute      = "httproute"
	LinkerdGRPCRoute      = "grpcroute"
	LinkerdServiceProfile = "serviceprofile"
)

var linkerdResources = []string{LinkerdAuto, LinkerdHTTPRoute, LinkerdGRPCRoute, LinkerdServiceProfile}

// DefaultService is the service name when Options.Service is empty.
const DefaultService = "backend"

// Target is one kind of client configuration.
type Target struct {
	Name    string // as given to --emit
	File    string // the file --emit-dir writes
	Summary string // one line for --help
	// Language names the snippet's language for a Markdown code fence
	// ("yaml"); "" for none.
	Language string
	// Comment starts a comment line in the target's format; "" when the
	// format has none (JSON): the header is then only available from Explain.
	Comment string
	// MaxLine, when set, is the longest comment line the target's parser
	// takes (nginx reads at most 4096 bytes of one); longer header lines are
	// broken into several.
	MaxLine int
	Write   func(p *Plan, d *Doc) error
	// read, when set, reads a config file of this target (read.go):
	// `tunetimeout check` holds its values against the data. detect says
	// whether a file is one this target reads, from its name and first
	// bytes, so that check needs no --config-format for the usual files.
	Reader func(file string, data []byte, open Opener, b *budget.Budget) ([]Object, error)
	Detect func(file string, data []byte) bool
	// naming, when set, is how the target's snippet names each group's
	// object, which check reads back as the group it serves (naming.go).
	Naming *Naming

	// What check needs to know of the target's configs (analysis/check.go).
	//
	// Duration, when set, writes a duration as the config does, for the
	// edits --suggest proposes (WriteDuration).
	Duration func(time.Duration) string
	// Insert, when set, writes the line that adds a setting an object
	// lacks, and the text that opens the block it goes in (InsertSetting).
	Insert func(key, lit string) (line, opens string)
	// RegexSearch says a regular expression of the config matches anywhere
	// in the path (nginx, HAProxy); otherwise it must match the whole path.
	RegexSearch bool
	// Precedence is how the target's router picks among matching objects.
	Precedence Precedence
	// RetriesFailOver says a retry goes to the next server, not back to
	// the one that failed (nginx's proxy_next_upstream): jitter, which
	// spreads out returns to one server, is not asked of it.
	RetriesFailOver bool
	// UpstreamKeys, when set, returns the names routes send to an
	// upstream-side object by (an Envoy cluster, an nginx upstream block,
	// an Istio DestinationRule's host), nil for an object that is not one.
	UpstreamKeys func(ob Object) []string
}

// Reads reports whether the target reads config files.
func (t Target) Reads() bool { return t.Reader != nil }

// Read reads a config file of this target; open reads the files it
// includes. It reads within a budget of its own: ReadWithin shares one
// between the configs of a run.
func (t Target) Read(file string, data []byte, open Opener) ([]Object, error) {
	return t.ReadWithin(budget.New(), file, data, open)
}

// ReadWithin reads a config file of this target within what is left of
// the run's budget b: the includes it opens are charged to its bytes, and
// the YAML nodes (aliases expanded) and nginx words it reads to its nodes.
// The bytes of file itself are the caller's to charge, once however many
// targets read it.
func (t Target) ReadWithin(b *budget.Budget, file string, data []byte, open Opener) ([]Object, error) {
	if t.Reader == nil {
		return nil, fmt.Errorf("%s: reading its config is not supported", t.Name)
	}
	return t.Reader(file, data, open, b)
}

// Detects reports whether file (its name and contents) looks like a config
// of this target.
func (t Target) Detects(file string, data []byte) bool {
	return t.Detect != nil && t.Detect(file, data)
}

// Render writes the snippet of this target for a report: the header as
// comments where the format has them, then the configuration.
func (t Target) Render(r *report.Report, o Options) ([]byte, error) {
	d, err := t.run(r, o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if t.Comment != "" {
		for _, line := range d.header {
			for _, part := range splitLine(line, t.MaxLine-len(t.Comment)-4) {
				b.WriteString(strings.TrimRight(t.Comment+" "+part, " "))
				b.WriteByte('\n')
			}
		}
		if len(d.header) > 0 {
			b.WriteByte('\n')
		}
	}
	b.Write(d.Body.Bytes())
	return b.Bytes(), nil
}

// Explain returns the header of the target's snippet as lines without a
// comment marker: where each number comes from, and what the target could
// not express.
func (t Target) Explain(r *report.Report, o Options) ([]string, error) {
	d, err := t.run(r, o)
	if err != nil {
		return nil, err
	}
	return d.header, nil
}

func (t Target) run(r *report.Report, o Options) (*Doc, error) {
	p, err := NewPlan(r, o)
	if err != nil {
		return nil, err
	}
	d := &Doc{}
	if err := t.Write(p, d); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return d, nil
}

// Doc collects one snippet: its header lines and its body.
type Doc struct {
	header []string
	Body   bytes.Buffer
}

// Note adds a header line.
func (d *Doc) Note(format string, args ...any) {
	d.header = append(d.header, OneLine(fmt.Sprintf(format, args...)))
}

// Printf writes to the body.
func (d *Doc) Printf(format string, args ...any) { fmt.Fprintf(&d.Body, format, args...) }

// splitLine breaks s into pieces of at most max bytes, on rune boundaries,
// the later ones indented; max <= 0 keeps s whole.
func splitLine(s string, max int) []string {
	if max <= 0 || len(s) <= max {
		return []string{s}
	}
	var out []string
	for len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		out = append(out, s[:cut])
		s = "    " + s[cut:]
	}
	return append(out, s)
}

// OneLine keeps a header line on one line whatever a group name holds, and
// shows its control and bidirectional characters as escapes (\x1b): a
// comment is read on a terminal too.
func OneLine(s string) string { return escape.Visible(s) }

// SortedKeys returns the keys of a map in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
