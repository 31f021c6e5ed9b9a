package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/internal/timeflag"
)

// TestTimeFlags: every flag that takes a time says the one grammar in its
// help and reads it with timeflag.Parse, so each takes what only another
// took before (--from now, --at 0).
func TestTimeFlags(t *testing.T) {
	root := newRoot(nil, io.Discard, io.Discard)
	for cmd, flags := range map[string][]string{
		"analyze":    {"from", "to"},
		"simulate":   {"from", "to"},
		"summarize":  {"from", "to"},
		"prometheus": {"at"},
	} {
		c, _, err := root.Find([]string{cmd})
		require.NoError(t, err)
		for _, name := range flags {
			fl := c.Flags().Lookup(name)
			require.NotNil(t, fl, "%s --%s", cmd, name)
			assert.Contains(t, fl.Usage, timeflag.Grammar, "%s --%s", cmd, name)
		}
	}

	t.Run("--from and --to", func(t *testing.T) {
		before := time.Now()
		var o analysis.Options
		require.NoError(t, analyzeFlags{from: " 1793613600.5 ", to: "now"}.applyInput(&o))
		assert.Equal(t, time.Unix(1793613600, 5e8), o.From)
		assert.False(t, o.To.Before(before), "--to now is now")

		err := analyzeFlags{from: "now", to: "now"}.applyInput(&o)
		require.Error(t, err)
		assert.Equal(t, "--from now is not before --to now", err.Error(), "one now for both")

		o = analysis.Options{}
		require.NoError(t, analyzeFlags{from: "-86400", to: "0"}.applyInput(&o))
		assert.Equal(t, time.Unix(-86400, 0), o.From)
		assert.Equal(t, time.Unix(0, 0), o.To)

		err = analyzeFlags{to: "-1h"}.applyInput(&o)
		require.Error(t, err)
		assert.Equal(t, `--to: "-1h" is neither now, an RFC 3339 time (2026-11-02T10:00:00Z) nor Unix seconds`, err.Error())
	})

	t.Run("--at", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}))
		defer srv.Close()
		for _, at := range []string{"now", "", "0", "-86400", "1793613600.5", "2026-11-02T10:00:00.5Z"} {
			_, errOut, code := execute(t, "", "prometheus", "--url", srv.URL, "--metric", "x_seconds",
				"--query-retries", "0", "--at", at)
			assert.Equal(t, 1, code, "--at %q is read; the query fails: %s", at, errOut)
			assert.Contains(t, errOut, "401", at)
		}
		_, errOut, code := execute(t, "", "prometheus", "--url", srv.URL, "--metric", "x_seconds", "--at", "7d ago")
		assert.Equal(t, 2, code)
		assert.Equal(t, "tunetimeout: --at \"7d ago\" is neither now, an RFC 3339 time (2026-11-02T10:00:00Z) nor Unix seconds\n", errOut)
	})
}
