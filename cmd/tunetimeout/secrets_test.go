package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 14, through the command: with distinct secrets in every place a
// credential comes from, no failure of `tunetimeout prometheus`, nor a
// report of a server that quotes them in its warnings, shows one on stdout
// or stderr. promsource's TestSecretsNeverShown runs every error path of
// the client; these are the ones that reach the command line differently.

const (
	cliBearerFile = "clibearerfile-Pq4Wz8"
	cliBearerEnv  = "clibearerenv-Lm7Xc2"
	cliPassFile   = "clipassfile-Tn3Vb6"
	cliPassEnv    = "clipassenv-Gk9Hd1"
	cliURLPass    = "cliurlpass/Ys5Nf0" // / needs escaping in a URL
	cliURLQuery   = "cliquery-Rw2Jm7"
	cliOrgHeader  = "cliorg-Bx8Kq3"
	cliAuthHeader = "cliauthheader-Ev6Ut4"
	cliUser       = "admin"
)

// cliLeaks returns what of the secrets s holds: a secret's core, or the
// base64 of a basic-auth user:password.
func cliLeaks(s string) []string {
	forms := []string{"Pq4Wz8", "Lm7Xc2", "Tn3Vb6", "Gk9Hd1", "Ys5Nf0", "Rw2Jm7", "Bx8Kq3", "Ev6Ut4"}
	for _, p := range []string{cliPassFile, cliPassEnv, cliURLPass} {
		forms = append(forms, base64.StdEncoding.EncodeToString([]byte(cliUser+":"+p)))
	}
	var found []string
	for _, f := range forms {
		if strings.Contains(s, f) || strings.Contains(s, url.QueryEscape(f)) {
			found = append(found, f)
		}
	}
	return found
}

// cliEcho is what a careless server says about a request.
func cliEcho(r *http.Request) string {
	user, pass, _ := r.BasicAuth()
	return fmt.Sprintf("refused Authorization: %s (%s:%s), X-Scope-OrgID: %s, api_key=%s",
		r.Header.Get("Authorization"), user, pass, r.Header.Get("X-Scope-OrgID"), r.FormValue("api_key"))
}

func cliQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// cliPrometheus answers the queries of a classic histogram, every answer
// with a warning quoting the request.
func cliPrometheus(w http.ResponseWriter, r *http.Request) {
	q := r.FormValue("query")
	warn := cliQuote("warning: " + cliEcho(r))
	value := "0.5"
	switch {
	case strings.HasPrefix(q, "count("):
		value = "1"
	case strings.Contains(q, "_bucket"):
		fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"vector","result":[`+
			`{"metric":{"le":"0.1"},"value":[1800000000,"600"]},{"metric":{"le":"0.5"},"value":[1800000000,"950"]},`+
			`{"metric":{"le":"1"},"value":[1800000000,"990"]},{"metric":{"le":"+Inf"},"value":[1800000000,"1000"]}]}}`, warn)
		return
	case strings.Contains(q, "_count"):
		value = "1000"
	case strings.Contains(q, "_sum"):
		value = "120"
	}
	fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"vector","result":[{"metric":{},"value":[1800000000,"%s"]}]}}`, warn, value)
}

