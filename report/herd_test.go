package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testHerd is docs/method.md's herd as advice.FillHerd fills it from
// its replay (a shorter series), with hostile sources.
func testHerd() *Herd {
	ms := func(v int64) *int64 { return &v }
	return &Herd{Clients: 1000, ClientsSource: "--herd", CapacityPerSecond: 5000, CapacitySource: "--capacity <&>\x1b[2J", RejectCost: 0.05,
		Attempts: 8, Seed: 1, WindowSeconds: 0.2,
		Strategies: []HerdStrategy{
			{Name: "none", Calls: 8000, GaveUp: 1000, BusiestRetryMsCalls: 1000, CallsPerMs: []int64{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, SeriesStepMs: 1},
			{Name: "fixed", Calls: 8000, GaveUp: 1000, BusiestRetryMsCalls: 1000, SeriesStepMs: 1},
			{Name: "exponential", Calls: 8000, GaveUp: 1000, BusiestRetryMsCalls: 1000, SeriesStepMs: 1},
			{Name: "equal", Calls: 6657, Served: 737, GaveUp: 263, BusiestRetryMsCalls: 214, LastServedMs: ms(790), SeriesStepMs: 1},
			{Name: "full", Calls: 7088, Served: 574, GaveUp: 426, BusiestRetryMsCalls: 146, LastServedMs: ms(420), SeriesStepMs: 1},
			{Name: "decorrelated", Calls: 5408, Served: 962, GaveUp: 38, BusiestRetryMsCalls: 66, LastServedMs: ms(1300), SeriesStepMs: 1},
			{Name: "your policy", Calls: 7088, Served: 574, GaveUp: 426, BusiestRetryMsCalls: 146, LastServedMs: ms(420),
				CallsPerMs: []int64{1000, 103, 101, 104, 106, 118, 131, 136, 146, 135, 142, 48, 57, 56, 58}, SeriesStepMs: 1},
		},
		RecommendedBackoff: RecommendedBackoff{BaseSeconds: 0.2, CapSeconds: 2, Reason: "the base is the crowd's window"},
		Warnings:           []string{"the backoff cap 50ms is narrower than the 200ms the crowd of 1,000 needs at 5,000 calls/s: no retry of clients that failed together is ever spread enough, and every one meets the same overload; raise it to 2s or more"},
	}
}

// The herd in every format: its table, the sized backoff and the
// warnings; in HTML a plot of the calls per millisecond of the policy
// against no jitter, with the capacity line.
func TestHerdSection(t *testing.T) {
	r := controlReport()
	r.Herd = testHerd()
	for _, format := range []string{"text", "markdown", "html"} {
		w, err := Lookup(format)
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, w(&b, r), format)
		out := b.String()
		assert.Contains(t, out, "The herd", format)
		assert.Contains(t, out, "decorrelated", format)
		assert.Contains(t, out, "busiest retry ms", format)
		assert.Contains(t, out, "the backoff cap 50ms is narrower than the 200ms", format)
		assert.NotContains(t, out, "\x1b[2J", "%s: escaped", format)
		if format == "html" {
			assert.NotContains(t, out, "--capacity <&>", "%s: escaped", format)
		}
		if format == "html" {
			assert.Contains(t, out, `class="herd"`)
			assert.Contains(t, out, "capacity-line")
			assert.Equal(t, 2, strings.Count(out, `<path class="series s`), "the policy and no jitter")
		}
	}
	text := mustText(t, r)
	assert.Less(t, strings.Index(text, "== Summary =="), strings.Index(text, "== The herd =="), "after the report's sections")
	assert.Less(t, strings.Index(text, "== The herd =="), strings.LastIndex(text, "\n== "), "before the groups")
}

func mustText(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, r))
	return b.String()
}
