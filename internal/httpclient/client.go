// Package httpclient holds the rules every source that reads a server over
// HTTP follows (promsource, jaegersource): the connection options and their
// checks, credentials read from files or environment variables and never
// shown, a transport that retries with capped exponential backoff and full
// jitter, redirects followed only within the origin, a cap on the size of
// one answer, and one-line explanations of failed requests.
package httpclient

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
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Options is how to reach a server. The flags named in errors (--url,
// --bearer-token-file, -H, ...) are the ones every server command registers.
type Options struct {
	// Server names the server in messages ("Prometheus", "Jaeger");
	// ExampleURL is shown when --url is missing; ExampleEnv is the example
	// of an environment variable's name.
	Server, ExampleURL, ExampleEnv string

	URL string // http(s)://host:port[/prefix]; a password or a credential in its query is refused (commandLineSecrets)

	BearerTokenFile string // file holding a bearer token
	BearerTokenEnv  string // environment variable holding a bearer token
	BasicUser       string
	// The basic-auth password comes from a file or an environment variable,
	// never from the command line, where ps would show it.
	BasicPasswordFile string
	BasicPasswordEnv  string

	CAFile             string // PEM CA bundle to verify the server with
	InsecureSkipVerify bool
	// Headers are "Name: value", or "@FILE" for the headers of FILE, one
	// a line: the only form of a header that carries a credential
	// (commandLineSecrets). Their values are treated as credentials:
	// never shown, and redacted wherever a server quotes them.
	Headers []string

	Timeout     time.Duration // per attempt; 0 = DefaultTimeout
	Attempts    int           // tries per request, the first included; 0 = DefaultAttempts
	BackoffBase time.Duration // 0 = DefaultBackoffBase
	BackoffCap  time.Duration // 0 = DefaultBackoffCap

	// MaxResponseBytes caps the size of one answer, after decompression; 0
	// = DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// Transport, when set, is used instead of a new http.Transport (tests).
	Transport http.RoundTripper
	// Sleep and Jitter are replaced by tests; nil: real time, math/rand.
	Sleep  func(context.Context, time.Duration) error
	Jitter func() float64
}

// Defaults of Options.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultAttempts         = 3
	DefaultBackoffBase      = 250 * time.Millisecond
	DefaultBackoffCap       = 5 * time.Second
	DefaultMaxResponseBytes = 256 << 20
)

// Client is a connected server with what it needs to explain its errors.
type Client struct {
	// Endpoint is --url without its user and fragment and without a
	// trailing /, with its query's real values.
	Endpoint *url.URL
	HTTP     *http.Client
	Limit    int64     // bytes of one answer
	Display  string    // the URL without credentials, for messages and reports
	Secrets  *Redactor // every credential known
	Server   string    // Options.Server
	tr       *Transport
}

// Check reports every problem with o that shows without reading its
// secrets (files and environment variables) or sending anything: --url,
// the auth flags that exclude each other, the names of environment
// variables and the -H headers. Errors name flags, never secrets.
func (o Options) Check() error {
	var errs []error
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		errs = append(errs, usage.About(usage.URL, fmt.Errorf("%s is required: the address of %s, e.g. %s", usage.URL, o.Server, o.ExampleURL)))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, usage.About(usage.URL, fmt.Errorf("%s %q is not an http:// or https:// address", usage.URL, RedactURL(o.URL))))
	}
	if err != nil {
		u = &url.URL{} // the other flags are checked without its user
	}
	urlPass := false
	if u.User != nil {
		_, urlPass = u.User.Password()
	}
	user := o.BasicUser != "" || u.User != nil && u.User.Username() != ""
	if o.BasicPasswordFile != "" && o.BasicPasswordEnv != "" {
		errs = append(errs, fmt.Errorf("%s and %s exclude each other", usage.BasicAuthPasswordFile, usage.BasicAuthPasswordEnv))
	}
	if !user && (urlPass || o.BasicPasswordFile != "" || o.BasicPasswordEnv != "") {
		errs = append(errs, usage.About(usage.BasicAuthUser, fmt.Errorf("a basic-auth password needs a user: %s", usage.BasicAuthUser)))
	}
	token := o.BearerTokenFile != "" || o.BearerTokenEnv != ""
	if o.BearerTokenFile != "" && o.BearerTokenEnv != "" {
		errs = append(errs, fmt.Errorf("%s and %s exclude each other", usage.BearerTokenFile, usage.BearerTokenEnv))
	}
	if token && (user || urlPass) {
		errs = append(errs, errors.New("choose one of bearer token and basic auth"))
	}
	for _, e := range []struct {
		name string
		flag usage.Option
	}{{o.BasicPasswordEnv, usage.BasicAuthPasswordEnv}, {o.BearerTokenEnv, usage.BearerTokenEnv}} {
		if e.name != "" && !envName.MatchString(e.name) {
			// Likely the secret itself ($TOKEN for TOKEN): not shown.
			errs = append(errs, usage.About(e.flag, fmt.Errorf("%s takes the name of an environment variable, such as %s; what it was given is not one (the secret itself?), so it is not shown", e.flag, o.ExampleEnv)))
		}
	}
	if _, err := parseHeaders(o.Headers, o.authBy(u), &Redactor{}, true); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, commandLineSecrets(u, o.Headers))
	return errors.Join(errs...)
}

