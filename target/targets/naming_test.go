package targets

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/report"
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
	require.Len(t, out, 3, "gRPC, resilience4j, HAProxy")
	return out
}

// TestGroupsNamed: the object a snippet writes for a group reads back as
// that group's, under the service the snippet was written for and no
// other group's, even where a group's name holds another's
// ("/api/users GET" and "/users GET" under "backend").
func TestGroupsNamed(t *testing.T) {
	groups := []string{"/api/orders POST", "/api/orders/{id} PUT", "/api/users GET", "/users GET", "/pkg.v1.Orders/Get"}
	rep := &report.Report{}
	for _, g := range groups {
		gr := report.Group{Name: g, Samples: 1000}
		gr.Recommendation.Quantile, gr.Recommendation.TimeoutSeconds = 0.999, 0.25
		rep.Groups = append(rep.Groups, gr)
	}
	want := map[string]map[string]string{
		"grpc": {"/api/orders POST": "my.svc/APIOrdersPOST", "/api/orders/{id} PUT": "my.svc/APIOrdersIDPUT",
			"/api/users GET": "my.svc/APIUsersGET", "/users GET": "my.svc/UsersGET", "/pkg.v1.Orders/Get": "pkg.v1.Orders/Get"},
		"haproxy": {"/api/orders POST": "my_svc_api_orders_post", "/api/orders/{id} PUT": "my_svc_api_orders_id_put",
			"/api/users GET": "my_svc_api_users_get", "/users GET": "my_svc_users_get", "/pkg.v1.Orders/Get": "my_svc_pkg_v1_orders_get"},
		"resilience4j": {"/api/orders POST": "my-svc-api-orders-post", "/api/orders/{id} PUT": "my-svc-api-orders-id-put",
			"/api/users GET": "my-svc-api-users-get", "/users GET": "my-svc-users-get", "/pkg.v1.Orders/Get": "my-svc-pkg-v1-orders-get"},
	}
	for _, tg := range namingTargets(t) {
		body, err := tg.Render(rep, target.Options{Service: "my.svc"})
		require.NoError(t, err, tg.Name)
		objs, err := tg.Read(tg.File, body, nil)
		require.NoError(t, err, "%s:\n%s", tg.Name, body)
		found := 0
		for _, ob := range objs {
			named := tg.GroupsNamed(ob, groups)
			for _, g := range groups {
				if slices.Contains(tg.Naming.Names(ob), want[tg.Name][g]) {
					assert.Equal(t, []string{g}, named, "%s: %s", tg.Name, ob.Name)
					assert.Equal(t, want[tg.Name][g], tg.NameOf("my.svc", g))
					found++
				}
			}
		}
		assert.Equal(t, len(groups), found, "%s: one object per group:\n%s", tg.Name, body)
	}
	// Another service, or none, names the same groups.
	hp, _ := Lookup("haproxy")
	ob := target.Object{Target: "haproxy", Kind: "backend", Name: "backend orders_users_get"}
	assert.Equal(t, []string{"/users GET"}, hp.GroupsNamed(ob, groups))
	ob.Name = "backend users_get"
	assert.Empty(t, hp.GroupsNamed(ob, groups), "no service: not a name the snippet writes")
	ob.Name = "backend backend_catch_all"
	assert.Empty(t, hp.GroupsNamed(ob, groups), "the catch-all is no measured group's")
	r4j, _ := Lookup("resilience4j")
	assert.Equal(t, []string{"/users GET"}, r4j.GroupsNamed(target.Object{Name: "backend"}, []string{"/users GET"}),
		"a snippet of one group names its instance for the service alone")
	assert.Empty(t, r4j.GroupsNamed(target.Object{Name: "backend"}, groups))
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
				if len(groups) == 1 && tg.Name != "resilience4j" {
					continue // the lone object of a routing target is every request's
				}
				if tg.Name != "resilience4j" && strings.IndexFunc(g, escape.Unsafe) >= 0 {
					continue // not routable: the catch-all takes it
				}
				if slices.ContainsFunc(groups, func(h string) bool { return h != g && tg.NameOf(svc, h) == tg.NameOf(svc, g) }) {
					continue // two groups of one name: the snippet numbers the second
				}
				if tg.Name == "grpc" && catchAll[g] {
					continue // every method of the service: the service's config
				}
				ok := slices.ContainsFunc(objs, func(ob target.Object) bool { return slices.Contains(tg.GroupsNamed(ob, groups), g) })
				assert.True(t, ok, "seed %d %s, service %q: no object named for group %q", seed, tg.Name, svc, g)
			}
		}
	}
}
