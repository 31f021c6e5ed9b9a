// Package jaegersource reads traces live from a Jaeger query service's
// HTTP API (the one its UI calls, port 16686) and writes them as one
// Jaeger JSON document for ingest's jaeger format: the same bytes the UI's
// "Download JSON" gives, so that a fetched window is analysed exactly as a
// file of the same traces.
//
// The connection rules (credentials, retries with backoff, redirects, the
// response cap, errors in one line without secrets) are internal/httpclient's,
// shared with promsource.
//
// The API, as Jaeger's query service serves it (jaegertracing/jaeger,
// cmd/query/app/http_handler.go and cmd/query/app/query_parser.go, at
// acbab20525c0, the last commit before they moved to
// cmd/jaeger/internal/extension/jaegerquery/internal/):
//
//   - GET /api/services answers {"data":["svc",...],"total":N,...}
//     (getServices);
//   - GET /api/traces?service=S&start=&end=&limit=&operation=&tags= answers
//     {"data":[trace,...],"total":..,"limit":..,"offset":..,"errors":..}
//     (search, parseTraceQueryParams): start and end are Unix
//     microseconds ("start ::= 'start=' intValue in unix microseconds"),
//     limit the number of traces (defaultQueryLimit 100 when absent), tags
//     a JSON map of tag to value, service required
//     (errServiceParameterRequired);
//   - errors are {"errors":[{"code":400,"msg":"..."}]} with the HTTP status
//     in code (handleError, structuredError).
//
// The API has no cursor: a search answers at most limit traces of the
// window, with no sign of how many it left out. Fetch pages by time
// instead (see Fetch).
package jaegersource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/httpclient"
	"github.com/tunetimeout/tunetimeout/internal/human"
	"github.com/tunetimeout/tunetimeout/internal/usage"
)

// Defaults of Options.
const (
	DefaultLimit     = 500     // traces per search
	DefaultMaxTraces = 100_000 // traces in all
	DefaultLookback  = time.Hour
	// The bounds of a fetch's work. Reading DefaultMaxTraces traces at
	// DefaultLimit a search takes about 4 x 100,000 / 500 = 800 searches
	// (each full answer is split in two; the leaves hold between a half
	// and a whole page), so DefaultMaxSearches leaves room for windows
	// that are split down to their dense microseconds, and is reached in
	// minutes, not hours, by a server that answers full pages whatever
	// the window.
	DefaultMaxSearches = 10_000
	DefaultMaxBytes    = 4 << 30 // of every answer together
	DefaultMaxTime     = 15 * time.Minute
)

// maxErrorBody bounds what is read of an answer with an error status.
const maxErrorBody = 1 << 20

// Options says which traces to read, and from where.
type Options struct {
	// Connection is how to reach the query service; its Server, ExampleURL
	// and ExampleEnv are set by the package.
	Connection httpclient.Options

	Service   string // required
	Operation string // "" = every operation
	// Tags is a JSON object of tag to value, as the API takes it, e.g.
	// {"http.status_code":"200"}.
	Tags string
	// Start and End bound the traces' start times: [Start, End).
	Start, End time.Time
	// Limit is the number of traces asked for in one search; 0 =
	// DefaultLimit. A search that answers as many is split (see Fetch).
	Limit int
	// MaxTraces bounds the distinct traces read; 0 = DefaultMaxTraces.
	MaxTraces int
	// MaxSearches, MaxBytes and MaxTime bound the fetch's work: the
	// searches sent, the bytes of every answer together, the time from
	// the first search to the last; 0 = DefaultMaxSearches,
	// DefaultMaxBytes, DefaultMaxTime. Reaching one is an error that
	// names it (*BoundError).
	MaxSearches int
	MaxBytes    int64
	MaxTime     time.Duration
}

// Result is what a fetch read.
type Result struct {
	URL     string // the query service, without credentials
	Service string
	// Start and End are the window read.
	Start, End time.Time
	Traces     int // distinct traces written
	Duplicates int // traces answered again by an overlapping search, skipped
	Searches   int // /api/traces requests that answered
	// Truncated is set when MaxTraces stopped the fetch before the whole
	// window was read.
	Truncated bool
	// Full counts windows of one microsecond that still answered Limit
	// traces: what they hold beyond those is not read.
	Full  int
	Notes []string
}