func TestPrometheusSecretsNeverShown(t *testing.T) {
	dir := t.TempDir()
	write := func(name, secret string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(secret+"\n"), 0o600))
		return p
	}
	tokenFile, passFile := write("token", cliBearerFile), write("password", cliPassFile)
	t.Setenv("TT_CLI_TOKEN", cliBearerEnv)
	t.Setenv("TT_CLI_PASS", cliPassEnv)
	basic := func(p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(cliUser+":"+p)) }
	setups := []struct {
		name   string
		args   []string
		inURL  bool   // user:password in --url
		sent   string // the Authorization header the server must get
		header string // an -H Authorization
	}{
		{name: "bearer token file", args: []string{"--bearer-token-file", tokenFile}, sent: "Bearer " + cliBearerFile},
		{name: "bearer token env", args: []string{"--bearer-token-env", "TT_CLI_TOKEN"}, sent: "Bearer " + cliBearerEnv},
		{name: "basic auth password file", args: []string{"--basic-auth-user", cliUser, "--basic-auth-password-file", passFile}, sent: basic(cliPassFile)},
		{name: "basic auth password env", args: []string{"--basic-auth-user", cliUser, "--basic-auth-password-env", "TT_CLI_PASS"}, sent: basic(cliPassEnv)},
		{name: "user:password in the URL", inURL: true, sent: basic(cliURLPass)},
		{name: "Authorization header", args: []string{"-H", "Authorization: Bearer " + cliAuthHeader}, sent: "Bearer " + cliAuthHeader},
	}

	var otherHits sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Store(cliEcho(r), true)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	tests := []struct {
		name     string
		handler  http.HandlerFunc // nil: nothing listens
		tls      bool
		args     []string
		wantCode int
		want     string // in stderr, or in stdout with wantCode 0
		echoes   bool   // the server quotes the credentials
	}{
		// A usage error (promsource.Options.Check), before anything is sent.
		{name: "a malformed -H", args: []string{"-H", "Authorization Bearer " + cliAuthHeader},
			wantCode: 2, want: "has no colon (it starts with Authorization): write Name: value"},
		{name: "connection refused", wantCode: 1, want: ": connection refused\n"},
		{name: "401 quoting the credentials", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, cliEcho(r))
		}, wantCode: 1, want: "answered HTTP 401 Unauthorized: it needs credentials, or refused the ones given (--bearer-token-file, --bearer-token-env, --basic-auth-user): refused Authorization: ", echoes: true},
		{name: "500 with Prometheus's JSON quoting them and the URL", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"status":"error","errorType":"internal","error":%s}`, cliQuote(cliEcho(r)+" at "+r.URL.String()))
		}, wantCode: 1, want: "answered HTTP 500 Internal Server Error: refused Authorization: ", echoes: true},
		{name: "TLS certificate of an unknown authority", handler: cliPrometheus, tls: true,
			wantCode: 1, want: "certificate signed by unknown authority"},
		{name: "redirect carrying the secrets", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/moved" {
				http.Redirect(w, r, "/moved?echo="+url.QueryEscape(r.Header.Get("Authorization")+" "+r.Header.Get("X-Scope-OrgID")), http.StatusTemporaryRedirect)
				return
			}
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "bad gateway for "+r.URL.String())
		}, wantCode: 1, want: "answered HTTP 502 Bad Gateway: bad gateway for /moved?echo=", echoes: true},
		{name: "redirect to another host", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
		}, wantCode: 1, want: "redirected to " + otherURL + ", which tunetimeout does not follow"},
		{name: "answer larger than --max-response-bytes", handler: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"vector","result":[`, cliQuote(strings.Repeat(cliEcho(r), 200)))
		}, args: []string{"--max-response-bytes", "10KB"}, wantCode: 1, want: "with more than 10 kB, the --max-response-bytes cap", echoes: true},
		{name: "unknown metric", handler: func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/label/") {
				fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":["x_second_bucket","up"]}`, cliQuote(cliEcho(r)))
				return
			}
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}, wantCode: 1, want: "no series of x_seconds in the 1h window ending 2027-01-15T08:00:00Z; similar metrics: x_second", echoes: true},
		{name: "a report with warnings quoting them", handler: cliPrometheus, wantCode: 0, want: "warning: refused Authorization: ", echoes: true},
		{name: "a JSON report with warnings quoting them", handler: cliPrometheus, args: []string{"-o", "json"}, wantCode: 0, want: `"warning: refused Authorization: `, echoes: true},
	}
	for _, setup := range setups {
		for _, tt := range tests {
			t.Run(setup.name+"/"+tt.name, func(t *testing.T) {
				var mu sync.Mutex
				var auth, echoes []string
				var base string
				if tt.handler != nil {
					s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						mu.Lock()
						auth, echoes = append(auth, r.Header.Get("Authorization")), append(echoes, cliEcho(r))
						mu.Unlock()
						tt.handler(w, r)
					}))
					s.Config.ErrorLog = log.New(io.Discard, "", 0)
					if tt.tls {
						s.StartTLS()
					} else {
						s.Start()
					}
					defer s.Close()
					base = s.URL
				} else {
					s := httptest.NewServer(http.NotFoundHandler())
					base = s.URL
					s.Close() // nothing listens there any more
				}
				u, err := url.Parse(base)
				require.NoError(t, err)
				u.RawQuery = "api_key=" + cliURLQuery
				if setup.inURL {
					u.User = url.UserPassword(cliUser, cliURLPass)
				}
				args := []string{"prometheus", "--url", u.String(), "--metric", "x_seconds", "--window", "1h",
					"--at", "1800000000", "--query-retries", "0", "-H", "X-Scope-OrgID: " + cliOrgHeader}
				args = append(append(args, setup.args...), tt.args...)

				out, errOut, code := execute(t, "", args...)

				require.Equal(t, tt.wantCode, code, "stderr: %s", errOut)
				if tt.wantCode == 0 {
					assert.Contains(t, out, tt.want, "the path this case is for")
					assert.Contains(t, out, "?api_key=***", "the report shows --url without the query's values")
				} else {
					assert.Contains(t, errOut, tt.want, "the path this case is for")
					assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
				}
				assert.Empty(t, cliLeaks(out), "a secret on stdout:\n%s", out)
				assert.Empty(t, cliLeaks(errOut), "a secret on stderr:\n%s", errOut)
				mu.Lock()
				defer mu.Unlock()
				if tt.handler != nil && !tt.tls {
					require.NotEmpty(t, auth, "the fake was asked")
					assert.Equal(t, setup.sent, auth[0], "the credentials were sent")
				}
				if tt.echoes {
					require.NotEmpty(t, echoes)
					assert.NotEmpty(t, cliLeaks(echoes[0]), "the fake quotes the secrets")
				}
			})
		}
	}
	otherHits.Range(func(k, _ any) bool {
		t.Errorf("the other host was sent a request: %s", k)
		return true
	})
}
