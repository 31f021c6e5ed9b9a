package promsource

import (
	"context"
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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 14: every error path of the client runs with distinct secrets in
// every place a credential comes from, and every output is searched for
// them. The servers are fakes: they fail, and they quote what they were
// sent, as careless proxies do.

// The secrets, one per source. Each has a core of its own, searched for
// too, so that a part of one is found as well as the whole.
const (
	secBearerFile = "bearerfile-Q7xK2m-tok"
	secBearerEnv  = "bearerenv-Z4pL9w-tok"
	secPassFile   = "passfile-M3vR8t-pw"
	secPassEnv    = "passenv-H6nB1c-pw"
	secURLPass    = "urlpass/W9yT5d@pw" // / and @ need escaping in a URL
	secURLQuery   = "querykey-F2jS7g-k"
	secOrgHeader  = "orgheader-K8dN4q-id"
	secAuthHeader = "authheader-R5hG3z-tok"
	secUser       = "admin"
)

var secretCores = []string{"Q7xK2m", "Z4pL9w", "M3vR8t", "H6nB1c", "W9yT5d", "F2jS7g", "K8dN4q", "R5hG3z"}

// leaks returns what of the secrets s holds: a core, or one of the forms a
// credential travels in (base64 in a Basic header, escaped in a URL).
func leaks(s string) []string {
	var found []string
	forms := slices.Clone(secretCores)
	for _, p := range []string{secPassFile, secPassEnv, secURLPass} {
		forms = append(forms, base64.StdEncoding.EncodeToString([]byte(secUser+":"+p)))
	}
	for _, f := range forms {
		if strings.Contains(s, f) || strings.Contains(s, url.QueryEscape(f)) {
			found = append(found, f)
		}
	}
	return found
}

// A credential setup: where the secrets are. Every setup also has a
// secret in --url's query and in an X-Scope-OrgID header.
type credentials struct {
	name string
	set  func(t *testing.T, o *Options, u *url.URL)
	sent string // the Authorization header the server must get
}

func credentialSetups(t *testing.T) []credentials {
	dir := t.TempDir()
	write := func(name, secret string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(secret+"\n"), 0o600))
		return p
	}
	tokenFile, passFile := write("token", secBearerFile), write("password", secPassFile)
	basic := func(p string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(secUser+":"+p))
	}
	return []credentials{
		{"bearer token file", func(_ *testing.T, o *Options, _ *url.URL) { o.BearerTokenFile = tokenFile }, "Bearer " + secBearerFile},
		{"bearer token env", func(t *testing.T, o *Options, _ *url.URL) {
			t.Setenv("TT_SECRET_TOKEN", secBearerEnv)
			o.BearerTokenEnv = "TT_SECRET_TOKEN"
		}, "Bearer " + secBearerEnv},
		{"basic auth password file", func(_ *testing.T, o *Options, _ *url.URL) {
			o.BasicUser, o.BasicPasswordFile = secUser, passFile
		}, basic(secPassFile)},
		{"basic auth password env", func(t *testing.T, o *Options, _ *url.URL) {
			t.Setenv("TT_SECRET_PASS", secPassEnv)
			o.BasicUser, o.BasicPasswordEnv = secUser, "TT_SECRET_PASS"
		}, basic(secPassEnv)},
		// A password in --url and -H Authorization are refused (issue 30,
		// item 9: TestCheck); a header file is what takes their place.
		{"Authorization header from a file", func(_ *testing.T, o *Options, _ *url.URL) {
			o.Headers = append(o.Headers, "@"+write("headers", "# for Prometheus\nAuthorization: Bearer "+secAuthHeader))
		}, "Bearer " + secAuthHeader},
	}
}

// echo is what a careless server says about a request: its credentials,
// decoded too, and the query's. Short enough to be shown: a body of 300
// bytes or more is not.
func echo(r *http.Request) string {
	user, pass, _ := r.BasicAuth()
	return fmt.Sprintf("refused Authorization: %s (%s:%s), X-Scope-OrgID: %s, org_scope=%s",
		r.Header.Get("Authorization"), user, pass, r.Header.Get("X-Scope-OrgID"), r.FormValue("org_scope"))
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// promError is Prometheus's error JSON with text as its error.
func promError(typ, text string) string {
	return `{"status":"error","errorType":"` + typ + `","error":` + jsonQuote(text) + `}`
}

// secretServer records the requests a fake was sent.
type secretServer struct {
	mu    sync.Mutex
	auth  []string
	echos []string
}

func (s *secretServer) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.echos = append(s.echos, echo(r))
}