// commandLineSecrets is the one rule of every source on credentials given
// on the command line, where the process list (ps, /proc/PID/cmdline)
// shows them to every user of the machine, for as long as the command
// runs (watch: for days): refused, each with the file and environment
// forms that keep it out. A password in --url, a query value under a
// credential's key (?api_key=...), and a -H header that carries a
// credential (Authorization, Cookie, X-Api-Key, ...; -H @FILE reads
// headers from a file instead). The errors name the flag and the key or
// header, never the value.
func commandLineSecrets(u *url.URL, headers []string) error {
	var errs []error
	const seen = "which the process list shows to every user of this machine"
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			errs = append(errs, usage.About(usage.URL, fmt.Errorf("%s holds a password, %s: give the user with %s and the password with %s or %s", usage.URL, seen, usage.BasicAuthUser, usage.BasicAuthPasswordFile, usage.BasicAuthPasswordEnv)))
		}
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(p, "=")
		if v != "" && credentialKey.MatchString(k) {
			key, err := url.QueryUnescape(k)
			if err != nil || !validHeaderName(key) {
				key = "a key"
			}
			errs = append(errs, usage.About(usage.URL, fmt.Errorf("%s's query holds a credential under %s, %s: send it in a header from a file (-H @FILE) if the server takes one, or use %s, %s or basic auth (%s with %s or %s)", usage.URL, key, seen, usage.BearerTokenFile, usage.BearerTokenEnv, usage.BasicAuthUser, usage.BasicAuthPasswordFile, usage.BasicAuthPasswordEnv)))
		}
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if strings.HasPrefix(strings.TrimSpace(h), "@") || !ok || !validHeaderName(name) || strings.TrimSpace(value) == "" {
			continue // a file, or malformed (parseHeaders says so)
		}
		if credentialHeader(name) {
			errs = append(errs, fmt.Errorf("-H %s carries a credential, %s: give a bearer token with %s or %s, basic auth with %s and %s or %s, or any header from a file with -H @FILE (lines of Name: value)", name, seen, usage.BearerTokenFile, usage.BearerTokenEnv, usage.BasicAuthUser, usage.BasicAuthPasswordFile, usage.BasicAuthPasswordEnv))
		}
	}
	return errors.Join(errs...)
}

// credentialHeader says whether a header carries a credential.
func credentialHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Proxy-Authorization", "Cookie":
		return true
	}
	return credentialName.MatchString(name)
}

// credentialName matches header names whose values are credentials
// (X-Api-Key, X-Auth-Token, X-ClickHouse-Key...).
var credentialName = regexp.MustCompile(`(?i)auth|token|key|secret|pass|pwd|cookie|session|jwt|bearer|cred|signature`)

// authBy is the flag that sets the Authorization header, "" when none
// does; u is o.URL parsed.
func (o Options) authBy(u *url.URL) string {
	switch {
	case o.BearerTokenFile != "":
		return usage.BearerTokenFile.String()
	case o.BearerTokenEnv != "":
		return usage.BearerTokenEnv.String()
	case o.BasicUser != "":
		return usage.BasicAuthUser.String()
	case u.User != nil:
		return "the user:password in " + usage.URL.String()
	}
	return ""
}

// New checks o (Check), reads its secrets and builds the client. Errors
// name flags, never secrets.
func New(o Options) (*Client, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	u, err := url.Parse(o.URL) // checked
	if err != nil {
		return nil, err
	}
	authBy := o.authBy(u)
	sec := &Redactor{}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		sec.Add(pass)
		sec.Add(u.User.String())
		u.User = nil
	}
	redactQuery(sec, u.RawQuery)
	u.Fragment, u.RawFragment = "", "" // never sent
	display := DisplayURL(u)
	user, pass, token, err := o.credentials(sec, user, pass)
	if err != nil {
		return nil, err
	}
	hs, err := headerFiles(o.Headers)
	if err != nil {
		return nil, err
	}
	headers, err := parseHeaders(hs, authBy, sec, false)
	if err != nil {
		return nil, err
	}
	base, err := o.baseTransport()
	if err != nil {
		return nil, err
	}
	tr := newTransport(o, base, user, pass, token, headers)
	endpoint := *u // with the query's real values
	endpoint.Path = strings.TrimRight(endpoint.Path, "/")
	endpoint.RawPath = strings.TrimRight(endpoint.RawPath, "/")
	limit := o.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	hc := &http.Client{Transport: tr, CheckRedirect: followWithin(u)}
	return &Client{Endpoint: &endpoint, HTTP: hc, Limit: limit,
		Display: display, Secrets: sec, Server: o.Server, tr: tr}, nil
}

