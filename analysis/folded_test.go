package analysis

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
)

// distinctGroups is a CSV of one call in each of n groups, then one more
// call in each of the first ten.
func distinctGroups(n int) string {
	var b strings.Builder
	b.WriteString("group,latency_ms\n")
	for i := range n {
		fmt.Fprintf(&b, "g%d,%d\n", i, 1+i%100)
	}
	for i := range 10 {
		fmt.Fprintf(&b, "g%d,5\n", i)
	}
	return b.String()
}

// TestFoldedNoteCounts: the note on groups folded into "other" gives the
// exact number of distinct groups folded, and past what a set remembers
// (100,000 names) says "at least", in the text and in the JSON, on one core
// and on several: never the cap as if it were a count.
func TestFoldedNoteCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1,000,000 groups")
	}
	tests := []struct {
		groups int
		want   string
	}{
		{1_000, `990 calls from 990 more groups are folded into "other": only 10 groups are kept apart (--max-groups).`},
		{1_000_000, `999,990 calls from at least 100,000 more groups are folded into "other": only 10 groups are kept apart (--max-groups).`},
	}
	for _, tt := range tests {
		input := distinctGroups(tt.groups)
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%d groups, %d workers", tt.groups, workers), func(t *testing.T) {
				o := options("-")
				o.Ingest.By = []string{"group"}
				o.MaxGroups, o.Workers = 10, workers
				r, err := Run(context.Background(), o, strings.NewReader(input))
				require.NoError(t, err)
				require.NotEmpty(t, r.Input.Notes)
				assert.Equal(t, tt.want, r.Input.Notes[0])
				var j bytes.Buffer
				require.NoError(t, report.WriteJSON(&j, r))
				assert.True(t, strings.Contains(j.String(), strings.ReplaceAll(tt.want, `"`, `\"`)), "the note in the JSON")
			})
		}
	}
}

// TestSummaryOfManyFoldedGroups: a summary folding more group names than
// its trailer line may list cuts the list, says so, and reads back, with
// every call and an "at least" count.
func TestSummaryOfManyFoldedGroups(t *testing.T) {
	var b strings.Builder
	b.WriteString("route,latency_ms\n")
	const routes = 60_000
	for i := range routes {
		fmt.Fprintf(&b, "/api/v1/some/long/resource/path/name/segment/%08d/details,%d\n", i, 10+i%50)
	}
	path := filepath.Join(t.TempDir(), "routes.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	o := options(path)
	o.Ingest.By = []string{"route"}
	o.MaxGroups = 5
	var hlog bytes.Buffer
	_, err := Summarize(context.Background(), o, time.Minute, nil, &hlog)
	require.NoError(t, err)
	for _, line := range strings.Split(hlog.String(), "\n") {
		require.Less(t, len(line), 4<<20, "every line reads back")
	}
	sum := filepath.Join(t.TempDir(), "s.hlog")
	require.NoError(t, os.WriteFile(sum, hlog.Bytes(), 0o644))
	r, err := Run(context.Background(), options(sum), nil)
	require.NoError(t, err)
	var calls int64
	for _, g := range r.Groups {
		calls += g.Samples
	}
	assert.EqualValues(t, routes, calls)
	var note string
	for _, n := range r.Input.Notes {
		if strings.Contains(n, "folded") {
			note = n
		}
	}
	assert.Regexp(t, `^59,995 calls from at least [0-9,]+ more groups are folded`, note)
}