func (s *secretServer) requests() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...), append([]string(nil), s.echos...)
}

// prometheusFake answers every query of a classic histogram, each answer
// with warnings and infos that quote the request.
func prometheusFake(w http.ResponseWriter, r *http.Request) {
	q := r.FormValue("query")
	value := "1"
	switch {
	case strings.HasPrefix(q, "count("):
	case strings.Contains(q, "_bucket"):
		e := jsonQuote("warning: " + echo(r))
		fmt.Fprintf(w, `{"status":"success","warnings":[%s],"infos":[%s],"data":{"resultType":"vector","result":[`+
			`{"metric":{"le":"0.1"},"value":[1800000000,"60"]},{"metric":{"le":"0.5"},"value":[1800000000,"95"]},`+
			`{"metric":{"le":"+Inf"},"value":[1800000000,"100"]}]}}`, e, jsonQuote("info: "+echo(r)))
		return
	case strings.Contains(q, "_count"):
		value = "100"
	case strings.Contains(q, "_sum"):
		value = "12"
	default:
		value = "0.5"
	}
	fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"vector","result":[{"metric":{},"value":[1800000000,"%s"]}]}}`,
		jsonQuote("warning: "+echo(r)), value)
}

// resultText is every text of a result that reaches people.
func resultText(res *Result) string {
	if res == nil {
		return ""
	}
	parts := []string{res.URL, res.Metric}
	parts = append(parts, res.Queries...)
	parts = append(parts, res.Notes...)
	parts = append(parts, res.Warnings...)
	for _, g := range res.Groups {
		parts = append(parts, g.Name)
		if g.Err != nil {
			parts = append(parts, g.Err.Error())
		}
	}
	for _, s := range res.Summary {
		parts = append(parts, s.Labels)
	}
	return strings.Join(parts, "\n")
}

func TestSecretsNeverShown(t *testing.T) {
	const metric = "http_request_duration_seconds"
	countQuery := "count(last_over_time(" + metric + "_bucket[1h]))"
	// A second host a redirect may send the client to: 127.0.0.1 serves
	// the fakes, localhost this one.
	elsewhere := &secretServer{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.record(r)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, echo(r))
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	tests := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request) // nil: nothing listens
		tls     bool
		tweak   func(o *Options)
		want    string // a part of the error only this path writes; "" for no error
		ends    bool   // the error ends with want
		// echoes: what the server answered quotes the credentials, so a
		// leak is possible; the test checks the quote held them.
		echoes bool
		waits  []time.Duration // the backoffs, when they tell the path
		check  func(t *testing.T, res *Result)
		// interrupt: the run is cancelled while the server holds the query.
		interrupt bool
	}{
		{
			name: "connection refused",
			want: ": connection refused (3 attempts)",
		},
		{
			name: "no answer within the query timeout",
			handler: func(_ http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			},
			tweak: func(o *Options) { o.QueryTimeout = 50 * time.Millisecond },
			want:  "did not answer within 50ms (3 attempts)",
		},
		{
			name: "401 quoting the credentials",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, echo(r))
			},
			want:   "answered HTTP 401 Unauthorized: it needs credentials, or refused the ones given (--bearer-token-file, --bearer-token-env, --basic-auth-user): refused Authorization: ",
			echoes: true,
		},
		{
			name: "403 quoting the credentials, after the GET fallback",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, r.Method+" "+echo(r))
			},
			want:   "answered HTTP 403 Forbidden: the credentials were refused (--bearer-token-file, --bearer-token-env, --basic-auth-user): GET refused",
			echoes: true,
		},
		{
			name: "500 with Prometheus's JSON quoting the Authorization header and the URL",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, promError("internal", echo(r)+" at "+r.URL.String()))
			},
			want:   "answered HTTP 500 Internal Server Error: refused Authorization: ",
			echoes: true,
		},
		{
			name: "500 with a plain-text body quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, "proxy error: "+echo(r))
			},
			want:   "answered HTTP 500 Internal Server Error: proxy error: refused",
			echoes: true,
		},
		{
			name: "500 with a body too long to show",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, strings.Repeat(echo(r)+" ", 10))
			},
			want:   "answered HTTP 500 Internal Server Error",
			ends:   true,
			echoes: true,
		},
		{
			name: "503 with Retry-After, quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, promError("unavailable", echo(r)))
			},
			want:   "answered HTTP 503 Service Unavailable: refused Authorization: ",
			echoes: true,
			waits:  []time.Duration{time.Second, time.Second},
		},
		{
			name: "400 rejected query quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, promError("bad_data", echo(r)))
			},
			want:   "rejected the query " + countQuery + ": refused Authorization: ",
			echoes: true,
		},
		{
			name: "422 failed execution quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnprocessableEntity)
				io.WriteString(w, promError("execution", echo(r)))
			},
			want:   "rejected the query " + countQuery + ": refused Authorization: ",
			echoes: true,
		},
		{
			name: "an error in a 200 answer quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, promError("internal", echo(r)))
			},
			want:   "answered HTTP 200 OK: refused Authorization: ",
			echoes: true,
		},
		{
			name:    "TLS certificate of an unknown authority",
			handler: prometheusFake,
			tls:     true,
			want:    "tls: failed to verify certificate: x509: certificate signed by unknown authority (3 attempts)",
		},
		{
			name: "malformed JSON quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[`+echo(r))
			},
			want:   "sent an answer that is not the Prometheus API's JSON (byte ",
			echoes: true,
		},
		{
			name: "an HTML page quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "<html><body>Sign in: "+echo(r)+"</body></html>")
			},
			want:   "is --url the Prometheus API?",
			echoes: true,
		},
		{
			name:      "interrupted while waiting for an answer",
			handler:   func(http.ResponseWriter, *http.Request) {},
			interrupt: true,
			want:      "interrupted",
			ends:      true,
		},
		{
			name: "connection closed without an answer",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			},
			want: ": EOF (3 attempts)",
		},
		{
			name: "answer cut short",
			handler: func(w http.ResponseWriter, r *http.Request) {
				body := `{"status":"success","warnings":[` + jsonQuote(echo(r)) + `],"data":{"resultType":"vector","result":[`
				w.Header().Set("Content-Length", fmt.Sprint(len(body)+100))
				io.WriteString(w, body)
			},
			want:   ": unexpected EOF",
			echoes: true,
		},
		{
			name: "redirect to a URL carrying the secrets",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasPrefix(r.URL.Path, "/moved") {
					http.Redirect(w, r, "/moved?token="+url.QueryEscape(r.Header.Get("Authorization"))+
						"&org="+url.QueryEscape(r.Header.Get("X-Scope-OrgID"))+"&key="+url.QueryEscape(r.FormValue("org_scope")), http.StatusTemporaryRedirect)
					return
				}
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, "moved: "+r.URL.String())
			},
			want:   "answered HTTP 500 Internal Server Error: moved: /moved?token=",
			echoes: true,
		},
		{
			name: "redirects without end carrying the secrets",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/loop?token="+url.QueryEscape(r.Header.Get("Authorization"))+"&key="+url.QueryEscape(r.FormValue("org_scope")), http.StatusFound)
			},
			want:   ": stopped after 10 redirects",
			echoes: true,
		},
		{
			name: "redirect to another host, not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
			},
			want: "redirected to " + otherURL + ", which tunetimeout does not follow: it sends the credentials, the -H headers and --url's query only to --url's host",
		},
		{
			name: "warnings and infos quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				prometheusFake(w, r)
			},
			echoes: true,
			check: func(t *testing.T, res *Result) {
				require.NotNil(t, res)
				require.Len(t, res.Groups, 1)
				assert.NoError(t, res.Groups[0].Err)
				assert.Contains(t, strings.Join(res.Warnings, "\n"), "warning: refused Authorization: ")
				assert.Contains(t, strings.Join(res.Warnings, "\n"), "info: refused Authorization: ")
				assert.Contains(t, res.URL, "?org_scope=***")
			},
		},
		{
			name: "an answer of the wrong type, with warnings quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"matrix","result":[]}}`, jsonQuote(echo(r)))
			},
			want:   "answered " + countQuery + " with a matrix, not an instant vector",
			echoes: true,
		},
		{
			name: "unknown metric, with similar names",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/label/") {
					fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":["http_request_duration_milliseconds_bucket","up"]}`, jsonQuote(echo(r)))
					return
				}
				fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"vector","result":[]}}`, jsonQuote(echo(r)))
			},
			want:   "no series of " + metric + " in the 1h window ending 2027-01-15T08:00:00Z; similar metrics: http_request_duration_milliseconds",
			echoes: true,
		},
		{
			name: "a bucket series whose le quotes them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.FormValue("query"), "count(") {
					io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1800000000,"3"]}]}}`)
					return
				}
				fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"le":%s},"value":[1800000000,"1"]}]}}`, jsonQuote(echo(r)))
			},
			want:   "a bucket series has le=",
			echoes: true,
		},
		{
			name: "unknown metric, and the names fail too",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/label/") {
					w.WriteHeader(http.StatusInternalServerError)
					io.WriteString(w, echo(r))
					return
				}
				io.WriteString(w, emptyVector)
			},
			want:   "no series of " + metric + " in the 1h window ending 2027-01-15T08:00:00Z",
			echoes: true,
		},
		{
			name: "answer larger than --max-response-bytes, quoting them",
			handler: func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"status":"success","warnings":[%s],"data":{"resultType":"vector","result":[`, jsonQuote(strings.Repeat(echo(r), 20)))
				io.WriteString(w, strings.Repeat(`{"metric":{},"value":[1800000000,"1"]},`, 1000))
			},
			tweak:  func(o *Options) { o.MaxResponseBytes = 4000 },
			want:   "answered " + countQuery + " with more than 4 kB, the --max-response-bytes cap",
			echoes: true,
		},
	}
	for _, cred := range credentialSetups(t) {
		for _, tt := range tests {
			t.Run(cred.name+"/"+tt.name, func(t *testing.T) {
				srv := &secretServer{}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var base string
				if tt.handler != nil {
					h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						srv.record(r)
						if tt.interrupt {
							cancel()
							<-r.Context().Done()
							return
						}
						tt.handler(w, r)
					})
					s := httptest.NewUnstartedServer(h)
					s.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshake errors
					if tt.tls {
						s.StartTLS()
					} else {
						s.Start()
					}
					t.Cleanup(s.Close)
					base = s.URL
				} else {
					s := httptest.NewServer(http.NotFoundHandler())
					base = s.URL
					s.Close() // nothing listens there any more
				}
				u, err := url.Parse(base)
				require.NoError(t, err)
				u.RawQuery = "org_scope=" + url.QueryEscape(secURLQuery)
				sl := &noSleep{}
				o := options("", sl)
				o.Metric = metric
				o.Headers = []string{"X-Scope-OrgID: " + secOrgHeader}
				cred.set(t, &o, u)
				o.URL = u.String()
				if tt.tweak != nil {
					tt.tweak(&o)
				}

				res, err := Fetch(ctx, o)

				var msg string
				if tt.want == "" {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
					msg = err.Error()
					assert.Contains(t, msg, tt.want, "the path this case is for")
					if tt.ends {
						assert.True(t, strings.HasSuffix(msg, tt.want), "%q ends with %q", msg, tt.want)
					}
					assert.NotContains(t, msg, "\n", "one line")
				}
				assert.Empty(t, leaks(msg), "a secret in the error %q", msg)
				assert.Empty(t, leaks(resultText(res)), "a secret in the result:\n%s", resultText(res))
				if tt.check != nil {
					tt.check(t, res)
				}
				if tt.waits != nil {
					assert.Equal(t, tt.waits, sl.waits, "Retry-After is a lower bound on the wait")
				}
				auth, echos := srv.requests()
				if tt.handler != nil && !tt.tls {
					require.NotEmpty(t, auth, "the fake was asked")
					assert.Equal(t, cred.sent, auth[0], "the credentials were sent")
				}
				if tt.echoes {
					// The quote held the secrets: the case could fail.
					require.NotEmpty(t, echos)
					assert.NotEmpty(t, leaks(echos[0]), "the fake quotes the secrets")
				}
			})
		}
	}
	_, sentElsewhere := elsewhere.requests()
	assert.Empty(t, sentElsewhere, "the other host was sent the request, with the secrets")
}

