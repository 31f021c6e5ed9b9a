package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tunetimeout/tunetimeout/analysis"
	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// caddyCall is what the upstream was told to do for one request through
// Caddy, and what was measured.
type caddyCall struct {
	route  string        // "/shop/items/{id}" or "/shop/cart"
	delay  time.Duration // how long the upstream waits before answering
	status int           // 200, or 500 for a fast failure
	gone   bool          // the client gives up after caddyGiveUp: Caddy logs status 0
	dead   bool          // sent to a route whose upstream refuses connections: 502
	took   time.Duration // measured by the upstream handler
	rtt    time.Duration // measured by the client
	sent   time.Time     // when the client sent a gone call
}

// caddyGiveUp is how long a client that goes away waits.
const caddyGiveUp = 300 * time.Millisecond

// caddyPlan returns n calls: mostly 5-30 ms, 12 % 100-300 ms, about 3 %
// fast 500s; gone calls whose client leaves after caddyGiveUp while the
// upstream sleeps 1.5 s; dead calls to an upstream that is not there.
func caddyPlan(n, gone, dead int, seed uint64) []caddyCall {
	r := rand.New(rand.NewPCG(seed, 3))
	calls := make([]caddyCall, n)
	for i := range calls {
		c := &calls[i]
		c.route, c.status = "/shop/items/{id}", 200
		if i%3 == 1 {
			c.route = "/shop/cart"
		}
		switch p := r.Float64(); {
		case p < 0.03:
			c.status, c.delay = 500, time.Duration(r.IntN(2))*time.Millisecond
		case p < 0.15:
			c.delay = time.Duration(100+r.IntN(200)) * time.Millisecond
		default:
			c.delay = time.Duration(5+r.IntN(25)) * time.Millisecond
		}
	}
	for k := range gone {
		c := &calls[(k*n)/gone+n/(2*gone)]
		c.status, c.delay, c.gone = 200, 1500*time.Millisecond, true
	}
	for k := range dead {
		c := &calls[(k*n)/dead+n/(3*dead)]
		if !c.gone {
			c.dead, c.route, c.status, c.delay = true, "/shop/legacy", 502, 0
		}
	}
	return calls
}

const caddyfile = `{
	admin off
	auto_https off
}

http://127.0.0.1:{{port}} {
	log {
		output stderr
	}
	handle /shop/legacy* {
		reverse_proxy 127.0.0.1:{{deadport}}
	}
	handle {
		reverse_proxy {{upstream}}
	}
}
`

