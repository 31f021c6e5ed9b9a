package finding

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// TestSummariesNameOptionsByKey: a summary names options by key, each one
// of usage's, and Codes and Lookup write them as usage.Render does when
// they are called.
func TestSummariesNameOptionsByKey(t *testing.T) {
	named := 0
	for _, d := range defs {
		for _, o := range usage.Named(d.Summary) {
			named++
			assert.True(t, slices.Contains(usage.Options(), o), "%s names %q, not an option of usage", d.Code, o)
		}
	}
	assert.Equal(t, 17, named)

	d, ok := Lookup(OutsideWindow)
	require.True(t, ok)
	assert.Equal(t, "calls outside --from/--to were left out", d.Summary)
	saved := usage.Render
	t.Cleanup(func() { usage.Render = saved })
	usage.Render = func(o usage.Option) string { return "<" + string(o) + ">" }
	d, _ = Lookup(FlagsNotForIntervalLogs)
	assert.Equal(t, "<by>, <latency>, <include-errors> and the log format do not apply to interval logs", d.Summary)
	i := slices.IndexFunc(Codes(), func(d Def) bool { return d.Code == MaxBelowQuantile })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "the <max> you set is below the measured quantile: the timeout cuts off more calls than asked", Codes()[i].Summary)
}