// TestConnectSecretsNeverShown runs connect's checks with the secrets
// in the values they check.
func TestConnectSecretsNeverShown(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(secBearerFile), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	t.Setenv("TT_SECRET_TOKEN", secBearerEnv)
	t.Setenv("TT_SECRET_PASS", secPassEnv)
	urlWith := "http://" + secUser + ":" + url.QueryEscape(secURLPass) + "@127.0.0.1:9/prefix?api_key=" + secURLQuery
	tests := []struct {
		name string
		c    Connection
		want string
	}{
		{"not http, with user info and a query",
			Connection{URL: "ftp://" + secUser + ":" + url.QueryEscape(secURLPass) + "@host/p?api_key=" + secURLQuery},
			`--url "ftp://***@host/p?api_key=***" is not an http:// or https:// address`},
		{"unparsable, with user info and a query",
			Connection{URL: "http://" + secUser + ":" + secURLPass + "@host:port?api_key=" + secURLQuery},
			`--url "http://***@host:port?***" is not an http:// or https:// address`},
		{"without http://",
			Connection{URL: secUser + ":" + secPassEnv + "@host:9090"},
			`--url "admin:***@host:9090" is not an http:// or https:// address`},
		{"two password sources",
			Connection{URL: urlWith, BasicPasswordEnv: "TT_SECRET_PASS", BasicPasswordFile: tokenFile},
			"--basic-auth-password-file and --basic-auth-password-env exclude each other"},
		{"empty password file",
			Connection{URL: "http://127.0.0.1:9", BasicUser: secUser, BasicPasswordFile: empty},
			"--basic-auth-password-file: " + empty + " is empty"},
		{"password without user",
			Connection{URL: "http://127.0.0.1:9?api_key=" + secURLQuery, BasicPasswordEnv: "TT_SECRET_PASS"},
			"a basic-auth password needs a user: --basic-auth-user"},
		{"two token sources",
			Connection{URL: urlWith, BearerTokenFile: tokenFile, BearerTokenEnv: "TT_SECRET_TOKEN"},
			"--bearer-token-file and --bearer-token-env exclude each other"},
		{"token and basic auth",
			Connection{URL: urlWith, BearerTokenFile: tokenFile},
			"choose one of bearer token and basic auth"},
		{"the token given as the variable's name",
			Connection{URL: "http://127.0.0.1:9", BearerTokenEnv: secBearerEnv},
			"--bearer-token-env takes the name of an environment variable, such as PROM_TOKEN; what it was given is not one (the secret itself?), so it is not shown"},
		{"the password given as the variable's name",
			Connection{URL: "http://127.0.0.1:9", BasicUser: secUser, BasicPasswordEnv: secPassEnv},
			"--basic-auth-password-env takes the name of an environment variable"},
		{"-H without a colon: only a header name is shown",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"X-Scope-OrgID: team-a", "Authorization Bearer " + secAuthHeader}},
			"-H number 2 (of 2) has no colon (it starts with Authorization): write Name: value"},
		{"-H of only a value",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{secAuthHeader}},
			"-H number 1 (of 1) has no colon: write Name: value"},
		{"-H of a value with spaces, no header name first",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"Bearer " + secAuthHeader}},
			"-H number 1 (of 1) has no colon: write Name: value"},
		{"-H with = for the colon",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"X-Scope-OrgID=" + secOrgHeader}},
			"-H number 1 (of 1) has no colon (it starts with X-Scope-OrgID): write Name: value"},
		{"-H whose value holds the first colon",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"Authorization Basic " + secUser + ":" + secPassEnv}},
			"-H number 1 (of 1) has no header name before its first colon (it starts with Authorization): write Name: value"},
		{"-H of a value holding a colon",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{secUser + "@" + secPassEnv + ":x"}},
			"-H number 1 (of 1) has no header name before its first colon: write Name: value"},
		{"-H without a name",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{": " + secOrgHeader}},
			"-H number 1 (of 1) has no header name before its first colon: write Name: value"},
		{"-H with a line break in its value",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"X-Scope-OrgID: " + secOrgHeader + "\r\nX-Evil: " + secAuthHeader}},
			"-H X-Scope-OrgID: its value holds a line break or another control character"},
		{"-H Authorization beside --bearer-token-file",
			Connection{URL: "http://127.0.0.1:9", BearerTokenFile: tokenFile, Headers: []string{"authorization: Bearer " + secAuthHeader}},
			"-H authorization and --bearer-token-file both set the Authorization header: give one of them"},
		{"-H Authorization beside --bearer-token-env",
			Connection{URL: "http://127.0.0.1:9", BearerTokenEnv: "TT_SECRET_TOKEN", Headers: []string{"Authorization: Bearer " + secAuthHeader}},
			"-H Authorization and --bearer-token-env both set the Authorization header"},
		{"-H Authorization beside basic auth",
			Connection{URL: "http://127.0.0.1:9", BasicUser: secUser, BasicPasswordEnv: "TT_SECRET_PASS", Headers: []string{"Authorization: Bearer " + secAuthHeader}},
			"-H Authorization and --basic-auth-user both set the Authorization header"},
		{"-H Authorization beside the URL's user",
			Connection{URL: urlWith, Headers: []string{"Authorization: Bearer " + secAuthHeader}},
			"-H Authorization and the user:password in --url both set the Authorization header"},
		{"-H Host",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"Host: " + secOrgHeader}},
			"-H Host: the host comes from --url"},
		{"-H Content-Type",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"Content-Type: " + secOrgHeader}},
			"-H Content-Type: tunetimeout sets this header itself"},
		{"every bad -H, each by its number or name",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"X-A " + secOrgHeader, "X-Scope-OrgID: ok", "X-B: " + secAuthHeader + "\nX-C: 1"}},
			"-H number 1 (of 3) has no colon (it starts with X-A): write Name: value\n-H X-B: its value holds a line break"},
		{"a password in --url, refused without it shown",
			Connection{URL: urlWith},
			"--url holds a password, which the process list shows to every user of this machine"},
		{"a credential in --url's query, refused without it shown",
			Connection{URL: urlWith},
			"--url's query holds a credential under api_key, which the process list shows"},
		{"-H @FILE that cannot be read",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"@" + secAuthHeader}},
			"-H @FILE: cannot read the file it names: no such file or directory (the name is not shown"},
		{"a malformed header in a -H @FILE, by its name only",
			Connection{URL: "http://127.0.0.1:9", Headers: []string{"@" + tokenFile}},
			"-H number 1 (of 1) has no colon: write Name: value"},
		{"CA file that holds no certificate",
			Connection{URL: "http://127.0.0.1:9", CAFile: tokenFile},
			"--ca-file " + tokenFile + " holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := connect(tt.c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, leaks(err.Error()), "a secret in %q", err.Error())
		})
	}
}