// TestCaddyAccessLog runs calls through a real Caddy (Debian's caddy
// package) reverse proxy in front of a Go upstream. Caddy writes its own
// messages, its error log and its access log to one stream (stderr), as it
// does by default: the decoder must find its format past the startup
// messages, skip the error log's copy of failed requests, and read the
// status 0 that Caddy logs for a client that left before the answer as a
// censored sample. The analysis of that log is compared with what Caddy
// itself logged, which the upstream's and the client's clocks bracket.
func TestCaddyAccessLog(t *testing.T) {
	bin := requireBinary(t, "caddy", "caddy")
	const (
		requests    = 1500
		gone        = 6
		dead        = 5
		concurrency = 16
	)
	calls := caddyPlan(requests, gone, dead, 20261201)
	var tookMu sync.Mutex

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		i, err := strconv.Atoi(r.URL.Query().Get("i"))
		if err != nil || i < 0 || i >= len(calls) {
			http.Error(w, "no such call", http.StatusBadRequest)
			return
		}
		c := &calls[i]
		select { // a client that leaves makes Caddy cancel this request
		case <-time.After(c.delay):
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(c.status)
		took := time.Since(start)
		tookMu.Lock()
		c.took = took
		tookMu.Unlock()
	}))
	defer upstream.Close()

	dir := t.TempDir()
	port, deadPort := freePort(t), freePort(t)
	conf := strings.NewReplacer("{{port}}", strconv.Itoa(port), "{{deadport}}", strconv.Itoa(deadPort),
		"{{upstream}}", strings.TrimPrefix(upstream.URL, "http://")).Replace(caddyfile)
	confPath := filepath.Join(dir, "Caddyfile")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	logPath := filepath.Join(dir, "caddy.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()

	cmd := exec.Command(bin, "run", "--config", confPath, "--adapter", "caddyfile")
	// Caddy keeps its data and autosaved config under these: the test's own.
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	stdout := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, logFile
	require.NoError(t, cmd.Start())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM) // Caddy logs its shutdown
			_ = cmd.Wait()
		}
	}
	defer stop()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitForPort(t, addr, stdout)

	url := func(i int) string {
		c := calls[i]
		switch {
		case c.dead:
			return fmt.Sprintf("http://%s/shop/legacy?i=%d", addr, i)
		case c.route == "/shop/cart":
			return fmt.Sprintf("http://%s/shop/cart?i=%d", addr, i)
		}
		return fmt.Sprintf("http://%s/shop/items/%d?i=%d", addr, 100+i%40, i)
	}
	started := time.Now()
	var ordinary []int
	for i, c := range calls {
		if !c.gone {
			ordinary = append(ordinary, i)
		}
	}
	got, rtts := sendCalls(t, len(ordinary), concurrency, func(k int) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, url(ordinary[k]), nil)
		req.Header.Set("User-Agent", `tunetimeout e2e (caddy; "quoted")`)
		return req
	})
	for k, i := range ordinary {
		calls[i].rtt = rtts[k]
		want := calls[i].status
		require.Equal(t, want, got[k], "call %d", i)
	}
	// The clients that give up, at once, each after caddyGiveUp.
	impatient := &http.Client{Timeout: caddyGiveUp, Transport: &http.Transport{Proxy: nil}}
	var wg sync.WaitGroup
	for i := range calls {
		if !calls[i].gone {
			continue
		}
		wg.Go(func() {
			calls[i].sent = time.Now()
			resp, err := impatient.Get(url(i))
			calls[i].rtt = time.Since(calls[i].sent)
			if err == nil {
				resp.Body.Close()
				t.Errorf("call %d was answered (%d) before the client gave up", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	tookMu.Lock()
	tookMu.Unlock()
	t.Logf("%d calls through Caddy in %v", len(calls), time.Since(started).Round(time.Millisecond))

	// Caddy writes an access log entry when a request ends: wait for all.
	waitUntil(time.Minute, 20*time.Millisecond, func() bool { return caddyCount(logPath, `"msg":"handled request"`) >= len(calls) })
	finished := time.Now() // every entry is written
	stop()
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Equal(t, len(calls), caddyCount(logPath, `"msg":"handled request"`), "caddy said:\n%s", stdout.String())
	require.False(t, strings.Contains(lines[0], `"duration"`), "the log starts with Caddy's own messages: %s", lines[0])
	if out := os.Getenv("TUNETIMEOUT_CADDY_SAMPLE"); out != "" {
		// Keeps a part of the log for ingest's conformance corpus: go test
		// ./e2e -run TestCaddyAccessLog with
		// TUNETIMEOUT_CADDY_SAMPLE=$PWD/ingest/testdata/conformance/caddy-2.6.log
		require.NoError(t, os.WriteFile(out, []byte(caddySample(lines, dir)), 0o644))
	}

	// What Caddy itself measured, read from each line by the test, and
	// checked against the clocks of the upstream and the client.
	logged := make([]caddyEntry, len(lines))
	for n, line := range lines {
		e, err := parseCaddyLine(line)
		require.NoError(t, err)
		logged[n] = e
	}
	checkCaddyClocks(t, logged, calls, started, finished)

	t.Run("ingest", func(t *testing.T) { checkCaddySamples(t, logPath, lines, logged, calls) })
	if t.Failed() {
		return
	}

	rep, err := analysis.Run(context.Background(), analysis.Options{
		Inputs:    []string{logPath},
		Format:    "auto",
		Ingest:    ingest.Options{By: []string{"route"}},
		Recommend: recommend.DefaultOptions(),
	}, nil)
	require.NoError(t, err)
	// Caddy's own messages are not requests. Until analysis counts
	// *ingest.NotRequestError apart, they arrive as bad records: nothing
	// else may.
	notRequests := len(lines) - len(calls)
	assert.LessOrEqual(t, rep.Input.BadRecords, int64(notRequests))
	for _, e := range rep.Input.BadExamples {
		assert.Contains(t, e, "is not a request (caddy ")
	}
	var fast500, dead502, goneCount int
	for _, c := range calls {
		switch {
		case c.gone:
			goneCount++
		case c.dead:
			dead502++
		case c.status == 500:
			fast500++
		}
	}
	var censored, excluded5xx int64
	for _, g := range rep.Groups {
		censored += g.Censored
		excluded5xx += g.Excluded[ingest.Excluded5xx]
		// Each percentile is Caddy's own: the order statistic of the
		// duration Caddy logged for the group's calls (the gone clients'
		// status 0, censored, included; the 5xx not), up to the
		// histogram's precision. The upstream's and the client's of the
		// same rank are logged for the reader.
		var caddyTimes, upstreamTimes, clientTimes []time.Duration
		for _, e := range logged {
			if !e.request {
				continue
			}
			c := calls[e.call]
			if c.route != g.Name || c.status >= 500 {
				continue
			}
			caddyTimes = append(caddyTimes, e.duration)
			if c.gone {
				upstreamTimes = append(upstreamTimes, caddyGiveUp) // the client's patience
			} else {
				upstreamTimes = append(upstreamTimes, c.took)
			}
			clientTimes = append(clientTimes, c.rtt)
		}
		caddyTimes, upstreamTimes, clientTimes = sortedDurations(caddyTimes), sortedDurations(upstreamTimes), sortedDurations(clientTimes)
		require.EqualValues(t, len(caddyTimes), g.Samples, "group %s", g.Name)
		for _, p := range g.Percentiles {
			toolSays, caddySays := reportDuration(p.Seconds), orderStat(caddyTimes, p.Quantile)
			t.Logf("group %s p%v: upstream %v, Caddy duration %v, tool %v, client %v", g.Name, p.Quantile*100,
				orderStat(upstreamTimes, p.Quantile).Round(time.Microsecond), caddySays, toolSays, orderStat(clientTimes, p.Quantile).Round(time.Microsecond))
			assertHDR(t, caddySays, toolSays, "group %s p%v", g.Name, p.Quantile*100)
		}
	}
	t.Logf("upstream: %d fast 500s, %d clients gone, %d calls to a dead upstream; report: %d records, %d bad, %d censored, %d excluded as 5xx",
		fast500, goneCount, dead502, rep.Input.Records, rep.Input.BadRecords, censored, excluded5xx)
	assert.EqualValues(t, goneCount, censored, "status 0 (the client gone) is censored")
	assert.EqualValues(t, fast500, excluded5xx, "the fast 500s are excluded")
	// The calls to the dead upstream are all 502s: their group is left out.
	assert.True(t, slices.ContainsFunc(rep.Input.Notes, func(n string) bool {
		return strings.Contains(n, `"/shop/legacy"`) && strings.Contains(n, fmt.Sprintf("%d status 5xx", dead502))
	}), "%v", rep.Input.Notes)
}

// caddyEntry is one line of Caddy's log, read by the test alone: an access
// log entry (request) or one of Caddy's other messages.
type caddyEntry struct {
	request  bool          // an access log entry: "msg":"handled request"
	call     int           // the call's index, from request.uri
	ts       time.Time     // when Caddy logged it: the request's end
	status   int           // 0 when the client went away
	duration time.Duration // Caddy's duration, to the ns
}

func parseCaddyLine(line string) (caddyEntry, error) {
	var raw struct {
		Msg     string      `json:"msg"`
		TS      json.Number `json:"ts"`
		Request struct {
			URI string `json:"uri"`
		} `json:"request"`
		Duration json.Number `json:"duration"`
		Status   int         `json:"status"`
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return caddyEntry{}, fmt.Errorf("%v: %s", err, line)
	}
	if raw.Msg != "handled request" {
		return caddyEntry{}, nil
	}
	e := caddyEntry{request: true, status: raw.Status}
	_, q, ok := strings.Cut(raw.Request.URI, "i=")
	if !ok {
		return e, fmt.Errorf("no call index in the uri: %s", line)
	}
	var err error
	if e.call, err = strconv.Atoi(q); err != nil {
		return e, fmt.Errorf("%v: %s", err, line)
	}
	ts, err1 := decimalNanos(raw.TS.String())
	d, err2 := decimalNanos(raw.Duration.String())
	if err := errors.Join(err1, err2); err != nil {
		return e, fmt.Errorf("%v: %s", err, line)
	}
	e.ts, e.duration = time.Unix(0, ts), time.Duration(d)
	return e, nil
}

// decimalNanos reads a decimal number of seconds ("0.292498662") as
// nanoseconds, exactly: no float rounds it.
func decimalNanos(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 9 {
		frac = frac[:9]
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	if err != nil {
		return 0, err
	}
	return sec*1e9 + ns, nil
}

// checkCaddyClocks checks what Caddy logged against the clocks of the
// client and the upstream, call by call. Caddy starts its clock when its
// handler gets the request, after the client sent it and before the
// upstream began; it reads it, and logs, when the handler returns, after
// the upstream's answer, before net/http flushes the answer to the client:
// an answered call's duration lies between the upstream's time and the
// client's round trip, however busy the machine. For a client that goes
// away, Caddy logs after the client left, caddyGiveUp after it sent the
// request, and started after it was sent: however late Caddy got the
// request, its own start (ts - duration) and end (ts) are those of the call.
func checkCaddyClocks(t *testing.T, logged []caddyEntry, calls []caddyCall, started, finished time.Time) {
	t.Helper()
	// ts is Caddy's wall clock and duration its monotonic one: they may
	// drift apart by NTP's slew, at most 500 ppm, over a call.
	const clocks = time.Millisecond
	seen := make([]bool, len(calls))
	var diffs []time.Duration // Caddy's duration - the upstream's time, for answered calls
	for _, e := range logged {
		if !e.request {
			continue
		}
		require.False(t, seen[e.call], "call %d logged twice", e.call)
		seen[e.call] = true
		c := calls[e.call]
		assert.False(t, e.ts.Before(started) || e.ts.After(finished),
			"call %d: Caddy logged it at %v, not between the first call and the last entry (%v, %v)", e.call, e.ts, started, finished)
		switch {
		case c.gone:
			assert.Equal(t, 0, e.status, "call %d: the client left", e.call)
			assert.False(t, e.ts.Before(c.sent.Add(caddyGiveUp)),
				"call %d: Caddy logged it at %v, before the client left at %v", e.call, e.ts, c.sent.Add(caddyGiveUp))
			assert.False(t, e.ts.Add(-e.duration).Before(c.sent.Add(-clocks)),
				"call %d: Caddy started it at %v, before the client sent it at %v", e.call, e.ts.Add(-e.duration), c.sent)
		case c.dead:
			assert.Equal(t, 502, e.status, "call %d", e.call)
			assert.LessOrEqual(t, e.duration, c.rtt, "call %d: Caddy %v, the client waited %v", e.call, e.duration, c.rtt)
		default:
			assert.Equal(t, c.status, e.status, "call %d", e.call)
			assert.GreaterOrEqual(t, e.duration, c.took, "call %d: Caddy %v, the upstream took %v", e.call, e.duration, c.took)
			assert.LessOrEqual(t, e.duration, c.rtt, "call %d: Caddy %v, the client waited %v", e.call, e.duration, c.rtt)
			diffs = append(diffs, e.duration-c.took)
		}
	}
	// How much a busy machine adds to Caddy's time, for the reader.
	slices.Sort(diffs)
	t.Logf("Caddy's duration - the upstream's time over %d calls: min %v, median %v, p90 %v, p99 %v, max %v", len(diffs),
		diffs[0], diffs[len(diffs)/2], diffs[len(diffs)*90/100], diffs[len(diffs)*99/100], diffs[len(diffs)-1])
}

// checkCaddySamples decodes the log, detecting its format, and checks each
// access log entry against the line Caddy wrote: the latency is Caddy's
// duration and the time its ts, to the ns the decoder keeps, the status is
// Caddy's (0, censored, for a client gone), the group the call's route.
// Caddy's other lines are told apart: its messages, and the error log's
// copy of each call to the dead upstream.
func checkCaddySamples(t *testing.T, logPath string, lines []string, logged []caddyEntry, calls []caddyCall) {
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	d, err := ingest.NewDecoder("auto", f, logPath, ingest.Options{By: []string{"route"}})
	require.NoError(t, err, "auto-detection reads past Caddy's startup messages")
	reasons := map[string]int{}
	for n := 0; ; n++ {
		s, err := d.Next()
		if errors.Is(err, io.EOF) {
			require.Equal(t, len(lines), n)
			break
		}
		var nr *ingest.NotRequestError
		if errors.As(err, &nr) {
			reasons[nr.Reason]++
			assert.False(t, logged[n].request, lines[n])
			continue
		}
		require.NoError(t, err, lines[n])
		e := logged[n]
		require.True(t, e.request, lines[n])
		c := calls[e.call]
		assert.Equal(t, c.route, s.Group, lines[n])
		assert.Equal(t, e.duration, s.Latency, "call %d: Caddy's duration", e.call)
		assert.True(t, e.ts.Equal(s.Time), "call %d: ts %v, read as %v", e.call, e.ts, s.Time)
		assert.Equal(t, e.status, s.Status, "call %d", e.call)
		assert.Equal(t, c.gone, s.Censored, "call %d: status 0, the client left, is censored", e.call)
		assert.Empty(t, s.Excluded, lines[n])
	}
	t.Logf("lines that are not requests: %v", reasons)
	dead := 0
	for _, c := range calls {
		if c.dead {
			dead++
		}
	}
	assert.Equal(t, dead, reasons["caddy error log entry"], "one error log entry per call to the dead upstream")
	assert.Positive(t, reasons["caddy log message"], "Caddy's startup and shutdown messages")
}

// caddyCount counts the lines of a file that hold s.
func caddyCount(path, s string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			n++
		}
	}
	return n
}

// caddySample returns the lines kept for the conformance corpus, unchanged
// but for the test's directory: every line that is not an access log entry,
// every entry with a status other than 200, and the first 20 of status 200.
func caddySample(lines []string, dir string) string {
	var b strings.Builder
	ok := 0
	for _, l := range lines {
		keep := !strings.Contains(l, `"msg":"handled request"`) || !strings.Contains(l, `"status":200,`)
		if !keep && ok < 20 {
			keep = true
			ok++
		}
		if keep {
			b.WriteString(strings.ReplaceAll(l, dir, "/var/lib/tunetimeout-e2e"))
			b.WriteByte('\n')
		}
	}
	return b.String()
}
