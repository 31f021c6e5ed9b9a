package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/jaegersource/jaegertest"
)

// jaegerReport is the part of a JSON report the jaeger tests compare.
type jaegerReport struct {
	Input struct {
		Files []string `json:"files"`
		Notes []string `json:"notes"`
	} `json:"input"`
	Groups []struct {
		Name        string            `json:"name"`
		Samples     int64             `json:"samples"`
		Percentiles []json.RawMessage `json:"percentiles"`
		Rec         struct {
			Timeout float64 `json:"timeout_seconds"`
		} `json:"recommendation"`
	} `json:"groups"`
}

// tunetimeout jaeger against a fake Jaeger (jaegertest: no Jaeger binary
// is available to the tests) gives the per-edge percentiles tunetimeout
// analyze gives of the same traces in a file.
func TestJaegerAgreesWithAnalyze(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	traces := jaegertest.Traces(250, t0.Add(time.Second), 13*time.Second)
	srv := httptest.NewServer(&jaegertest.Server{Traces: traces, Services: []string{"checkout", "frontend"}})
	defer srv.Close()
	var doc []string
	for _, tr := range traces {
		doc = append(doc, tr.JSON())
	}
	file := filepath.Join(t.TempDir(), "traces.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"data":[`+strings.Join(doc, ",\n")+`]}`), 0o644))

	out, errOut, code := execute(t, "", "analyze", "--input", "jaeger", "-o", "json", file)
	require.Equal(t, 0, code, errOut)
	var want jaegerReport
	require.NoError(t, json.Unmarshal([]byte(out), &want))

	out, errOut, code = execute(t, "", "jaeger", "--url", srv.URL, "--service", "checkout",
		"--from", "2026-11-30T12:00:00Z", "--to", "2026-11-30T13:00:00Z", "--limit", "30", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var got jaegerReport
	require.NoError(t, json.Unmarshal([]byte(out), &got))

	require.Len(t, want.Groups, 1)
	require.Len(t, got.Groups, 1)
	assert.Equal(t, int64(250), got.Groups[0].Samples)
	assert.Equal(t, want.Groups[0].Name, got.Groups[0].Name)
	assert.Equal(t, want.Groups[0].Percentiles, got.Groups[0].Percentiles)
	assert.Equal(t, want.Groups[0].Rec.Timeout, got.Groups[0].Rec.Timeout)
	assert.Equal(t, []string{"service checkout at " + srv.URL}, got.Input.Files)
	assert.NotContains(t, out, "traces.json", "the spool file is not named")
}

func TestJaegerCommandLine(t *testing.T) {
	const token = "very-secret-jaeger-token"
	t.Setenv("TT_JAEGER_TOKEN", token)
	srv := httptest.NewServer(&jaegertest.Server{Services: []string{"checkout", "payments"}, Token: "other"})
	defer srv.Close()
	open := httptest.NewServer(&jaegertest.Server{Services: []string{"checkout", "payments"}})
	defer open.Close()
	// Issue 30, item 4: the same full page whatever the window.
	endless := httptest.NewServer(&jaegertest.Server{Services: []string{"checkout"}, IgnoreWindow: true,
		Traces: jaegertest.Traces(20, time.Now().Add(-time.Minute), time.Millisecond)})
	defer endless.Close()
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no url", []string{"--service", "checkout"}, 2, "--url is required: the address of Jaeger, e.g. http://localhost:16686"},
		{"arguments", []string{"--url", srv.URL, "traces.json"}, 2, "jaeger reads no files"},
		{"bad lookback", []string{"--url", srv.URL, "--service", "x", "--lookback", "-1h"}, 2, "--lookback -1h0m0s must be positive"},
		{"bad limit", []string{"--url", srv.URL, "--service", "x", "--limit", "0"}, 2, "--limit 0 must be positive"},
		{"bad tags", []string{"--url", srv.URL, "--service", "x", "--tags", "a=b"}, 2, `--tags "a=b" is not a JSON object`},
		{"bad size", []string{"--url", srv.URL, "--service", "x", "--max-response-bytes", "0"}, 2, `--max-response-bytes "0" must be positive`},
		{"refused", []string{"--url", srv.URL, "--service", "checkout", "--bearer-token-env", "TT_JAEGER_TOKEN"}, 1, "answered HTTP 401 Unauthorized: it needs credentials"},
		{"no service", []string{"--url", open.URL}, 1, "--service is required: Jaeger at " + open.URL + " knows 2 services: checkout, payments"},
		{"misspelt", []string{"--url", open.URL, "--service", "paymnts"}, 1, `did you mean "payments"?`},
		{"bad max-searches", []string{"--url", srv.URL, "--service", "x", "--max-searches", "0"}, 2, "--max-searches 0 must be positive"},
		{"bad max-fetch-bytes", []string{"--url", srv.URL, "--service", "x", "--max-fetch-bytes", "lots"}, 2, `--max-fetch-bytes "lots" is not a size`},
		{"bad max-fetch-time", []string{"--url", srv.URL, "--service", "x", "--max-fetch-time", "0s"}, 2, "--max-fetch-time 0s must be positive"},
		{"a server that ignores the window", []string{"--url", endless.URL, "--service", "checkout", "--lookback", "1s", "--limit", "10", "--max-searches", "40"}, 1,
			"Jaeger at " + endless.URL + " still answered full pages after 40 searches, the --max-searches bound, with 10 distinct traces read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := execute(t, "", append([]string{"jaeger"}, tt.args...)...)
			assert.Equal(t, tt.wantCode, code, errOut)
			assert.Contains(t, errOut, tt.wantErr)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
			assert.NotContains(t, out+errOut, token)
		})
	}
}

// --emit writes the snippets after the report, as analyze does; the
// service they configure is --snippet-service (--service says whose
// traces to read).
func TestJaegerEmit(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(&jaegertest.Server{Traces: jaegertest.Traces(120, t0.Add(time.Second), 13*time.Second), Services: []string{"checkout"}})
	defer srv.Close()
	dir := t.TempDir()
	out, errOut, code := execute(t, "", "jaeger", "--url", srv.URL, "--service", "checkout",
		"--from", "2026-11-30T12:00:00Z", "--to", "2026-11-30T13:00:00Z", "--emit-dir", dir, "--emit", "envoy", "--snippet-service", "payments-upstream")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Recommended timeout")
	envoy, err := os.ReadFile(filepath.Join(dir, "envoy.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(envoy), "payments-upstream")
	assert.Contains(t, string(envoy), "timeout:")
}