func (o Options) connection() httpclient.Options {
	c := o.Connection
	c.Server, c.ExampleURL, c.ExampleEnv = "Jaeger", "http://localhost:16686", "JAEGER_TOKEN"
	return c
}

func (o *Options) defaults() {
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	if o.MaxTraces == 0 {
		o.MaxTraces = DefaultMaxTraces
	}
	if o.MaxSearches == 0 {
		o.MaxSearches = DefaultMaxSearches
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxTime == 0 {
		o.MaxTime = DefaultMaxTime
	}
}

// Check reports every problem with o that shows before anything is sent.
// A missing --service is not one: Fetch then lists the services.
func (o Options) Check() error {
	errs := []error{o.connection().Check()}
	if o.Limit < 0 {
		errs = append(errs, usage.About(usage.Limit, fmt.Errorf("%s %d is negative", usage.Limit, o.Limit)))
	}
	if o.MaxTraces < 0 {
		errs = append(errs, usage.About(usage.MaxTraces, fmt.Errorf("%s %d is negative", usage.MaxTraces, o.MaxTraces)))
	}
	if o.MaxSearches < 0 {
		errs = append(errs, usage.About(usage.MaxSearches, fmt.Errorf("%s %d is negative", usage.MaxSearches, o.MaxSearches)))
	}
	if o.MaxBytes < 0 {
		errs = append(errs, usage.About(usage.MaxFetchBytes, fmt.Errorf("%s %d is negative", usage.MaxFetchBytes, o.MaxBytes)))
	}
	if o.MaxTime < 0 {
		errs = append(errs, usage.About(usage.MaxFetchTime, fmt.Errorf("%s %v is negative", usage.MaxFetchTime, o.MaxTime)))
	}
	if o.Start.IsZero() || o.End.IsZero() || !o.Start.Before(o.End) {
		errs = append(errs, fmt.Errorf("the window to read must start before it ends (%s, %s, %s)", usage.From, usage.To, usage.Lookback))
	}
	if o.Tags != "" {
		var m map[string]string
		if err := json.Unmarshal([]byte(o.Tags), &m); err != nil {
			errs = append(errs, usage.About(usage.Tags, fmt.Errorf(`%s %q is not a JSON object of strings, such as {"http.status_code":"200"}`, usage.Tags, o.Tags)))
		}
	}
	return errors.Join(errs...)
}

// Fetch reads the traces of o's window and writes them to w as one Jaeger
// JSON document, {"data":[trace,...]}, one trace a line, each once.
//
// Paging: a search asks for [start, end) with o.Limit. An answer of fewer
// distinct traces holds the whole window. An answer of Limit distinct
// traces may not: its traces are kept and the window is halved, each half
// searched again, until every answer is below the limit (or a window is
// one microsecond, counted in Result.Full). A trace answered twice within
// one answer is one trace of the page: a server that answers Limit copies
// of one trace has answered the whole window. Overlapping answers are
// deduplicated by traceID with a set bounded by MaxTraces, which also
// stops the fetch, with Truncated set. Each answer is decoded as it
// arrives, one trace in memory at a time, under the connection's response
// cap.
//
// The fetch's work is bounded whatever the server answers: at most
// MaxSearches searches, MaxBytes read from all of them, MaxTime in all.
// Reaching one is a *BoundError, returned with the Result so far: a
// server that ignores the window's start and end answers full pages to
// every search, however small the window.
func Fetch(ctx context.Context, o Options, w io.Writer) (*Result, error) {
	o.defaults()
	if err := o.Check(); err != nil {
		return nil, err
	}
	c, err := httpclient.New(o.connection())
	if err != nil {
		return nil, err
	}
	s := &session{c: c, o: o, bytesLeft: o.MaxBytes}
	res := &Result{URL: c.Display, Service: o.Service, Start: o.Start, End: o.End}
	if o.Service == "" {
		return nil, s.noService(ctx)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.MaxTime, errMaxTime)
	defer cancel()
	bw := &traceWriter{w: w}
	seen := make(map[string]struct{})
	inAnswer := make(map[string]struct{}, o.Limit)
	copies := 0                            // traces answered again within one answer
	type window struct{ start, end int64 } // Unix microseconds
	todo := []window{{o.Start.UnixMicro(), o.End.UnixMicro()}}
	for len(todo) > 0 && !res.Truncated {
		if res.Searches >= o.MaxSearches {
			return res, s.bound(res, usage.MaxSearches, "still answered full pages after %s searches, the %s bound", "a larger %s",
				human.Count(int64(res.Searches)))
		}
		win := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		clear(inAnswer)
		_, err := s.search(ctx, win.start, win.end, func(id string, trace []byte) error {
			if _, again := inAnswer[id]; again {
				res.Duplicates++
				copies++
				return nil
			}
			inAnswer[id] = struct{}{}
			if _, dup := seen[id]; dup {
				res.Duplicates++
				return nil
			}
			if len(seen) >= o.MaxTraces {
				res.Truncated = true
				return errStop
			}
			seen[id] = struct{}{}
			res.Traces++
			if err := bw.write(trace); err != nil {
				return &spoolError{err}
			}
			return nil
		}, res)
		if errors.Is(context.Cause(ctx), errMaxTime) {
			return res, s.bound(res, usage.MaxFetchTime, "was still being searched after %s, the %s bound", "a longer %s", o.MaxTime)
		}
		if errors.Is(err, errMaxBytes) {
			return res, s.bound(res, usage.MaxFetchBytes, "sent more than %s in all, the %s bound", "a larger %s", human.Bytes(o.MaxBytes))
		}
		if err != nil && !errors.Is(err, errStop) {
			return res, err
		}
		res.Searches++
		if len(inAnswer) < o.Limit || res.Truncated {
			continue
		}
		if win.end-win.start <= 1 {
			res.Full++
			continue
		}
		// Newest half last: it is searched first, as Jaeger answers the
		// newest traces first.
		mid := win.start + (win.end-win.start)/2
		todo = append(todo, window{win.start, mid}, window{mid, win.end})
	}
	if err := bw.close(); err != nil {
		return res, err
	}
	if copies > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("Jaeger answered %s copies of traces it had already answered in the same search: each trace is read once, and counts once toward %s.", human.Count(int64(copies)), usage.Limit))
	}
	if res.Truncated {
		res.Notes = append(res.Notes, fmt.Sprintf("Jaeger holds more traces of %s in the window than %s %d: the first %d read are analysed; a shorter window (%s, %s, %s), %s or a larger %s reads them all.",
			o.Service, usage.MaxTraces, o.MaxTraces, res.Traces, usage.Lookback, usage.From, usage.To, usage.Operation, usage.MaxTraces))
	}
	if res.Full > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d windows of one microsecond each answered %s %d traces: traces beyond those may be missing; a larger %s reads them.", res.Full, usage.Limit, o.Limit, usage.Limit))
	}
	if res.Traces == 0 {
		return res, s.noTraces(ctx)
	}
	return res, nil
}

