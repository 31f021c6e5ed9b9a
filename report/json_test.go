package report

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, controlReport()))
	r, err := ReadJSON(bytes.NewReader(b.Bytes()), "r.json")
	require.NoError(t, err)
	assert.Equal(t, controlReport().Groups[0].Name, r.Groups[0].Name, "what WriteJSON wrote reads back")

	tests := []struct{ name, in, want string }{
		{"not JSON", "Read 3 records", "r.json: not a JSON report (analyze -o json): invalid character 'R' looking for beginning of value"},
		{"two documents", `{"groups":[{"recommendation":{"timeout_seconds":1}}]} {}`, "r.json: not a JSON report (analyze -o json): more data after the report"},
		{"cut off", b.String()[:b.Len()/2], "r.json: not a JSON report (analyze -o json): unexpected EOF"},
		{"no groups", `{"groups":[]}`, "r.json: the report has no groups (analyze -o json writes them)"},
		{"zero timeout", `{"groups":[{"name":"a\u001b","recommendation":{"timeout_seconds":0}}]}`,
			`r.json: group 1 ("a\x1b"): timeout_seconds 0 is not a positive number of seconds below a year`},
		{"a long name, cut", `{"groups":[{"name":"` + strings.Repeat("é", 200) + `","recommendation":{"timeout_seconds":-1}}]}`,
			`r.json: group 1 ("` + strings.Repeat("é", 120) + `..."): timeout_seconds -1 is not a positive number of seconds below a year`},
		{"huge timeout", `{"groups":[{"recommendation":{"timeout_seconds":1}},{"recommendation":{"timeout_seconds":1e300}}]}`,
			`r.json: group 2 (""): timeout_seconds 1e+300 is not a positive number of seconds below a year`},
	}
	for _, tt := range tests {
		_, err := ReadJSON(strings.NewReader(tt.in), "r.json")
		assert.EqualError(t, err, tt.want, tt.name)
	}

	// Beyond the cap: an endless document ends with the cap named.
	endless := io.MultiReader(strings.NewReader(`{"groups":[{"name":"`), infinite('a'))
	_, err = ReadJSON(endless, "big.json")
	assert.EqualError(t, err, "big.json: larger than 256 MiB, the cap of a JSON report")
}

// infinite is an endless stream of one byte.
type infinite byte

func (c infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// TestWriteJSONStreams: the report written a group at a time is byte for
// byte encoding/json's indented encoding of the whole (with escape.JSON),
// whatever the report holds: names to escape, unknowns, a Prometheus
// source, the summary table, no groups.
func TestWriteJSONStreams(t *testing.T) {
	withProm := controlReport()
	withProm.Prometheus = &PrometheusSource{URL: "http://p:9090", Metric: "m<&>", Queries: []string{"sum(x)"}, Warnings: []string{}}
	one := controlReport()
	one.Groups = one.Groups[:1]
	empty := controlReport()
	empty.Groups = []Group{}
	null := controlReport()
	null.Groups = nil
	// The call graph was once left out of the streamed JSON.
	graph := controlReport()
	graph.CallGraph = &CallGraph{Edges: []Edge{{Group: "a b", Caller: "a", Callee: "b<&>", Calls: 3}}, Findings: []Finding{}}
	herd := controlReport()
	herd.Herd = testHerd()
	for name, r := range map[string]*Report{"hostile": controlReport(), "unknowns": unknowns(), "prometheus": withProm,
		"one group": one, "no groups": empty, "nil groups": null, "call graph": graph, "herd": herd} {
		out := *r
		if len(r.Groups) > 1 {
			out.Summary = Summarize(r)
		}
		var want, got bytes.Buffer
		require.NoError(t, writeJSON(&want, &out), name)
		require.NoError(t, WriteJSON(&got, r), name)
		assert.Equal(t, want.String(), got.String(), name)
		if r.Herd != nil {
			assert.Contains(t, got.String(), `"herd": {`, name)
			assert.Contains(t, got.String(), `"busiest_retry_ms_calls": 1000`, name)
			assert.NotContains(t, got.String(), "calls_per_ms", "the series is the plot's only")
		}
		if r.CallGraph != nil {
			assert.Contains(t, got.String(), `"call_graph": {`, name)
			assert.Contains(t, got.String(), `"callee": "b\u003c\u0026\u003e"`, name)
		}
	}
}

// TestWriteJSONEveryField: every field of Report with a json key is in the
// document, written as encoding/json writes the whole report. The report
// has each top-level field set (a field left zero is filled by reflection,
// so a field added to Report is filled too): a key WriteJSON forgot, as it
// once forgot the call graph, fails here.
func TestWriteJSONEveryField(t *testing.T) {
	r := controlReport()
	rv := reflect.ValueOf(r).Elem()
	want := map[string]bool{}
	for i := range rv.NumField() {
		sf := rv.Type().Field(i)
		require.False(t, sf.Anonymous, "%s: WriteJSON does not flatten embedded fields as encoding/json does", sf.Name)
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		want[name] = true
		if rv.Field(i).IsZero() {
			fill(rv.Field(i))
		}
		require.False(t, rv.Field(i).IsZero(), "%s is filled", sf.Name)
	}
	require.Contains(t, want, "call_graph")

	out := *r
	out.Summary = Summarize(r)
	var whole, got bytes.Buffer
	require.NoError(t, writeJSON(&whole, &out))
	require.NoError(t, WriteJSON(&got, r))
	assert.Equal(t, whole.String(), got.String())

	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got.Bytes(), &doc))
	for k := range want {
		assert.Contains(t, doc, k, "the key of a field of Report")
	}
	assert.Len(t, doc, len(want), "no key but Report's")
}

// fill gives v, a zero field, a value that neither omitempty nor omitzero
// leaves out.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}
