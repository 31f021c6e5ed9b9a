// Package watch runs a job on a timer and serves the last report it built
// (docs/watch.md): the report as HTML and JSON, its numbers as Prometheus
// metrics, and health and readiness for whatever runs the process.
//
// A Watcher holds one report, the last good one, and what the last run
// did; a cycle replaces them, so memory does not grow with the cycles: the
// metrics are built from the report at each scrape (collector), never kept
// in gauges that would remember groups gone since.
package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/report"
)

// Defaults of the command's flags.
const (
	DefaultEvery  = 5 * time.Minute
	DefaultListen = "127.0.0.1:9847"
	// MinEvery is the shortest --every: a run reads a whole window from
	// the source, and a source asked more often than this is hammered.
	MinEvery = time.Second
)

// shutdownGrace bounds the wait for requests in flight at shutdown: below
// the 3 s the command gives a cancelled run before it exits anyway.
const shutdownGrace = 2 * time.Second

// Options configure a Watcher.
type Options struct {
	// Run is the job: one analysis, the window ending now. It is called
	// once per cycle, never twice at once.
	Run func(ctx context.Context) (*report.Report, error)
	// Every is the time from the start of one run to the start of the
	// next (Serve); a run that takes longer delays the next.
	Every time.Duration
	// Listen is the address to serve on, host:port ("127.0.0.1:0": any
	// free port, which Serve logs).
	Listen string
	// Timeouts are the timeouts configured in the clients:
	// tunetimeout_cut_off_ratio is exported for each, read from the
	// report's candidates, which must include them.
	Timeouts []time.Duration
	// Log receives one line per failed run and the address served; nil
	// discards them.
	Log io.Writer
	// Now is the clock of the run metrics; nil is time.Now.
	Now func() time.Time
}

// Watcher holds the last good report and what the last run did, and
// serves them (Handler).
type Watcher struct {
	o   Options
	reg *prometheus.Registry

	mu   sync.RWMutex
	good *report.Report // the last good report; nil before the first
	// pages are the good report rendered, each once (a flood of 2,000
	// requests that each rendered it anew took 15 GB): replaced with it.
	pages map[string]*page
	last  lastRun

	// heavy holds a slot for each request that writes a report or the
	// metrics: beyond maxHeavy at once a request is turned away at once
	// (503, Retry-After), so that a flood neither piles up work nor
	// stalls the health endpoints, which take no slot.
	heavy chan struct{}
}

// maxHeavy is how many requests for a report or the metrics are served at
// once.
const maxHeavy = 32

// maxConns is how many connections are served at once; more wait in the
// kernel's queue to be accepted (netutil.LimitListener), so that a flood
// of connections costs neither goroutines nor memory, and a connection
// already open (a load balancer's health checker keeps one) is not queued
// behind hundreds of others. A request waits at most ReadHeaderTimeout for
// its header.
const maxConns = 128

// page is a report rendered once, when first asked for.
type page struct {
	once sync.Once
	body []byte
	err  error
}

// lastRun is what the last run did, successful or not.
type lastRun struct {
	done     bool // a run has ended
	ok       bool
	end      time.Time
	duration time.Duration
}

// New returns a Watcher that has not run yet: not ready.
func New(o Options) (*Watcher, error) {
	if o.Run == nil {
		return nil, errors.New("watch: no job to run")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	w := &Watcher{o: o, reg: prometheus.NewRegistry(), heavy: make(chan struct{}, maxHeavy)}
	if err := w.reg.Register(collector{w, newMetricDescs()}); err != nil {
		return nil, err
	}
	return w, nil
}

// Cycle runs the job once. A good report replaces the last one; a failed
// run keeps it, marks the run failed and logs one line. A run stopped by
// ctx changes nothing. The error is the run's.
func (w *Watcher) Cycle(ctx context.Context) error {
	start := w.o.Now()
	r, err := w.o.Run(ctx)
	if err == nil && r == nil {
		err = errors.New("the job returned no report")
	}
	if ctx.Err() != nil {
		// Stopping: the run was cut short, not failed.
		return ctx.Err()
	}
	end := w.o.Now()
	w.mu.Lock()
	w.last = lastRun{done: true, ok: err == nil, end: end, duration: end.Sub(start)}
	if err == nil {
		w.good, w.pages = r, map[string]*page{}
	}
	kept := w.good != nil
	w.mu.Unlock()
	if err != nil {
		what := "no report yet"
		if kept {
			what = "serving the last good report"
		}
		// One line, whatever the error holds (joined errors, names
		// from the data).
		msg := strings.ReplaceAll(escape.Lines(err.Error()), "\n", "; ")
		fmt.Fprintf(w.o.Log, "tunetimeout: watch: run failed (%s): %s\n", what, msg)
	}
	return err
}

// Report returns the last good report, nil before the first.
func (w *Watcher) Report() *report.Report {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.good
}

// snapshot returns the last good report and the last run together.
func (w *Watcher) snapshot() (*report.Report, lastRun) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.good, w.last
}

