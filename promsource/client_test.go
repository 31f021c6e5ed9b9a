package promsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These fakes cover only what a real Prometheus will not do on demand:
// failing. Everything that works is tested against a real server in e2e.

const (
	secretToken = "s3cr3t-t0ken-value"
	secretPass  = "hunter2-password"
	secretOrg   = "tenant-credential-42"
)

// fake records what it was sent and answers with handler.
type fake struct {
	mu       sync.Mutex
	requests int
	auth     []string
	orgs     []string
}

func (f *fake) server(t *testing.T, handler func(n int, w http.ResponseWriter, r *http.Request)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		n := f.requests
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.orgs = append(f.orgs, r.Header.Get("X-Scope-OrgID"))
		f.mu.Unlock()
		handler(n, w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// noSleep records the backoffs instead of waiting.
type noSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *noSleep) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return nil
}

func options(url string, sl *noSleep) Options {
	o := Options{Metric: "http_request_duration_seconds", Window: time.Hour, At: time.Unix(1_800_000_000, 0)}
	o.URL = url
	o.QueryTimeout = time.Second
	o.sleep = sl.sleep
	o.jitter = func() float64 { return 1 } // the top of the full-jitter range
	return o
}

const emptyVector = `{"status":"success","data":{"resultType":"vector","result":[]}}`

