package promsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Connection is how to reach a Prometheus server (or Thanos, Mimir, Cortex,
// VictoriaMetrics: anything that speaks its HTTP API).
type Connection struct {
	URL string // http(s)://host:port[/prefix]; a password or a credential in its query is refused

	BearerTokenFile string // file holding a bearer token
	BearerTokenEnv  string // environment variable holding a bearer token
	BasicUser       string
	// The basic-auth password comes from a file or an environment variable,
	// never from the command line, where ps would show it.
	BasicPasswordFile string
	BasicPasswordEnv  string

	CAFile             string // PEM CA bundle to verify the server with
	InsecureSkipVerify bool
	// Headers are "Name: value", e.g. "X-Scope-OrgID: team-a", or "@FILE"
	// for the headers of a file (those that carry credentials). Their values
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
	DefaultQueryTimeout = httpclient.DefaultTimeout
	DefaultAttempts     = httpclient.DefaultAttempts
	DefaultBackoffBase  = httpclient.DefaultBackoffBase
	DefaultBackoffCap   = httpclient.DefaultBackoffCap
)

// client is a connected API with what it needs to explain its errors; the
// rules of the connection (credentials, retries, redirects, the cap) are
// internal/httpclient's, shared with every server source.
type client struct {
	*httpclient.Client
	endpoint *url.URL // display parsed, without a trailing /
	http     *http.Client
	limit    int64  // bytes of one answer
	display  string // the URL without credentials
	secrets  redactor
}

// redactor is httpclient's, under the name promsource's code uses.
type redactor struct{ *httpclient.Redactor }

func (r redactor) clean(s string) string { return r.Clean(s) }

// options are c as httpclient's.
func (c Connection) options() httpclient.Options {
	return httpclient.Options{
		Server: "Prometheus", ExampleURL: "http://localhost:9090", ExampleEnv: "PROM_TOKEN",
		URL:             c.URL,
		BearerTokenFile: c.BearerTokenFile, BearerTokenEnv: c.BearerTokenEnv,
		BasicUser: c.BasicUser, BasicPasswordFile: c.BasicPasswordFile, BasicPasswordEnv: c.BasicPasswordEnv,
		CAFile: c.CAFile, InsecureSkipVerify: c.InsecureSkipVerify,
		Headers: c.Headers,
		Timeout: c.QueryTimeout, Attempts: c.Attempts, BackoffBase: c.BackoffBase, BackoffCap: c.BackoffCap,
		MaxResponseBytes: c.MaxResponseBytes,
		Transport:        c.Transport,
		Sleep:            c.sleep,
		Jitter:           c.jitter,
	}
}

// check reports every problem with c that shows without reading its
// secrets or sending anything (httpclient.Options.Check).
func (c Connection) check() error { return c.options().Check() }

// connect checks c (check), reads its secrets and builds the client.
// Errors name flags, never secrets.
func connect(c Connection) (*client, error) {
	hc, err := httpclient.New(c.options())
	if err != nil {
		return nil, err
	}
	return &client{Client: hc, endpoint: hc.Endpoint, http: hc.HTTP, limit: hc.Limit,
		display: hc.Display, secrets: redactor{hc.Secrets}}, nil
}

// retryTransport holds the backoff settings of httpclient's transport
// under the names of promsource's backoff test.
type retryTransport struct {
	base, cap time.Duration
	jitter    func() float64
}

// backoff is full jitter: uniform(0, min(cap, base x 2^n)).
func (t *retryTransport) backoff(n int) time.Duration {
	return httpclient.Backoff(t.base, t.cap, t.jitter(), n)
}

// explain turns a failed query into one line for people: what went wrong,
// with Prometheus's own error text where it sent one, never a secret.
func (c *client) explain(err error, query string) error {
	return c.Explain(err, query, httpclient.Advice{
		TooLarge: fmt.Sprintf("a shorter %s, a coarser %s, a narrower %s or a larger %s helps", usage.Window, usage.Step, usage.Selector, usage.MaxResponseBytes),
		Timeout:  fmt.Sprintf("a longer %s or a shorter %s may help", usage.QueryTimeout, usage.Window),
		API: func(err error, o httpclient.Outcome) (string, bool) {
			var apiErr *v1.Error
			if !errors.As(err, &apiErr) {
				return "", false
			}
			return c.explainAPI(apiErr, o, query), true
		},
	})
}

func (c *client) explainAPI(e *v1.Error, o httpclient.Outcome, query string) string {
	status := ""
	if o.Status != 0 {
		status = fmt.Sprintf("HTTP %d %s", o.Status, http.StatusText(o.Status))
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
	case o.Status == http.StatusUnauthorized || o.Status == http.StatusForbidden:
		why := "the credentials were refused"
		if o.Status == http.StatusUnauthorized {
			why = "it needs credentials, or refused the ones given"
		}
		s := fmt.Sprintf("Prometheus at %s answered %s: %s (%s, %s, %s)", c.display, status, why, usage.BearerTokenFile, usage.BearerTokenEnv, usage.BasicAuthUser)
		if text != "" {
			s += ": " + text
		}
		return s
	case e.Type == v1.ErrBadResponse && (o.Status == 0 || o.Status/100 == 2):
		return fmt.Sprintf("Prometheus at %s sent an answer that is not the Prometheus API's JSON (%s): is %s the Prometheus API?", c.display, e.Msg, usage.URL)
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

func oneLine(s string) string { return httpclient.OneLine(s) }

// QueryError is a failed query, explained in one line.
type QueryError = httpclient.Error

// Display is the server's URL as reports and messages show it, without
// credentials: known before any query (a source's name).
func (c Connection) Display() string { return c.options().Display() }