// Handler serves the endpoints (docs/watch.md):
//
//	/metrics       the last good report's numbers and the last run's
//	/              the last good report as HTML
//	/report.json   the last good report as JSON (report.WriteJSON)
//	/-/healthy     200 while serving
//	/-/ready       200 once a run succeeded, 503 before
func (w *Watcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", w.bounded(promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})))
	mux.HandleFunc("GET /{$}", w.serveReport("text/html; charset=utf-8", report.WriteHTML))
	mux.HandleFunc("GET /report.json", w.serveReport("application/json", report.WriteJSON))
	mux.HandleFunc("GET /-/healthy", func(rw http.ResponseWriter, _ *http.Request) {
		io.WriteString(rw, "tunetimeout watch is healthy.\n")
	})
	mux.HandleFunc("GET /-/ready", func(rw http.ResponseWriter, _ *http.Request) {
		if w.Report() == nil {
			http.Error(rw, "tunetimeout watch is not ready: no run has succeeded yet.", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(rw, "tunetimeout watch is ready.\n")
	})
	return mux
}

// bounded serves h in one of the heavy slots, or turns the request away
// at once when they are all taken.
func (w *Watcher) bounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case w.heavy <- struct{}{}:
			defer func() { <-w.heavy }()
			h.ServeHTTP(rw, r)
		default:
			rw.Header().Set("Retry-After", "1")
			http.Error(rw, fmt.Sprintf("tunetimeout watch is busy: %d requests for reports or metrics are being served; try again in a second.", maxHeavy), http.StatusServiceUnavailable)
		}
	})
}

// rendered returns the last good report written with write, rendering it
// once per report and kind (the first request renders, the others wait for
// it); nil bytes when there is no report yet.
func (w *Watcher) rendered(kind string, write report.Writer) ([]byte, error) {
	w.mu.Lock()
	r, p := w.good, w.pages[kind]
	if r != nil && p == nil {
		p = &page{}
		w.pages[kind] = p
	}
	w.mu.Unlock()
	if r == nil {
		return nil, nil
	}
	p.once.Do(func() {
		var b bytes.Buffer
		p.err = write(&b, r)
		p.body = b.Bytes()
	})
	return p.body, p.err
}

// serveReport writes the last good report with write, whole or not at all.
func (w *Watcher) serveReport(contentType string, write report.Writer) http.HandlerFunc {
	h := func(rw http.ResponseWriter, _ *http.Request) {
		body, err := w.rendered(contentType, write)
		switch {
		case err != nil:
			http.Error(rw, "the report could not be written: "+err.Error(), http.StatusInternalServerError)
			return
		case body == nil:
			http.Error(rw, "no run has succeeded yet: no report to show.", http.StatusServiceUnavailable)
			return
		}
		hd := rw.Header()
		hd.Set("Content-Type", contentType)
		hd.Set("X-Content-Type-Options", "nosniff")
		// As the page's own meta element: nothing is loaded from anywhere.
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		_, _ = rw.Write(body)
	}
	return w.bounded(http.HandlerFunc(h)).ServeHTTP
}

// Serve listens on o.Listen, runs the job at once and then every o.Every,
// and serves the last good report until ctx is done; then it stops the
// run in progress, lets the requests in flight end (for at most 2 s) and
// returns nil. It returns an error when it cannot listen or serve.
func Serve(ctx context.Context, o Options) error {
	if o.Every <= 0 {
		return fmt.Errorf("watch: the interval %v is not positive", o.Every)
	}
	w, err := New(o)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           w.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A reader too slow to take a report in a minute gives its slot
		// back.
		WriteTimeout:   time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(netutil.LimitListener(ln, maxConns)) }()
	fmt.Fprintf(w.o.Log, "tunetimeout: watch: serving on http://%s/ (a run every %v)\n", ln.Addr(), o.Every)

	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		tick := time.NewTicker(o.Every)
		defer tick.Stop()
		for {
			_ = w.Cycle(runCtx) // a failure is logged and kept in the metrics
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	stopRuns()
	<-ran
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
