package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WriteJSON writes r as indented JSON (the contract in the README), with
// the summary table when there are several groups. Names from data are
// kept as they are, with the control and bidirectional characters that
// encoding/json leaves raw written as \uXXXX escapes (escape.JSON): the
// document decodes to the same names and shows none of them raw.
//
// The document is written a group at a time, so that a report of 10,000
// groups is never held whole in memory twice over (indented, then
// escaped); the bytes are those of encoding/json's indented encoding of the
// whole report, which TestWriteJSONStreams checks.
func WriteJSON(w io.Writer, r *Report) error {
	out := *r
	if len(r.Groups) > 1 {
		out.Summary = Summarize(r)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	put := func(s string) { bw.WriteString(s) }
	value := func(prefix string, v any) error {
		b, err := json.MarshalIndent(v, prefix, "  ")
		if err != nil {
			return err
		}
		_, err = bw.Write(escape.JSON(b))
		return err
	}
	put("{\n  \"input\": ")
	if err := value("  ", out.Input); err != nil {
		return err
	}
	put(",\n  \"groups\": ")
	switch {
	case out.Groups == nil:
		put("null")
	case len(out.Groups) == 0:
		put("[]")
	default:
		put("[\n")
		for i := range out.Groups {
			put("    ")
			if err := value("    ", &out.Groups[i]); err != nil {
				return err
			}
			if i < len(out.Groups)-1 {
				put(",")
			}
			put("\n")
		}
		put("  ]")
	}
	put(",\n  \"shared_pool\": ")
	if err := value("  ", out.SharedPool); err != nil {
		return err
	}
	if out.CallGraph != nil {
		put(",\n  \"call_graph\": ")
		if err := value("  ", out.CallGraph); err != nil {
			return err
		}
	}
	if out.Herd != nil {
		put(",\n  \"herd\": ")
		if err := value("  ", out.Herd); err != nil {
			return err
		}
	}
	if out.Prometheus != nil {
		put(",\n  \"prometheus\": ")
		if err := value("  ", out.Prometheus); err != nil {
			return err
		}
	}
	if len(out.Summary) > 0 {
		put(",\n  \"summary\": ")
		if err := value("  ", out.Summary); err != nil {
			return err
		}
	}
	put("\n}\n")
	return bw.Flush()
}

// writeJSON encodes v as indented JSON with escape.JSON applied.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escape.JSON(b.Bytes()))
	return err
}

// MaxJSONReport caps what ReadJSON reads: a report of the 20,000 groups
// --max-groups allows at most is a few tens of megabytes.
const MaxJSONReport = 256 << 20

// ReadJSON reads a report WriteJSON wrote (snippet --report), name being
// where it comes from for errors. It reads at most MaxJSONReport bytes,
// one JSON document with nothing but space after it, and refuses a report
// without groups or with a group whose recommended timeout is not a
// positive number of seconds below a year: the snippets are built from it.
func ReadJSON(in io.Reader, name string) (*Report, error) {
	lr := &io.LimitedReader{R: in, N: MaxJSONReport + 1}
	dec := json.NewDecoder(lr)
	var r Report
	if err := dec.Decode(&r); err != nil {
		if lr.N == 0 {
			return nil, fmt.Errorf("%s: larger than %s, the cap of a JSON report", name, human.Bytes(MaxJSONReport))
		}
		return nil, fmt.Errorf("%s: not a JSON report (analyze -o json): %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if lr.N == 0 {
			return nil, fmt.Errorf("%s: larger than %s, the cap of a JSON report", name, human.Bytes(MaxJSONReport))
		}
		return nil, fmt.Errorf("%s: not a JSON report (analyze -o json): more data after the report", name)
	}
	if len(r.Groups) == 0 {
		return nil, fmt.Errorf("%s: the report has no groups (analyze -o json writes them)", name)
	}
	const year = 365 * 24 * 3600
	for i, g := range r.Groups {
		if t := g.Recommendation.TimeoutSeconds; !(t > 0 && t < year) {
			shown := g.Name
			if r := []rune(shown); len(r) > 120 {
				shown = string(r[:120]) + "..."
			}
			return nil, fmt.Errorf("%s: group %d (%q): timeout_seconds %v is not a positive number of seconds below a year", name, i+1, shown, t)
		}
	}
	return &r, nil
}