// redactQuery adds to sec the values of the query that may be
// credentials too (?api_key=...): sent, but shown as *** in the URL, and
// redacted from what the server says when they look like one (a
// credential's key, or a long value): a short ?partial_response=true must
// not blank out every "true".
func redactQuery(sec *Redactor, rawQuery string) {
	for _, p := range strings.FieldsFunc(rawQuery, func(r rune) bool { return r == '&' }) {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			v = k
		}
		if ok && !credentialKey.MatchString(k) && len(v) < 16 {
			continue
		}
		sec.Add(v)
		if d, err := url.QueryUnescape(v); err == nil {
			sec.Add(d)
		}
	}
}

// credentials are the basic auth user and password (the URL's, user and
// pass, unless the options name others) and the bearer token, read from
// their files or environment variables and added to sec.
func (o Options) credentials(sec *Redactor, user, pass string) (string, string, string, error) {
	if o.BasicUser != "" {
		user = o.BasicUser
	}
	// Check has refused two sources of one secret, a password without a
	// user and a token beside basic auth.
	var err error
	switch {
	case o.BasicPasswordFile != "":
		if pass, err = readSecret(o.BasicPasswordFile, usage.BasicAuthPasswordFile); err != nil {
			return "", "", "", err
		}
	case o.BasicPasswordEnv != "":
		if pass, err = envSecret(o.BasicPasswordEnv, usage.BasicAuthPasswordEnv); err != nil {
			return "", "", "", err
		}
	}
	sec.Add(pass)
	if user != "" {
		// What a server quoting the Authorization header would show.
		sec.Add(user + ":" + pass)
		sec.Add(base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)))
	}
	var token string
	switch {
	case o.BearerTokenFile != "":
		if token, err = readSecret(o.BearerTokenFile, usage.BearerTokenFile); err != nil {
			return "", "", "", err
		}
	case o.BearerTokenEnv != "":
		if token, err = envSecret(o.BearerTokenEnv, usage.BearerTokenEnv); err != nil {
			return "", "", "", err
		}
	}
	sec.Add(token)
	return user, pass, token, nil
}

// baseTransport is o.Transport, or a clone of http.DefaultTransport
// verifying the server with --ca-file (or not, --insecure-skip-verify).
func (o Options) baseTransport() (http.RoundTripper, error) {
	if o.Transport != nil {
		return o.Transport, nil
	}
	tlsConf := &tls.Config{InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // the user asked for it
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, usage.About(usage.CAFile, fmt.Errorf("%s: %w", usage.CAFile, err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usage.About(usage.CAFile, fmt.Errorf("%s %s holds no PEM certificate", usage.CAFile, o.CAFile))
		}
		tlsConf.RootCAs = pool
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsConf
	return t, nil
}

// newTransport is the Transport over base that sends the credentials and
// headers, with o's retries, per-try timeout and backoff (the defaults
// where o has none).
func newTransport(o Options, base http.RoundTripper, user, pass, token string, headers http.Header) *Transport {
	tr := &Transport{
		next:     base,
		user:     user,
		pass:     pass,
		token:    token,
		headers:  headers,
		attempts: o.Attempts,
		perTry:   o.Timeout,
		base:     o.BackoffBase,
		cap:      o.BackoffCap,
		sleep:    o.Sleep,
		jitter:   o.Jitter,
	}
	if tr.attempts <= 0 {
		tr.attempts = DefaultAttempts
	}
	if tr.perTry <= 0 {
		tr.perTry = DefaultTimeout
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
	return tr
}

// PerTry is the timeout of one attempt.
func (c *Client) PerTry() time.Duration { return c.tr.perTry }

// LastOutcome is what the latest request ended with.
func (c *Client) LastOutcome() Outcome { return c.tr.lastOutcome() }

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
			return &RedirectError{To: req.URL.Scheme + "://" + req.URL.Host}
		}
		return nil
	}
}

// RedirectError is a redirect that was not followed.
type RedirectError struct{ To string } // scheme://host[:port]

func (e *RedirectError) Error() string { return "a redirect to " + e.To }

