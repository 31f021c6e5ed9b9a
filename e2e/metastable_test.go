package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/histogram"
	"github.com/tunetimeout/tunetimeout/internal/mixture"
	"github.com/tunetimeout/tunetimeout/recommend"
	"github.com/tunetimeout/tunetimeout/report"
	"github.com/tunetimeout/tunetimeout/simulate"
	"github.com/tunetimeout/tunetimeout/target"
)

// The closed loop on a real system (issue 34, "Proven on a real system"),
// scaled to run in about 50 s: the worked example's latency served by a
// Go server of metaWorkers workers and an unbounded queue on loopback at
// 85.5 % busy, a client running the emitted Go snippet's Do at a fixed
// rate, a 3x slowdown of 5 s after 6 s, judged in windows of 2 s as the
// simulator judges its own (recovered: 3 normal windows in a row, and
// normal from there to the end, within 10 s of the trigger's end).
const (
	metaWorkers       = 15
	metaRate          = 400.0
	metaWindow        = 2 * time.Second
	metaTriggerAt     = 6 * time.Second
	metaRecoverWithin = 10 * time.Second
	metaDuration      = 25 * time.Second
	// metaTolerance is how far the real recovery time may lie from the
	// simulated one: the resolution of both is the window, and the real
	// system adds its scheduling to the service times.
	metaTolerance = 3 * metaWindow
)

// metaClientMain runs DefaultPolicy of the emitted snippet (its per-try
// timeout, deadline and backoff) with -attempts and -budget applied, at
// -rate Poisson arrivals for -duration, and prints per window of
// arrivals the requests, those answered 200 and the attempts they made.
// The client's bulkhead (MaxConnsPerHost) is lifted: the model has none,
// the server's queue is the only one.
const metaClientMain = `package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"snippetrun/backendclient"
)

type counterKey struct{}

type counting struct{ next http.RoundTripper }

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if n, ok := r.Context().Value(counterKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
	return c.next.RoundTrip(r)
}

func main() {
	url := flag.String("url", "", "")
	rate := flag.Float64("rate", 400, "")
	duration := flag.Duration("duration", 25*time.Second, "")
	window := flag.Duration("window", 2*time.Second, "")
	attempts := flag.Int("attempts", 0, "")
	budget := flag.Float64("budget", 0, "")
	seed := flag.Uint64("seed", 1, "")
	flag.Parse()
	client := backendclient.NewClient()
	tr := client.Transport.(*http.Transport)
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = 0, 2000
	client.Transport = counting{next: tr}
	p := backendclient.DefaultPolicy
	if *attempts > 0 {
		p.Attempts = *attempts
	}
	p.Budget = nil
	if *budget > 0 {
		p.Budget = &backendclient.Budget{Ratio: *budget}
	}
	n := int((*duration + *window - 1) / *window)
	arrived, ok, sent := make([]int64, n), make([]int64, n), make([]int64, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	r := rand.New(rand.NewPCG(*seed, 7))
	start := time.Now()
	next := time.Duration(0)
	for {
		next += time.Duration(r.ExpFloat64() / *rate * float64(time.Second))
		if next >= *duration {
			break
		}
		time.Sleep(time.Until(start.Add(next)))
		w := int(next / *window)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var count atomic.Int64
			ctx := context.WithValue(context.Background(), counterKey{}, &count)
			req, _ := http.NewRequestWithContext(ctx, "GET", *url, nil)
			good := int64(0)
			resp, err := backendclient.Do(ctx, client, req, p)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					good = 1
				}
			}
			mu.Lock()
			arrived[w]++
			ok[w] += good
			sent[w] += count.Load()
			mu.Unlock()
		}()
	}
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(map[string][]int64{"arrived": arrived, "ok": ok, "attempts": sent})
}
`

// metaServer is the dependency: workers serve a FIFO queue without bound,
// each call for a time drawn from the worked example's latency, x factor
// when it starts in [slowFrom, slowTo); a call whose caller gave up (its
// connection closed) is served all the same unless dropExpired.
type metaServer struct {
	queue            chan metaJob
	dropExpired      bool
	slowFrom, slowTo time.Time
	factor           float64
	mu               sync.Mutex
	r                *rand.Rand
	samples          []time.Duration
	served, dropped  int64
}

type metaJob struct {
	ctx  context.Context
	done chan struct{}
}

