package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The prometheus command against a real server is tested in e2e; these
// pin its command line: bad flags exit 2, failures exit 1 in one line
// without credentials.
func TestPrometheusCommandLine(t *testing.T) {
	const token = "very-secret-bearer-token"
	t.Setenv("TT_CMD_TOKEN", token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte("refused " + r.Header.Get("Authorization")))
	}))
	defer srv.Close()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"bad window", []string{"--url", srv.URL, "--metric", "x_seconds", "--window", "a week"}, 2, `--window "a week" is not a duration`},
		{"bad aggregate", []string{"--url", srv.URL, "--metric", "x_seconds", "--aggregate", "mean"}, 2, "--aggregate \"mean\": want worst or overall"},
		{"bad at", []string{"--url", srv.URL, "--metric", "x_seconds", "--at", "yesterday"}, 2, "--at \"yesterday\" is neither now"},
		{"bad unit", []string{"--url", srv.URL, "--metric", "x", "--unit", "fortnights"}, 2, "--unit: unknown unit"},
		{"arguments", []string{"--url", srv.URL, "--metric", "x_seconds", "file.csv"}, 2, "prometheus reads no files"},
		{"refused", []string{"--url", srv.URL, "--metric", "x_seconds", "--bearer-token-env", "TT_CMD_TOKEN"}, 1, "answered HTTP 401 Unauthorized"},
		{"alias", []string{"--metric", "x_seconds"}, 2, "--url is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := "prometheus"
			if tt.name == "alias" {
				cmd = "prom"
			}
			out, errOut, code := execute(t, "", append([]string{cmd}, tt.args...)...)
			assert.Equal(t, tt.wantCode, code, errOut)
			assert.Contains(t, errOut, tt.wantErr)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
			assert.NotContains(t, out+errOut, token)
		})
	}
}