func readSecret(path string, flag usage.Option) (string, error) {
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
// Check has found well formed).
func envSecret(name string, flag usage.Option) (string, error) {
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

// headerFiles replaces each -H @FILE by the headers of FILE, one a line
// ("Name: value"; blank lines and lines starting with # are skipped), as
// curl's -H @file reads them: a credential header that the process list
// does not show. The file is read as a secret: its name is shown only
// when it cannot be the secret itself (readSecret).
func headerFiles(hs []string) ([]string, error) {
	var out []string
	for _, h := range hs {
		path, ok := strings.CutPrefix(strings.TrimSpace(h), "@")
		if !ok {
			out = append(out, h)
			continue
		}
		text, err := readSecret(path, "-H @FILE")
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(text) {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	return out, nil
}

// parseHeaders reads the -H values and registers them with sec. It reports
// every problem, each naming the header by its name, or by its position
// when it has none: never by its value, which is often a credential.
// authBy is the flag that sets the Authorization header, if one does.
// With files, a -H @FILE is passed over (Check: it is read by New).
func parseHeaders(hs []string, authBy string, sec *Redactor, files bool) (http.Header, error) {
	headers := http.Header{}
	var errs []error
	for i, h := range hs {
		if p, ok := strings.CutPrefix(strings.TrimSpace(h), "@"); files && ok {
			if strings.TrimSpace(p) == "" {
				errs = append(errs, fmt.Errorf("-H number %d (of %d): -H @FILE names no file", i+1, len(hs)))
			}
			continue
		}
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
			errs = append(errs, fmt.Errorf("-H %s: the host comes from %s", name, usage.URL))
		case ownHeaders[key]:
			errs = append(errs, fmt.Errorf("-H %s: tunetimeout sets this header itself", name))
		default:
			headers.Add(key, value)
			sec.AddCredential(value)
		}
	}
	return headers, errors.Join(errs...)
}

// ownHeaders are set by tunetimeout or Go's transport; a -H one would
// break the request (Accept-Encoding turns off the transport's gzip
// decoding, Content-Type a form-encoded POST).
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

// DisplayURL writes u for messages and reports: without its user info,
// and with the values of its query (?api_key=...) as ***.
func DisplayURL(u *url.URL) string {
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

// RedactURL removes credentials from a URL that is not a valid --url, for
// its error: user info (as ***@) and the query's values.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err == nil && u.Opaque == "" {
		shown := DisplayURL(u)
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

// Redactor replaces known secrets in text that leaves the program.
type Redactor struct{ secrets []string } // longest first

// Add registers a secret. Very short values (a header "1") are not: they
// would blank out ordinary text.
func (r *Redactor) Add(s string) {
	if len(s) < 4 || slices.Contains(r.secrets, s) {
		return
	}
	// Longest first: "Bearer xyz" before xyz leaves no part of either.
	i, _ := slices.BinarySearchFunc(r.secrets, s, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	r.secrets = slices.Insert(r.secrets, i, s)
}

// AddCredential adds a header value, and when it is "Scheme credentials"
// (Bearer xyz, Basic dXNlcjpwYXNz) the credentials, decoded too for Basic:
// a server may quote either.
func (r *Redactor) AddCredential(v string) {
	r.Add(v)
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok {
		return
	}
	cred = strings.TrimSpace(cred)
	r.Add(cred)
	if strings.EqualFold(scheme, "basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
			r.Add(string(b))
			if _, pass, ok := strings.Cut(string(b), ":"); ok {
				r.Add(pass)
			}
		}
	}
}

// Clean replaces every secret in s, as given or as a URL or JSON would
// quote it, by ***.
func (r *Redactor) Clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "***")
		for _, e := range []string{url.QueryEscape(sec), url.PathEscape(sec), jsonString(sec)} {
			if e != sec {
				s = strings.ReplaceAll(s, e, "***")
			}
		}
	}
	return s
}

// ReadQuoted reads at most limit bytes of rd, text a server sent that a
// message may quote (an error's body), with every secret replaced before
// anything cuts it: a secret cut in two is no longer found whole, and what
// is left of it would show. When rd holds more than limit bytes, what was
// read ends inside the answer, maybe inside a secret: CleanCut.
func (r *Redactor) ReadQuoted(rd io.Reader, limit int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) <= limit {
		return r.Clean(string(b)), nil
	}
	return r.CleanCut(string(b[:limit])), nil
}

// CleanCut is Clean for text cut at its end: the beginning of a secret
// (in any form Clean knows) at its end is replaced by *** too.
func (r *Redactor) CleanCut(s string) string {
	s = r.Clean(s)
	for _, sec := range r.secrets {
		for _, f := range []string{sec, url.QueryEscape(sec), url.PathEscape(sec), jsonString(sec)} {
			for n := min(len(f)-1, len(s)); n > 0; n-- {
				if strings.HasSuffix(s, f[:n]) {
					s = s[:len(s)-n] + "***"
					break
				}
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

// Display is o's URL as the client New builds shows it (Client.Display),
// known before any request: a source names itself with it from the start.
func (o Options) Display() string {
	u, err := url.Parse(o.URL)
	if err != nil {
		return RedactURL(o.URL)
	}
	return DisplayURL(u)
}