func (s *metaServer) worker() {
	for j := range s.queue {
		if s.dropExpired && j.ctx.Err() != nil {
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
			close(j.done)
			continue
		}
		s.mu.Lock()
		d := s.samples[s.r.IntN(len(s.samples))]
		s.served++
		s.mu.Unlock()
		if now := time.Now(); !now.Before(s.slowFrom) && now.Before(s.slowTo) {
			d = time.Duration(float64(d) * s.factor)
		}
		time.Sleep(d)
		close(j.done)
	}
}

func (s *metaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j := metaJob{ctx: r.Context(), done: make(chan struct{})}
	s.queue <- j
	select {
	case <-j.done:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	}
}

// metaRun is one run of the real system: the windows the client reports.
type metaRun struct {
	Arrived, OK, Attempts []int64
}

// metaJudge judges the windows as simulate.RunLoop does: the normal state
// from the windows before the trigger (the first left out); after the
// trigger's end a window is normal within 1 % of its success share and
// 0.01 of its attempts per request; recovered when RecoveryStreak windows
// in a row are, and the rest together too, within recoverWithin. The
// windows whose requests may still have been running at the end (the
// deadline) are not judged.
func metaJudge(m metaRun, trigTo time.Duration) (recovered bool, recovery time.Duration, final float64) {
	var bn, bok, batt int64
	first := int(metaTriggerAt / metaWindow)
	for i := 1; i < first; i++ {
		bn, bok, batt = bn+m.Arrived[i], bok+m.OK[i], batt+m.Attempts[i]
	}
	normal := func(n, ok, att int64) bool {
		return n > 0 && float64(ok)/float64(n) >= float64(bok)/float64(bn)-simulate.GoodputTolerance &&
			float64(att)/float64(n) <= float64(batt)/float64(bn)+simulate.AttemptsTolerance
	}
	after := int((trigTo + metaWindow - 1) / metaWindow)
	last := int((metaDuration - time.Second - time.Millisecond) / metaWindow) // a window whose requests all ended
	lastBad := trigTo
	streak := 0
	var n, ok, att int64
	for i := after; i < last; i++ {
		final = float64(m.OK[i]) / float64(max(1, m.Arrived[i]))
		if streak < simulate.RecoveryStreak {
			if !normal(m.Arrived[i], m.OK[i], m.Attempts[i]) {
				lastBad, streak, n, ok, att = time.Duration(i+1)*metaWindow, 0, 0, 0, 0
				continue
			}
			streak++
		}
		n, ok, att = n+m.Arrived[i], ok+m.OK[i], att+m.Attempts[i]
	}
	if streak < simulate.RecoveryStreak || !normal(n, ok, att) {
		return false, -1, final
	}
	recovery = lastBad - trigTo
	return recovery <= metaRecoverWithin, recovery, final
}

