package jaegersource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/jaegersource/jaegertest"
)

// noSleep records the backoffs instead of waiting.
type noSleep struct{ waits []time.Duration }

func (s *noSleep) sleep(_ context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return nil
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func options(url string, sl *noSleep) Options {
	return Options{
		Connection: httpclient.Options{URL: url, Sleep: sl.sleep, Jitter: func() float64 { return 1 }},
		Service:    "checkout",
		Start:      t0, End: t0.Add(time.Hour),
	}
}

// ids reads the traceIDs of a fetched document, in order.
func ids(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		Data []struct {
			TraceID string `json:"traceID"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(doc, &d), "the output is one JSON document")
	var out []string
	for _, tr := range d.Data {
		out = append(out, tr.TraceID)
	}
	return out
}

func serve(t *testing.T, f *jaegertest.Server) string {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestPagingSplitsUntilBelowLimit(t *testing.T) {
	all := jaegertest.Traces(57, t0.Add(time.Minute), 53*time.Second)
	f := &jaegertest.Server{Traces: all, Services: []string{"checkout", "frontend"}}
	o := options(serve(t, f), &noSleep{})
	o.Limit = 10
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.NoError(t, err)

	got := ids(t, out.Bytes())
	var want []string
	for _, tr := range all {
		want = append(want, tr.ID)
	}
	assert.ElementsMatch(t, want, got, "every trace of the window, each once")
	assert.Len(t, got, 57)
	assert.Equal(t, 57, res.Traces)
	assert.Greater(t, res.Searches, 6, "a full answer is split: 57 traces need at least 6 answers below 10")
	assert.Equal(t, res.Searches, len(f.Searches))
	assert.False(t, res.Truncated)
	assert.Zero(t, res.Full)
	assert.Empty(t, res.Notes)
	// The parameters as query_parser.go reads them.
	first := f.Searches[0]
	assert.Contains(t, first, "service=checkout")
	assert.Contains(t, first, "start="+strconv.FormatInt(t0.UnixMicro(), 10))
	assert.Contains(t, first, "end="+strconv.FormatInt(t0.Add(time.Hour).UnixMicro(), 10))
	assert.Contains(t, first, "limit=10")
}

func TestPagingOneWindowNeedsNoSplit(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(9, t0, time.Minute), Services: []string{"checkout"}}
	o := options(serve(t, f), &noSleep{})
	o.Limit = 10
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Searches, "9 traces below the limit of 10: one answer holds the window")
	assert.Len(t, ids(t, out.Bytes()), 9)
}

func TestPagingSameMicrosecondIsReportedFull(t *testing.T) {
	// 12 traces in one microsecond cannot be split below a limit of 10.
	f := &jaegertest.Server{Traces: jaegertest.Traces(12, t0.Add(time.Minute), 0), Services: []string{"checkout"}}
	o := options(serve(t, f), &noSleep{})
	o.Limit = 10
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.NoError(t, err)
	assert.Equal(t, 10, res.Traces)
	assert.GreaterOrEqual(t, res.Full, 1)
	require.NotEmpty(t, res.Notes)
	assert.Contains(t, res.Notes[0], "answered --limit 10 traces")
}

func TestDuplicatesAreSkipped(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(5, t0, time.Minute), Services: []string{"checkout"}, DupFirst: true}
	o := options(serve(t, f), &noSleep{})
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.NoError(t, err)
	assert.Equal(t, 5, res.Traces)
	assert.Equal(t, 1, res.Duplicates)
	assert.Len(t, ids(t, out.Bytes()), 5)
}

func TestMaxTracesStops(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(57, t0, time.Minute), Services: []string{"checkout"}}
	o := options(serve(t, f), &noSleep{})
	o.Limit, o.MaxTraces = 10, 20
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Equal(t, 20, res.Traces)
	assert.Len(t, ids(t, out.Bytes()), 20, "the document is complete JSON with the traces read")
	require.Len(t, res.Notes, 1)
	assert.Contains(t, res.Notes[0], "more traces of checkout in the window than --max-traces 20")
}

func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    *jaegertest.Server
		set  func(*Options)
		want string
	}{
		{"API error explained", &jaegertest.Server{Services: []string{"checkout"}}, func(o *Options) { o.Operation = "boom" },
			"Jaeger at {url} answered HTTP 500 Internal Server Error to the search for checkout traces between 2026-11-30T12:00:00Z and 2026-11-30T13:00:00Z: elasticsearch: search_phase_execution_exception"},
		{"unknown service, the closest suggested", &jaegertest.Server{Services: []string{"checkout", "frontend", "payments"}}, func(o *Options) { o.Service = "chekout" },
			`Jaeger at {url} knows no service "chekout"; did you mean "checkout"? It knows 3 services: checkout, frontend, payments`},
		{"no service: the list", &jaegertest.Server{Services: []string{"payments", "checkout"}}, func(o *Options) { o.Service = "" },
			`--service is required: Jaeger at {url} knows 2 services: checkout, payments`},
		{"empty window", &jaegertest.Server{Services: []string{"checkout"}}, nil,
			"Jaeger at {url} has no trace of checkout between 2026-11-30T12:00:00Z and 2026-11-30T13:00:00Z: a longer --lookback or another window helps"},
		{"401 explains auth", &jaegertest.Server{Services: []string{"checkout"}, Token: "right"}, nil,
			"Jaeger at {url} answered HTTP 401 Unauthorized: it needs credentials, or refused the ones given (--bearer-token-file, --bearer-token-env, --basic-auth-user): bad credentials:"},
		{"not the query API", &jaegertest.Server{}, func(o *Options) { o.Connection.URL += "/prefix" },
			"Jaeger at {url} answered HTTP 404 Not Found to the search for checkout traces between 2026-11-30T12:00:00Z and 2026-11-30T13:00:00Z: is --url the query service (its UI's address, port 16686), with its --query.base-path if it has one?"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, tt.f)
			o := options(url, &noSleep{})
			if tt.set != nil {
				tt.set(&o)
			}
			_, err := Fetch(context.Background(), o, &bytes.Buffer{})
			require.Error(t, err)
			assert.Equal(t, strings.ReplaceAll(tt.want, "{url}", o.Connection.URL), err.Error())
		})
	}
}

func TestRetries5xxThenSucceeds(t *testing.T) {
	sl := &noSleep{}
	f := &jaegertest.Server{Traces: jaegertest.Traces(3, t0, time.Minute), Services: []string{"checkout"}, Fail: 2}
	var out bytes.Buffer
	res, err := Fetch(context.Background(), options(serve(t, f), sl), &out)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Traces)
	assert.Equal(t, 3, f.Requests, "two 503s, then the answer")
	assert.Equal(t, []time.Duration{httpclient.DefaultBackoffBase, 2 * httpclient.DefaultBackoffBase}, sl.waits)

	f = &jaegertest.Server{Services: []string{"checkout"}, Fail: 5}
	_, err = Fetch(context.Background(), options(serve(t, f), &noSleep{}), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "answered HTTP 503 Service Unavailable to the search for checkout traces")
	assert.Contains(t, err.Error(), "(3 attempts)")
}

func TestResponseCap(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(20, t0, time.Minute), Services: []string{"checkout"}}
	o := options(serve(t, f), &noSleep{})
	o.Connection.MaxResponseBytes = 2000
	_, err := Fetch(context.Background(), o, &bytes.Buffer{})
	require.Error(t, err)
	assert.ErrorIs(t, err, httpclient.ErrTooLarge)
	assert.Contains(t, err.Error(), "answered the search for checkout traces")
	assert.Contains(t, err.Error(), "the --max-response-bytes cap; a smaller --limit (traces per search) or a larger --max-response-bytes helps")
}

// The bearer token never appears in an error, nor in the output, even when
// the server quotes it.
func TestTokenNeverShown(t *testing.T) {
	const secret = "tok-Q7xK2m-secret"
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte(secret+"\n"), 0o600))
	f := &jaegertest.Server{Services: []string{"checkout"}, Token: "another-one"}
	o := options(serve(t, f), &noSleep{})
	o.Connection.BearerTokenFile = file
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 401 Unauthorized")
	assert.Contains(t, err.Error(), "bad credentials: Bearer ***", "the quoted header is redacted")
	assert.NotContains(t, err.Error(), "Q7xK2m")
	assert.NotContains(t, out.String(), "Q7xK2m")
	if res != nil {
		assert.NotContains(t, fmt.Sprint(res), "Q7xK2m")
	}

	// With the right Token: read, and still not shown.
	f.Token = secret
	f.Traces = jaegertest.Traces(2, t0, time.Minute)
	out.Reset()
	res, err = Fetch(context.Background(), o, &out)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Traces)
	assert.NotContains(t, out.String()+fmt.Sprint(res), "Q7xK2m")
}

func TestCheck(t *testing.T) {
	o := Options{Connection: httpclient.Options{URL: "localhost:16686"}, Limit: -1, Tags: "http.status_code=200"}
	err := o.Check()
	require.Error(t, err)
	assert.Equal(t, `--url "localhost:16686" is not an http:// or https:// address
--limit -1 is negative
the window to read must start before it ends (--from, --to, --lookback)
--tags "http.status_code=200" is not a JSON object of strings, such as {"http.status_code":"200"}`, err.Error())
	err = Options{}.Check()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--url is required: the address of Jaeger, e.g. http://localhost:16686")
}

func TestClosest(t *testing.T) {
	names := []string{"checkout", "frontend", "payments-api"}
	for _, tt := range []struct{ want, got string }{
		{"chekout", "checkout"}, {"Checkout", "checkout"}, {"payments", "payments-api"}, {"redis", ""},
	} {
		assert.Equal(t, tt.got, closest(tt.want, names), tt.want)
	}
}

// Issue 30, item 4: a server that ignores the window's bounds. One that
// answers --limit copies of one trace made the fetch split the window for
// ever (675 searches in 30 s for a 1 s window): the copies are one trace,
// which does not fill the page.
func TestCopiesOfOneTraceDoNotFillThePage(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(3, t0, time.Millisecond), Services: []string{"checkout"}, IgnoreWindow: true, Copies: true}
	o := options(serve(t, f), &noSleep{})
	o.End = o.Start.Add(time.Second)
	o.Limit = 20
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Searches, "one answer of one distinct trace holds the window")
	assert.Equal(t, 1, res.Traces)
	assert.Equal(t, 19, res.Duplicates)
	assert.Len(t, ids(t, out.Bytes()), 1)
	require.NotEmpty(t, res.Notes)
	assert.Contains(t, res.Notes[0], "19 copies of traces it had already answered in the same search")
}

// A server that answers the same full page to every search, whatever its
// window, stops at --max-searches with an error naming it.
func TestMaxSearchesStops(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(30, t0, time.Millisecond), Services: []string{"checkout"}, IgnoreWindow: true}
	o := options(serve(t, f), &noSleep{})
	o.End = o.Start.Add(time.Second)
	o.Limit, o.MaxSearches = 10, 50
	var out bytes.Buffer
	res, err := Fetch(context.Background(), o, &out)
	require.Error(t, err)
	assert.Equal(t, 50, res.Searches)
	assert.Len(t, f.Searches, 50, "no search beyond the bound is sent")
	assert.Equal(t, 10, res.Traces, "the same 10 traces, answered again and again")
	assert.Equal(t, "Jaeger at "+o.Connection.URL+" still answered full pages after 50 searches, the --max-searches bound, with 10 distinct traces read: "+
		"a server that ignores the search's start and end answers so; a shorter window (--lookback, --from, --to), --operation, or a larger --max-searches", err.Error())
}

func TestMaxBytesStops(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(57, t0, time.Minute), Services: []string{"checkout"}}
	o := options(serve(t, f), &noSleep{})
	o.Limit, o.MaxBytes = 10, 20_000
	_, err := Fetch(context.Background(), o, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Jaeger at "+o.Connection.URL+" sent more than 20 kB in all, the --max-fetch-bytes bound, after ")
	assert.Contains(t, err.Error(), "a shorter window (--lookback, --from, --to), --operation, or a larger --max-fetch-bytes")
}

func TestMaxTimeStops(t *testing.T) {
	f := &jaegertest.Server{Traces: jaegertest.Traces(57, t0, time.Minute), Services: []string{"checkout"}, Delay: 30 * time.Millisecond}
	o := options(serve(t, f), &noSleep{})
	o.Limit, o.MaxTime = 10, 100*time.Millisecond
	start := time.Now()
	_, err := Fetch(context.Background(), o, &bytes.Buffer{})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Contains(t, err.Error(), "Jaeger at "+o.Connection.URL+" was still being searched after 100ms, the --max-fetch-time bound, after ")
	assert.Contains(t, err.Error(), "a shorter window (--lookback, --from, --to), --operation, or a longer --max-fetch-time")
}
