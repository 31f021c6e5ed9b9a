package analysis

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	groupname "github.com/tunetimeout/tunetimeout/internal/names"
	"github.com/tunetimeout/tunetimeout/target/targets"
)

// servedBy reads a config of a target and returns, group by group, the
// object that serves it ("" for none), as check matches them: groups
// named "path METHOD" or a gRPC method path.
func servedBy(t *testing.T, name, config string, groups ...string) map[string]string {
	t.Helper()
	tg, err := targets.Lookup(name)
	require.NoError(t, err)
	objs, err := tg.Read("config", []byte(config), nil)
	require.NoError(t, err)
	cgs := map[string]checkedGroup{}
	for _, g := range groups {
		cgs[g] = checkedGroup{method: groupMethod(g)}
	}
	names := slices.Sorted(maps.Keys(cgs))
	out := map[string]string{}
	for _, g := range groups {
		out[g] = ""
	}
	for i, gs := range servedGroups(objs, cgs, names, nil) {
		for _, g := range gs {
			assert.Empty(t, out[g], "%s: served by %s and %s", g, out[g], objs[i].Name)
			out[g] = objs[i].Name
		}
	}
	return out
}

// groupMethod is the HTTP method of a group "path METHOD", "" when none.
func groupMethod(g string) string {
	for _, m := range groupname.HTTPMethods {
		if len(g) > len(m) && g[len(g)-len(m)-1:] == " "+m {
			return m
		}
	}
	return ""
}

// TestCheckHAProxyRuleOrder: a frontend's use_backend rules are tried in
// the order they are written and the first whose condition holds takes
// the request (HAProxy's configuration manual, use_backend), path,
// path_beg and path_reg with the method ACLs of the same rule; the
// default_backend takes what none takes.
func TestCheckHAProxyRuleOrder(t *testing.T) {
	const backends = `
backend search
    server s1 127.0.0.1:8001
backend writes
    server s1 127.0.0.1:8002
backend api
    server s1 127.0.0.1:8003
backend users
    server s1 127.0.0.1:8004
backend health
    server s1 127.0.0.1:8005
backend rest
    server s1 127.0.0.1:8006
`
	groups := []string{"/api/search GET", "/api/orders POST", "/api/orders GET", "/api/orders/{id} PUT",
		"/users/{id} GET", "/users/{id} HEAD", "/users/{id} DELETE", "/healthz GET", "/other GET"}
	cfg := `defaults
    mode http
    timeout connect 1s
    timeout server 1s
    timeout client 1s
frontend f
    bind 127.0.0.1:18080
    acl api path_beg /api
    use_backend search if { path_beg /api/search }
    use_backend writes if api { method POST PUT }
    use_backend api if api
    use_backend users if { path_reg ^/users/[^/]+$ } METH_GET
    use_backend health if { path /healthz }
    default_backend rest
` + backends
	assert.Equal(t, map[string]string{
		"/api/search GET":      "backend search", // before /api
		"/api/orders POST":     "backend writes",
		"/api/orders GET":      "backend api",
		"/api/orders/{id} PUT": "backend writes",
		"/users/{id} GET":      "backend users",
		"/users/{id} HEAD":     "backend users", // METH_GET is GET and HEAD
		"/users/{id} DELETE":   "backend rest",
		"/healthz GET":         "backend health",
		"/other GET":           "backend rest",
	}, servedBy(t, "haproxy", cfg, groups...))

	// The same rules, /api first: it takes /api/search, which its own
	// rule after it never sees, and every write.
	cfg = `defaults
    mode http
    timeout connect 1s
    timeout server 1s
    timeout client 1s
frontend f
    bind 127.0.0.1:18080
    use_backend api if { path_beg /api }
    use_backend search if { path_beg /api/search }
    use_backend writes if { path_beg /api } METH_POST || { path_beg /api } METH_PUT
    use_backend users if { path_reg ^/users/[^/]+$ } METH_GET
    use_backend health if { path /healthz }
    default_backend rest
` + backends
	got := servedBy(t, "haproxy", cfg, groups...)
	for _, g := range []string{"/api/search GET", "/api/orders POST", "/api/orders GET", "/api/orders/{id} PUT"} {
		assert.Equal(t, "backend api", got[g], g)
	}
	assert.Equal(t, "backend rest", got["/other GET"])
}

