package haproxy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/haproxy"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestGroupsNamed: the object a snippet writes for a group is named for it
// and reads back as that group's, and no other group's, even where a
// group's name holds another's ("/api/users GET" and "/users GET").
func TestGroupsNamed(t *testing.T) {
	targettest.GroupsNamed(t, haproxy.Target, map[string]string{"/api/orders POST": "my_svc_api_orders_post", "/api/orders/{id} PUT": "my_svc_api_orders_id_put", "/api/users GET": "my_svc_api_users_get", "/users GET": "my_svc_users_get", "/pkg.v1.Orders/Get": "my_svc_pkg_v1_orders_get"})
	// Another service, or none, names the same groups.
	hp := haproxy.Target
	ob := target.Object{Target: "haproxy", Kind: "backend", Name: "backend orders_users_get"}
	assert.Equal(t, []string{"/users GET"}, hp.GroupsNamed(ob, targettest.NamedGroups))
	ob.Name = "backend users_get"
	assert.Empty(t, hp.GroupsNamed(ob, targettest.NamedGroups), "no service: not a name the snippet writes")
	ob.Name = "backend backend_catch_all"
	assert.Empty(t, hp.GroupsNamed(ob, targettest.NamedGroups), "the catch-all is no measured group's")
}
