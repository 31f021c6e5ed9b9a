package target

import "time"

// WriteDuration writes d as the target's config writes a duration (Envoy
// "0.800s", nginx "800ms", Gateway API "800ms"), for an edit that sets a
// value in a config someone runs; false for a target whose config has no
// such literal (Go and httpx snippets are code).
func (t Target) WriteDuration(d time.Duration) (string, bool) {
	if t.Duration == nil {
		return "", false
	}
	return t.Duration(d), true
}

// InsertSetting writes the line that adds a setting the object lacks (its
// Setting.Key) with the value lit, and the text that opens the object's
// block, after which the line goes ("" when it goes after the object's own
// line); false for a target whose objects take no such line.
func (t Target) InsertSetting(key, lit string) (line, opens string, ok bool) {
	if t.Insert == nil {
		return "", "", false
	}
	line, opens = t.Insert(key, lit)
	return line, opens, true
}

// Precedence is how a target's router picks one object among those whose
// matches hold for a request (check serves a group by that object alone).
type Precedence int

const (
	// FirstListed: the first object that matches (Envoy's
	// RouteConfiguration, Istio's VirtualService http).
	FirstListed Precedence = iota
	// LocationOrder: nginx's "location" order: an exact match, else the
	// longest prefix, at once when it is "^~", else the first regular
	// expression that matches, else that longest prefix.
	LocationOrder
	// FirstRule: the object of the lowest rule whose condition holds
	// (HAProxy's use_backend, then default_backend).
	FirstRule
	// MethodRank: the config that names the method, else the service,
	// else the default (gRPC's method config); groups are matched by
	// method path, not by URL path.
	MethodRank
	// RouteRules: HTTPRoute's precedence among rules (Gateway API,
	// Linkerd): an exact path, then the longest prefix, then a method
	// match; ties go to the first listed.
	RouteRules
)