func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		handler  func(n int, w http.ResponseWriter, r *http.Request)
		timeout  time.Duration
		want     string
		requests int
	}{
		{
			name: "500 with Prometheus's error JSON, not retried",
			handler: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				w.Write([]byte(`{"status":"error","errorType":"internal","error":"tsdb: out of disk space"}`))
			},
			want:     "answered HTTP 500 Internal Server Error: tsdb: out of disk space",
			requests: 1,
		},
		{
			name: "503 retried until the attempts run out",
			handler: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(`{"status":"error","errorType":"unavailable","error":"too many queries"}`))
			},
			want:     "answered HTTP 503 Service Unavailable: too many queries (3 attempts)",
			requests: 3,
		},
		{
			name: "malformed JSON",
			handler: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
			},
			want:     "sent an answer that is not the Prometheus API's JSON",
			requests: 1,
		},
		{
			name: "HTML from something else",
			handler: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Write([]byte(`<html><body>Grafana</body></html>`))
			},
			want:     "is --url the Prometheus API?",
			requests: 1,
		},
		{
			name: "slow server",
			handler: func(_ int, w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm() // a server notices a closed connection once the body is read
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			},
			timeout:  50 * time.Millisecond,
			want:     "did not answer within 50ms (3 attempts); a longer --query-timeout or a shorter --window may help",
			requests: 3,
		},
		{
			name: "401",
			handler: func(_ int, w http.ResponseWriter, r *http.Request) {
				// A careless proxy that quotes the credentials it refused.
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte("bad credentials: " + r.Header.Get("Authorization") + " for org " + r.Header.Get("X-Scope-OrgID")))
			},
			want:     "answered HTTP 401 Unauthorized: it needs credentials, or refused the ones given",
			requests: 1,
		},
		{
			name: "bad query",
			handler: func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"1:10: parse error: unexpected identifier"}`))
			},
			want:     "rejected the query count(last_over_time(http_request_duration_seconds_bucket[1h])): 1:10: parse error: unexpected identifier",
			requests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			srv := f.server(t, tt.handler)
			sl := &noSleep{}
			o := options(srv.URL, sl)
			t.Setenv("TT_TEST_PASS", secretPass)
			o.BasicUser, o.BasicPasswordEnv = "admin", "TT_TEST_PASS"
			o.Headers = []string{"X-Scope-OrgID: " + secretOrg}
			if tt.timeout > 0 {
				o.QueryTimeout = tt.timeout
			}
			_, err := Fetch(context.Background(), o)
			require.Error(t, err)
			msg := err.Error()
			assert.Contains(t, msg, tt.want)
			assert.NotContains(t, msg, "\n", "one line")
			for _, s := range []string{secretPass, secretToken, secretOrg, "admin:"} {
				assert.NotContains(t, msg, s, "a credential in the error")
			}
			assert.Equal(t, tt.requests, f.count())
		})
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	sl := &noSleep{}
	_, err := Fetch(context.Background(), options(url, sl))
	require.Error(t, err)
	assert.Equal(t, "cannot reach Prometheus at "+url+": connection refused (3 attempts)", err.Error())
	// Full jitter with the random factor at its top: base, 2 x base.
	assert.Equal(t, []time.Duration{DefaultBackoffBase, 2 * DefaultBackoffBase}, sl.waits)
}

func TestBackoffCappedAndRetryAfter(t *testing.T) {
	tr := &retryTransport{base: 250 * time.Millisecond, cap: time.Second, jitter: func() float64 { return 1 }}
	var got []time.Duration
	for n := range 5 {
		got = append(got, tr.backoff(n))
	}
	assert.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, time.Second}, got)
	tr.jitter = func() float64 { return 0.5 }
	assert.Equal(t, 500*time.Millisecond, tr.backoff(3), "uniform below the capped ceiling")

	f := &fake{}
	srv := f.server(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(emptyVector))
	})
	sl := &noSleep{}
	o := options(srv.URL, sl)
	o.BackoffCap = 10 * time.Second
	_, err := Fetch(context.Background(), o)
	require.Error(t, err, "the fake has no series")
	assert.Contains(t, err.Error(), "no series of http_request_duration_seconds")
	require.NotEmpty(t, sl.waits)
	assert.Equal(t, 2*time.Second, sl.waits[0], "Retry-After is a lower bound on the wait")
}

func TestCredentialsSent(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(secretToken+"\n"), 0o600))
	var calls atomic.Int32
	tests := []struct {
		name  string
		setup func(o *Options)
		want  string
	}{
		{"bearer token file", func(o *Options) { o.BearerTokenFile = tokenFile }, "Bearer " + secretToken},
		{"bearer token env", func(o *Options) {
			t.Setenv("TT_TEST_TOKEN", secretToken)
			o.BearerTokenEnv = "TT_TEST_TOKEN"
		}, "Bearer " + secretToken},
		{"basic auth from env", func(o *Options) {
			t.Setenv("TT_TEST_PASS", secretPass)
			o.BasicUser, o.BasicPasswordEnv = "admin", "TT_TEST_PASS"
		}, "Basic YWRtaW46aHVudGVyMi1wYXNzd29yZA=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			srv := f.server(t, func(int, http.ResponseWriter, *http.Request) { calls.Add(1) })
			o := options(srv.URL, &noSleep{})
			o.Headers = []string{"X-Scope-OrgID: " + secretOrg}
			tt.setup(&o)
			_, err := Fetch(context.Background(), o)
			require.Error(t, err, "an empty answer is no Prometheus JSON")
			require.NotEmpty(t, f.auth)
			assert.Equal(t, tt.want, f.auth[0])
			assert.Equal(t, secretOrg, f.orgs[0])
			assert.NotContains(t, err.Error(), secretToken)
			assert.NotContains(t, err.Error(), secretPass)
		})
	}
}

func TestConnectionErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(o *Options)
		want  string
	}{
		{"no url", func(o *Options) { o.URL = "" }, "--url is required"},
		{"not http", func(o *Options) { o.URL = "ftp://admin:" + secretPass + "@host" }, `--url "ftp://***@host" is not an http:// or https:// address`},
		{"missing token file", func(o *Options) { o.BearerTokenFile = "/tmp/does-not-exist-tt" }, "--bearer-token-file: cannot read /tmp/does-not-exist-tt: no such file or directory"},
		// A token given in place of a path or a variable name is not shown.
		{"token as file", func(o *Options) { o.BearerTokenFile = "glsa_AbCdEf0123456789xyzXYZ_0a1b2c3d" }, "--bearer-token-file: cannot read the file it names: no such file or directory (the name is not shown"},
		{"token with a slash as file", func(o *Options) { o.BearerTokenFile = "ab/Cd+Ef0123456789xyzXYZ==" }, "--bearer-token-file: cannot read the file it names"},
		{"unset env", func(o *Options) { o.BearerTokenEnv = "glsa_AbCdEf0123456789xyzXYZ_0a1b2c3d" }, "--bearer-token-env: the environment variable it names is not set or is empty"},
		{"bad header", func(o *Options) { o.Headers = []string{"X-Scope-OrgID " + secretOrg} }, `-H number 1 (of 1) has no colon (it starts with X-Scope-OrgID): write Name: value`},
		{"password without user", func(o *Options) {
			t.Setenv("TT_TEST_PASS", secretPass)
			o.BasicPasswordEnv = "TT_TEST_PASS"
		}, "a basic-auth password needs a user"},
		{"no metric", func(o *Options) { o.Metric = "" }, "--metric is required"},
		{"selector", func(o *Options) { o.Selector = `job="api"` }, "must be label matchers in braces"},
		{"by le", func(o *Options) { o.By = []string{"le"} }, "--by le: cannot group by the histogram's own label"},
		{"step", func(o *Options) { o.Step = 2 * time.Hour }, "--step 2h is longer than --window 1h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options("http://127.0.0.1:9", &noSleep{})
			tt.setup(&o)
			_, err := Fetch(context.Background(), o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			for _, s := range []string{secretPass, secretToken, secretOrg, "0123456789xyzXYZ"} {
				assert.NotContains(t, err.Error(), s, "a credential in the error")
			}
		})
	}
}

