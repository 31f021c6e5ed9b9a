package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Options are everything a decoder may need from the user. Each format uses
// the fields that apply to it and ignores the rest.
type Options struct {
	CSV CSVOptions

	// By names the group-by keys of log formats: route, method,
	// status_class, status, upstream, host. (CSV groups by column names in
	// CSV.By.)
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
	// Unit is the unit of Field's numbers for JSON logs; 0 = the format's default.
	Unit time.Duration
}

// Format is one input format of the registry.
type Format struct {
	Name    string
	Summary string // one line for --help
	// Sniff reports whether line (the first non-empty line of an input, at
	// most 64 KiB) looks like this format; nil: never chosen by "auto".
	Sniff func(line []byte) bool
	// New returns a decoder over r, named name in errors; nil for
	// formats of histograms.
	New func(r io.Reader, name string, o Options) (Decoder, error)
	// Histograms says the format holds histograms rather than samples
	// (the HdrHistogram interval log): its inputs are read by package
	// histogram, not by a Decoder; see Detect.
	Histograms bool
}

// formats is the registry, filled by each format's file in its init.
var formats = map[string]Format{}

// Register adds a format to the registry; it panics on a duplicate name.
func Register(f Format) {
	if _, dup := formats[f.Name]; dup {
		panic("ingest: format registered twice: " + f.Name)
	}
	formats[f.Name] = f
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

// FormatNames returns the names --input accepts, "auto" first.
func FormatNames() []string {
	names := []string{"auto"}
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	return names
}

// NewDecoder returns a decoder for the named format ("auto" sniffs the first
// non-empty line of r and says which formats it tried when none fits).
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
// sniffed from the first line for "auto"), and the reader to go on with:
// r, or a bufio.Reader over r holding what sniffing read. Callers use it to
// send inputs of histograms (Format.Histograms) elsewhere.
func Detect(format string, r io.Reader, name string, o Options) (Format, io.Reader, error) {
	return detect(format, r, name, o)
}

// detect returns the format NewDecoder picks for r, and what to give its
// New: r, or after sniffing a bufio.Reader over r that holds what was read.
func detect(format string, r io.Reader, name string, o Options) (Format, io.Reader, error) {
	if format == "" || format == "auto" {
		// A log format the user gave says which server wrote the log.
		switch {
		case o.NginxConf != "" || strings.Contains(o.LogFormat, "$"):
			format = "nginx"
		case strings.Contains(o.LogFormat, "%"):
			format = "apache"
		default:
			br := bufio.NewReaderSize(r, 64<<10)
			f, err := sniff(br, name)
			return f, br, err
		}
	}
	f, ok := formats[format]
	if !ok {
		return Format{}, nil, fmt.Errorf("unknown input format %q (known: %s)", format, strings.Join(FormatNames(), ", "))
	}
	return f, r, nil
}

// firstLine returns the first non-blank line of br without consuming it. It
// reads no more than it must, so a slow pipe (tail -f) is sniffed as soon
// as its first line arrives; a line longer than the buffer is cut.
func firstLine(br *bufio.Reader) ([]byte, error) {
	for want := 1; ; {
		peek, err := br.Peek(min(br.Size(), max(want, br.Buffered())))
		want = len(peek) + 1 // if no whole line is in peek, wait for one byte more
		rest := peek
		for {
			line, after, found := bytes.Cut(rest, []byte("\n"))
			if !found && err == nil && len(peek) < br.Size() {
				break // an incomplete line: read more
			}
			if line = bytes.TrimSpace(line); len(line) > 0 {
				return line, nil
			}
			if !found {
				switch {
				case len(peek) == 0:
					return nil, ErrEmptyInput
				case err == nil || err == io.EOF:
					return nil, errors.New("holds only blank lines")
				}
				return nil, err
			}
			rest = after
		}
	}
}

// sniff picks the format of br's input from its first non-empty line.
func sniff(br *bufio.Reader, name string) (Format, error) {
	line, err := firstLine(br)
	if err != nil {
		return Format{}, fmt.Errorf("%s: %w", name, err)
	}
	var tried []string
	for _, f := range Formats() {
		if f.Sniff == nil {
			continue
		}
		tried = append(tried, f.Name)
		if f.Sniff(line) {
			return f, nil
		}
	}
	shown := line
	if len(shown) > 120 {
		shown = append(shown[:120:120], "..."...)
	}
	return Format{}, fmt.Errorf("%s: cannot tell the input format from its first line %q; tried %s; name it with --input",
		name, shown, strings.Join(tried, ", "))
}
