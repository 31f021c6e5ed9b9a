package sqlsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// ClickHouse reaches a ClickHouse server's HTTP interface (port 8123): a
// query is a POST of its text (a SELECT, so retrying it is safe; in the
// body because a URL holds at most 16 KiB there, less than a query of
// routes and --max-groups), whose answer comes as CSVWithNames, the
// format the buckets format reads. No driver is needed.
type ClickHouse struct {
	Connection httpclient.Options
	Database   string // "" = the user's default
	// Note, when not nil, is told what the report should say of how the
	// queries ran (a limit that could not be set).
	Note func(string)
}

func (ch ClickHouse) connection() httpclient.Options {
	c := ch.Connection
	c.Server, c.ExampleURL, c.ExampleEnv = "ClickHouse", "http://localhost:8123", "CLICKHOUSE_PASSWORD"
	return c
}

// Check reports what is wrong with the connection before anything is sent.
func (ch ClickHouse) Check() error { return ch.connection().Check() }

// Fetch runs q (a query of Build or BuildArrivals, clickhouse dialect) and
// writes its answer, CSV with its header, to w, under the connection's
// response cap. The server is asked to finish the query before it answers
// (wait_end_of_query), so that an error is an error status, not a cut-off
// answer; its message is shown as it gave it, without secrets.
func (ch ClickHouse) Fetch(ctx context.Context, q string, w io.Writer) (display string, err error) {
	c, err := httpclient.New(ch.connection())
	if err != nil {
		return "", err
	}
	body := strings.TrimSuffix(strings.TrimSpace(q), ";") + " FORMAT CSVWithNames"
	args := url.Values{}
	args.Set("wait_end_of_query", "1")
	// The server gives up when the client does (an HTTP query goes on
	// after its client has gone, in ClickHouse 18): max_execution_time,
	// in whole seconds, is the per-attempt timeout rounded up.
	limit := strconv.FormatInt(int64(math.Ceil(c.PerTry().Seconds())), 10)
	args.Set("max_execution_time", limit)
	if ch.Database != "" {
		args.Set("database", ch.Database)
	}
	explain := func(err error) error {
		return c.Explain(err, "the query", httpclient.Advice{
			TooLarge: fmt.Sprintf("group by fewer columns (%s), or raise %s", usage.By, usage.MaxResponseBytes),
			Timeout:  fmt.Sprintf("a longer %s, or a shorter window (%s, %s), may help", usage.QueryTimeout, usage.From, usage.To),
			API: func(err error, _ httpclient.Outcome) (string, bool) {
				var ae *clickHouseError
				if errors.As(err, &ae) {
					return fmt.Sprintf("ClickHouse at %s refused the query (HTTP %d): %s", c.Display, ae.status, ae.msg), true
				}
				return "", false
			},
		})
	}
	for {
		err := ch.send(ctx, c, args, body, w)
		var ae *clickHouseError
		if errors.As(err, &ae) && ae.code == clickHouseReadonly && args.Has("max_execution_time") && strings.Contains(ae.msg, "max_execution_time") {
			// A readonly=1 profile, the usual one for reading, may not
			// set it: the query is sent as it is, bounded by the
			// profile's own limits; the client still stops waiting.
			args.Del("max_execution_time")
			if ch.Note != nil {
				ch.Note(fmt.Sprintf("ClickHouse's profile for this user is read-only, so the queries could not carry max_execution_time=%s: one slower than %s goes on running on the server until the profile's own max_execution_time.", limit, usage.QueryTimeout))
			}
			continue
		}
		if err != nil {
			return c.Display, explain(err)
		}
		return c.Display, nil
	}
}

// clickHouseReadonly is ClickHouse's error code for a setting a
// readonly profile may not change.
const clickHouseReadonly = 164

// send posts one query and copies its answer to w, under the cap.
func (ch ClickHouse) send(ctx context.Context, c *httpclient.Client, args url.Values, body string, w io.Writer) error {
	u := *c.Endpoint
	qv := u.Query()
	for k, v := range args {
		qv[k] = v
	}
	u.RawQuery = qv.Encode()
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Secrets replaced before clickHouseMessage cuts the text: an
		// error that quotes the Authorization header, cut in its middle,
		// left most of the base64 of user:password.
		text, _ := c.Secrets.ReadQuoted(resp.Body, 64<<10)
		code, msg := clickHouseMessage(text)
		return &clickHouseError{status: resp.StatusCode, code: code, msg: msg}
	}
	_, err = io.Copy(w, httpclient.Capped(resp.Body, c.Limit))
	return err
}

// clickHouseError is an error status ClickHouse answered, with its text.
type clickHouseError struct {
	status int
	code   int // ClickHouse's error code; 0 if none was given
	msg    string
}

func (e *clickHouseError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.msg) }

// clickHouseMessage is the first line of ClickHouse's error text, without
// its e.what() tail: "Code: 60, e.displayText() = DB::Exception: Table
// default.x doesn't exist." reads "Code 60: Table default.x doesn't exist."
func clickHouseMessage(body string) (code int, msg string) {
	line, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	line, _, _ = strings.Cut(line, ", e.what() = ")
	if rest, ok := strings.CutPrefix(line, "Code: "); ok {
		num, text, found := strings.Cut(rest, ", e.displayText() = ")
		if !found {
			num, text, found = strings.Cut(rest, ". ") // newer releases: "Code: 60. DB::Exception: ..."
		}
		if found {
			code, _ = strconv.Atoi(num)
			text = strings.TrimPrefix(text, "DB::Exception: ")
			line = "Code " + num + ": " + text
		}
	}
	if len(line) > 300 {
		line = line[:300] + "..."
	}
	if line == "" {
		line = "(no message)"
	}
	return code, line
}

// Display is the server's URL as Fetch returns it, without credentials:
// known before any query (a source's name).
func (ch ClickHouse) Display() string { return ch.connection().Display() }
