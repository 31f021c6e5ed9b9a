package promsource

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// Connection is how to reach a Prometheus server (or Thanos, Mimir, Cortex,
// VictoriaMetrics: anything that speaks its HTTP API).
type Connection struct {
	URL string // http(s)://host:port[/prefix]; user:password@ in it is basic auth

	BearerTokenFile string // file holding a bearer token
	BearerTokenEnv  string // environment variable holding a bearer token
	BasicUser       string
	// The basic-auth password comes from a file or an environment variable,
	// never from the command line, where ps would show it.
	BasicPasswordFile string
	BasicPasswordEnv  string

	CAFile             string // PEM CA bundle to verify the server with
	InsecureSkipVerify bool
	// Headers are "Name: value", e.g. "X-Scope-OrgID: team-a". Their values
	// are treated as credentials: never shown, and redacted wherever a
	// server quotes them.
	Headers []string

	QueryTimeout time.Duration // per attempt; 0 = DefaultQueryTimeout
	Attempts     int           // tries per query, the first included; 0 = DefaultAttempts
	BackoffBase  time.Duration // 0 = DefaultBackoffBase
	BackoffCap   time.Duration // 0 = DefaultBackoffCap

	// MaxResponseBytes caps the size of one answer, after decompression; 0
	// = DefaultMaxResponseBytes. A query whose answer is larger fails.
	MaxResponseBytes int64

	// Transport, when set, is used instead of a new http.Transport (tests).
	Transport http.RoundTripper
	// sleep and jitter are replaced by tests; nil: real time, math/rand.
	sleep  func(context.Context, time.Duration) error
	jitter func() float64
}

// Defaults of a Connection.
const (
	DefaultQueryTimeout = 30 * time.Second
	DefaultAttempts     = 3
	DefaultBackoffBase  = 250 * time.Millisecond
	DefaultBackoffCap   = 5 * time.Second
)

// client is a connected API with what it needs to explain its errors.
type client struct {
	endpoint *url.URL // display parsed, without a trailing /
	http     *http.Client
	limit    int64  // bytes of one answer
	display  string // the URL without credentials
	secrets  *redactor
	tr       *retryTransport
}

