package grpc_test

import (
	"testing"

	grpctarget "github.com/tunetimeout/tunetimeout/target/grpc"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestGroupsNamed: the object a snippet writes for a group is named for it
// and reads back as that group's, and no other group's, even where a
// group's name holds another's ("/api/users GET" and "/users GET").
func TestGroupsNamed(t *testing.T) {
	targettest.GroupsNamed(t, grpctarget.Target, map[string]string{"/api/orders POST": "my.svc/APIOrdersPOST", "/api/orders/{id} PUT": "my.svc/APIOrdersIDPUT", "/api/users GET": "my.svc/APIUsersGET", "/users GET": "my.svc/UsersGET", "/pkg.v1.Orders/Get": "pkg.v1.Orders/Get"})
}