// A -H value is redacted wherever a server quotes it: whole, as the
// credentials after its scheme, and for Basic decoded.
func TestHeaderValuesRedacted(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte(secUser + ":" + secPassEnv))
	file := filepath.Join(t.TempDir(), "headers")
	require.NoError(t, os.WriteFile(file, []byte("X-Api-Key: Token "+secAuthHeader+"\n\nProxy-Authorization: Basic "+basic+"\n"), 0o600))
	c, err := connect(Connection{URL: "http://127.0.0.1:9/?org_scope=" + url.QueryEscape(secURLQuery), Headers: []string{
		"X-Scope-OrgID: " + secOrgHeader, "@" + file,
	}})
	require.NoError(t, err)
	for _, quoted := range []string{
		secOrgHeader, "Token " + secAuthHeader, secAuthHeader, basic, secUser + ":" + secPassEnv, secPassEnv,
		url.QueryEscape("Token " + secAuthHeader), url.PathEscape("Token " + secAuthHeader), secURLQuery,
	} {
		got := c.secrets.clean("the server says " + quoted + ".")
		assert.Equal(t, "the server says ***.", got, "%s", quoted)
	}
	assert.Equal(t, "http://127.0.0.1:9/?org_scope=***", c.display)
	assert.Equal(t, "org_scope="+url.QueryEscape(secURLQuery), c.endpoint.RawQuery, "sent as given")
}

// TestQueryValuesRedactedWhenLong: a --url query's long values are
// redacted from what the server says, its short ones are not
// (?partial_response=true must leave every "true" alone); a credential's
// key is refused (TestCheck).
func TestQueryValuesRedactedWhenLong(t *testing.T) {
	c, err := connect(Connection{URL: "http://prom:9090/?partial_response=true&dedup=0123456789abcdef01"})
	require.NoError(t, err)
	got := c.secrets.clean("partial_response is true; long 0123456789abcdef01")
	assert.Equal(t, "partial_response is true; long ***", got)
	assert.Equal(t, "http://prom:9090/?partial_response=***&dedup=***", c.display, "every value hidden in the URL shown")
}