// BoundError is a fetch stopped by one of the bounds of its work
// (--max-searches, --max-fetch-bytes, --max-fetch-time).
type BoundError struct{ msg string }

func (e *BoundError) Error() string { return e.msg }

// reached is a bound of the fetch reached, its message naming the option
// that sets it when it is read (the CLI writes the option).
type reached struct {
	what   string // a format of one %s, the option
	option usage.Option
}

func (e reached) Error() string { return fmt.Sprintf(e.what, e.option) }

var (
	errMaxTime  error = reached{"the fetch took longer than %s", usage.MaxFetchTime}
	errMaxBytes error = reached{"the answers were larger than %s together", usage.MaxFetchBytes}
)

// bound is the error of a fetch stopped by the bound that option sets:
// what happened (what, with args and then the option), what was read,
// and what helps (more, a format of the option).
func (s *session) bound(res *Result, option usage.Option, what, more string, args ...any) error {
	msg := fmt.Sprintf("Jaeger at %s "+what, append(append([]any{s.c.Display}, args...), option)...)
	if option == usage.MaxSearches {
		msg += fmt.Sprintf(", with %s distinct traces read: a server that ignores the search's start and end answers so", human.Count(int64(res.Traces)))
	} else {
		msg += fmt.Sprintf(", after %s searches and %s distinct traces", human.Count(int64(res.Searches)), human.Count(int64(res.Traces)))
	}
	msg += fmt.Sprintf("; a shorter window (%s, %s, %s), %s, or ", usage.Lookback, usage.From, usage.To, usage.Operation) + fmt.Sprintf(more, option)
	return usage.About(option, &BoundError{msg: s.c.Secrets.Clean(msg)})
}

