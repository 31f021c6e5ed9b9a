package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes r as indented JSON (the contract in the README), with
// the summary table when there are several groups.
func WriteJSON(w io.Writer, r *Report) error {
	out := *r
	if len(r.Groups) > 1 {
		out.Summary = Summarize(r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&out)
}
