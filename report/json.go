package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes r as indented JSON (the contract in the README).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
