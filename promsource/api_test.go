package promsource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vectorOf writes a vector answer.
func vectorOf(samples ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

// classicAnswer answers the queries of a classic histogram without --by
// or --step: 1,000 calls, 990 within 0.5s.
func classicAnswer(q string) string {
	switch {
	case strings.HasPrefix(q, "count("):
		return vectorOf(`{"metric":{},"value":[1800000000,"4"]}`)
	case strings.HasPrefix(q, "sum by (le)"):
		return vectorOf(`{"metric":{"le":"0.1"},"value":[1800000000,"900"]}`,
			`{"metric":{"le":"0.5"},"value":[1800000000,"990"]}`,
			`{"metric":{"le":"1"},"value":[1800000000,"999"]}`,
			`{"metric":{"le":"+Inf"},"value":[1800000000,"1000"]}`)
	case strings.Contains(q, "_count[1h]"):
		return vectorOf(`{"metric":{},"value":[1800000000,"1000"]}`)
	case strings.Contains(q, "_sum[1h]"):
		return vectorOf(`{"metric":{},"value":[1800000000,"50"]}`)
	case strings.HasPrefix(q, "max_over_time("):
		return vectorOf(`{"metric":{},"value":[1800000000,"0.5"]}`)
	}
	if a, ok := spanAnswer(q); ok {
		return a
	}
	return `{"status":"error","errorType":"bad_data","error":"unexpected query"}`
}

// spanAnswer answers the queries of the data's first and last sample
// (span) for data that cover the hour's window ending at 1800000000,
// scraped every 15 s.
func spanAnswer(q string) (string, bool) {
	switch {
	case strings.HasPrefix(q, "max(timestamp("):
		return vectorOf(`{"metric":{},"value":[1800000000,"1799999995"]}`), true
	case strings.HasPrefix(q, "min(min_over_time(timestamp("):
		return vectorOf(`{"metric":{},"value":[1800000000,"1799996410"]}`), true
	}
	return "", false
}

// request is what a fake server was sent.
type request struct {
	method, path, rawQuery, contentType string
	form                                url.Values // the body's, for POST
}

// recorder records every request and answers with handle.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (rc *recorder) server(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, q string)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), form})
		rc.mu.Unlock()
		q := form.Get("query")
		if r.Method == http.MethodGet {
			q = r.URL.Query().Get("query")
		}
		handle(w, r, q)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (rc *recorder) methods() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var m []string
	for _, r := range rc.reqs {
		m = append(m, r.method)
	}
	return strings.Join(m, " ")
}

// The requests are those client_golang's v1.API sends: the same method,
// path (under --url's prefix), URL query and form.
func TestRequestsAsClientGolang(t *testing.T) {
	at := time.Unix(1_800_000_000, 250_000_000)
	r := v1.Range{Start: at.Add(-time.Hour), End: at, Step: 90 * time.Second}
	answer := func(w http.ResponseWriter, req *http.Request, _ string) {
		if strings.Contains(req.URL.Path, "/label/") {
			fmt.Fprint(w, `{"status":"success","data":["a"]}`)
			return
		}
		if strings.HasSuffix(req.URL.Path, "query_range") {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
			return
		}
		fmt.Fprint(w, vectorOf())
	}
	for _, base := range []string{"", "/prometheus/", "/prom?tenant=a"} {
		t.Run(base, func(t *testing.T) {
			theirs, ours := &recorder{}, &recorder{}
			tsrv, osrv := theirs.server(t, answer), ours.server(t, answer)

			ac, err := api.NewClient(api.Config{Address: tsrv.URL + base})
			require.NoError(t, err)
			ref := v1.NewAPI(ac)
			ctx := context.Background()
			_, _, _, err = ref.Query(ctx, "up", at, v1.WithTimeout(7*time.Second))
			require.NoError(t, err)
			_, _, _, err = ref.QueryRange(ctx, `sum by (le) (rate(x[5m]))`, r, v1.WithTimeout(7*time.Second))
			require.NoError(t, err)
			_, _, _, err = ref.LabelValues(ctx, model.MetricNameLabel, nil, at.Add(-time.Hour), at)
			require.NoError(t, err)

			c, err := connect(Connection{URL: osrv.URL + base, QueryTimeout: 7 * time.Second})
			require.NoError(t, err)
			none := func(*model.Sample) error { return nil }
			_, _, err = c.query(ctx, "up", at, allLabels, none)
			require.NoError(t, err)
			_, _, err = c.queryRange(ctx, `sum by (le) (rate(x[5m]))`, r, allLabels, func(*model.SampleStream) error { return nil })
			require.NoError(t, err)
			_, _, err = c.labelValues(ctx, model.MetricNameLabel, at.Add(-time.Hour), at, func(model.LabelValue) error { return nil })
			require.NoError(t, err)

			require.Len(t, ours.reqs, 3)
			assert.Equal(t, theirs.reqs, ours.reqs)
			assert.Equal(t, "POST POST GET", ours.methods())
		})
	}
}

