package envoy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/envoy"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestEnvoyNamesLinear: 20,000 virtual hosts of one name took a minute
// when a name was made unique by trying "(2)", "(3)"... from 2 each time;
// the next number is remembered, and a name the file already has is
// skipped.
func TestEnvoyNamesLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: rc\nvirtual_hosts:\n- {name: v, domains: ['*'], routes: [{name: r (3), match: {prefix: /}, route: {cluster: c}}]}\n")
	for range 20_000 {
		b.WriteString("- {name: v, domains: ['*'], routes: [{name: r, match: {prefix: /}, route: {cluster: c}}]}\n")
	}
	var objs []target.Object
	err := targettest.Bounded(t, 200, func() (err error) {
		objs, err = envoy.ReadConfig("rc.yaml", []byte(b.String()), nil, nil)
		return err
	})
	require.NoError(t, err)
	require.Len(t, objs, 20_001)
	seen := map[string]bool{}
	for _, o := range objs {
		require.False(t, seen[o.Name], "%q twice", o.Name)
		seen[o.Name] = true
	}
	assert.Equal(t, []string{"rc/v/r (3)", "rc/v/r", "rc/v/r (2)", "rc/v/r (4)"}, []string{objs[0].Name, objs[1].Name, objs[2].Name, objs[3].Name})
	assert.Equal(t, "rc/v/r (20001)", objs[20_000].Name)
}
