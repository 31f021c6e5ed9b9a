package promsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
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
	Headers            []string // "Name: value", e.g. "X-Scope-OrgID: team-a"

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

// connect checks c and builds the client. Errors name flags, never secrets.
func connect(c Connection) (*client, error) {
	if c.URL == "" {
		return nil, errors.New("--url is required: the address of Prometheus, e.g. http://localhost:9090")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q is not an http:// or https:// address", redactURL(c.URL))
	}
	sec := &redactor{}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		sec.add(pass)
		sec.add(u.User.String())
		u.User = nil
	}
	display := u.String()
	if c.BasicUser != "" {
		user = c.BasicUser
	}
	switch {
	case c.BasicPasswordFile != "" && c.BasicPasswordEnv != "":
		return nil, errors.New("--basic-auth-password-file and --basic-auth-password-env exclude each other")
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
	if pass != "" && user == "" {
		return nil, errors.New("a basic-auth password needs a user: --basic-auth-user")
	}
	var token string
	switch {
	case c.BearerTokenFile != "" && c.BearerTokenEnv != "":
		return nil, errors.New("--bearer-token-file and --bearer-token-env exclude each other")
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
	if token != "" && user != "" {
		return nil, errors.New("choose one of bearer token and basic auth")
	}
	headers := http.Header{}
	for _, h := range c.Headers {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			// Say which header without its value: it may be a credential.
			return nil, fmt.Errorf("-H %q is not a header: write Name: value", strings.TrimSpace(name))
		}
		headers.Add(name, value)
		sec.add(value)
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
	endpoint, err := url.Parse(display)
	if err != nil {
		return nil, fmt.Errorf("--url %q: %v", display, sec.clean(err.Error()))
	}
	endpoint.Path = strings.TrimRight(endpoint.Path, "/")
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	return &client{endpoint: endpoint, http: &http.Client{Transport: tr}, limit: limit,
		display: display, secrets: sec, tr: tr}, nil
}

func readSecret(path, flag string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s: cannot read %s: %v", flag, path, pe.Err)
		}
		return "", fmt.Errorf("%s: cannot read %s", flag, path)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", flag, path)
	}
	return s, nil
}

func envSecret(name, flag string) (string, error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return "", fmt.Errorf("%s: the environment variable %s is not set or empty", flag, name)
	}
	return s, nil
}

// redactURL removes credentials from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "***@" + s[i+1:]
			}
		}
		return s
	}
	if u.User == nil {
		return u.String()
	}
	u.User = nil
	scheme, rest, _ := strings.Cut(u.String(), "://")
	return scheme + "://***@" + rest
}

// redactor replaces known secrets in text that leaves the program.
type redactor struct{ secrets []string }

func (r *redactor) add(s string) {
	// Very short values (a header "1") would blank out ordinary text.
	if len(s) >= 4 {
		r.secrets = append(r.secrets, s)
	}
}

func (r *redactor) clean(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "***")
		if e := url.QueryEscape(sec); e != sec {
			s = strings.ReplaceAll(s, e, "***")
		}
	}
	return s
}

// retryTransport adds the credentials and headers to every request, gives
// each attempt its own timeout and retries failed ones with capped
// exponential backoff and full jitter: wait uniform(0, min(cap, base x 2^n))
// before retry n+1 (DOMAIN.md section 3: the tool practises what it
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
	switch {
	case errors.Is(err, context.Canceled):
		msg = "interrupted"
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
		msg = fmt.Sprintf("querying Prometheus at %s: %v%s", c.display, err, tries)
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
