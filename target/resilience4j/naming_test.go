package resilience4j_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/resilience4j"
)

// TestGroupsNamed: the object a snippet writes for a group is named for it
// and reads back as that group's, and no other group's, even where a
// group's name holds another's ("/api/users GET" and "/users GET").
func TestGroupsNamed(t *testing.T) {
	targettest.GroupsNamed(t, resilience4j.Target, map[string]string{"/api/orders POST": "my-svc-api-orders-post", "/api/orders/{id} PUT": "my-svc-api-orders-id-put", "/api/users GET": "my-svc-api-users-get", "/users GET": "my-svc-users-get", "/pkg.v1.Orders/Get": "my-svc-pkg-v1-orders-get"})
	r4j := resilience4j.Target
	assert.Equal(t, []string{"/users GET"}, r4j.GroupsNamed(target.Object{Name: "backend"}, []string{"/users GET"}),
		"a snippet of one group names its instance for the service alone")
	assert.Empty(t, r4j.GroupsNamed(target.Object{Name: "backend"}, targettest.NamedGroups))
}
