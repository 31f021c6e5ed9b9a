package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
		{"bad size", []string{"--url", srv.URL, "--metric", "x_seconds", "--max-response-bytes", "512M"}, 2, `--max-response-bytes "512M": unknown unit "M"`},
		{"zero size", []string{"--url", srv.URL, "--metric", "x_seconds", "--max-response-bytes", "0"}, 2, `--max-response-bytes "0" must be positive`},
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

// An answer over --max-response-bytes fails in one line that names the
// flag and the cap; the default cap reads the same answer.
func TestPrometheusMaxResponseBytes(t *testing.T) {
	const token = "very-secret-bearer-token"
	t.Setenv("TT_CMD_TOKEN", token)
	samples := strings.Repeat(`{"metric":{"le":"0.1"},"value":[1800000000,"1"]},`, 50000)
	body := `{"status":"success","data":{"resultType":"vector","result":[` + strings.TrimSuffix(samples, ",") + `]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	args := []string{"prometheus", "--url", srv.URL, "--metric", "x_seconds", "--bearer-token-env", "TT_CMD_TOKEN", "--window", "1h"}
	_, errOut, code := execute(t, "", append(args, "--max-response-bytes", "1MB")...)
	assert.Equal(t, 1, code, errOut)
	assert.Equal(t, "tunetimeout: Prometheus at "+srv.URL+" answered count(last_over_time(x_seconds_bucket[1h])) with more than 1 MB, the --max-response-bytes cap; "+
		"a shorter --window, a coarser --step, a narrower --selector or a larger --max-response-bytes helps\n", errOut)
	assert.NotContains(t, errOut, token)

	_, errOut, code = execute(t, "", args...)
	assert.Equal(t, 1, code)
	assert.NotContains(t, errOut, "--max-response-bytes", "%d bytes are within the default cap", len(body))
}

// TestPrometheusFlagsCheckedFirst: promsource's rule (Options.Check)
// refuses bad flags with exit 2 before anything is sent: the server fails
// the test if it is asked anything, and a token file that does not exist
// is not read.
func TestPrometheusFlagsCheckedFirst(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request was sent: %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	missing := filepath.Join(t.TempDir(), "token")
	ok := []string{"--url", srv.URL, "--metric", "x_seconds", "--bearer-token-file", missing}
	tests := []struct {
		name string
		args []string
		want string // the whole error, without "tunetimeout: "
	}{
		{"no scheme", []string{"--url", "localhost:9090", "--metric", "x_seconds"},
			`--url "localhost:9090" is not an http:// or https:// address`},
		{"metric name", append(ok, "--metric", "bad-name"), `--metric "bad-name" is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)`},
		{"by le", append(ok, "--by", "le"), "--by le: cannot group by the histogram's own label"},
		{"step longer than window", append(ok, "--step", "2h", "--window", "1h"), "--step 2h is longer than --window 1h"},
		{"profile", append(ok, "--profile", "hourly"), `--profile "hourly": auto, daily, weekly, none`},
		{"tz", append(ok, "--tz", "Mars/Olympus"), `--tz "Mars/Olympus": an IANA time zone name such as UTC or Europe/Berlin`},
		{"selector", append(ok, "--selector", `job="api"`), `--selector "job=\"api\"": must be label matchers in braces, e.g. {job="api"}`},
		{"two token sources", append(ok, "--bearer-token-env", "TT_CMD_UNSET"), "--bearer-token-file and --bearer-token-env exclude each other"},
		{"token and basic auth", append(ok, "--basic-auth-user", "admin"), "choose one of bearer token and basic auth"},
		{"header syntax", append(ok, "-H", "X-Scope-OrgID team-a"), "-H number 1 (of 1) has no colon (it starts with X-Scope-OrgID): write Name: value"},
		{"every problem at once", []string{"--url", "localhost:9090", "--metric", "bad-name", "--by", "le"},
			`--url "localhost:9090" is not an http:// or https:// address` + "\n" +
				`--metric "bad-name" is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)` + "\n" +
				"--by le: cannot group by the histogram's own label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := execute(t, "", append([]string{"prometheus"}, tt.args...)...)
			assert.Equal(t, 2, code, errOut)
			assert.Equal(t, "tunetimeout: "+tt.want+"\n", errOut)
			assert.Empty(t, out)
			assert.NotContains(t, errOut, missing, "the token file is read only as it connects")
		})
	}
	// The same flags, valid, get as far as reading the token file: exit 1.
	_, errOut, code := execute(t, "", append([]string{"prometheus"}, ok...)...)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "--bearer-token-file: cannot read "+missing)
}
