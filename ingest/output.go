package ingest

import (
	"fmt"
	"os"
)

// CheckOutput fails when the file output names is one of the inputs (their
// globs expanded as Expand does): writing it would destroy the data being
// read. "" and "-" (standard output) and a file that does not exist yet are
// no input; nor is anything when the inputs do not expand, which reading
// them reports.
func CheckOutput(output string, inputs []string) error {
	if output == "" || output == "-" {
		return nil
	}
	out, err := os.Stat(output)
	if err != nil {
		return nil // a new file: no input
	}
	names, err := Expand(inputs)
	if err != nil {
		return nil // reading the inputs reports it
	}
	for _, name := range names {
		if name == "-" {
			continue
		}
		if in, err := os.Stat(name); err == nil && os.SameFile(in, out) {
			return fmt.Errorf("%s is also an input: writing it would destroy what is read", output)
		}
	}
	return nil
}
