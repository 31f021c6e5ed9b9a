package targettest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/target"
)

// NamedGroups are group names of which one holds another ("/api/users
// GET" and "/users GET"), and a gRPC method path.
var NamedGroups = []string{"/api/orders POST", "/api/orders/{id} PUT", "/api/users GET", "/users GET", "/pkg.v1.Orders/Get"}

// GroupsNamed: the object tg's snippet writes for each of NamedGroups,
// under service "my.svc", is named want[group] and reads back as that
// group's, under the service the snippet was written for and no other
// group's.
func GroupsNamed(t *testing.T, tg target.Target, want map[string]string) {
	t.Helper()
	require.NotNil(t, tg.Naming, "%s names no object", tg.Name)
	rep := &report.Report{}
	for _, g := range NamedGroups {
		gr := report.Group{Name: g, Samples: 1000}
		gr.Recommendation.Quantile, gr.Recommendation.TimeoutSeconds = 0.999, 0.25
		rep.Groups = append(rep.Groups, gr)
	}
	require.Len(t, want, len(NamedGroups))
	body, err := tg.Render(rep, target.Options{Service: "my.svc"})
	require.NoError(t, err, tg.Name)
	objs, err := tg.Read(tg.File, body, nil)
	require.NoError(t, err, "%s:\n%s", tg.Name, body)
	found := 0
	for _, ob := range objs {
		named := tg.GroupsNamed(ob, NamedGroups)
		for _, g := range NamedGroups {
			if slices.Contains(tg.Naming.Names(ob), want[g]) {
				assert.Equal(t, []string{g}, named, "%s: %s", tg.Name, ob.Name)
				assert.Equal(t, want[g], tg.NameOf("my.svc", g))
				found++
			}
		}
	}
	assert.Equal(t, len(NamedGroups), found, "%s: one object per group:\n%s", tg.Name, body)
}