// check reports every problem with c that shows without reading its
// secrets (files and environment variables) or sending anything: --url,
// the auth flags that exclude each other, the names of environment
// variables and the -H headers. Errors name flags, never secrets.
func (c Connection) check() error {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		errs = append(errs, errors.New("--url is required: the address of Prometheus, e.g. http://localhost:9090"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("--url %q is not an http:// or https:// address", redactURL(c.URL)))
	}
	if err != nil {
		u = &url.URL{} // the other flags are checked without its user
	}
	urlPass := false
	if u.User != nil {
		_, urlPass = u.User.Password()
	}
	user := c.BasicUser != "" || u.User != nil && u.User.Username() != ""
	if c.BasicPasswordFile != "" && c.BasicPasswordEnv != "" {
		errs = append(errs, errors.New("--basic-auth-password-file and --basic-auth-password-env exclude each other"))
	}
	if !user && (urlPass || c.BasicPasswordFile != "" || c.BasicPasswordEnv != "") {
		errs = append(errs, errors.New("a basic-auth password needs a user: --basic-auth-user"))
	}
	token := c.BearerTokenFile != "" || c.BearerTokenEnv != ""
	if c.BearerTokenFile != "" && c.BearerTokenEnv != "" {
		errs = append(errs, errors.New("--bearer-token-file and --bearer-token-env exclude each other"))
	}
	if token && (user || urlPass) {
		errs = append(errs, errors.New("choose one of bearer token and basic auth"))
	}
	for _, e := range []struct{ name, flag string }{{c.BasicPasswordEnv, "--basic-auth-password-env"}, {c.BearerTokenEnv, "--bearer-token-env"}} {
		if e.name != "" && !envName.MatchString(e.name) {
			// Likely the secret itself ($TOKEN for TOKEN): not shown.
			errs = append(errs, fmt.Errorf("%s takes the name of an environment variable, such as PROM_TOKEN; what it was given is not one (the secret itself?), so it is not shown", e.flag))
		}
	}
	if _, err := parseHeaders(c.Headers, c.authBy(u), &redactor{}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// authBy is the flag that sets the Authorization header, "" when none
// does; u is c.URL parsed.
func (c Connection) authBy(u *url.URL) string {
	switch {
	case c.BearerTokenFile != "":
		return "--bearer-token-file"
	case c.BearerTokenEnv != "":
		return "--bearer-token-env"
	case c.BasicUser != "":
		return "--basic-auth-user"
	case u.User != nil:
		return "the user:password in --url"
	}
	return ""
}

// connect checks c (check), reads its secrets and builds the client.
// Errors name flags, never secrets.
func connect(c Connection) (*client, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	u, err := url.Parse(c.URL) // checked
	if err != nil {
		return nil, err
	}
	authBy := c.authBy(u)
	sec := &redactor{}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		sec.add(pass)
		sec.add(u.User.String())
		u.User = nil
	}
	// The query's values may be credentials too (?api_key=...): sent, but
	// shown as *** in the URL, and redacted from what the server says when
	// they look like one (a credential's key, or a long value): a short
	// ?partial_response=true must not blank out every "true".
	for _, p := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' }) {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			v = k
		}
		if ok && !credentialKey.MatchString(k) && len(v) < 16 {
			continue
		}
		sec.add(v)
		if d, err := url.QueryUnescape(v); err == nil {
			sec.add(d)
		}
	}
	u.Fragment, u.RawFragment = "", "" // never sent
	display := displayURL(u)
	if c.BasicUser != "" {
		user = c.BasicUser
	}
	// check has refused two sources of one secret, a password without a
	// user and a token beside basic auth.
	switch {
	case c.BasicPasswordFile != "":
		if pass, err = readSecret(c.BasicPasswordFile, "--basic-auth-password-file"); err != nil {
			return nil, err
		}
	case c.BasicPasswordEnv != "":
		if pass, err = envSecret(c.BasicPasswordEnv, "--basic-auth-password-env"); err != nil {
			return nil, err
		}
	}
	sec.add(pass)
	if user != "" {
		// What a server quoting the Authorization header would show.
		sec.add(user + ":" + pass)
		sec.add(base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)))
	}
	var token string
	switch {
	case c.BearerTokenFile != "":
		if token, err = readSecret(c.BearerTokenFile, "--bearer-token-file"); err != nil {
			return nil, err
		}
	case c.BearerTokenEnv != "":
		if token, err = envSecret(c.BearerTokenEnv, "--bearer-token-env"); err != nil {
			return nil, err
		}
	}
	sec.add(token)
	headers, err := parseHeaders(c.Headers, authBy, sec)
	if err != nil {
		return nil, err
	}

	base := c.Transport
	if base == nil {
		tlsConf := &tls.Config{InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // the user asked for it
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--ca-file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", c.CAFile)
			}
			tlsConf.RootCAs = pool
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsConf
		base = t
	}
	tr := &retryTransport{
		next:     base,
		user:     user,
		pass:     pass,
		token:    token,
		headers:  headers,
		attempts: c.Attempts,
		perTry:   c.QueryTimeout,
		base:     c.BackoffBase,
		cap:      c.BackoffCap,
		sleep:    c.sleep,
		jitter:   c.jitter,
	}
	if tr.attempts <= 0 {
		tr.attempts = DefaultAttempts
	}
	if tr.perTry <= 0 {
		tr.perTry = DefaultQueryTimeout
	}
	if tr.base <= 0 {
		tr.base = DefaultBackoffBase
	}
	if tr.cap <= 0 {
		tr.cap = DefaultBackoffCap
	}
	if tr.sleep == nil {
		tr.sleep = sleepCtx
	}
	if tr.jitter == nil {
		tr.jitter = rand.Float64
	}
	endpoint := *u // with the query's real values
	endpoint.Path = strings.TrimRight(endpoint.Path, "/")
	endpoint.RawPath = strings.TrimRight(endpoint.RawPath, "/")
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	hc := &http.Client{Transport: tr, CheckRedirect: followWithin(u)}
	return &client{endpoint: &endpoint, http: hc, limit: limit,
		display: display, secrets: sec, tr: tr}, nil
}

