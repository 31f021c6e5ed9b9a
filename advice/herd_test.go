package advice

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/finding"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// TestFillHerd: docs/method.md's herd, replayed, fills every strategy in
// the replay's order, the policy last, and keeps the calls per
// millisecond of the two the HTML plots, the policy and no jitter.
func TestFillHerd(t *testing.T) {
	res, err := simulate.RunHerd(context.Background(), simulate.HerdOptions{Clients: 1000, CapacityPerSecond: 5000, RejectCost: 0.05,
		Attempts: 8, Seed: 1, Backoff: recommend.Backoff{Jitter: recommend.JitterFull, Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}})
	require.NoError(t, err)
	h := &report.Herd{ClientsSource: "--herd", CapacitySource: "--capacity"}
	FillHerd(h, res)
	assert.Equal(t, 1000, h.Clients)
	assert.Equal(t, "--herd", h.ClientsSource)
	assert.Equal(t, 0.2, h.WindowSeconds, "1,000 clients / 5,000 calls/s")
	var names, plotted []string
	for _, s := range h.Strategies {
		names = append(names, s.Name)
		if s.CallsPerMs != nil {
			plotted = append(plotted, s.Name)
			assert.NotEmpty(t, s.CallsPerMs, s.Name)
		}
	}
	assert.Equal(t, append(append([]string{}, simulate.HerdStrategies...), simulate.HerdPolicy), names)
	assert.Equal(t, []string{simulate.HerdNone, simulate.HerdPolicy}, plotted)
	require.NotEmpty(t, h.Warnings)
	assert.Contains(t, h.Warnings[0], "the backoff cap 50ms is narrower than the 200ms")
	require.Len(t, h.Findings, len(h.Warnings), "each warning with its finding")
	assert.Equal(t, finding.HerdBackoffCapNarrow, h.Findings[0].Code)
	assert.Equal(t, h.Warnings[0], h.Findings[0].Message)
}