// A server that refuses POST with 403, 405 or 501 is asked again with GET,
// as client_golang does; the answers still stream.
func TestGETFallback(t *testing.T) {
	for _, code := range []int{http.StatusMethodNotAllowed, http.StatusNotImplemented, http.StatusForbidden} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			rc := &recorder{}
			srv := rc.server(t, func(w http.ResponseWriter, r *http.Request, q string) {
				if r.Method == http.MethodPost {
					w.WriteHeader(code)
					return
				}
				fmt.Fprint(w, classicAnswer(q))
			})
			res, err := Fetch(context.Background(), options(srv.URL, &noSleep{}))
			require.NoError(t, err)
			require.Len(t, res.Groups, 1)
			g := res.Groups[0]
			assert.Equal(t, 1000.0, g.Calls)
			assert.Equal(t, 0.05, g.Mean)
			assert.Equal(t, 0.5, g.PeakRate)
			assert.Equal(t, 0.5, g.Overall.Locate(0.99).Bucket.Hi)
			assert.Equal(t, strings.Repeat("POST GET ", 7)[:len(strings.Repeat("POST GET ", 7))-1], rc.methods())
			for i := 0; i < len(rc.reqs); i += 2 {
				post, get := rc.reqs[i], rc.reqs[i+1]
				assert.Equal(t, "application/x-www-form-urlencoded", post.contentType)
				assert.Equal(t, post.form.Encode(), get.rawQuery, "the same arguments in the URL")
			}
		})
	}
}

// Prometheus's warnings and infos reach the result, deduplicated, from
// every query.
func TestWarningsAndInfos(t *testing.T) {
	srv := (&recorder{}).server(t, func(w http.ResponseWriter, _ *http.Request, q string) {
		a := classicAnswer(q)
		a = strings.TrimSuffix(a, "}") + `,"warnings":["PromQL warning: bucket label \"le\" is missing or has a malformed value"],"infos":["PromQL info: metric might not be a counter"]}`
		fmt.Fprint(w, a)
	})
	res, err := Fetch(context.Background(), options(srv.URL, &noSleep{}))
	require.NoError(t, err)
	assert.Equal(t, []string{
		`PromQL warning: bucket label "le" is missing or has a malformed value`,
		"PromQL info: metric might not be a counter",
	}, res.Warnings)
	assert.Len(t, res.Queries, 7)
}

