package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/jaegersource/jaegertest"
	"github.com/tunetimeout/tunetimeout/report"
)

// servedReport waits, with a generous bound, for watch's first good
// report and returns it.
func servedReport(t *testing.T, base string, stderr *lockedBuffer) report.Report {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.True(t, time.Now().Before(deadline), "no report served within 60s: %s", stderr)
		resp, err := client.Get(base + "report.json")
		require.NoError(t, err)
		if resp.StatusCode == http.StatusOK {
			var r report.Report
			err := json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			require.NoError(t, err)
			return r
		}
		resp.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWatchJaeger: watch --jaeger-url serves the analysis the jaeger
// command makes of the same traces, named by the service and the server.
func TestWatchJaeger(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	jaeger := httptest.NewServer(&jaegertest.Server{
		Traces:   jaegertest.Traces(250, t0.Add(time.Second), 13*time.Second),
		Services: []string{"checkout", "frontend"},
	})
	defer jaeger.Close()
	window := []string{"--from", "2026-11-30T12:00:00Z", "--to", "2026-11-30T13:00:00Z"}
	base, stderr, stop := startWatch(t, append([]string{"--jaeger-url", jaeger.URL, "--service", "checkout", "--every", "1s"}, window...)...)
	got := servedReport(t, base, stderr)
	stop(nil)
	assert.Equal(t, []string{"service checkout at " + jaeger.URL}, got.Input.Files)
	assert.Equal(t, int64(250), got.Input.Records)
	out, errOut, code := execute(t, "", append([]string{"jaeger", "--url", jaeger.URL, "--service", "checkout", "-o", "json"}, window...)...)
	require.Equal(t, 0, code, errOut)
	var want report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &want))
	require.Len(t, got.Groups, len(want.Groups))
	for i, g := range got.Groups {
		assert.Equal(t, want.Groups[i].Name, g.Name)
		assert.Equal(t, want.Groups[i].Samples, g.Samples)
		assert.Equal(t, want.Groups[i].Recommendation.TimeoutSeconds, g.Recommendation.TimeoutSeconds, g.Name)
	}
}

// TestWatchClickHouse: watch --clickhouse-url serves the analysis of the
// histogram ClickHouse computes, named by the table and the server.
func TestWatchClickHouse(t *testing.T) {
	ch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, clickhouseHistogram)
	}))
	defer ch.Close()
	base, stderr, stop := startWatch(t, "--clickhouse-url", ch.URL, "--table", "logs.access", "--latency", "duration_ms",
		"--unit", "ms", "--status-column", "status", "--rate", "50", "--every", "1s")
	got := servedReport(t, base, stderr)
	stop(nil)
	assert.Equal(t, []string{"logs.access at " + ch.URL}, got.Input.Files)
	assert.Equal(t, int64(1552), got.Input.Records)
	require.Len(t, got.Groups, 1)
	assert.Equal(t, int64(1542), got.Groups[0].Samples, "the 10 5xx are excluded")
	assert.InDelta(t, 0.85, got.Groups[0].Recommendation.TimeoutSeconds, 1e-9, "as check's clickhouse case")
	for _, n := range got.Input.Notes {
		assert.NotContains(t, n, "buckets.csv")
		assert.False(t, strings.Contains(n, "tunetimeout-spool"), n)
	}
}