var errStop = errors.New("stop")

// spoolError is a failure to write the traces read: not Jaeger's.
type spoolError struct{ err error }

func (e *spoolError) Error() string { return "writing the traces read: " + e.err.Error() }
func (e *spoolError) Unwrap() error { return e.err }

// traceWriter writes traces as one Jaeger document.
type traceWriter struct {
	w   io.Writer
	n   int
	buf bytes.Buffer
}

func (t *traceWriter) write(trace []byte) error {
	t.buf.Reset()
	if t.n == 0 {
		t.buf.WriteString("{\"data\":[\n")
	} else {
		t.buf.WriteString(",\n")
	}
	if err := json.Compact(&t.buf, trace); err != nil {
		return err
	}
	t.n++
	_, err := t.w.Write(t.buf.Bytes())
	return err
}

func (t *traceWriter) close() error {
	if t.n == 0 {
		_, err := io.WriteString(t.w, "{\"data\":[]}\n")
		return err
	}
	_, err := io.WriteString(t.w, "\n]}\n")
	return err
}

// session is one fetch's client and options.
type session struct {
	c         *httpclient.Client
	o         Options
	bytesLeft int64 // of MaxBytes
}

// url is the endpoint ep under --url's path, with --url's query and args.
func (s *session) url(ep string, args url.Values) string {
	u := *s.c.Endpoint
	u.Path = path.Join(u.Path, ep)
	q := u.Query()
	for k, v := range args {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// search asks for the traces of [start, end) (Unix microseconds), handing
// each to each with its traceID, and returns how many the answer held.
func (s *session) search(ctx context.Context, start, end int64, each func(id string, trace []byte) error, res *Result) (int, error) {
	args := url.Values{
		"service": {s.o.Service},
		"start":   {strconv.FormatInt(start, 10)},
		"end":     {strconv.FormatInt(end, 10)},
		"limit":   {strconv.Itoa(s.o.Limit)},
	}
	if s.o.Operation != "" {
		args.Set("operation", s.o.Operation)
	}
	if s.o.Tags != "" {
		args.Set("tags", s.o.Tags)
	}
	what := fmt.Sprintf("the search for %s traces between %s and %s", s.o.Service,
		time.UnixMicro(start).UTC().Format(time.RFC3339Nano), time.UnixMicro(end).UTC().Format(time.RFC3339Nano))
	n := 0
	err := s.get(ctx, "/api/traces", args, func(dec *json.Decoder) error {
		return decodeTraces(dec, func(raw json.RawMessage) error {
			var t struct {
				TraceID string `json:"traceID"`
			}
			if err := json.Unmarshal(raw, &t); err != nil {
				return &apiError{msg: "a trace is not a JSON object: " + err.Error(), notAPI: true}
			}
			if t.TraceID == "" {
				return &apiError{msg: "a trace has no traceID", notAPI: true}
			}
			n++
			return each(strings.ToLower(t.TraceID), raw)
		}, func(e apiMessage) {
			if len(res.Notes) < 20 {
				res.Notes = append(res.Notes, s.c.Secrets.Clean(httpclient.OneLine("Jaeger reported an error beside the traces: "+e.String())))
			}
		})
	})
	var spool *spoolError
	if errors.Is(err, errStop) || errors.Is(err, errMaxBytes) || errors.As(err, &spool) {
		return n, err
	}
	if err != nil {
		return n, s.explain(err, what)
	}
	return n, nil
}

// services lists the services Jaeger knows.
func (s *session) services(ctx context.Context) ([]string, error) {
	var names []string
	err := s.get(ctx, "/api/services", nil, func(dec *json.Decoder) error {
		var ans struct {
			Data []string `json:"data"`
		}
		if err := dec.Decode(&ans); err != nil {
			var big *httpclient.TooLargeError
			if errors.As(err, &big) {
				return err
			}
			return &apiError{msg: err.Error(), notAPI: true}
		}
		names = ans.Data
		return nil
	})
	if err != nil {
		return nil, s.explain(err, "the list of services")
	}
	slices.Sort(names)
	return names, nil
}

// noService is the error of a fetch without --service: the services to
// choose from.
func (s *session) noService(ctx context.Context) error {
	names, err := s.services(ctx)
	if err != nil {
		return usage.About(usage.Service, fmt.Errorf("%s is required; listing Jaeger's services failed too: %w", usage.Service, err))
	}
	if len(names) == 0 {
		return usage.About(usage.Service, fmt.Errorf("%s is required, and Jaeger at %s knows no service: has it received any trace?", usage.Service, s.c.Display))
	}
	return usage.About(usage.Service, fmt.Errorf("%s is required: Jaeger at %s knows %s", usage.Service, s.c.Display, listNames(names)))
}

// noTraces is the error of a fetch that read no trace: an unknown service
// (with the closest known name), or an empty window.
func (s *session) noTraces(ctx context.Context) error {
	window := fmt.Sprintf("between %s and %s", s.o.Start.UTC().Format(time.RFC3339), s.o.End.UTC().Format(time.RFC3339))
	names, err := s.services(ctx)
	if err == nil && !slices.Contains(names, s.o.Service) {
		msg := fmt.Sprintf("Jaeger at %s knows no service %q", s.c.Display, s.o.Service)
		if best := closest(s.o.Service, names); best != "" {
			msg += fmt.Sprintf("; did you mean %q?", best)
		}
		if len(names) > 0 {
			msg += " It knows " + listNames(names)
		}
		return errors.New(s.c.Secrets.Clean(msg))
	}
	what := ""
	if s.o.Operation != "" {
		what += fmt.Sprintf(" with operation %q", s.o.Operation)
	}
	if s.o.Tags != "" {
		what += " with tags " + s.o.Tags
	}
	return errors.New(s.c.Secrets.Clean(fmt.Sprintf("Jaeger at %s has no trace of %s%s %s: a longer %s or another window helps",
		s.c.Display, s.o.Service, what, window, usage.Lookback)))
}

// listNames writes up to 20 names, with how many more there are.
func listNames(names []string) string {
	shown := names[:min(len(names), 20)]
	noun := "services"
	if len(names) == 1 {
		noun = "service"
	}
	s := fmt.Sprintf("%s %s: %s", human.Count(int64(len(names))), noun, strings.Join(shown, ", "))
	if len(names) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return s
}

// get sends a GET for ep and hands its answer, capped, to decode; an
// answer with an error status is an *apiError.
func (s *session) get(ctx context.Context, ep string, args url.Values, decode func(*json.Decoder) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url(ep, args), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return failure(resp, min(s.c.Limit, maxErrorBody), s.c.Secrets)
	}
	dec := json.NewDecoder(&budget{r: httpclient.Capped(resp.Body, s.c.Limit), left: &s.bytesLeft})
	dec.UseNumber()
	if err := decode(dec); err != nil {
		return err
	}
	return nil
}

// budget reads r while bytes are left of the fetch's MaxBytes, then fails
// with errMaxBytes.
type budget struct {
	r    io.Reader
	left *int64
}

func (b *budget) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		return 0, errMaxBytes
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	return n, err
}