// TestCheckGRPCPrecedence: gRPC takes the method config that names a
// call's service and method, else the one that names its service, else
// the default, {} (grpc/grpc doc/service_config.md), wherever each
// stands in the file.
func TestCheckGRPCPrecedence(t *testing.T) {
	cfg := `{"methodConfig": [
  {"name": [{}], "timeout": "5s"},
  {"name": [{"service": "pkg.v1.Orders"}], "timeout": "2s"},
  {"name": [{"service": "pkg.v1.Orders", "method": "Get"}], "timeout": "0.3s"},
  {"name": [{"service": "pkg.v1.Users", "method": "Get"}, {"service": "pkg.v1.Orders", "method": "Delete"}], "timeout": "1s"}
]}`
	assert.Equal(t, map[string]string{
		"/pkg.v1.Orders/Get":    "pkg.v1.Orders/Get",
		"/pkg.v1.Orders/List":   "pkg.v1.Orders",
		"/pkg.v1.Orders/Delete": "pkg.v1.Users/Get, pkg.v1.Orders/Delete",
		"/pkg.v1.Users/Get":     "pkg.v1.Users/Get, pkg.v1.Orders/Delete",
		"/pkg.v1.Users/List":    "(every method)",
		"/other.Svc/Do":         "(every method)",
	}, servedBy(t, "grpc", cfg, "/pkg.v1.Orders/Get", "/pkg.v1.Orders/List", "/pkg.v1.Orders/Delete",
		"/pkg.v1.Users/Get", "/pkg.v1.Users/List", "/other.Svc/Do"))

	// Without a default, a method of another service meets no config.
	cfg = `{"methodConfig": [{"name": [{"service": "pkg.v1.Orders"}], "timeout": "2s"}]}`
	assert.Equal(t, map[string]string{"/pkg.v1.Orders/Get": "pkg.v1.Orders", "/other.Svc/Do": ""},
		servedBy(t, "grpc", cfg, "/pkg.v1.Orders/Get", "/other.Svc/Do"))
}

// TestCheckNamedObjects: the objects the gRPC, HAProxy and resilience4j
// snippets write for groups that are no gRPC method, which select no
// request themselves, serve the group they are named for, whatever the
// service; an explicit --map still comes first.
func TestCheckNamedObjects(t *testing.T) {
	groups := []string{"/api/orders POST", "/api/orders/{id} PUT", "/users GET"}
	assert.Equal(t, map[string]string{"/api/orders POST": "", "/api/orders/{id} PUT": "", "/users GET": "shop-users-get"},
		servedBy(t, "resilience4j", "resilience4j:\n  timelimiter:\n    instances:\n      shop-users-get:\n        timeoutDuration: 1s\n", groups...))
	assert.Equal(t, map[string]string{"/api/orders POST": "backend orders_api_orders_post", "/api/orders/{id} PUT": "", "/users GET": ""},
		servedBy(t, "haproxy", "defaults\n    mode http\n    timeout server 1s\nbackend orders_api_orders_post\n    server s1 127.0.0.1:80\n", groups...))
	assert.Equal(t, map[string]string{"/api/orders POST": "", "/api/orders/{id} PUT": "svc.v1.Orders/APIOrdersIDPUT", "/users GET": ""},
		servedBy(t, "grpc", `{"methodConfig": [{"name": [{"service": "svc.v1.Orders", "method": "APIOrdersIDPUT"}], "timeout": "1s"}]}`, groups...))

	tg, err := targets.Lookup("haproxy")
	require.NoError(t, err)
	objs, err := tg.Read("haproxy.cfg", []byte("defaults\n    mode http\nbackend orders_api_orders_post\n    server s1 127.0.0.1:80\n"), nil)
	require.NoError(t, err)
	cgs := map[string]checkedGroup{"/api/orders POST": {method: "POST"}, "/users GET": {method: "GET"}}
	served := servedGroups(objs, cgs, []string{"/api/orders POST", "/users GET"}, map[string]string{"backend orders_api_orders_post": "/users GET"})
	assert.Equal(t, [][]string{{"/users GET"}}, served, "--map first")
}
