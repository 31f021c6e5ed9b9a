// Package source says where the latency of a run comes from: files (logs,
// CSV, spans, interval logs, OTLP metrics), a live Prometheus, Jaeger or
// ClickHouse. Each is one type here that names itself from the start: the
// name the report's input, its notes, findings, examples and errors quote,
// never a temporary file's path replaced afterwards. A job (analysis) takes
// any Source and reads it by what it gives: calls one at a time, which fill
// HDR histograms (histogram.Set), or latency already counted in buckets
// (histogram.Bucketed).
//
// A new source is one file here (its type, Name, Gives, and Spool or
// Fetch) plus its flags in the CLI's source flags (cmd/tunetimeout/source.go).
package source

import (
	"context"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/finding"
)

// Gives is what a source gives a job.
type Gives int

const (
	// Calls one at a time, each with its latency: log files, CSV, interval
	// logs. They fill HDR histograms (histogram.Set).
	Calls Gives = iota + 1
	// Spans are calls with their caller and callee: the call graph's
	// edges, and the deadlines and budgets along them.
	Spans
	// Buckets are latency a server counted in buckets over a window
	// (histogram.Bucketed, or HDR buckets a SQL engine computed): no call
	// is seen one at a time.
	Buckets
)

// A Source is where the latency of one run comes from.
type Source interface {
	// Name is the source as the report names it (its input's files, and
	// every note, finding, example and error about what was read).
	Name() string
	// Gives says what the source gives (files: what their format holds,
	// Calls unless told otherwise).
	Gives() Gives
}

// A Spooler is a source fetched to local files before it is read: a
// server's answer may be larger than memory should hold, and the spans of
// Jaeger are read twice (the call graph's checks). The files are read by
// an ingest format, each under the source's Name.
type Spooler interface {
	Source
	// Spool fetches the source into files in dir, which the caller
	// creates and removes.
	Spool(ctx context.Context, dir string) (*Spool, error)
}

// Spool is what a Spooler fetched.
type Spool struct {
	// Paths are the files in the order they are read.
	Paths []string
	// Format is the ingest format that reads them.
	Format string
	// AsIs says the server already grouped the calls, applied the status
	// rule and the window: the files are read as they are, with no
	// grouping, rule or time range of the run's own.
	AsIs bool
	// Notes are what the report's input says of the fetch.
	Notes []finding.Finding
}

// Files are inputs read from disk or standard input: file names, globs,
// or "-".
type Files struct {
	Paths []string
	// Format is the ingest format that reads them; "" detects each.
	Format string
}

// Name is the files, as the report's input lists them.
func (f *Files) Name() string { return strings.Join(f.Paths, ", ") }

// Gives is Calls: interval logs and OTLP metrics files, which hold
// histograms, are told apart by their format as they are read.
func (f *Files) Gives() Gives { return Calls }
