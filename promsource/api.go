package promsource

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
)

// The HTTP API is called the way client_golang's v1.API calls it (same
// paths, parameters, POST with a fallback to GET, errors as *v1.Error), but
// its answers are decoded as a stream, under a cap: client_golang reads a
// whole body into memory before it decodes it, without a bound.

// The endpoints the session reads.
const (
	epQuery       = "/api/v1/query"
	epQueryRange  = "/api/v1/query_range"
	epLabelValues = "/api/v1/label/:name/values"
	epLabels      = "/api/v1/labels"
)

// DefaultMaxResponseBytes caps the size of one answer (after
// decompression) when Connection.MaxResponseBytes is 0.
const DefaultMaxResponseBytes = httpclient.DefaultMaxResponseBytes

// maxErrorBody bounds what is read of an answer with an error status: its
// text only explains the error.
const maxErrorBody = 1 << 20

// ErrTooLarge is (wrapped in) the error of a query whose answer was larger
// than Connection.MaxResponseBytes.
var ErrTooLarge = httpclient.ErrTooLarge

// cappedReader reads up to limit bytes; reading more fails with an
// *httpclient.TooLargeError. An input of exactly limit bytes reads to
// io.EOF.
type cappedReader struct {
	r           io.Reader
	left, limit int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	return httpclient.ReadCapped(c.r, p, &c.left, c.limit)
}

// wrongType is an answer of another result type than the query's.
type wrongType struct{ got model.ValueType }

func (e *wrongType) Error() string { return "the answer is a " + e.got.String() }

// query runs an instant query at ts, handing each sample of the vector to
// each as it is decoded, with the labels in keep.
func (c *client) query(ctx context.Context, q string, ts time.Time, keep labels, each func(*model.Sample) error) (v1.Warnings, v1.Infos, error) {
	u := c.url(epQuery, "")
	args := u.Query()
	args.Set("timeout", c.PerTry().String())
	args.Set("query", q)
	if !ts.IsZero() {
		args.Set("time", formatTime(ts))
	}
	return c.do(ctx, u, args, true, &visitor{want: model.ValVector, keep: keep, sample: each})
}

// queryRange runs a range query, handing each series of the matrix to each
// (in chunks, see visitor.series), with the labels in keep.
func (c *client) queryRange(ctx context.Context, q string, r v1.Range, keep labels, each func(*model.SampleStream) error) (v1.Warnings, v1.Infos, error) {
	u := c.url(epQueryRange, "")
	args := u.Query()
	args.Set("timeout", c.PerTry().String())
	args.Set("query", q)
	args.Set("start", formatTime(r.Start))
	args.Set("end", formatTime(r.End))
	args.Set("step", strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64))
	return c.do(ctx, u, args, true, &visitor{want: model.ValMatrix, keep: keep, series: each})
}

// labelValues reads the values of a label between start and end, with a
// GET as client_golang sends it.
func (c *client) labelValues(ctx context.Context, label string, start, end time.Time, each func(model.LabelValue) error) (v1.Warnings, v1.Infos, error) {
	u := c.url(epLabelValues, label)
	args := u.Query()
	if !start.IsZero() {
		args.Set("start", formatTime(start))
	}
	if !end.IsZero() {
		args.Set("end", formatTime(end))
	}
	return c.do(ctx, u, args, false, &visitor{want: model.ValNone, value: each})
}

// labelNames reads the names of the labels of the series that match
// between start and end, with a GET as client_golang's LabelNames sends it
// when POST is refused.
func (c *client) labelNames(ctx context.Context, match string, start, end time.Time, each func(model.LabelValue) error) (v1.Warnings, v1.Infos, error) {
	u := c.url(epLabels, "")
	args := u.Query()
	args.Add("match[]", match)
	if !start.IsZero() {
		args.Set("start", formatTime(start))
	}
	if !end.IsZero() {
		args.Set("end", formatTime(end))
	}
	return c.do(ctx, u, args, false, &visitor{want: model.ValNone, value: each})
}

// url is the endpoint's address under --url's path (and with its query).
func (c *client) url(ep, name string) *url.URL {
	u := *c.endpoint
	u.Path = strings.Replace(path.Join(c.endpoint.Path, ep), "/:name/", "/"+name+"/", 1)
	return &u
}

// do sends the request: POST with the arguments form-encoded, and GET when
// the server refuses POST with 403, 405 or 501, as client_golang's
// DoGetFallback does; or GET only.
func (c *client) do(ctx context.Context, u *url.URL, args url.Values, post bool, v *visitor) (v1.Warnings, v1.Infos, error) {
	encoded := args.Encode()
	if post {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(encoded))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		// Lets the transport retry the POST on a network error, as a GET.
		req.Header["Idempotency-Key"] = nil
		status, ans, err := c.send(req, v)
		switch status {
		case http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		default:
			return ans.warnings, ans.infos, err
		}
	}
	u.RawQuery = encoded
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	_, ans, err := c.send(req, v)
	return ans.warnings, ans.infos, err
}

// send sends one request and decodes its answer, returning the HTTP status
// (0 without an answer).
func (c *client) send(req *http.Request, v *visitor) (int, *answer, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		ans, err := failure(resp, min(c.limit, maxErrorBody), c.Secrets)
		return resp.StatusCode, ans, err
	}
	ans, err := decodeAnswer(&cappedReader{r: resp.Body, left: c.limit, limit: c.limit}, v)
	switch {
	case errIsSyntax(err):
		err = &v1.Error{Type: v1.ErrBadResponse, Msg: err.Error()}
	case err != nil:
	case ans.status == "error":
		err = &v1.Error{Type: v1.ErrorType(ans.errorType), Msg: ans.errorMsg}
	case v.want == model.ValNone:
	case !ans.data:
		err = &v1.Error{Type: v1.ErrBadResponse, Msg: "the answer has no data"}
	case ans.resultType != v.want:
		err = &wrongType{got: ans.resultType}
	}
	return resp.StatusCode, ans, err
}

// failure reads an answer with an error status as client_golang does: for
// 400 and 422, Prometheus's error JSON; otherwise the status, with the body
// (at most limit bytes of it) as the detail.
// Secrets are replaced as it is read, before anything cuts it.
func failure(resp *http.Response, limit int64, sec *httpclient.Redactor) (*answer, error) {
	text, err := sec.ReadQuoted(resp.Body, limit)
	if err != nil {
		return &answer{}, err
	}
	body := []byte(text)
	code := resp.StatusCode
	generic := func() error {
		typ, msg := v1.ErrBadResponse, fmt.Sprintf("bad response code %d", code)
		switch code / 100 {
		case 4:
			typ, msg = v1.ErrClient, fmt.Sprintf("client error: %d", code)
		case 5:
			typ, msg = v1.ErrServer, fmt.Sprintf("server error: %d", code)
		}
		return &v1.Error{Type: typ, Msg: msg, Detail: string(body)}
	}
	if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		return &answer{}, generic()
	}
	ans, err := decodeAnswer(bytes.NewReader(body), nil)
	if err != nil {
		return &answer{}, generic()
	}
	if ans.status == "success" {
		return ans, &v1.Error{Type: v1.ErrBadResponse, Msg: "inconsistent body for response code"}
	}
	if ans.errorType == "" {
		ans.errorType = string(v1.ErrClient)
	}
	if ans.errorMsg == "" {
		ans.errorMsg = fmt.Sprintf("client error: %d", code)
	}
	return ans, &v1.Error{Type: v1.ErrorType(ans.errorType), Msg: ans.errorMsg}
}

// formatTime writes a time as client_golang does: Unix seconds.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
}
