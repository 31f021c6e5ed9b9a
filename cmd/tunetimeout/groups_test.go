package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// Issue 30, item 11, for files: a group is its values, as a Prometheus
// group is its labels. Joined by spaces, {a="x y",b="z"} and
// {a="x",b="y z"} were one group "x y z", their calls added up; a value
// "-" and a missing value were one group "-" (and in CSV a missing value
// was no name at all: " z").
func TestAnalyzeGroupsWithDifferentValuesNeverMerge(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int, line func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i))
		}
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		return p
	}
	csvRows := []string{"x y,z", "x,y z", "-,z", ",z"}
	csvFile := write("groups.csv", 4000, func(i int) string {
		if i == 0 {
			return "a,b,latency_ms\n"
		}
		return fmt.Sprintf("%s,%d\n", csvRows[i%4], 10+i%4)
	})
	jsonRows := []string{`"method":"y z","path":"/x"`, `"method":"z","path":"/x"`, `"method":"-","path":"/x"`, `"path":"/x"`}
	jsonFile := write("groups.jsonl", 4000, func(i int) string {
		return fmt.Sprintf(`{"duration_ms":%d,%s}`+"\n", 10+i%4, jsonRows[i%4])
	})
	for _, tc := range []struct {
		name string
		args []string
		want map[string]int64 // group -> samples
	}{
		{"csv", []string{"--by", "a,b", csvFile},
			map[string]int64{`"x y" z`: 999, `x "y z"`: 1000, `"-" z`: 1000, `- z`: 1000}},
		// In JSON logs "-" is Envoy's unset value (ingest/jsonl.go): a
		// missing method, as an absent one.
		{"json log", []string{"--input", "jsonl", "--field", "duration_ms", "--unit", "ms", "--path-field", "path", "--method-field", "method", "--by", "method", jsonFile},
			map[string]int64{`"y z"`: 1000, `z`: 1000, `-`: 2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := execute(t, "", append([]string{"analyze", "-q", "-o", "json"}, tc.args...)...)
			require.Equal(t, 0, code, errOut)
			var r report.Report
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			got := map[string]int64{}
			for _, g := range r.Groups {
				got[g.Name] = g.Samples
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
