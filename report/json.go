package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/human"
)

// WriteJSON writes r as indented JSON (the contract in the README), with
// the summary table when there are several groups. Names from data are
// kept as they are, with the control and bidirectional characters that
// encoding/json leaves raw written as \uXXXX escapes (escape.JSON): the
// document decodes to the same names and shows none of them raw.
//
// The keys are Report's fields, read from their json tags as encoding/json
// reads them (jsonFields): a field added to Report is written without an
// edit here. The document is written a key at a time and a list (the
// groups) an element at a time, so that a report of 10,000 groups is never
// held whole in memory twice over (indented, then escaped); the bytes are
// those of encoding/json's indented encoding of the whole report, which
// TestWriteJSONStreams and TestWriteJSONEveryField check.
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
	rv := reflect.ValueOf(&out).Elem()
	put("{")
	sep := "\n  "
	for _, f := range jsonFields() {
		v := rv.Field(f.index)
		if f.omitted(v) {
			continue
		}
		put(sep + f.key + ": ")
		sep = ",\n  "
		if !f.list || v.Len() == 0 {
			// A nil list is null and an empty one [], as encoding/json
			// writes them.
			if err := value("  ", v.Interface()); err != nil {
				return err
			}
			continue
		}
		put("[\n")
		for i := range v.Len() {
			put("    ")
			if err := value("    ", v.Index(i).Addr().Interface()); err != nil {
				return err
			}
			if i < v.Len()-1 {
				put(",")
			}
			put("\n")
		}
		put("  ]")
	}
	put("\n}\n")
	return bw.Flush()
}

// jsonField is one key of the JSON report: a field of Report and what its
// json tag says.
type jsonField struct {
	index     int    // of the field in Report
	key       string // the key as written, quoted: "\"groups\""
	omitEmpty bool   // ,omitempty
	omitZero  bool   // ,omitzero
	// list is a slice written an element at a time ([]byte excepted:
	// encoding/json writes it as one base64 string).
	list bool
}

// jsonFields returns Report's keys in the order encoding/json writes them:
// its exported fields in order, named by their json tags (the field's name
// without one), a field tagged "-" left out. Report has no embedded fields
// and no ",string" option, which encoding/json would treat otherwise;
// TestWriteJSONEveryField fails if one is added.
var jsonFields = sync.OnceValue(func() []jsonField {
	t := reflect.TypeFor[Report]()
	var fields []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		key, err := json.Marshal(name)
		if err != nil {
			panic(err) // a string always encodes
		}
		f := jsonField{index: i, key: string(key)}
		for _, o := range strings.Split(opts, ",") {
			f.omitEmpty = f.omitEmpty || o == "omitempty"
			f.omitZero = f.omitZero || o == "omitzero"
		}
		f.list = sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() != reflect.Uint8 &&
			!sf.Type.Implements(reflect.TypeFor[json.Marshaler]())
		fields = append(fields, f)
	}
	return fields
})

// omitted reports whether the field's value v is left out of the document,
// by encoding/json's rules for omitempty (false, 0, a nil pointer, an
// empty string, list or map) and omitzero (the zero value, or IsZero).
func (f jsonField) omitted(v reflect.Value) bool {
	if f.omitZero {
		if v.IsZero() {
			return true
		}
		if z, ok := v.Interface().(interface{ IsZero() bool }); ok && z.IsZero() {
			return true
		}
	}
	if !f.omitEmpty {
		return false
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
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
