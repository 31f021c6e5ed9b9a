package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrometheusShortHistory: 55 s of history at 200 calls/s, scraped
// every 5 s, read in the default 7-day window (issue 29). The rates are
// measured over the 55 s that have data, not the week (the mean) nor rate
// windows that start before the first sample (the peak, which read 41
// calls/s), and a note says how much of the window has data. A --by label
// no series has is a wrong command line that names the labels there are,
// not one group "-".
func TestPrometheusShortHistory(t *testing.T) {
	bin := requireBinary(t, "prometheus", "prometheus")
	promtool := requireBinary(t, "promtool", "prometheus")

	// Off the minute, so that the first sample is not on a subquery step.
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-3*time.Hour + 17*time.Second)
	at := t0.Add(55 * time.Second)
	const metric = "tt_short_seconds"
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE %s histogram\n", metric)
	for i := 0; i <= 11; i++ { // every 5 s: 1,000 calls, 900 within 0.1 s, 990 within 0.5 s
		ts := t0.Add(time.Duration(i) * 5 * time.Second).Unix()
		for _, bk := range []struct {
			le string
			n  int
		}{{"0.1", 900}, {"0.5", 990}, {"+Inf", 1000}} {
			fmt.Fprintf(&b, "%s_bucket{route=\"/api\",method=\"GET\",le=%q} %d %d\n", metric, bk.le, bk.n*i, ts)
		}
		fmt.Fprintf(&b, "%s_count{route=\"/api\",method=\"GET\"} %d %d\n", metric, 1000*i, ts)
		fmt.Fprintf(&b, "%s_sum{route=\"/api\",method=\"GET\"} %d %d\n", metric, 50*i, ts)
	}
	b.WriteString("# EOF\n")
	dir := t.TempDir()
	om := filepath.Join(dir, "data.om")
	require.NoError(t, os.WriteFile(om, []byte(b.String()), 0o644))
	storage := filepath.Join(dir, "tsdb")
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, storage).CombinedOutput()
	require.NoError(t, err, string(out))
	srv := startPrometheus(t, bin, storage, "global:\n  scrape_interval: 15s\n")
	base := []string{"prometheus", "--url", srv.url, "--metric", metric, "--at", at.Format(time.RFC3339), "--pool", "200"}

	t.Run("rates over the part with data", func(t *testing.T) {
		r := runJSON(t, append(base, "--by", "route")...)
		require.Len(t, r.Groups, 1)
		g := r.Groups[0]
		assert.Equal(t, "/api", g.Name)
		assert.Equal(t, int64(11000), g.Samples, "11 scrapes after the first, 1,000 calls each")
		require.NotNil(t, g.LittlesLaw.Rate)
		require.NotNil(t, g.LittlesLaw.PeakRate)
		assert.InDelta(t, 200, *g.LittlesLaw.Rate, 0.5, "11,000 calls in the 55 s with data, not in the week")
		assert.InDelta(t, 200, *g.LittlesLaw.PeakRate, 0.5, "no 1m rate window lies wholly after the first sample: the mean stands in")
		notes := strings.Join(r.Input.Notes, "\n")
		assert.Contains(t, notes, "Only 55s of the 7d window has data")
		assert.Contains(t, notes, t0.Format(time.RFC3339))
		assert.Contains(t, notes, at.Format(time.RFC3339))
	})

	t.Run("the whole window has data: no note", func(t *testing.T) {
		r := runJSON(t, append(base, "--window", "50s")...)
		for _, n := range r.Input.Notes {
			assert.NotContains(t, n, "of the 50s window has data")
		}
	})

	t.Run("a --by label no series has", func(t *testing.T) {
		_, stderr, code := runTool(t, append(base, "--by", "rout")...)
		assert.Equal(t, 2, code, "a wrong command line: %s", stderr)
		assert.Contains(t, stderr, "has the label rout; their labels are method, route")
		assert.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
		// One of two labels missing is as wrong.
		_, stderr, code = runTool(t, append(base, "--by", "route,methd")...)
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, "has the label methd; their labels are method, route")
	})
}
