package target_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// TestCatchAllOfMethodRoutes: when the groups match by method, the
// catch-all takes every method no group holds (a POST to /api/search when
// only its GETs were measured), so it neither hedges nor retries what may
// have been applied, even when every measured group is a GET.
func TestCatchAllOfMethodRoutes(t *testing.T) {
	r := targettest.LoadReport(t, "deadline.json")
	get := "GET"
	for i := range r.Groups {
		r.Groups[i].Name += " GET"
		r.Groups[i].Policy.Method = &get
	}
	p, err := target.NewPlan(r, target.Options{})
	require.NoError(t, err)
	c := p.Routes[len(p.Routes)-1]
	require.True(t, c.Synthetic)
	assert.False(t, c.Idempotent)
	assert.Nil(t, c.Hedge)
	assert.Equal(t, []string{"connect-failure", "refused-stream"}, c.RetryOn)
	assert.Contains(t, c.IdempotentWhy, "the methods no group measured")
	for _, rt := range p.Routes[:len(p.Routes)-1] {
		assert.NotNil(t, rt.Hedge, rt.Group)
	}
}
