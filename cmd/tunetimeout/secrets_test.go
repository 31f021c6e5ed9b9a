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
	cliURLQuery   = "cliquery-Rw2Jm7-x" // 16 bytes or more: redacted however it is keyed
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
	return fmt.Sprintf("refused Authorization: %s (%s:%s), X-Scope-OrgID: %s, org_scope=%s",
		r.Header.Get("Authorization"), user, pass, r.Header.Get("X-Scope-OrgID"), r.FormValue("org_scope"))
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
		// A password in --url and -H Authorization are refused (issue 30,
		// item 9: TestEverySourceRefusesSecretsInFlags); a header file
		// takes their place.
		{name: "Authorization header from a file", args: []string{"-H", "@" + write("headers", "Authorization: Bearer "+cliAuthHeader)}, sent: "Bearer " + cliAuthHeader},
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
				u.RawQuery = "org_scope=" + cliURLQuery
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
					assert.Contains(t, out, "?org_scope=***", "the report shows --url without the query's values")
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

// sourceCommands are the command lines of every command that reads a
// server, for the server at u (sql prints a query and reads none).
func sourceCommands(u string) map[string][]string {
	prom := []string{"--url", u, "--metric", "x_seconds", "--window", "1h", "--at", "1800000000", "--query-retries", "0"}
	return map[string][]string{
		"prometheus": append([]string{"prometheus"}, prom...),
		"rules":      append([]string{"rules"}, prom...),
		"watch":      append([]string{"watch", "--every", "1m", "--listen", "127.0.0.1:0"}, prom...),
		"check":      append([]string{"check", "--config-format", "envoy", "config.yaml"}, prom...),
		"jaeger":     {"jaeger", "--url", u, "--service", "checkout", "--query-retries", "0"},
		"clickhouse": {"clickhouse", "--url", u, "--table", "t", "--latency", "d", "--unit", "ms", "--query-retries", "0"},
	}
}

// Issue 30, item 9: a credential on the command line is in the process
// list for every user of the machine, for as long as the command runs:
// every source refuses it, in every form, by the one rule of
// internal/httpclient, naming the file and environment forms and never
// the value.
func TestEverySourceRefusesSecretsInFlags(t *testing.T) {
	for _, form := range []struct {
		name string
		url  func(string) string // --url from the server's address
		args []string
		want string
	}{
		{"a password in --url", func(u string) string {
			return strings.Replace(u, "http://", "http://"+cliUser+":"+url.QueryEscape(cliURLPass)+"@", 1)
		}, nil,
			"--url holds a password, which the process list shows to every user of this machine: give the user with --basic-auth-user and the password with --basic-auth-password-file or --basic-auth-password-env"},
		{"a token in --url's query", func(u string) string { return u + "/?access_token=" + cliURLQuery }, nil,
			"--url's query holds a credential under access_token, which the process list shows to every user of this machine: send it in a header from a file (-H @FILE)"},
		{"-H Authorization", func(u string) string { return u }, []string{"-H", "Authorization: Bearer " + cliAuthHeader},
			"-H Authorization carries a credential, which the process list shows to every user of this machine: give a bearer token with --bearer-token-file or --bearer-token-env, basic auth with --basic-auth-user and --basic-auth-password-file or --basic-auth-password-env, or any header from a file with -H @FILE"},
		{"-H X-Api-Key", func(u string) string { return u }, []string{"-H", "X-Api-Key: " + cliOrgHeader},
			"-H X-Api-Key carries a credential"},
	} {
		var hits sync.Map
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { hits.Store(r.URL.Path, true) }))
		for name, args := range sourceCommands(form.url(srv.URL)) {
			t.Run(form.name+"/"+name, func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("{}\n"), 0o600))
				for i, a := range args {
					if a == "config.yaml" {
						args[i] = filepath.Join(dir, a)
					}
				}
				out, errOut, code := execute(t, "", append(args, form.args...)...)
				assert.Equal(t, 2, code, "a wrong command line: %s", errOut)
				assert.Contains(t, errOut, form.want)
				assert.Empty(t, cliLeaks(out+errOut), "a secret in the output:\n%s%s", out, errOut)
			})
		}
		srv.Close()
		hits.Range(func(k, _ any) bool {
			t.Errorf("%s: the server was sent %s", form.name, k)
			return true
		})
	}
}