// followWithin follows redirects, at most 10 as http.Client does, to
// origin's host or a subdomain of it (where http.Client would send an
// Authorization header), and not from https to http. A redirect elsewhere
// fails: every request carries the credentials, the -H headers and
// --url's query, in its form too.
func followWithin(origin *url.URL) func(*http.Request, []*http.Request) error {
	want := strings.ToLower(origin.Hostname())
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		host := strings.ToLower(req.URL.Hostname())
		same := host == want ||
			(!strings.ContainsAny(host, ":%") && net.ParseIP(want) == nil && strings.HasSuffix(host, "."+want))
		if !same || (origin.Scheme == "https" && req.URL.Scheme != "https") {
			return &redirectError{to: req.URL.Scheme + "://" + req.URL.Host}
		}
		return nil
	}
}

// redirectError is a redirect that was not followed.
type redirectError struct{ to string } // scheme://host[:port]

func (e *redirectError) Error() string { return "a redirect to " + e.to }

func readSecret(path, flag string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		why := err
		var pe *os.PathError
		if errors.As(err, &pe) {
			why = pe.Err
		}
		if !showablePath(path) {
			// Given the secret in place of a path ($TOKEN for a file)?
			return "", fmt.Errorf("%s: cannot read the file it names: %v (the name is not shown: with no existing directory in it, it may be the secret itself)", flag, why)
		}
		return "", fmt.Errorf("%s: cannot read %s: %v", flag, path, why)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", flag, path)
	}
	return s, nil
}

// envSecret reads the secret in the environment variable name (a name
// check has found well formed).
func envSecret(name, flag string) (string, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		// Not named: a token of letters, digits and _ (ghp_..., glsa_...)
		// looks like a variable name, and may be what was given.
		return "", fmt.Errorf("%s: the environment variable it names is not set or is empty", flag)
	}
	return s, nil
}

// showablePath says whether a path that cannot be read may be named in the
// error: when it exists, or has a directory part that exists. A secret
// given in place of a path has neither (a token may hold a /, but not a
// directory that exists).
func showablePath(path string) bool {
	if _, err := os.Lstat(path); err == nil {
		return true
	}
	dir := filepath.Dir(path)
	if !strings.ContainsRune(path, filepath.Separator) || dir == "." {
		return false
	}
	_, err := os.Stat(dir)
	return err == nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// credentialKey matches query keys whose values are credentials.
var credentialKey = regexp.MustCompile(`(?i)key|token|auth|secret|pass|pwd|sig|cred|session|jwt|bearer|account`)

// parseHeaders reads the -H values and registers them with sec. It reports
// every problem, each naming the header by its name, or by its position
// when it has none: never by its value, which is often a credential.
// authBy is the flag that sets the Authorization header, if one does.
func parseHeaders(hs []string, authBy string, sec *redactor) (http.Header, error) {
	headers := http.Header{}
	var errs []error
	for i, h := range hs {
		which := fmt.Sprintf("-H number %d (of %d)", i+1, len(hs))
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok {
			errs = append(errs, fmt.Errorf("%s has no colon%s: write Name: value", which, startsWith(h)))
			continue
		}
		if !validHeaderName(name) {
			// "Authorization Bearer a:b" has a colon, but what comes
			// before it holds part of the value.
			errs = append(errs, fmt.Errorf("%s has no header name before its first colon%s: write Name: value", which, startsWith(name)))
			continue
		}
		key := http.CanonicalHeaderKey(name)
		switch {
		case !validHeaderValue(value):
			errs = append(errs, fmt.Errorf("-H %s: its value holds a line break or another control character", name))
		case key == "Authorization" && authBy != "":
			errs = append(errs, fmt.Errorf("-H %s and %s both set the Authorization header: give one of them", name, authBy))
		case key == "Host":
			errs = append(errs, fmt.Errorf("-H %s: the host comes from --url", name))
		case ownHeaders[key]:
			errs = append(errs, fmt.Errorf("-H %s: tunetimeout sets this header itself", name))
		default:
			headers.Add(key, value)
			sec.addCredential(value)
		}
	}
	return headers, errors.Join(errs...)
}

// ownHeaders are set by tunetimeout or Go's transport; a -H one would
// break the request (Accept-Encoding turns off the transport's gzip
// decoding, Content-Type the form-encoded POST).
var ownHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Transfer-Encoding": true,
	"Accept-Encoding": true, "Connection": true,
}

