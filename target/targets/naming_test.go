package targets

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// namingTargets are the targets whose snippets name each group's object.
func namingTargets(t *testing.T) []target.Target {
	var out []target.Target
	for _, tg := range All {
		if tg.Naming != nil {
			out = append(out, tg)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestGroupsNamedProperty: over random reports with hostile group and
// service names, every group a snippet writes an object for reads back
// from that object.
func TestGroupsNamedProperty(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		rep := targettest.RandReport(r)
		svc := targettest.ServiceNames[r.IntN(len(targettest.ServiceNames))]
		var groups []string
		for _, g := range rep.Groups {
			groups = append(groups, g.Name)
		}
		pl, err := target.NewPlan(rep, target.Options{Service: svc})
		require.NoError(t, err)
		catchAll := map[string]bool{}
		for _, rt := range pl.Routes {
			catchAll[rt.Group] = rt.Match.CatchAll && !rt.Match.NotPath
		}
		for _, tg := range namingTargets(t) {
			body, err := tg.Render(rep, target.Options{Service: svc})
			require.NoError(t, err)
			objs, err := tg.Read(tg.File, body, nil)
			require.NoError(t, err, "seed %d %s:\n%s", seed, tg.Name, body)
			for _, g := range groups {
				if len(groups) == 1 && !tg.Naming.Lone {
					continue // the lone object of a routing target is every request's
				}
				if !tg.Naming.Lone && strings.IndexFunc(g, escape.Unsafe) >= 0 {
					continue // not routable: the catch-all takes it
				}
				if slices.ContainsFunc(groups, func(h string) bool { return h != g && tg.NameOf(svc, h) == tg.NameOf(svc, g) }) {
					continue // two groups of one name: the snippet numbers the second
				}
				if tg.Naming.CatchAllUnnamed && catchAll[g] {
					continue // every method of the service: the service's config
				}
				ok := slices.ContainsFunc(objs, func(ob target.Object) bool { return slices.Contains(tg.GroupsNamed(ob, groups), g) })
				assert.True(t, ok, "seed %d %s, service %q: no object named for group %q", seed, tg.Name, svc, g)
			}
		}
	}
}
