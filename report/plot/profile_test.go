package plot

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfileHeatMap: a cell per hour and day, coloured by the quantile
// (the slowest darkest), the worst slot's cells outlined, the timeout a
// line on the scale.
func TestProfileHeatMap(t *testing.T) {
	var cells []ProfileCell
	for d := range 4 {
		for h := range 24 {
			q := 0.5
			if h == 18 {
				q = 1.6
			}
			cells = append(cells, ProfileCell{Day: fmt.Sprintf("2026-11-0%d", d+2), Hour: h, Samples: 1500, Quantile: q, Worst: h == 18})
		}
	}
	cells[0].Quantile, cells[0].Samples = 0, 0 // an hour without calls
	s, ok := Profile("g1", "/api", "p99.9", "UTC", cells, 1.7)
	require.True(t, ok)
	count := map[string]int{}
	fills := map[string]string{}
	for _, r := range s.Rects {
		count[r.Class]++
		if strings.HasPrefix(r.Tip, "2026-11-02 18:00") || strings.HasPrefix(r.Tip, "2026-11-02 05:00") {
			fills[r.Tip[11:16]] = r.Fill
		}
	}
	assert.Equal(t, 4*24-1, count["profile-cell"])
	assert.Equal(t, 1, count["profile-cell profile-empty"])
	assert.Equal(t, 4, count["worst-slot"])
	assert.Equal(t, heat(1), heat(1.5), "clamped")
	assert.NotEqual(t, fills["05:00"], fills["18:00"])
	require.Len(t, s.Lines, 1)
	assert.Equal(t, "timeout", s.Lines[0].Class)
	_, ok = Profile("g1", "/api", "p99.9", "UTC", nil, 1)
	assert.False(t, ok, "nothing without cells")
}
