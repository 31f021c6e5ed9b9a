package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// TestLongNamesCut (issue 30, item 5): 150 spans whose callee names were
// 1 MiB each made a 580 MB text report; a name longer than names.MaxBytes
// is now cut visibly, with a hash of the whole, where it is kept, so each
// report holds it at most once at that size, and names that differ past
// the cut stay apart. The same for a CSV's routes.
func TestLongNamesCut(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 600<<10)
	var spans []map[string]any
	for i := range 3 {
		spans = append(spans, map[string]any{"traceId": fmt.Sprintf("%032x", i+1), "id": fmt.Sprintf("%016x", i+1), "name": "get",
			"timestamp": 1700000000000000 + i*1000, "duration": 1000 + i, "kind": "CLIENT",
			"localEndpoint": map[string]string{"serviceName": "front"}, "remoteEndpoint": map[string]string{"serviceName": long + fmt.Sprint(i)}})
	}
	b, err := json.Marshal(spans)
	require.NoError(t, err)
	zipkin := filepath.Join(dir, "spans.json")
	require.NoError(t, os.WriteFile(zipkin, b, 0o644))

	var csv strings.Builder
	csv.WriteString("route,latency_ms\n")
	for i := range 3 {
		fmt.Fprintf(&csv, "/%s%d,%d\n", long, i, 10+i)
	}
	csvPath := filepath.Join(dir, "calls.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte(csv.String()), 0o644))

	for _, c := range []struct {
		path, format, by string
	}{{zipkin, "zipkin", "callee"}, {csvPath, "csv", "route"}} {
		o := Options{Inputs: []string{c.path}, Format: c.format, Recommend: recommend.DefaultOptions()}
		o.Ingest.By = []string{c.by}
		rep, err := Run(context.Background(), o, nil)
		require.NoError(t, err, c.path)
		require.Len(t, rep.Groups, 3, c.path)
		seen := map[string]bool{}
		for _, g := range rep.Groups {
			assert.LessOrEqual(t, len(g.Name), names.MaxBytes, c.path)
			assert.Contains(t, g.Name, "…[cut: ", c.path)
			seen[g.Name] = true
		}
		assert.Len(t, seen, 3, "%s: names that differ past the cut stay apart", c.path)
	}
}
