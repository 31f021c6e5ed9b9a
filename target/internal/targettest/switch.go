package targettest

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"go.yaml.in/yaml/v3"
)

// RetriesOffNote returns the header line of a snippet that says how to
// turn its retries off, failing the test when there is none.
func RetriesOffNote(t *testing.T, tg target.Target, f Fixture) string {
	t.Helper()
	notes, err := tg.Explain(LoadReport(t, f.Report), f.Opts)
	require.NoError(t, err)
	var found []string
	for _, n := range notes {
		if strings.HasPrefix(n, "Retries off during an incident") {
			found = append(found, n)
		}
	}
	require.Len(t, found, 1, "%s %s: one header line says how to turn retries off\n%s", f.Name, tg.Name, strings.Join(notes, "\n"))
	return found[0]
}

// DecodeYAMLDocs decodes every document of a YAML stream.
func DecodeYAMLDocs(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, d)
	}
}

// Dig follows keys (strings) and indexes (ints) into a decoded document.
func Dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// AsInt is a YAML number as an int, -1 when v is none.
func AsInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return -1
}
