// Package finding holds findings: what an analysis tells its reader about
// the data and the advice it gives (a quantile that is only a lower bound,
// too few calls above it, a retry policy that multiplies load), each as a
// value with a stable code, a severity and its numbers, and a message for
// people rendered from those numbers. Code that
// sorts, filters or tests findings reads their codes, never their words.
//
// Every code is declared once, in codes.go, with its severity; docs/
// findings.md lists them all, and a test fails when the two differ. The
// package sits in internal/ so that every stage of the pipeline (recommend,
// analysis, report) can use it without importing one another.
package finding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Severity says how much a finding matters.
type Severity string

// The severities, least first.
const (
	// Info is a fact worth knowing that asks for nothing (how a rate was
	// split among groups).
	Info Severity = "info"
	// Warning says a figure is less certain than it looks, or a choice
	// costs more than it seems; the report stands, but read it.
	Warning Severity = "warning"
	// Error says the data or the configuration is wrong in a way that
	// makes a figure unreliable (latency below zero).
	Error Severity = "error"
)

// Code is a finding's stable identifier, "TT-FEW-ABOVE": other tools match
// on it; it never changes once released.
type Code string

// Fields are a finding's numbers by name, JSON-friendly: durations in
// seconds (names ending in _seconds), shares as fractions (_fraction),
// counts as int64, plus strings, booleans and string lists. A float that is
// NaN or infinite is stored as nil (JSON null): JSON has no number for it.
type Fields map[string]any

// Finding is one thing an analysis found.
type Finding struct {
	Code     Code
	Severity Severity
	// Message is the finding in words, rendered from Fields when it was
	// made: the text the reports have always shown.
	Message string
	Fields  Fields
}

// New returns the finding of code c with its fields and its message. The
// severity is the one codes.go declares for c (Warning for a code it does
// not declare, which TestDocumented forbids). Durations among the fields
// are stored as seconds, and NaN or infinite floats as nil.
func New(c Code, fields Fields, message string) Finding {
	sev := Warning
	if d, ok := Lookup(c); ok {
		sev = d.Severity
	}
	out := Fields{}
	for k, v := range fields {
		out[k] = clean(v)
	}
	return Finding{Code: c, Severity: sev, Message: message, Fields: out}
}

// Newf is New with the message formatted from format and args.
func Newf(c Code, fields Fields, format string, args ...any) Finding {
	return New(c, fields, fmt.Sprintf(format, args...))
}

// clean makes a field value JSON-friendly.
func clean(v any) any {
	switch x := v.(type) {
	case time.Duration:
		return x.Seconds()
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case int:
		return int64(x)
	case []string:
		return slices.Clone(x)
	}
	return v
}

// Messages returns the findings' messages in order: the []string warnings
// and notes the reports have always carried; nil for no findings.
func Messages(fs []Finding) []string {
	if len(fs) == 0 {
		return nil
	}
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Message)
	}
	return out
}

// Has reports whether fs holds a finding of code c.
func Has(fs []Finding, c Code) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Code == c })
}

// Without returns the findings of fs whose code is none of codes.
func Without(fs []Finding, codes ...Code) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if !slices.Contains(codes, f.Code) {
			out = append(out, f)
		}
	}
	return out
}

// Clone returns a copy of fs that shares no map with it; never nil.
func Clone(fs []Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		f.Fields = clone(f.Fields)
		out[i] = f
	}
	return out
}

func clone(m Fields) Fields {
	out := make(Fields, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// reserved are the JSON names of a finding's own members: no field may
// take them.
var reserved = []string{"code", "severity", "message"}

// MarshalJSON writes the finding as one object: code, severity, message,
// then the fields by name in sorted order, beside them.
func (f Finding) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	put := func(k string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("finding %s: field %q: %w", f.Code, k, err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		return nil
	}
	put("code", f.Code)
	put("severity", f.Severity)
	put("message", f.Message)
	keys := make([]string, 0, len(f.Fields))
	for k := range f.Fields {
		if slices.Contains(reserved, k) {
			return nil, fmt.Errorf("finding %s: field %q takes the name of a member of the finding", f.Code, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := put(k, clean(f.Fields[k])); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes: every member other than
// code, severity and message is a field (numbers read back as float64).
func (f *Finding) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("a finding must be a JSON object, not %s", data)
	}
	str := func(k string) (string, error) {
		v, ok := m[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("finding: %q must be a string", k)
		}
		return s, nil
	}
	var out Finding
	code, err := str("code")
	if err != nil {
		return err
	}
	sev, err := str("severity")
	if err != nil {
		return err
	}
	if out.Message, err = str("message"); err != nil {
		return err
	}
	out.Code, out.Severity = Code(code), Severity(sev)
	out.Fields = Fields{}
	for k, v := range m {
		if !slices.Contains(reserved, k) {
			out.Fields[k] = v
		}
	}
	*f = out
	return nil
}