// startsWith names the first word of a malformed -H when it is a header
// name, for "Authorization Bearer xyz" Authorization, followed by more
// text: a known name or one starting with X-, so never a word of the
// value, nor a value given alone.
func startsWith(s string) string {
	s = strings.TrimSpace(s)
	end := strings.IndexAny(s, " \t=")
	if end <= 0 || strings.TrimSpace(s[end+1:]) == "" {
		return ""
	}
	word := s[:end]
	key := http.CanonicalHeaderKey(word)
	if !hintNames[key] && !(strings.HasPrefix(key, "X-") && len(key) > 2 && validHeaderName(word)) {
		return ""
	}
	return " (it starts with " + word + ")"
}

// hintNames are headers people pass with -H, whose name may be shown.
var hintNames = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true,
	"Accept": true, "User-Agent": true, "Api-Key": true,
}

// validHeaderName says whether s is a token (RFC 9110 section 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue says whether s holds no control character but tabs
// (RFC 9110 section 5.5): a line break would end the header.
func validHeaderValue(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// displayURL writes u for messages and reports: without its user info, and
// with the values of its query (?api_key=...) as ***.
func displayURL(u *url.URL) string {
	v := *u
	v.User = nil
	v.Fragment, v.RawFragment = "", ""
	if v.RawQuery != "" {
		parts := strings.Split(v.RawQuery, "&")
		for i, p := range parts {
			if k, val, ok := strings.Cut(p, "="); ok && val != "" {
				parts[i] = k + "=***"
			} else if !ok && p != "" {
				parts[i] = "***" // a bare value, ?TOKEN
			}
		}
		v.RawQuery = strings.Join(parts, "&")
	}
	return v.String()
}

// redactURL removes credentials from a URL that is not a valid --url, for
// its error: user info (as ***@) and the query's values.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err == nil && u.Opaque == "" {
		shown := displayURL(u)
		if u.User == nil {
			return shown
		}
		scheme, rest, _ := strings.Cut(shown, "://")
		return scheme + "://***@" + rest
	}
	// Unparsable, or opaque (user:pass@host, without http://): what could
	// be user info goes, up to the last @, then the query.
	if i := strings.LastIndex(s, "@"); i >= 0 {
		start := 0
		if j := strings.Index(s, "://"); j >= 0 && j < i {
			start = j + 3
		} else if j := strings.Index(s, ":"); j >= 0 && j < i {
			start = j + 1
		}
		s = s[:start] + "***@" + s[i+1:]
	}
	if i := strings.Index(s, "?"); i >= 0 {
		s = s[:i] + "?***"
	}
	return s
}

// redactor replaces known secrets in text that leaves the program.
type redactor struct{ secrets []string } // longest first

func (r *redactor) add(s string) {
	// Very short values (a header "1") would blank out ordinary text.
	if len(s) < 4 || slices.Contains(r.secrets, s) {
		return
	}
	// Longest first: "Bearer xyz" before xyz leaves no part of either.
	i, _ := slices.BinarySearchFunc(r.secrets, s, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	r.secrets = slices.Insert(r.secrets, i, s)
}

// addCredential adds a header value, and when it is "Scheme credentials"
// (Bearer xyz, Basic dXNlcjpwYXNz) the credentials, decoded too for Basic:
// a server may quote either.
func (r *redactor) addCredential(v string) {
	r.add(v)
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok {
		return
	}
	cred = strings.TrimSpace(cred)
	r.add(cred)
	if strings.EqualFold(scheme, "basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
			r.add(string(b))
			if _, pass, ok := strings.Cut(string(b), ":"); ok {
				r.add(pass)
			}
		}
	}
}

