package target_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/tunetimeout/tunetimeout/target"
)

// TestFormats pins the duration syntaxes, where a wrong one is easy to write.
func TestFormats(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		d                                   time.Duration
		proto, unit, gateway, py, goLiteral string
	}{
		{800 * ms, "0.800s", "800ms", "800ms", "0.8", "800 * time.Millisecond"},
		{time.Second, "1.000s", "1s", "1s", "1.0", "time.Second"},
		{61001 * ms, "61.001s", "61001ms", "1m1s1ms", "61.001", "61001 * time.Millisecond"},
		{600 * time.Second, "600.000s", "600s", "10m", "600.0", "600 * time.Second"},
		{ms, "0.001s", "1ms", "1ms", "0.001", "1 * time.Millisecond"},
		{3723004 * ms, "3723.004s", "3723004ms", "1h2m3s4ms", "3723.004", "3723004 * time.Millisecond"},
	} {
		assert.Equal(t, tc.proto, target.ProtoDur(tc.d))
		assert.Equal(t, tc.unit, target.UnitDur(tc.d))
		assert.Equal(t, tc.gateway, target.GatewayDur(tc.d))
		assert.Equal(t, tc.py, target.PySeconds(tc.d))
		assert.Equal(t, tc.goLiteral, target.GoDurLit(tc.d))
	}
	for _, tc := range []struct {
		s    float64
		want time.Duration
	}{
		{0.8, 800 * ms}, {0.3, 300 * ms}, {0.7915, 792 * ms}, {0.0000001, ms}, {0, ms}, {1.0000000004, time.Second}, {1.0000004, 1001 * ms},
	} {
		assert.Equal(t, tc.want, target.CeilMs(tc.s), "CeilMs(%v)", tc.s)
	}
}

// TestMatch pins how group names become path matches.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  target.PathMatch
	}{
		{"all", target.PathMatch{CatchAll: true}},
		{"other", target.PathMatch{CatchAll: true}},
		{"/users", target.PathMatch{Exact: "/users", Prefix: "/users"}},
		{"GET /users/{id}", target.PathMatch{Method: "GET", Prefix: "/users/", Regex: `^/users/[^/]+$`}},
		{"/users/{id} POST", target.PathMatch{Method: "POST", Prefix: "/users/", Regex: `^/users/[^/]+$`}},
		{"/static/*", target.PathMatch{Prefix: "/static/", Regex: `^/static/.*$`}},
		{"/a.b/{x}/c", target.PathMatch{Prefix: "/a.b/", Regex: `^/a\.b/[^/]+/c$`}},
		{"DELETE", target.PathMatch{Method: "DELETE", Prefix: "/"}},
		{"checkout", target.PathMatch{CatchAll: true, NotPath: true, Prefix: "/"}},
		{"2xx", target.PathMatch{CatchAll: true, NotPath: true, Prefix: "/"}},
	} {
		assert.Equal(t, tc.want, target.ParseMatch(tc.group), tc.group)
	}
}
