package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func edgeGroup(name string, timeout float64) Group {
	return Group{Name: name, Samples: 100, Recommendation: Recommendation{TimeoutSeconds: timeout},
		Percentiles: []Percentile{{Quantile: 0.999, Seconds: timeout * 0.9}}}
}

// TestNewCallGraph: an inversion is a service whose timeout downstream is
// at or above its caller's towards it; a call back to the caller is no
// chain; groups that are not caller and callee make no graph.
func TestNewCallGraph(t *testing.T) {
	g := NewCallGraph([]Group{edgeGroup("a b", 0.5), edgeGroup("b c", 0.5), edgeGroup("b d", 0.2), edgeGroup("b a", 2)})
	require.NotNil(t, g)
	require.Len(t, g.Edges, 4)
	assert.Equal(t, "a b", g.Edges[0].Group, "sorted by group")
	require.Len(t, g.Findings, 1, "b -> c at 0.5 s is not below a -> b's 0.5 s; b -> d is; b -> a goes back to the caller")
	assert.Equal(t, "a b", g.Findings[0].Fields["upstream"])
	assert.Equal(t, "b c", g.Findings[0].Fields["downstream"])
	assert.Contains(t, g.Findings[0].Message, "a waits 500ms for b, but b's calls to c get 500ms")

	assert.Nil(t, NewCallGraph([]Group{edgeGroup("all", 1)}), "one group, no graph")
	assert.Nil(t, NewCallGraph([]Group{edgeGroup("GET /users", 1), edgeGroup("a b c", 1)}), "not caller and callee")
}
