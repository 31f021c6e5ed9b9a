package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/simulate"
)

// testHerd is docs/method.md's herd, replayed.
func testHerd() *Herd {
	res, err := simulate.RunHerd(context.Background(), simulate.HerdOptions{Clients: 1000, CapacityPerSecond: 5000, RejectCost: 0.05,
		Attempts: 8, Seed: 1, Backoff: recommend.Backoff{Jitter: recommend.JitterFull, Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	h := &Herd{ClientsSource: "--herd", CapacitySource: "--capacity <&>\x1b[2J"}
	FillHerd(h, res)
	return h
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
