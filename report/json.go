package report

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

// WriteJSON writes r as indented JSON (the contract in the README), with
// the summary table when there are several groups. Names from data are
// kept as they are, with the control and bidirectional characters that
// encoding/json leaves raw written as \uXXXX escapes (escape.JSON): the
// document decodes to the same names and shows none of them raw.
func WriteJSON(w io.Writer, r *Report) error {
	out := *r
	if len(r.Groups) > 1 {
		out.Summary = Summarize(r)
	}
	return writeJSON(w, &out)
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
