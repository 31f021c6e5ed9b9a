package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWindowFlags(t *testing.T) {
	out, errOut, code := execute(t, "", "analyze", mixture, "--window", "1m", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Groups []struct {
			Windows []struct {
				Samples        int64
				TimeoutSeconds float64 `json:"timeout_seconds"`
				EnoughData     bool    `json:"enough_data"`
			}
			WorstWindow *struct {
				Significant bool
				Used        bool
				Reason      string
			} `json:"worst_window"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Groups, 1)
	g := doc.Groups[0]
	require.Len(t, g.Windows, 9, "the mixture's 8 minutes and a part")
	var calls int64
	for _, w := range g.Windows {
		calls += w.Samples
	}
	assert.EqualValues(t, 200000, calls, "every call in one window")
	require.NotNil(t, g.WorstWindow)
	assert.False(t, g.WorstWindow.Significant, "a steady mixture: no minute is worse beyond the noise")
	assert.False(t, g.WorstWindow.Used)
	assert.Contains(t, g.WorstWindow.Reason, "no window is worse beyond the noise")

	text, errOut, code := execute(t, "", "analyze", mixture, "--window", "1m")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "\nWindows\n")
	assert.Contains(t, text, "2026-11-02 10:08 to 10:09")

	// Buckets a SQL engine computed carry no times: no windows.
	buckets := filepath.Join(t.TempDir(), "b.csv")
	require.NoError(t, os.WriteFile(buckets, []byte("route,bucket_us,calls\n/a,1000,5\n"), 0o644))
	_, errOut, code = execute(t, "", "analyze", buckets, "--window", "1h")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "HDR buckets carry no times, which windows and interval histograms need: analyze them without --window")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", mixture, "--window", "500ms"}, "--window 500ms: give whole seconds"},
		{[]string{"analyze", mixture, "--window", "1.5s"}, `--window "1.5s"`},
		{[]string{"analyze", mixture, "--window", "soon"}, `--window "soon"`},
		{[]string{"analyze", mixture, "--window", "0", "--for", "all"}, "--for and --window-precision need windows: --window 0 has none"},
		{[]string{"analyze", mixture, "--for", "peak"}, `--for "peak": worst-window or all`},
		{[]string{"analyze", mixture, "--window", "1h", "--for", "peak"}, `--for "peak": worst-window or all`},
		{[]string{"analyze", mixture, "--window", "1h", "--window-precision", "0"}, "--window-precision"},
		{[]string{"analyze", mixture, "--window", "1h", "--profile", "hourly"}, `--profile "hourly": auto, daily, weekly, none`},
		{[]string{"analyze", mixture, "--window", "1h", "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus": an IANA time zone name`},
		{[]string{"analyze", mixture, "--window", "7m", "--profile", "daily"}, "--profile daily pools windows into hours: --window 7m does not divide an hour"},
	} {
		_, errOut, code := execute(t, "", c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, errOut, c.want, "%v", c.args)
	}
}
