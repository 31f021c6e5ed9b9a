package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// ReadCheckJSON reads a check written by WriteCheckJSON (a --baseline);
// name is for errors.
func ReadCheckJSON(r io.Reader, name string) (*Check, error) {
	var c Check
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: not a check written with -o json: %w", name, err)
	}
	return &c, nil
}

// ApplyBaseline marks the findings of c that baseline already has as
// Baseline, and returns how many it marked. A finding is the same when
// its code, file, object and group are: lines move as a config is
// edited, and a baseline must survive that. Each finding of the baseline
// accepts one finding of c, so a second route with the same problem in
// the same file is new.
func (c *Check) ApplyBaseline(baseline *Check) int {
	type key struct{ code, file, object, group string }
	known := map[key]int{}
	for _, f := range baseline.Findings {
		known[key{f.Code, f.File, f.Object, f.Group}]++
	}
	n := 0
	for i := range c.Findings {
		f := &c.Findings[i]
		k := key{f.Code, f.File, f.Object, f.Group}
		if known[k] > 0 {
			known[k]--
			f.Baseline = true
			n++
		}
	}
	return n
}
