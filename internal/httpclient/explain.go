package httpclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Advice is what a source adds to Explain: its own hints and the errors of
// its API.
type Advice struct {
	// TooLarge follows the --max-response-bytes cap: "a shorter --window
	// ... helps".
	TooLarge string
	// Timeout follows an attempt's timeout: "a longer --query-timeout ...
	// may help".
	Timeout string
	// API explains an error of the server's API, or says it is not one.
	// Its message is followed by the attempts.
	API func(err error, o Outcome) (string, bool)
}

// Explain turns a failed request for what (a query, a page) into one
// line for people: what went wrong, with the server's own text where the
// source's API explains it, never a secret.
func (c *Client) Explain(err error, what string, a Advice) error {
	o := c.LastOutcome()
	tries := ""
	if o.Attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", o.Attempts)
	}
	var msg string
	var netErr *net.OpError
	var big *TooLargeError
	var redir *RedirectError
	apiMsg, isAPI := "", false
	if a.API != nil {
		apiMsg, isAPI = a.API(err, o)
	}
	switch {
	case errors.Is(err, context.Canceled):
		msg = "interrupted"
	case errors.As(err, &redir):
		msg = fmt.Sprintf("%s at %s redirected to %s, which tunetimeout does not follow: it sends the credentials, the -H headers and %s's query only to %s's host (and not from https to http); if %s is the server to query, give its address as %s",
			c.Server, c.Display, redir.To, usage.URL, usage.URL, redir.To, usage.URL)
	case errors.As(err, &big):
		msg = fmt.Sprintf("%s at %s answered %s with more than %s, the %s cap; %s",
			c.Server, c.Display, what, human.Bytes(big.Limit), usage.MaxResponseBytes, a.TooLarge)
	case o.TimedOut:
		msg = fmt.Sprintf("%s at %s did not answer within %v%s; %s", c.Server, c.Display, c.PerTry(), tries, a.Timeout)
	case isAPI:
		msg = apiMsg + tries
	case errors.As(err, &netErr):
		msg = fmt.Sprintf("cannot reach %s at %s: %s%s", c.Server, c.Display, NetReason(netErr), tries)
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("%s at %s did not answer in time%s", c.Server, c.Display, tries)
	default:
		why := err
		var ue *url.Error
		if errors.As(err, &ue) {
			why = ue.Err // without the URL: it has the query and --url's own query
		}
		msg = fmt.Sprintf("querying %s at %s: %v%s", c.Server, c.Display, why, tries)
	}
	return &Error{msg: c.Secrets.Clean(OneLine(msg)), err: err}
}

// NetReason is why a connection failed, without the addresses.
func NetReason(e *net.OpError) string {
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

// OneLine folds s's white space, line breaks included, into single spaces.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Error is a failed request, explained in one line.
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }

// Unwrap is deliberately absent from the chain's message: the wrapped error
// may quote a URL or a body; Unwrap lets callers test for context errors.
func (e *Error) Unwrap() error { return e.err }
