// Package ingest turns bytes into latency samples: one decoder per input
// format, each a streaming iterator over an io.Reader.
//
// A decoder never loads its whole input. Rows it cannot use are reported one
// at a time as *ParseError (counted by the caller, not fatal); anything else
// Next returns, other than io.EOF, ends the input.
package ingest

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Sample is one observed call.
type Sample struct {
	// Latency is how long the call took. When Censored is true it is a lower
	// bound: the call took at least this long (it ended because it was slow).
	Latency time.Duration
	// Time is when the call happened; the zero Time when the input has none.
	Time time.Time
	// Status is the response status (HTTP code or similar); 0 when unknown.
	Status int
	// Group is the values of the group-by fields joined by " "; "" when the
	// input is not grouped.
	Group string
	// Censored marks a right-censored observation ("took at least Latency").
	Censored bool
	// Connect is the time it took to connect to the upstream, when the
	// source records it (nginx $upstream_connect_time, HAProxy Tc) and
	// ConnectKnown is true. It feeds the connect-timeout recommendation.
	Connect      time.Duration
	ConnectKnown bool
	// Method is the request method when the input records one: one of
	// Methods, MethodOther for another, "" when the input does not say
	// (a format without it, a request line nginx could not parse). It
	// tells whether a group's requests may be repeated (RFC 9110 section
	// 9.2.2).
	Method string
	// Excluded is a decoder's own reason to leave this call out of the
	// latency sample ("envoy UF": the upstream connection failed, a fast
	// failure); "" when the format says nothing. The status rule keeps it.
	Excluded string
}

// ParseError describes one input line that could not be used. It is not
// fatal: callers count it and go on, unless they run in strict mode.
type ParseError struct {
	File   string // name of the input, "-" for stdin
	Line   int    // 1-based line number
	Field  string // column or field name; "" when the whole line is bad
	Value  string // the offending value, truncated for display
	Reason string // e.g. "is not a number"
	Kind   string // what Field is: "column" (CSV) or "" for "field" (logs)
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	kind := e.Kind
	if kind == "" {
		kind = "field"
	}
	return fmt.Sprintf("%s:%d: %s %q: %q %s", e.File, e.Line, kind, e.Field, e.Value, e.Reason)
}

// maxValueLen is how many bytes of an offending value a ParseError keeps.
const maxValueLen = 64

// displayValue returns v cut to at most maxValueLen bytes (on a UTF-8
// boundary) with "..." appended when cut. The result never shares memory
// with v, so an error does not pin a whole input line.
func displayValue(v string) string {
	if len(v) <= maxValueLen {
		return strings.Clone(v)
	}
	n := maxValueLen
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n] + "..."
}

// Decoder yields samples one at a time. Next returns io.EOF after the last
// sample. A *ParseError means the current line was skipped and Next may be
// called again; any other error is fatal.
type Decoder interface {
	Next() (Sample, error)
}

// ExcludedNoUpstream is the Sample.Excluded reason, shared by every format,
// of a request that never reached an upstream (its upstream time is "-")
// when the latency measured is the upstream's.
const ExcludedNoUpstream = "no upstream"
