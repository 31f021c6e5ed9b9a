package target

import "time"

// WriteDuration writes d as the target's config writes a duration (Envoy
// "0.800s", nginx "800ms", Gateway API "800ms"), for an edit that sets a
// value in a config someone runs; false for a target whose config has no
// such literal (Go and httpx snippets are code).
func (t Target) WriteDuration(d time.Duration) (string, bool) {
	switch t.Name {
	case "envoy", "grpc":
		return ProtoDur(d), true
	case "istio", "nginx", "haproxy", "resilience4j", "linkerd":
		return UnitDur(d), true
	case "gateway-api":
		return GatewayDur(d), true
	}
	return "", false
}