// TestCheck: Check refuses what shows without a request or a secret read,
// every problem at once, and leaves the secrets to Fetch: a token file
// that does not exist passes Check and fails the Fetch.
func TestCheck(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "token")
	tests := []struct {
		name  string
		setup func(o *Options)
		want  []string // the lines of the error; none: no error
	}{
		{"valid", func(*Options) {}, nil},
		{"no scheme", func(o *Options) { o.URL = "localhost:9090" }, []string{`--url "localhost:9090" is not an http:// or https:// address`}},
		{"no host", func(o *Options) { o.URL = "http:///api" }, []string{`--url "http:///api" is not an http:// or https:// address`}},
		{"secret files are not read", func(o *Options) { o.BearerTokenFile = missing }, nil},
		{"unset variables are not read", func(o *Options) { o.BearerTokenEnv = "TT_CHECK_UNSET" }, nil},
		{"every problem at once", func(o *Options) {
			o.URL = "http://admin@127.0.0.1:9"
			o.BearerTokenFile, o.BearerTokenEnv = missing, "TT_CHECK_UNSET"
			o.BasicPasswordFile, o.BasicPasswordEnv = missing, secretPass+"!"
			o.Headers = []string{"X-Scope-OrgID " + secretOrg}
			o.Metric = "bad-name"
			o.By = []string{"le"}
			o.Step = 2 * time.Hour
		}, []string{
			"--basic-auth-password-file and --basic-auth-password-env exclude each other",
			"--bearer-token-file and --bearer-token-env exclude each other",
			"choose one of bearer token and basic auth",
			"--basic-auth-password-env takes the name of an environment variable, such as PROM_TOKEN; what it was given is not one (the secret itself?), so it is not shown",
			"-H number 1 (of 1) has no colon (it starts with X-Scope-OrgID): write Name: value",
			`--metric "bad-name" is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)`,
			"--by le: cannot group by the histogram's own label",
			"--step 2h is longer than --window 1h",
		}},
		{"a bad URL does not hide the other problems", func(o *Options) {
			o.URL = "localhost:9090"
			o.Headers = []string{"Host: " + secretOrg}
		}, []string{`--url "localhost:9090" is not an http:// or https:// address`, "-H Host: the host comes from --url"}},
		{"a password without a user", func(o *Options) { o.BasicPasswordFile = missing }, []string{"a basic-auth password needs a user: --basic-auth-user"}},
		{"-H Authorization beside a token", func(o *Options) {
			o.BearerTokenEnv = "TT_CHECK_UNSET"
			o.Headers = []string{"Authorization: Bearer " + secretToken}
		}, []string{"-H Authorization and --bearer-token-env both set the Authorization header: give one of them",
			"-H Authorization carries a credential, which the process list shows to every user of this machine: give a bearer token with --bearer-token-file or --bearer-token-env, basic auth with --basic-auth-user and --basic-auth-password-file or --basic-auth-password-env, or any header from a file with -H @FILE (lines of Name: value)"}},
		// Issue 30, item 9: credentials on the command line, where the
		// process list shows them, are refused in every form, each with
		// the forms that keep it out; the value is never named.
		{"a password in --url", func(o *Options) { o.URL = "http://admin:" + secretPass + "@127.0.0.1:9" }, []string{
			"--url holds a password, which the process list shows to every user of this machine: give the user with --basic-auth-user and the password with --basic-auth-password-file or --basic-auth-password-env"}},
		{"a credential in --url's query", func(o *Options) {
			o.URL = "http://127.0.0.1:9/?x=1&api_key=" + secretToken + "&access%5Ftoken=" + secretOrg
		}, []string{
			"--url's query holds a credential under api_key, which the process list shows to every user of this machine: send it in a header from a file (-H @FILE) if the server takes one, or use --bearer-token-file, --bearer-token-env or basic auth (--basic-auth-user with --basic-auth-password-file or --basic-auth-password-env)",
			"--url's query holds a credential under access_token, which the process list shows to every user of this machine: send it in a header from a file (-H @FILE) if the server takes one, or use --bearer-token-file, --bearer-token-env or basic auth (--basic-auth-user with --basic-auth-password-file or --basic-auth-password-env)"}},
		{"credential headers", func(o *Options) {
			o.Headers = []string{"X-Scope-OrgID: team-a", "Cookie: session=" + secretToken, "X-Api-Key: " + secretOrg, "proxy-authorization: Basic " + secretPass}
		}, []string{
			"-H Cookie carries a credential, which the process list shows to every user of this machine: give a bearer token with --bearer-token-file or --bearer-token-env, basic auth with --basic-auth-user and --basic-auth-password-file or --basic-auth-password-env, or any header from a file with -H @FILE (lines of Name: value)",
			"-H X-Api-Key carries a credential, which the process list shows to every user of this machine: give a bearer token with --bearer-token-file or --bearer-token-env, basic auth with --basic-auth-user and --basic-auth-password-file or --basic-auth-password-env, or any header from a file with -H @FILE (lines of Name: value)",
			"-H proxy-authorization carries a credential, which the process list shows to every user of this machine: give a bearer token with --bearer-token-file or --bearer-token-env, basic auth with --basic-auth-user and --basic-auth-password-file or --basic-auth-password-env, or any header from a file with -H @FILE (lines of Name: value)"}},
		{"headers from a file are not read by Check", func(o *Options) { o.Headers = []string{"@" + missing} }, nil},
		{"-H @ without a file", func(o *Options) { o.Headers = []string{"@"} }, []string{"-H number 1 (of 1): -H @FILE names no file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options("http://127.0.0.1:9", &noSleep{})
			tt.setup(&o)
			err := o.Check()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, strings.Split(err.Error(), "\n"))
			for _, s := range []string{secretPass, secretToken, secretOrg} {
				assert.NotContains(t, err.Error(), s, "a credential in the error")
			}
		})
	}
	o := options("http://127.0.0.1:9", &noSleep{})
	o.BearerTokenFile = missing
	_, err := Fetch(context.Background(), o)
	assert.ErrorContains(t, err, "--bearer-token-file: cannot read "+missing+": no such file or directory", "read as Fetch connects")
}