// TestMetastableRealServer: the simulator predicts that 3 attempts
// without a budget do not recover from the slowdown and that its cure
// does; the real server and the emitted Go snippet do the same, and the
// recovery with the cure lies within metaTolerance of the simulated one.
func TestMetastableRealServer(t *testing.T) {
	if os.Getenv("TUNETIMEOUT_E2E") != "1" {
		t.Skip("a real server loaded for 50 s: set TUNETIMEOUT_E2E=1")
	}
	if os.Getenv(loadEnv) != "" {
		t.Skip("the recovery times of a real system are not comparable on a machine kept busy on purpose (" + loadEnv + ")")
	}
	goBin := requireGo(t)

	// The prediction.
	samples := mixture.Default().Generate(1, 200_000)
	h := histogram.New()
	for _, d := range samples {
		h.Record(d)
	}
	rec, err := recommend.Recommend(h, recommend.DefaultOptions())
	require.NoError(t, err)
	pol, err := recommend.NewPolicy(h, rec, recommend.PolicyOptions{Deadline: time.Second, Attempts: 3, Idempotent: true})
	require.NoError(t, err)
	trig, err := simulate.ParseTrigger("slow:3x:5s")
	require.NoError(t, err)
	o := simulate.LoopOptions{Workers: metaWorkers, Rate: metaRate, Trigger: trig, TriggerAt: metaTriggerAt, Window: metaWindow,
		RecoverWithin: metaRecoverWithin, Duration: metaDuration, Seed: 1}
	stuck, err := simulate.RunLoop(context.Background(), h, pol, o)
	require.NoError(t, err)
	require.False(t, stuck.Recovered, "precondition: the simulator predicts no recovery")
	cure, err := simulate.FindCure(context.Background(), h, pol, o)
	require.NoError(t, err)
	require.NotNil(t, cure)
	t.Logf("simulated: 3 attempts, no budget: not recovered (%s); the cure: %s, recovered %v after the trigger", stuck.Reason, cure.Kind, cure.Result.Recovery)

	// The client: the emitted Go snippet of the same policy.
	r := metaReport(t)
	bin := buildMetaClient(t, goBin, r)
	trigTo := metaTriggerAt + trig.Duration

	run := func(name string, dropExpired bool, args ...string) metaRun {
		s := &metaServer{queue: make(chan metaJob, 1<<20), dropExpired: dropExpired, factor: trig.Factor,
			r: rand.New(rand.NewPCG(2, 3)), samples: samples}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		for range metaWorkers {
			go s.worker()
		}
		defer func() {
			srv.Close()
			close(s.queue)
		}()
		start := time.Now()
		s.slowFrom, s.slowTo = start.Add(metaTriggerAt), start.Add(trigTo)
		ctx, cancel := context.WithTimeout(context.Background(), metaDuration+30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-url", "http://" + ln.Addr().String() + "/", "-rate", strconv.FormatFloat(metaRate, 'f', -1, 64),
			"-duration", metaDuration.String(), "-window", metaWindow.String()}, args...)...)
		cmd.Env = clientEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%s\n%s", out, stderr.String())
		var m metaRun
		var raw map[string][]int64
		require.NoError(t, json.Unmarshal(out, &raw))
		m.Arrived, m.OK, m.Attempts = raw["arrived"], raw["ok"], raw["attempts"]
		t.Logf("%s: served %d, dropped %d; per window of %s: arrived %v, ok %v, attempts %v", name, s.served, s.dropped, metaWindow, m.Arrived, m.OK, m.Attempts)
		return m
	}

	// 3 attempts, no budget: stays down.
	m := run("3 attempts, no budget", false)
	recovered, _, final := metaJudge(m, trigTo)
	assert.False(t, recovered, "the real system recovered where the simulator said it would not")
	assert.Less(t, final, 0.5, "still saturated at the end: most requests fail")

	// The cure the tool recommends.
	var args []string
	drop := false
	switch cure.Kind {
	case simulate.CureDropExpired:
		drop = true
	case simulate.CureRetryBudget:
		args = append(args, "-budget", strconv.FormatFloat(cure.RetryBudget, 'f', -1, 64))
	case simulate.CureAttempts:
		args = append(args, "-attempts", strconv.Itoa(cure.Attempts))
	default:
		t.Skipf("the cure %s is not applied by this test", cure.Kind)
	}
	m = run("the cure: "+cure.Kind, drop, args...)
	recovered, recovery, final := metaJudge(m, trigTo)
	assert.True(t, recovered, "the real system did not recover with the cure")
	assert.Greater(t, final, 0.95)
	assert.InDelta(t, cure.Result.Recovery.Seconds(), recovery.Seconds(), metaTolerance.Seconds(),
		"recovery: real %v, simulated %v", recovery, cure.Result.Recovery)
	t.Logf("recovery with the cure: real %v, simulated %v (tolerance %v)", recovery, cure.Result.Recovery, metaTolerance)
}

// metaReport is the call policy of the prediction, from the worked
// example: a deadline of 1s, 3 idempotent attempts, no budget.
func metaReport(t *testing.T) *report.Report {
	t.Helper()
	o := analysis.Options{
		Inputs:    []string{filepath.Join("..", "testdata", "mixture.csv")},
		Recommend: recommend.DefaultOptions(),
		Policy:    recommend.PolicyOptions{Deadline: time.Second, Attempts: 3, Idempotent: true},
	}
	r, err := analysis.Run(context.Background(), o, nil)
	require.NoError(t, err)
	require.Len(t, r.Groups, 1)
	require.Equal(t, 0.8, r.Groups[0].Policy.PerTryTimeoutSeconds)
	return r
}

func buildMetaClient(t *testing.T, goBin string, r *report.Report) string {
	t.Helper()
	dir := t.TempDir()
	src := renderSnippet(t, "go", r, target.Options{})
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "backendclient"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module snippetrun\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "backendclient", "client.go"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(metaClientMain), 0o644))
	bin := filepath.Join(dir, "metaclient")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = clientEnv("GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the client: %s", out)
	return bin
}

func requireGo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(fmt.Sprintf("go is not on PATH: %v", err))
	}
	return p
}