// Errors Prometheus answers with are explained as before the streaming
// decoder: the status, Prometheus's own text, what to do.
func TestAPIErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"200 with an error envelope", 200, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:7: parse error"}`,
			`rejected the query count(last_over_time(http_request_duration_seconds_bucket[1h])): invalid parameter "query": 1:7: parse error`},
		{"200 with an execution error", 200, `{"status":"error","errorType":"execution","error":"query processing would load too many samples"}`,
			"rejected the query count(last_over_time(http_request_duration_seconds_bucket[1h])): query processing would load too many samples"},
		{"422", 422, `{"status":"error","errorType":"execution","error":"expanding series: context deadline exceeded"}`,
			"rejected the query count(last_over_time(http_request_duration_seconds_bucket[1h])): expanding series: context deadline exceeded"},
		{"400 without JSON", 400, `bad request`, "answered HTTP 400 Bad Request: bad request"},
		{"400 with success", 400, vectorOf(), "answered HTTP 400 Bad Request: inconsistent body for response code"},
		{"503 from a proxy", 503, `<html>upstream unavailable</html>`, "answered HTTP 503 Service Unavailable (3 attempts)"},
		{"a scalar", 200, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`,
			"answered count(last_over_time(http_request_duration_seconds_bucket[1h])) with a scalar, not an instant vector"},
		{"no data", 200, `{"status":"success"}`, "sent an answer that is not the Prometheus API's JSON (the answer has no data)"},
		{"empty", 200, ``, "sent an answer that is not the Prometheus API's JSON (byte 0: the answer ends in the middle of its JSON)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := (&recorder{}).server(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			})
			_, err := Fetch(context.Background(), options(srv.URL, &noSleep{}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// An answer over the cap fails its query in one line that names the cap,
// the flag, what helps and the URL without its credentials; one of exactly
// the cap's size is read.
func TestMaxResponseBytes(t *testing.T) {
	body := classicAnswer("sum by (le)")
	srv := (&recorder{}).server(t, func(w http.ResponseWriter, _ *http.Request, q string) {
		if strings.HasPrefix(q, "sum by (le)") {
			fmt.Fprint(w, body)
			return
		}
		fmt.Fprint(w, classicAnswer(q))
	})
	t.Setenv("TT_TEST_PASS", secretPass)
	for _, tt := range []struct {
		limit int64
		want  string
	}{
		{int64(len(body)), ""},
		{int64(len(body)) - 1, fmt.Sprintf("Prometheus at %s answered sum by (le) (increase(http_request_duration_seconds_bucket[1h])) with more than %d bytes, the --max-response-bytes cap; "+
			"a shorter --window, a coarser --step, a narrower --selector or a larger --max-response-bytes helps", srv.URL, len(body)-1)},
	} {
		t.Setenv("TT_TEST_PASS", secretPass)
		o := options(srv.URL, &noSleep{})
		o.BasicUser, o.BasicPasswordEnv = "admin", "TT_TEST_PASS"
		o.Headers = []string{"X-Scope-OrgID: " + secretOrg}
		o.MaxResponseBytes = tt.limit
		res, err := Fetch(context.Background(), o)
		if tt.want == "" {
			require.NoError(t, err)
			assert.Equal(t, 1000.0, res.Groups[0].Overall.Count)
			continue
		}
		require.Error(t, err)
		assert.Equal(t, tt.want, err.Error())
		assert.ErrorIs(t, err, ErrTooLarge)
		for _, s := range []string{secretPass, secretOrg, "admin"} {
			assert.NotContains(t, err.Error(), s)
		}
	}
}

// A server that never stops answering fails at the cap, quickly, with the
// cap's message: the answer is never held.
func TestEndlessAnswer(t *testing.T) {
	for _, tt := range []struct {
		name, head, body, want string
	}{
		{"valid samples", `{"status":"success","data":{"resultType":"vector","result":[`, `{"metric":{"le":"0.1"},"value":[1800000000,"1"]},`,
			"with more than 1 MiB, the --max-response-bytes cap"},
		{"garbage", "", "garbage ", "sent an answer that is not the Prometheus API's JSON (byte 0: found 'g', want '{'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := (&recorder{}).server(t, func(w http.ResponseWriter, r *http.Request, _ string) {
				fmt.Fprint(w, tt.head)
				chunk := strings.Repeat(tt.body, 1000)
				for r.Context().Err() == nil {
					if _, err := fmt.Fprint(w, chunk); err != nil {
						return
					}
				}
			})
			o := options(srv.URL, &noSleep{})
			o.MaxResponseBytes = 1 << 20
			start := time.Now()
			_, err := Fetch(context.Background(), o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}
