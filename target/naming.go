package target

import (
	"slices"
	"unicode"
)

// Names of the objects a snippet writes for groups. A target that routes
// requests by path (Envoy, Istio, nginx...) writes each group's object with
// the group's own matches, and check finds the groups an object serves
// from those. A target whose objects select no request themselves (a gRPC
// method config of a group that is no gRPC method, an HAProxy backend, whose
// use_backend rules are the frontend's, a resilience4j instance, which the
// code names) names each group's object after the service and the group:
// check finds the group an object was written for by that name, with the
// function that wrote it.

// Naming is how a target's snippet names the object of a group.
type Naming struct {
	// service is a service name as the target writes it ("backend").
	Service func(service string) string
	// of is the name of a group's object under a service already written
	// by service, in a snippet of several objects.
	Of func(service, group string) string
	// lone: a snippet of one group names its object for the service alone
	// (resilience4j: an instance per measured group, no catch-all).
	Lone bool
	// CatchAllUnnamed: the object of a catch-all group is the service's,
	// named for no group (gRPC: a methodConfig of the whole service, no
	// method), so GroupsNamed finds no group of it.
	CatchAllUnnamed bool
	// names are the names an object read back carries, in the form of
	// (service, group) names: an HAProxy backend's, a resilience4j
	// instance's, a gRPC method config's "service/method" names.
	Names func(Object) []string
}

// NameOf returns the name the target's snippet gives the object of group
// when the snippet writes several, under service ("" for DefaultService):
// "backend_api_orders_post" for HAProxy, "backend-api-orders-post" for
// resilience4j, "backend/APIOrdersPOST" for gRPC. It returns "" for a
// target whose objects are found by the requests they match.
func (t Target) NameOf(service, group string) string {
	if t.Naming == nil {
		return ""
	}
	if service == "" {
		service = DefaultService
	}
	return t.Naming.Of(t.Naming.Service(service), group)
}

// GroupsNamed returns the groups, of groups (every group of the data), whose
// object the target's snippet names as ob is named, under any service name:
// a name that is NameOf(service, group) for a prefix of it that is a
// service name as the target writes one. Where a name reads as several
// groups' (a service "backend_api" and a group "/users", or "backend" and
// "/api/users"), the one with the longest group part wins: the shortest
// service. A target that names the object of a snippet of one group for
// the service alone (resilience4j) gives that group, when the data have
// no other, to an object named like a service.
func (t Target) GroupsNamed(ob Object, groups []string) []string {
	if t.Naming == nil || len(groups) == 0 {
		return nil
	}
	var out []string
	for _, name := range t.Naming.Names(ob) {
		var named []string
		// Cut the name after each service it may start with: before a
		// separator, or whole (a group that gives no part).
		for i, r := range name + "\x00" {
			if i == 0 || unicode.IsLetter(r) || unicode.IsDigit(r) {
				continue
			}
			svc := name[:i]
			if t.Naming.Service(svc) != svc {
				continue
			}
			for _, g := range groups {
				if t.Naming.Of(svc, g) == name {
					named = append(named, g)
				}
			}
			if named != nil {
				break // the shortest service: the longest group part
			}
		}
		if named == nil && t.Naming.Lone && len(groups) == 1 && t.Naming.Service(name) == name {
			named = groups
		}
		for _, g := range named {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// NamesService reports whether ob carries the name the target's snippet
// gives the object of a snippet of one group under service, when that is
// the service's name alone (resilience4j's instance): check tells by it
// which callee such an object calls when a caller's configs serve
// several (--topology).
func (t Target) NamesService(ob Object, service string) bool {
	if t.Naming == nil || !t.Naming.Lone {
		return false
	}
	want := t.Naming.Service(service)
	return slices.Contains(t.Naming.Names(ob), want)
}
