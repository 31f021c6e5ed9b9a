// Package jaegertest serves traces the way Jaeger's query service does, for
// the tests of jaegersource and of the packages that use it.
package jaegertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a fake of Jaeger's query API for tests: no Jaeger binary is
// available to them. It follows what
// cmd/query/app/http_handler.go and query_parser.go (see the package
// comment) do: start and end in Unix microseconds, both inclusive as the
// storage backends compare them, the newest traces first up to limit,
// service required, errors as {"errors":[{"code":..,"msg":..}]}.

// Trace is one trace of the fake: frontend serves GET /cart and calls
// checkout's POST /pay, a client span of Dur microseconds (the sample of
// the edge frontend -> checkout), which checkout serves in a server span.
type Trace struct {
	ID    string
	Start int64 // Unix microseconds
	Dur   int64 // of the client span, microseconds
}

// JSON is the trace as the API answers it.
func (t Trace) JSON() string {
	kind := func(k string) string { return `{"key":"span.kind","type":"string","value":"` + k + `"}` }
	ref := func(parent int) string {
		return fmt.Sprintf(`[{"refType":"CHILD_OF","traceID":%q,"spanID":"%016x"}]`, t.ID, parent)
	}
	span := func(id int, op, refs string, start, dur int64, proc, tags string) string {
		return fmt.Sprintf(`{"traceID":%q,"spanID":"%016x","operationName":%q,"references":%s,"startTime":%d,"duration":%d,"processID":%q,"tags":[%s]}`,
			t.ID, id, op, refs, start, dur, proc, tags)
	}
	spans := []string{
		span(1, "GET /cart", "[]", t.Start, t.Dur+200, "p1", kind("server")),
		span(2, "POST /pay", ref(1), t.Start+50, t.Dur, "p1", kind("client")+`,{"key":"peer.service","type":"string","value":"checkout"}`),
		span(3, "POST /pay", ref(2), t.Start+60, t.Dur-20, "p2", kind("server")),
	}
	return fmt.Sprintf(`{"traceID":%q,"spans":[%s],"processes":{"p1":{"serviceName":"frontend","tags":[]},"p2":{"serviceName":"checkout","tags":[]}}}`,
		t.ID, strings.Join(spans, ","))
}

// Traces makes n traces, one every step from start.
func Traces(n int, start time.Time, step time.Duration) []Trace {
	var ts []Trace
	for i := range n {
		ts = append(ts, Trace{ID: fmt.Sprintf("%032x", i+1), Start: start.Add(time.Duration(i) * step).UnixMicro(), Dur: int64(1000 + 37*i)})
	}
	return ts
}

// Server answers /api/services and /api/traces. Its fields may be changed
// between requests, not during one.
type Server struct {
	mu       sync.Mutex
	Traces   []Trace
	Services []string
	Token    string // required bearer token, when set
	DupFirst bool   // answer the first trace of each answer twice
	// IgnoreWindow answers the newest traces up to limit whatever the
	// search's start and end, as a broken server or proxy might.
	IgnoreWindow bool
	// Copies answers limit copies of the first trace that matches.
	Copies bool
	// Delay is how long each search takes to answer.
	Delay    time.Duration
	Fail     int // answer 503 to this many requests first
	Requests int
	Searches []string // the query strings of /api/traces
}

// ServeHTTP answers as Jaeger's query service does.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Requests++
	if f.Fail > 0 {
		f.Fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":%d,"msg":%q}]}`, code, msg)
	}
	if f.Token != "" && r.Header.Get("Authorization") != "Bearer "+f.Token {
		// Quotes what it was sent, as careless proxies do.
		fail(http.StatusUnauthorized, "bad credentials: "+r.Header.Get("Authorization"))
		return
	}
	switch r.URL.Path {
	case "/api/services":
		b, _ := json.Marshal(f.Services)
		fmt.Fprintf(w, `{"data":%s,"total":%d,"limit":0,"offset":0,"errors":null}`, b, len(f.Services))
	case "/api/traces":
		f.Searches = append(f.Searches, r.URL.RawQuery)
		q := r.URL.Query()
		if q.Get("service") == "" {
			fail(http.StatusBadRequest, "parameter 'service' is required")
			return
		}
		if q.Get("operation") == "boom" {
			fail(http.StatusInternalServerError, "elasticsearch: search_phase_execution_exception")
			return
		}
		start, err1 := strconv.ParseInt(q.Get("start"), 10, 64)
		end, err2 := strconv.ParseInt(q.Get("end"), 10, 64)
		limit, err3 := strconv.Atoi(q.Get("limit"))
		if err := errors.Join(err1, err2, err3); err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		var in []Trace
		if slices.Contains(f.Services, q.Get("service")) {
			for _, t := range f.Traces {
				if f.IgnoreWindow || t.Start >= start && t.Start <= end {
					in = append(in, t)
				}
			}
		}
		sort.SliceStable(in, func(i, j int) bool { return in[i].Start > in[j].Start })
		in = in[:min(len(in), limit)]
		if f.Copies && len(in) > 0 {
			for i := range in {
				in[i] = in[0]
			}
			for len(in) < limit {
				in = append(in, in[0])
			}
		}
		if f.Delay > 0 {
			time.Sleep(f.Delay)
		}
		var parts []string
		for i, t := range in {
			parts = append(parts, t.JSON())
			if i == 0 && f.DupFirst {
				parts = append(parts, t.JSON())
			}
		}
		fmt.Fprintf(w, `{"data":[%s],"total":%d,"limit":0,"offset":0,"errors":null}`, strings.Join(parts, ","), len(parts))
	default:
		http.NotFound(w, r)
	}
}
