package istio_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/istio"
)

// TestIstioHostsCount: a route holds every host of its VirtualService;
// routes times hosts count against the budget, and repeats of a host are
// dropped in one pass.
func TestIstioHostsCount(t *testing.T) {
	hosts := make([]string, 5000)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d", i%2500) // each twice
	}
	vs := func(routes int) string {
		return "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: r}\nspec:\n  hosts: [" + strings.Join(hosts, ", ") +
			"]\n  http:\n" + strings.Repeat("  - route: [{destination: {host: r}}]\n", routes)
	}
	objs, err := istio.ReadConfig("vs.yaml", []byte(vs(2)), nil, nil)
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Len(t, objs[1].Matches, 2500, "each host once")
	assert.Equal(t, target.Match{Kind: target.MatchHost, Value: "h2499"}, objs[1].Matches[2499])
	err = targettest.Bounded(t, 400, func() error {
		_, err := istio.ReadConfig("vs.yaml", []byte(vs(300)), nil, nil)
		return err
	})
	// The document's 7,716 nodes, then 5,000 hosts a route: the 209th
	// route, on line 215, passes the budget.
	assert.EqualError(t, err, "vs.yaml:215: hosts repeated in the routes of VirtualServices: over the node budget of one run, 1,048,576 nodes in all")
}
