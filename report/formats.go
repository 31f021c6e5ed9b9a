package report

import (
	"fmt"
	"io"
	"strings"
)

// Format is one output format: its name, what it writes, and how. Every
// command's -o, its --help and its errors read this one registry.
type Format struct {
	Name string
	// Report writes the whole report (analyze, prometheus); nil when the
	// format does not write one.
	Report Writer
	// Policy writes the call policy and its simulation alone (simulate);
	// nil when the format does not write one.
	Policy Writer
	// Check writes the findings of `tunetimeout check`; nil when the
	// format does not write them.
	Check func(io.Writer, *Check) error
	// EmbedsSnippets: the format carries the --emit snippets inside its
	// document (Report.Snippets) instead of having them printed after it.
	EmbedsSnippets bool
}

// outputs is the registry, by name.
var outputs = []Format{
	{Name: "html", Report: WriteHTML, EmbedsSnippets: true},
	{Name: "json", Report: WriteJSON, Policy: WritePolicyJSON, Check: WriteCheckJSON},
	{Name: "markdown", Report: WriteMarkdown, Check: WriteCheckMarkdown, EmbedsSnippets: true},
	{Name: "sarif", Check: WriteCheckSARIF},
	{Name: "text", Report: WriteText, Policy: WritePolicyText, Check: WriteCheckText},
}

// CheckFormats lists the names of the formats that write a check.
func CheckFormats() []string {
	var out []string
	for _, f := range outputs {
		if f.Check != nil {
			out = append(out, f.Name)
		}
	}
	return out
}

// LookupCheck returns the writer of a check for a format name.
func LookupCheck(name string) (func(io.Writer, *Check) error, error) {
	for _, f := range outputs {
		if f.Name == name && f.Check != nil {
			return f.Check, nil
		}
	}
	return nil, fmt.Errorf("unknown output format %q (known: %s)", name, strings.Join(CheckFormats(), ", "))
}

// Formats lists the names of the formats that write a whole report.
func Formats() []string { return names(func(f Format) Writer { return f.Report }) }

// PolicyFormats lists the names of the formats that write a call policy
// alone.
func PolicyFormats() []string { return names(func(f Format) Writer { return f.Policy }) }

// Lookup returns the writer of the whole report for a format name.
func Lookup(name string) (Writer, error) {
	return lookup(name, func(f Format) Writer { return f.Report })
}

// LookupPolicy returns the writer of the policy-only report for a format
// name.
func LookupPolicy(name string) (Writer, error) {
	return lookup(name, func(f Format) Writer { return f.Policy })
}

// EmbedsSnippets reports whether a format carries the --emit snippets
// inside its document (Report.Snippets) instead of having them printed
// after it.
func EmbedsSnippets(name string) bool {
	for _, f := range outputs {
		if f.Name == name {
			return f.EmbedsSnippets
		}
	}
	return false
}

func names(writer func(Format) Writer) []string {
	var out []string
	for _, f := range outputs {
		if writer(f) != nil {
			out = append(out, f.Name)
		}
	}
	return out
}

func lookup(name string, writer func(Format) Writer) (Writer, error) {
	for _, f := range outputs {
		if f.Name == name && writer(f) != nil {
			return writer(f), nil
		}
	}
	return nil, fmt.Errorf("unknown output format %q (known: %s)", name, strings.Join(names(writer), ", "))
}