func (r *redactor) clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "***")
		// As a URL or JSON would quote it.
		for _, e := range []string{url.QueryEscape(sec), url.PathEscape(sec), jsonString(sec)} {
			if e != sec {
				s = strings.ReplaceAll(s, e, "***")
			}
		}
	}
	return s
}

// jsonString is s as encoding/json writes it in a string, without quotes.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// retryTransport adds the credentials and headers to every request, gives
// each attempt its own timeout and retries failed ones with capped
// exponential backoff and full jitter: wait uniform(0, min(cap, base x 2^n))
// before retry n+1 (docs/method.md#backoff-with-jitter: the tool practises what it
// recommends). It retries connection failures, attempt timeouts, 429, 502,
// 503 and 504, honouring Retry-After as a lower bound; never 4xx otherwise
// (a wrong query or credentials fail the same way again) nor 500.
type retryTransport struct {
	next              http.RoundTripper
	user, pass, token string
	headers           http.Header
	attempts          int
	perTry            time.Duration
	base, cap         time.Duration
	sleep             func(context.Context, time.Duration) error
	jitter            func() float64

	mu   sync.Mutex
	last outcome // of the latest request, for error messages
}

// outcome is what the last request ended with.
type outcome struct {
	attempts int
	status   int  // 0: no HTTP answer
	timedOut bool // the last attempt hit its timeout
}

func (t *retryTransport) lastOutcome() outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var o outcome
	defer func() {
		t.mu.Lock()
		t.last = o
		t.mu.Unlock()
	}()
	for n := 0; ; n++ {
		o.attempts = n + 1
		actx, cancel := context.WithTimeout(ctx, t.perTry)
		r := req.Clone(actx)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				cancel()
				return nil, err
			}
			r.Body = body
		}
		for k, vs := range t.headers {
			r.Header[k] = vs
		}
		switch {
		case t.token != "":
			r.Header.Set("Authorization", "Bearer "+t.token)
		case t.user != "":
			r.SetBasicAuth(t.user, t.pass)
		}
		resp, err := t.next.RoundTrip(r)
		o.timedOut = err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		o.status = 0
		if resp != nil {
			o.status = resp.StatusCode
		}
		retry, after := t.retryable(ctx, resp, err)
		if !retry || n+1 >= t.attempts {
			if resp != nil {
				// The attempt's context must live until the body is read.
				resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
			} else {
				cancel()
			}
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		cancel()
		if err := t.sleep(ctx, max(t.backoff(n), after)); err != nil {
			return nil, err
		}
	}
}

// backoff is full jitter: uniform(0, min(cap, base x 2^n)).
func (t *retryTransport) backoff(n int) time.Duration {
	ceiling := t.cap
	if n < 30 {
		ceiling = min(t.cap, t.base<<n)
	}
	return time.Duration(t.jitter() * float64(ceiling))
}

// retryable says whether an attempt's failure may succeed later, and the
// server's Retry-After (capped) when it gave one.
func (t *retryTransport) retryable(ctx context.Context, resp *http.Response, err error) (bool, time.Duration) {
	if ctx.Err() != nil {
		return false, 0
	}
	if err != nil {
		return true, 0 // connection refused, reset, attempt timeout
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, min(retryAfter(resp.Header.Get("Retry-After")), t.cap)
	}
	return false, 0
}

