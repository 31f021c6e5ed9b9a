package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSniffOrder pins the order auto-detection tries the formats in (see
// Format.Priority for why each comes where it does): a new format must
// say where it goes, not land where its name sorts.
func TestSniffOrder(t *testing.T) {
	var got []string
	for _, f := range sniffOrder() {
		if f.Sniff != nil {
			got = append(got, f.Name)
		}
	}
	assert.Equal(t, []string{"hlog", "alb", "envoy", "haproxy", "apache", "ingress-nginx", "nginx", "caddy", "envoy-json", "traefik", "csv"}, got)
}
