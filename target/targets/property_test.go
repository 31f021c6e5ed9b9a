package targets

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
)

// The property tests of every target together: each target in All, a new
// one too, renders random reports with hostile names and keeps them out
// of its code. Each target's own package has its snippets read by its own
// parser and by its semantics (targettest.Snippets).

// TestPropertyEveryValueAccepted renders random reports (timeouts from 1ms
// to 10 min with odd sub-millisecond parts, 1 to 10 attempts, caps below
// bases, budgets, bulkheads up to 10,000, hostile group and service names)
// for every target: each renders, and where the format has comments the
// whole header is comments, so a hostile group name cannot break out of
// it.
func TestPropertyEveryValueAccepted(t *testing.T) {
	runs := targettest.Runs()
	start := time.Now()
	for i := 0; i < runs; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0x7117))
		rep := targettest.RandReport(r)
		o := target.Options{Service: targettest.ServiceNames[r.IntN(len(targettest.ServiceNames))], Namespace: []string{"", "prod", "Team A"}[r.IntN(3)]}
		for _, tg := range All {
			body, err := tg.Render(rep, o)
			require.NoError(t, err, "seed %d target %s", seed, tg.Name)
			require.NotEmpty(t, body)
			if tg.Comment != "" {
				requireCommentedHeader(t, tg, body, seed)
			}
		}
	}
	t.Logf("%d random reports in %v", runs, time.Since(start).Round(time.Millisecond))
}

// requireCommentedHeader checks that every header line is a comment, so a
// hostile group name cannot break out of it.
func requireCommentedHeader(t *testing.T, tg target.Target, body []byte, seed uint64) {
	t.Helper()
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" {
			return
		}
		require.True(t, strings.HasPrefix(line, tg.Comment), "seed %d target %s: header line %q is not a comment", seed, tg.Name, line)
	}
}

// TestPropertyNoRawControl: for random histograms and flags (the real
// pipeline, with group names that hold control and bidirectional
// characters), no target's snippet carries such a character raw.
func TestPropertyNoRawControl(t *testing.T) {
	for i := range targettest.Runs() {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xdead))
		rep, _, _ := targettest.PipelineReport(t, r)
		for _, tg := range All {
			o := target.Options{GatewayAPIChannel: []string{target.GatewayStandard, target.GatewayExperimental}[r.IntN(2)],
				LinkerdResource: []string{target.LinkerdAuto, target.LinkerdServiceProfile}[r.IntN(2)]}
			body, err := tg.Render(rep, o)
			require.NoError(t, err, "seed %d target %s", seed, tg.Name)
			c := targettest.RawControl(tg, body)
			require.Zero(t, c, "seed %d target %s: %q raw in the snippet:\n%s", seed, tg.Name, c, body)
		}
	}
}
