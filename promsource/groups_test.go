package promsource

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/promsource/promtest"
)

// groupsServer serves promtest.Labelled(sets) for the test's length.
func groupsServer(t *testing.T, sets []map[string]string) string {
	srv := httptest.NewServer(promtest.Labelled(sets))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Issue 30, item 11: a group is its label values. Joined by spaces,
// {route="x y",method="z"} and {route="x",method="y z"} were one group
// "x y z" (their calls added, no warning), and route="-" and a series
// without route were one group "-".
func TestGroupsWithDifferentLabelsNeverMerge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		by     []string
		sets   []map[string]string
		want   map[string][]Label // name -> labels
		counts map[string]float64
	}{
		{name: "spaces in values", by: []string{"route", "method"},
			sets: []map[string]string{{"route": "x y", "method": "z"}, {"route": "x", "method": "y z"}},
			want: map[string][]Label{
				`"x y" z`: {{"route", "x y"}, {"method", "z"}},
				`x "y z"`: {{"route", "x"}, {"method", "y z"}},
			},
			counts: map[string]float64{`"x y" z`: 1000, `x "y z"`: 2000}},
		{name: "a value - and a missing label", by: []string{"route"},
			sets: []map[string]string{{"route": "-"}, {"job": "api"}},
			want: map[string][]Label{
				`"-"`: {{"route", "-"}},
				`-`:   nil,
			},
			counts: map[string]float64{`"-"`: 1000, `-`: 2000}},
		{name: "plain values stay plain", by: []string{"route", "method"},
			sets: []map[string]string{{"route": "/api", "method": "GET"}, {"route": "/api"}},
			want: map[string][]Label{
				`/api GET`: {{"route", "/api"}, {"method", "GET"}},
				`/api -`:   {{"route", "/api"}},
			},
			counts: map[string]float64{`/api GET`: 1000, `/api -`: 2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(groupsServer(t, tc.sets), &noSleep{})
			o.By = tc.by
			res, err := Fetch(context.Background(), o)
			require.NoError(t, err)
			require.Len(t, res.Groups, len(tc.want), "one group per label set")
			for _, g := range res.Groups {
				want, ok := tc.want[g.Name]
				require.True(t, ok, "unexpected group %q", g.Name)
				assert.Equal(t, want, g.Labels, g.Name)
				assert.Equal(t, tc.counts[g.Name], g.Calls, g.Name)
				require.NotNil(t, g.Overall, g.Name)
				assert.InDelta(t, tc.counts[g.Name], g.Overall.Count, 1e-9, "%s: its buckets alone", g.Name)
			}
		})
	}
}

// Issue 30, item 5, for Prometheus: a label value longer than
// names.MaxBytes made a group name as long, which every report and rule
// repeated; the name is cut visibly with its hash, and two values that
// differ only past the cut stay two groups.
func TestGroupNamesAreCapped(t *testing.T) {
	long := strings.Repeat("/a", 1500)
	sets := []map[string]string{{"route": long + "x"}, {"route": long + "y"}}
	o := options(groupsServer(t, sets), &noSleep{})
	o.By = []string{"route"}
	res, err := Fetch(context.Background(), o)
	require.NoError(t, err)
	require.Len(t, res.Groups, 2, "values that differ past the cut stay apart")
	for _, g := range res.Groups {
		assert.LessOrEqual(t, len(g.Name), names.MaxBytes+64, "the name's length")
		assert.True(t, strings.Contains(g.Name, "…[cut: 3001 bytes, sha256 "), "cut visibly: %.40q...", g.Name[max(0, len(g.Name)-60):])
		require.Len(t, g.Labels, 1)
		assert.Len(t, g.Labels[0].Value, 3001, "the labels keep the whole value, for the rules' matchers")
	}
	assert.NotEqual(t, res.Groups[0].Name, res.Groups[1].Name)
}
