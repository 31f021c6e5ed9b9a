package report

import (
	"bytes"
	"io"
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
