package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Options are everything a decoder may need from the user. Each format uses
// the fields that apply to it and ignores the rest.
type Options struct {
	CSV CSVOptions

	// By names the group-by keys: route, method, status_class, status,
	// upstream, host for logs; column names for CSV.
	By []string
	// RoutePatterns are the user's own routes (--route-pattern), tried
	// before the automatic normalization of paths.
	RoutePatterns []string

	// Latency picks the measure where a format has several: "request" (the
	// whole request as the server saw it, the default), "upstream" (the
	// upstream's response time, summed over tries), "upstream-last" (the
	// last try only), "upstream-header" (until the upstream's headers).
	Latency string

	// LogFormat is an nginx log_format or Apache LogFormat string.
	LogFormat string
	// NginxConf and LogFormatName read the log_format from a config file.
	NginxConf, LogFormatName string

	// Field, TimeField, StatusField, PathField, MethodField name the fields
	// of JSON logs (dotted paths); "" = the format's default.
	Field, TimeField, StatusField, PathField, MethodField string
	// Unit is the unit of Field's numbers for JSON logs, and of OTLP
	// metrics whose own unit is not set; 0 = the format's default.
	Unit time.Duration

	// SpanKind is the kind of OTLP span that is a call (--span-kind):
	// "client" (the default, ""), "server" or "any".
	SpanKind string
	// Metric is the histogram an OTLP metrics input is read for
	// (--metric); "" = the one it holds.
	Metric string
}

// Format is one input format of the registry.
type Format struct {
	Name    string
	Summary string // one line for --help
	// Sniff reports whether line (a non-empty line of an input, at most 64
	// KiB, as it stands or without the prefixes of prefix.go) looks like
	// this format; nil: never chosen by "auto". See sniff.
	Sniff func(line []byte) bool
	// SniffBinary reports whether head, the first bytes of an input that
	// starts with a byte no text starts with (isBinaryLead), at most
	// sniffBinaryBytes of them, looks like this format: a binary one, which
	// has no lines to sniff (OTLP protobuf). nil: none.
	SniffBinary func(head []byte) bool
	// Priority orders the sniffers, lowest first (then by name): a format
	// whose lines another's sniffer would also accept comes before it. The
	// order, from the registrations (TestSniffOrder pins it):
	//   10 hlog: its header lines are like no log's;
	//   20 alb, envoy, haproxy: shapes of their own;
	//   30 apache: a combined line that ends in an integer (%D, in µs),
	//      before nginx, whose $request_time has a decimal point;
	//   40 ingress-nginx: a combined line with upstreaminfo's fields after
	//      it, before nginx, which would read its first fields;
	//   50 nginx;
	//   55 jaeger: {"data":[ a trace with spans and processes, before the JSON logs;
	//      otlp: a JSON object with resourceSpans, before the JSON logs;
	//      zipkin: an array of spans with traceId, before the JSON logs too;
	//   60 caddy, envoy-json, traefik: JSON objects with fields of their own;
	//   65 buckets: a header with bucket_us and calls, before csv (or a
	//      JSON line with those keys: none of the JSON logs has them);
	//   70 csv: a header row of column names, after every log.
	Priority int
	// NotRequest returns, for a line (without its prefixes) that is one of
	// the server's own messages rather than a request, what it is ("haproxy
	// proxy started"); "" for any other line. Auto-detection looks past such
	// lines, and the format's decoder reports them as *NotRequestError. nil:
	// the format has none.
	NotRequest func(line []byte) string
	// Latencies are the values of Options.Latency (--latency) the
	// format reads, its default first ("" is the default); none: the
	// format has one latency and --latency does not apply to it (CSV's
	// column, the histograms of interval logs). CheckLatency reads them,
	// and so do --help and completion.
	Latencies []string
	// New returns a decoder over r, named name in errors; nil for
	// formats of histograms.
	New func(r io.Reader, name string, o Options) (Decoder, error)
	// Flags are the command-line options the format reads (FormatFlags).
	Flags []Flag
	// Histograms says the format holds histograms rather than samples
	// (the HdrHistogram interval log): its inputs are read by package
	// histogram, not by a Decoder; see Detect.
	Histograms bool
	// Bucketed says the format holds bucketed histograms (OTLP metrics):
	// its inputs are read by ReadOTLPMetrics, not by a Decoder, and
	// analysed as Prometheus's buckets are.
	Bucketed bool
	// HDRBuckets says the format holds HDR bucket counts a SQL engine
	// computed: its inputs are read by ReadBuckets into the histograms a
	// local read fills.
	HDRBuckets bool
	// Edges says that without --by the format groups its samples by
	// caller and callee ("frontend cart"): each group is an edge of the
	// call graph (spans).
	Edges bool
}