// The forms the help recommends (files, environment variables, -H @FILE)
// reach every source, and a server that quotes them in its error shows
// none of them, in any form, on any output.
func TestEverySourceHidesEchoedSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, secret string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(secret+"\n"), 0o600))
		return p
	}
	t.Setenv("TT_CLI_TOKEN", cliBearerEnv)
	t.Setenv("TT_CLI_PASS", cliPassEnv)
	headers := write("headers", "X-Api-Key: "+cliAuthHeader)
	basic := func(p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(cliUser+":"+p)) }
	for _, cred := range []struct {
		name string
		args []string
		sent string
	}{
		{"bearer token file", []string{"--bearer-token-file", write("token", cliBearerFile)}, "Bearer " + cliBearerFile},
		{"bearer token env", []string{"--bearer-token-env", "TT_CLI_TOKEN"}, "Bearer " + cliBearerEnv},
		{"basic auth password file", []string{"--basic-auth-user", cliUser, "--basic-auth-password-file", write("password", cliPassFile)}, basic(cliPassFile)},
		{"basic auth password env", []string{"--basic-auth-user", cliUser, "--basic-auth-password-env", "TT_CLI_PASS"}, basic(cliPassEnv)},
	} {
		var mu sync.Mutex
		var auth []string
		// An error that quotes everything it was sent, long enough that
		// a cut at 300 characters falls inside it.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			auth = append(auth, r.Header.Get("Authorization"))
			mu.Unlock()
			w.WriteHeader(http.StatusForbidden)
			quote := "refused Authorization: " + r.Header.Get("Authorization") + ", X-Api-Key: " + r.Header.Get("X-Api-Key") + ", X-Scope-OrgID: " + r.Header.Get("X-Scope-OrgID")
			io.WriteString(w, "Code: 516. DB::Exception: "+strings.Repeat("x", 250)+" "+quote+" "+cliQuote(quote))
		}))
		u := srv.URL + "/?org_scope=" + cliURLQuery
		for name, args := range sourceCommands(u) {
			if name == "watch" || name == "check" {
				continue // watch serves until stopped; check's --url is prometheus's
			}
			t.Run(cred.name+"/"+name, func(t *testing.T) {
				args := append(append(args, cred.args...), "-H", "@"+headers, "-H", "X-Scope-OrgID: "+cliOrgHeader)
				out, errOut, code := execute(t, "", args...)
				assert.Equal(t, 1, code, errOut)
				assert.Contains(t, errOut, "403", "the server's refusal")
				assert.Empty(t, cliLeaks(out+errOut), "a secret in the output:\n%s%s", out, errOut)
				assert.Empty(t, partLeaks(out+errOut), "part of a secret in the output (a cut before redaction):\n%s%s", out, errOut)
				mu.Lock()
				defer mu.Unlock()
				require.NotEmpty(t, auth)
				assert.Equal(t, cred.sent, auth[len(auth)-1], "the credentials were sent")
			})
		}
		srv.Close()
	}
}

// partLeaks returns the parts of 8 bytes of a secret (or of the base64
// of a basic-auth user:password) that s holds: what a cut inside a secret
// before its redaction leaves.
func partLeaks(s string) []string {
	secrets := []string{cliBearerFile, cliBearerEnv, cliPassFile, cliPassEnv, cliURLQuery, cliOrgHeader, cliAuthHeader}
	for _, p := range []string{cliPassFile, cliPassEnv} {
		secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(cliUser + ":" + p))[8:]) // past "admin:"
	}
	var found []string
	for _, sec := range secrets {
		for i := 0; i+8 <= len(sec); i++ {
			if strings.Contains(s, sec[i:i+8]) {
				found = append(found, sec[i:i+8])
			}
		}
	}
	return found
}