// retryAfter reads Retry-After as seconds or an HTTP date; 0 when absent.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(time.Until(when), 0)
	}
	return 0
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// explain turns a failed query into one line for people: what went wrong,
// with Prometheus's own error text where it sent one, never a secret.
func (c *client) explain(err error, query string) error {
	o := c.tr.lastOutcome()
	tries := ""
	if o.attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", o.attempts)
	}
	var msg string
	var apiErr *v1.Error
	var netErr *net.OpError
	var big *tooLargeError
	var redir *redirectError
	switch {
	case errors.Is(err, context.Canceled):
		msg = "interrupted"
	case errors.As(err, &redir):
		msg = fmt.Sprintf("Prometheus at %s redirected to %s, which tunetimeout does not follow: it sends the credentials, the -H headers and --url's query only to --url's host (and not from https to http); if %s is the server to query, give its address as --url",
			c.display, redir.to, redir.to)
	case errors.As(err, &big):
		msg = fmt.Sprintf("Prometheus at %s answered %s with more than %s, the --max-response-bytes cap; a shorter --window, a coarser --step, a narrower --selector or a larger --max-response-bytes helps",
			c.display, query, human.Bytes(big.limit))
	case o.timedOut:
		msg = fmt.Sprintf("Prometheus at %s did not answer within %v%s; a longer --query-timeout or a shorter --window may help", c.display, c.tr.perTry, tries)
	case errors.As(err, &apiErr):
		msg = c.explainAPI(apiErr, o, query) + tries
	case errors.As(err, &netErr):
		msg = fmt.Sprintf("cannot reach Prometheus at %s: %s%s", c.display, netReason(netErr), tries)
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("Prometheus at %s did not answer in time%s", c.display, tries)
	default:
		why := err
		var ue *url.Error
		if errors.As(err, &ue) {
			why = ue.Err // without the URL: it has the query and --url's own query
		}
		msg = fmt.Sprintf("querying Prometheus at %s: %v%s", c.display, why, tries)
	}
	return &QueryError{msg: c.secrets.clean(oneLine(msg)), err: err}
}

func (c *client) explainAPI(e *v1.Error, o outcome, query string) string {
	status := ""
	if o.status != 0 {
		status = fmt.Sprintf("HTTP %d %s", o.status, http.StatusText(o.status))
	}
	// Prometheus's own error text: in Msg for 400/422, in the JSON body
	// (Detail) for other codes.
	text := e.Msg
	if e.Detail != "" {
		var body struct {
			Status    string `json:"status"`
			ErrorType string `json:"errorType"`
			Error     string `json:"error"`
		}
		if json.Unmarshal([]byte(e.Detail), &body) == nil && body.Error != "" {
			text = body.Error
		} else if d := strings.TrimSpace(e.Detail); d != "" && len(d) < 300 && !strings.HasPrefix(d, "<") {
			text = d
		} else {
			text = ""
		}
	}
	switch {
	case o.status == http.StatusUnauthorized || o.status == http.StatusForbidden:
		why := "the credentials were refused"
		if o.status == http.StatusUnauthorized {
			why = "it needs credentials, or refused the ones given"
		}
		s := fmt.Sprintf("Prometheus at %s answered %s: %s (--bearer-token-file, --bearer-token-env, --basic-auth-user)", c.display, status, why)
		if text != "" {
			s += ": " + text
		}
		return s
	case e.Type == v1.ErrBadResponse && (o.status == 0 || o.status/100 == 2):
		return fmt.Sprintf("Prometheus at %s sent an answer that is not the Prometheus API's JSON (%s): is --url the Prometheus API?", c.display, e.Msg)
	case e.Type == v1.ErrBadData || e.Type == v1.ErrExec:
		return fmt.Sprintf("Prometheus at %s rejected the query %s: %s", c.display, query, text)
	case status != "":
		if text == "" {
			return fmt.Sprintf("Prometheus at %s answered %s", c.display, status)
		}
		return fmt.Sprintf("Prometheus at %s answered %s: %s", c.display, status, text)
	}
	return fmt.Sprintf("Prometheus at %s: %s", c.display, text)
}

func netReason(e *net.OpError) string {
	var se *os.SyscallError
	if errors.As(e.Err, &se) {
		return se.Err.Error()
	}
	var dns *net.DNSError
	if errors.As(e.Err, &dns) {
		return "unknown host " + dns.Name
	}
	return e.Err.Error()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// QueryError is a failed query, explained in one line.
type QueryError struct {
	msg string
	err error
}

func (e *QueryError) Error() string { return e.msg }

// Unwrap is deliberately absent from the chain's message: the wrapped error
// may quote a URL or a body; Unwrap lets callers test for context errors.
func (e *QueryError) Unwrap() error { return e.err }
