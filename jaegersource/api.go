package jaegersource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// apiMessage is one of the errors Jaeger answers with: structuredError in
// cmd/query/app/http_handler.go, {"code":400,"msg":"..."}.
type apiMessage struct {
	Code    int    `json:"code"`
	Msg     string `json:"msg"`
	TraceID string `json:"traceID"`
}

func (m apiMessage) String() string {
	s := m.Msg
	if m.TraceID != "" {
		s = "trace " + m.TraceID + ": " + s
	}
	return s
}

// apiError is an answer that is an error: an error status, with Jaeger's
// messages when its body has them, or (notAPI) an answer that is not the
// query API's JSON.
type apiError struct {
	status int
	msgs   []apiMessage
	msg    string // the body's text when it holds no messages, or why it is not the API's JSON
	notAPI bool
}

func (e *apiError) Error() string {
	var parts []string
	for _, m := range e.msgs {
		parts = append(parts, m.String())
	}
	if len(parts) == 0 && e.msg != "" {
		parts = append(parts, e.msg)
	}
	return strings.Join(parts, "; ")
}

// failure reads an answer with an error status: Jaeger's error JSON, or
// else its body as text when short and not HTML.
// Secrets are replaced as it is read, before anything cuts it.
func failure(resp *http.Response, limit int64, sec *httpclient.Redactor) error {
	text, err := sec.ReadQuoted(resp.Body, limit)
	if err != nil {
		return err
	}
	body := []byte(text)
	e := &apiError{status: resp.StatusCode}
	var ans struct {
		Errors []apiMessage `json:"errors"`
	}
	if json.Unmarshal(body, &ans) == nil && len(ans.Errors) > 0 {
		e.msgs = ans.Errors
	} else if d := strings.TrimSpace(string(body)); d != "" && len(d) < 300 && !strings.HasPrefix(d, "<") {
		e.msg = d
	}
	return e
}

// decodeTraces reads a search's answer, {"data":[trace,...],"errors":...},
// handing each trace to each as it is decoded, and each error beside the
// data to note. An answer with errors and no data is an *apiError.
func decodeTraces(dec *json.Decoder, each func(json.RawMessage) error, note func(apiMessage)) error {
	notAPI := func(why string) error { return &apiError{msg: why, notAPI: true} }
	bad := func(err error) error {
		// Only what is not JSON is not the API's answer: a read that
		// failed (the cap, a timeout) keeps its error.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &te) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return notAPI(err.Error())
		}
		return err
	}
	if t, err := dec.Token(); err != nil {
		return bad(err)
	} else if t != json.Delim('{') {
		return notAPI("it is not a JSON object")
	}
	var errs []apiMessage
	data := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		switch t {
		case "data":
			t, err := dec.Token()
			if err != nil {
				return bad(err)
			}
			if t == nil {
				continue
			}
			if t != json.Delim('[') {
				return notAPI("its data is not an array")
			}
			data = true
			for dec.More() {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return bad(err)
				}
				if err := each(raw); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return bad(err)
			}
		case "errors":
			if err := dec.Decode(&errs); err != nil {
				return notAPI("its errors are not a list of {code, msg}")
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return bad(err)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	if !data && len(errs) > 0 {
		return &apiError{msgs: errs}
	}
	if !data {
		return notAPI("it has no data")
	}
	for _, e := range errs {
		note(e)
	}
	return nil
}

// explain turns a failed request for what into one line, with Jaeger's
// own messages where it sent them, never a secret.
func (s *session) explain(err error, what string) error {
	return s.c.Explain(err, what, httpclient.Advice{
		TooLarge: fmt.Sprintf("a smaller %s (traces per search) or a larger %s helps", usage.Limit, usage.MaxResponseBytes),
		Timeout:  fmt.Sprintf("a longer %s or a smaller %s may help", usage.QueryTimeout, usage.Limit),
		API: func(err error, o httpclient.Outcome) (string, bool) {
			var e *apiError
			if !errors.As(err, &e) {
				return "", false
			}
			return s.explainAPI(e, o, what), true
		},
	})
}

// jaegerBasePathFlag is the flag of Jaeger's own query service that serves
// its API under a prefix: Jaeger's, not an option of tunetimeout.
const jaegerBasePathFlag = "--query.base-path"

func (s *session) explainAPI(e *apiError, o httpclient.Outcome, what string) string {
	at := "Jaeger at " + s.c.Display
	text := e.Error()
	status := ""
	if e.status != 0 {
		status = fmt.Sprintf("HTTP %d %s", e.status, http.StatusText(e.status))
	} else if o.Status/100 != 2 && o.Status != 0 {
		status = fmt.Sprintf("HTTP %d %s", o.Status, http.StatusText(o.Status))
	}
	switch {
	case e.status == http.StatusUnauthorized || e.status == http.StatusForbidden:
		why := "the credentials were refused"
		if e.status == http.StatusUnauthorized {
			why = "it needs credentials, or refused the ones given"
		}
		msg := fmt.Sprintf("%s answered %s: %s (%s, %s, %s)", at, status, why, usage.BearerTokenFile, usage.BearerTokenEnv, usage.BasicAuthUser)
		if text != "" {
			msg += ": " + text
		}
		return msg
	case e.notAPI:
		return fmt.Sprintf("%s sent an answer to %s that is not the Jaeger query API's JSON (%s): is %s the query service (its UI's address, port 16686)?", at, what, text, usage.URL)
	case e.status == http.StatusNotFound:
		return fmt.Sprintf("%s answered %s to %s: is %s the query service (its UI's address, port 16686), with its %s if it has one?", at, status, what, usage.URL, jaegerBasePathFlag)
	case status == "":
		return fmt.Sprintf("%s answered %s with errors: %s", at, what, text)
	case text == "":
		return fmt.Sprintf("%s answered %s to %s", at, status, what)
	}
	return fmt.Sprintf("%s answered %s to %s: %s", at, status, what, text)
}

// closest is the name of names nearest to want in spelling (case
// ignored), "" when none is near: at most a third of its letters differ.
func closest(want string, names []string) string {
	best, bestD := "", len(want)/3+1
	w := strings.ToLower(want)
	for _, n := range names {
		l := strings.ToLower(n)
		d := levenshtein(w, l)
		if strings.Contains(l, w) || strings.Contains(w, l) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