// Flag is a command-line option of an input format: a string that lands in
// Options. Each format declares the ones it reads (Format.Flags), and the
// command line registers every format's, once each (FormatFlags): a new
// format's options need nothing in cmd.
type Flag struct {
	Name, Usage string
	// Field is where the value goes.
	Field func(o *Options) *string
}

// FormatFlags returns the flags of every registered format, once each
// (formats that share one, as nginx and apache share --log-format,
// declare it alike), by name.
func FormatFlags() []Flag {
	var out []Flag
	seen := map[string]bool{}
	for _, f := range Formats() {
		for _, fl := range f.Flags {
			if !seen[fl.Name] {
				seen[fl.Name] = true
				out = append(out, fl)
			}
		}
	}
	slices.SortFunc(out, func(a, b Flag) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// The flags the formats share.
var (
	logFormatFlag = Flag{Name: "log-format", Usage: "nginx log_format or Apache LogFormat string of the input",
		Field: func(o *Options) *string { return &o.LogFormat }}
	jsonFieldFlags = []Flag{
		{Name: "field", Usage: "JSON logs: the latency field (dotted path)", Field: func(o *Options) *string { return &o.Field }},
		{Name: "time-field", Usage: "JSON logs: the timestamp field", Field: func(o *Options) *string { return &o.TimeField }},
		{Name: "status-field", Usage: "JSON logs: the status field", Field: func(o *Options) *string { return &o.StatusField }},
		{Name: "path-field", Usage: "JSON logs: the request path field", Field: func(o *Options) *string { return &o.PathField }},
		{Name: "method-field", Usage: "JSON logs: the request method field", Field: func(o *Options) *string { return &o.MethodField }},
	}
)

// formats is the registry, filled by each format's file in its init.
var formats = map[string]Format{}

// Register adds a format to the registry; it panics on a duplicate name.
func Register(f Format) {
	if _, dup := formats[f.Name]; dup {
		panic("ingest: format registered twice: " + f.Name)
	}
	formats[f.Name] = f
}

// Lookup returns the registered format of a name.
func Lookup(name string) (Format, bool) {
	f, ok := formats[name]
	return f, ok
}

// Formats returns the registered formats sorted by name.
func Formats() []Format {
	out := make([]Format, 0, len(formats))
	for _, f := range formats {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Format) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// sniffOrder returns the registered formats in the order auto-detection
// tries them: by Priority, then by name.
func sniffOrder() []Format {
	out := Formats()
	slices.SortStableFunc(out, func(a, b Format) int { return cmp.Compare(a.Priority, b.Priority) })
	return out
}

// FormatNames returns the names --input accepts, "auto" first.
func FormatNames() []string {
	names := []string{"auto"}
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	return names
}

// LatencyNames returns the values of Options.Latency that some format
// reads (Format.Latencies; those "auto" accepts): "request", the default
// of every format that has a choice, first, the others in the order of
// the formats that list the most of them.
func LatencyNames() []string {
	var names []string
	fs := Formats()
	slices.SortStableFunc(fs, func(a, b Format) int { return cmp.Compare(len(b.Latencies), len(a.Latencies)) })
	for _, f := range fs {
		for _, l := range f.Latencies {
			if !slices.Contains(names, l) {
				names = append(names, l)
			}
		}
	}
	if i := slices.Index(names, "request"); i > 0 {
		names = slices.Insert(slices.Delete(names, i, i+1), 0, "request")
	}
	return names
}

// CheckLatency reports whether format (a registered name, or "" or
// "auto") reads the latency measure latency (Options.Latency): one of its
// Latencies, or of any format's for "auto", which may pick any of them; ""
// is always the default. A format without Latencies refuses any other
// value. It is the one rule: every decoder that reads a latency measure
// calls it, and the command line before it reads any input. CSV, which has
// one latency, refuses --latency when named (--input csv); found by "auto"
// among other inputs, it leaves it to the logs and says so (a Noter note).
func CheckLatency(format, latency string) error {
	if latency == "" {
		return nil
	}
	if format == "" || format == "auto" {
		if names := LatencyNames(); !slices.Contains(names, latency) {
			return fmt.Errorf("unknown latency measure %q: want %s", latency, strings.Join(names, ", "))
		}
		return nil
	}
	f, ok := formats[format]
	switch {
	case !ok:
		return fmt.Errorf("unknown input format %q (known: %s)", format, strings.Join(FormatNames(), ", "))
	case len(f.Latencies) == 0:
		return fmt.Errorf("%s inputs have one latency, no measure to choose: %q is for access logs", format, latency)
	case !slices.Contains(f.Latencies, latency):
		return fmt.Errorf("unknown latency measure %q for %s logs: want %s", latency, format, strings.Join(f.Latencies, ", "))
	}
	return nil
}

// NewDecoder returns a decoder for the named format ("auto" sniffs the first
// lines of r, see sniff, and says which formats it tried when none fits).
func NewDecoder(format string, r io.Reader, name string, o Options) (Decoder, error) {
	f, r, err := detect(format, r, name, o)
	if err != nil {
		return nil, err
	}
	if f.New == nil {
		return nil, fmt.Errorf("%s: format %s holds histograms, not samples: it has no decoder", name, f.Name)
	}
	return f.New(r, name, o)
}

// Detect returns the format NewDecoder would pick for r (by name, or
// sniffed from the first lines for "auto"), and the reader to go on with:
// r, or a bufio.Reader over r holding what sniffing read. Callers use it to
// send inputs of histograms (Format.Histograms) elsewhere.
func Detect(format string, r io.Reader, name string, o Options) (Format, io.Reader, error) {
	return detect(format, r, name, o)
}

// ImpliedFormat is the format an input of format ("" or "auto" to
// detect) is read as before any byte of it is seen: the format named, or
// the server whose log format the options give (an nginx config or a
// log_format with $variables: nginx; a LogFormat with % directives:
// Apache); "auto" when only the input can tell. The command line checks
// its flags against it before it opens an input.
func ImpliedFormat(format string, o Options) string {
	if format != "" && format != "auto" {
		return format
	}
	switch {
	case o.NginxConf != "" || strings.Contains(o.LogFormat, "$"):
		return "nginx"
	case strings.Contains(o.LogFormat, "%"):
		return "apache"
	}
	return "auto"
}

// detect returns the format NewDecoder picks for r, and what to give its
// New: r, or after sniffing a bufio.Reader over r that holds what was read.
func detect(format string, r io.Reader, name string, o Options) (Format, io.Reader, error) {
	format = ImpliedFormat(format, o)
	if format == "" || format == "auto" {
		br := bufio.NewReaderSize(r, sniffBytes)
		f, err := sniff(br, name)
		return f, br, err
	}
	f, ok := formats[format]
	if !ok {
		return Format{}, nil, fmt.Errorf("unknown input format %q (known: %s)", format, strings.Join(FormatNames(), ", "))
	}
	return f, r, nil
}

// Auto-detection reads no more than sniffLines lines and sniffBytes bytes
// of an input (the size of the reader NewDecoder puts over it).
const (
	sniffLines = 64
	sniffBytes = 64 << 10
)

// sniffBinaryBytes is how much of a binary input Format.SniffBinary sees:
// enough to reach an OTLP file's first span or metric past its resource's
// attributes (otlpProtoSignal).
const sniffBinaryBytes = 64 << 10

// isBinaryLead reports whether b, the first byte of an input, is one no
// text starts with: a control character other than whitespace.
func isBinaryLead(b byte) bool { return b < '\t' || b > '\r' && b < ' ' }

// errSniffWindow ends peekLine at the end of what sniffing may read.
var errSniffWindow = errors.New("past what auto-detection reads")

// peekLine returns the line of br's input that starts at offset off,
// without its line ending and without consuming it, and the offset of the
// next line. It reads no more than it must, so a slow pipe (tail -f) is
// sniffed as soon as the lines it needs arrive. err is io.EOF after the
// last line (which line then holds, unless empty), errSniffWindow when the
// line reaches past br's buffer (line holds what it has), or a read error.
func peekLine(br *bufio.Reader, off int) (line []byte, next int, err error) {
	for want := off + 1; ; {
		peek, err := br.Peek(min(br.Size(), max(want, br.Buffered())))
		if off < len(peek) {
			if i := bytes.IndexByte(peek[off:], '\n'); i >= 0 {
				return peek[off : off+i], off + i + 1, nil
			}
		}
		switch {
		case err == nil && len(peek) >= br.Size():
			err = errSniffWindow
		case err == nil:
			want = len(peek) + 1 // no whole line yet: wait for one byte more
			continue
		}
		if off >= len(peek) {
			return nil, off, err
		}
		return peek[off:], len(peek), err
	}
}

// sniffBinary returns the binary format whose SniffBinary takes head, the
// first sniffBinaryBytes (or fewer) of an input that starts with a byte
// no text starts with (isBinaryLead).
func sniffBinary(head []byte) (Format, bool) {
	if len(head) == 0 || !isBinaryLead(head[0]) {
		return Format{}, false
	}
	for _, f := range sniffOrder() {
		if f.SniffBinary != nil && f.SniffBinary(head) {
			return f, true
		}
	}
	return Format{}, false
}

// sniff picks the format of br's input. An input whose first byte is one
// no text starts with (isBinaryLead) is first offered to the formats'
// SniffBinary, on its first sniffBinaryBytes bytes. Otherwise, or when none
// takes it, it reads lines until one decides, at most sniffLines of them
// within sniffBytes:
//
//   - blank lines are passed over;
//   - a line that a format's Sniff accepts as it stands is that format's
//     (the formats tried in the order of Formats); failing that, a line
//     that one accepts without the prefixes of prefix.go (a kubectl
//     timestamp, a docker compose service name, a syslog header), formats
//     of histograms left out, which are not read by the line decoder;
//   - a line that a format's NotRequest names is passed over (HAProxy's
//     "Proxy fe started.", Caddy's startup messages);
//   - any other line decides that no format fits, as when it is the first.
//
// An input that holds nothing but lines that are not requests, of one
// format, is that format's (its decoder will say so, line by line).
func sniff(br *bufio.Reader, name string) (Format, error) {
	var sniffers, notRequests []Format
	var tried []string
	for _, f := range sniffOrder() {
		if f.Sniff != nil {
			sniffers = append(sniffers, f)
			tried = append(tried, f.Name)
		}
		if f.NotRequest != nil {
			notRequests = append(notRequests, f)
		}
	}
	// A binary input: only its first byte is read before it is known to
	// be one, so a slow pipe of text is sniffed as before.
	if b, _ := br.Peek(1); len(b) == 1 && isBinaryLead(b[0]) {
		head, _ := br.Peek(sniffBinaryBytes)
		if f, ok := sniffBinary(head); ok {
			return f, nil
		}
	}
	var claimed []string // the formats that named lines passed over
	skipped, n := 0, 0
	for off := 0; n < sniffLines; {
		raw, next, err := peekLine(br, off)
		if err != nil && err != io.EOF && err != errSniffWindow {
			return Format{}, fmt.Errorf("%s: %w", name, err)
		}
		if err == errSniffWindow && n > 0 {
			break // a line cut by the end of the window: only the first one is read so
		}
		line := bytes.TrimSpace(raw)
		if len(line) > 0 {
			n++
			if f, ok := sniffLine(sniffers, line); ok {
				return f, nil
			}
			reason, by := "", ""
			rest := stripPrefixes(line, allPrefixes)
			for _, f := range notRequests {
				if reason = f.NotRequest(rest); reason != "" {
					by = f.Name
					break
				}
			}
			if reason == "" {
				shown := line
				if len(shown) > 120 {
					shown = append(shown[:120:120], "..."...)
				}
				where := "its first line"
				if skipped > 0 {
					where = fmt.Sprintf("its line %d (the first that is not a server's own message)", n)
				}
				return Format{}, fmt.Errorf("%s: cannot tell the input format from %s %q; tried %s; name it with %s",
					name, where, shown, strings.Join(tried, ", "), usage.Input)
			}
			skipped++
			if !slices.Contains(claimed, by) {
				claimed = append(claimed, by)
			}
		}
		if err != nil {
			break
		}
		off = next
	}
	switch {
	case n == 0 && br.Buffered() == 0:
		return Format{}, fmt.Errorf("%s: %w", name, ErrEmptyInput)
	case n == 0:
		return Format{}, fmt.Errorf("%s: holds only blank lines", name)
	case len(claimed) == 1:
		return formats[claimed[0]], nil
	}
	return Format{}, fmt.Errorf("%s: cannot tell the input format: its first %d lines are not requests but messages of %s; name it with %s",
		name, skipped, strings.Join(claimed, " and "), usage.Input)
}

// sniffLine returns the format of the first of sniffers that accepts line
// as it stands, else of the first that accepts it without its prefixes.
func sniffLine(sniffers []Format, line []byte) (Format, bool) {
	for _, f := range sniffers {
		if f.Sniff(line) {
			return f, true
		}
	}
	rest := stripPrefixes(line, allPrefixes)
	if len(rest) == len(line) || len(bytes.TrimSpace(rest)) == 0 {
		return Format{}, false
	}
	for _, f := range sniffers {
		if !f.Histograms && f.Sniff(rest) {
			return f, true
		}
	}
	return Format{}, false
}
