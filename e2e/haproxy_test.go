package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// call is what the backend was told to do for one request, and what it
// measured doing it.
type call struct {
	route  string        // "/users/{id}" or "/orders"
	delay  time.Duration // how long the handler waits before answering
	status int           // 200, or 500 for a fast failure
	hang   bool          // delay is past HAProxy's "timeout server 1s"
	took   time.Duration // measured by the handler, from its start to the answer
	rtt    time.Duration // measured by the client, from sending to the end of the body
}

// plan returns n calls of a seeded mixture: mostly 5-30 ms, 12 % 100-300
// ms, about 3 % fast 500s, and `hangs` calls that sleep hangFor, past
// "timeout server 1s", so that HAProxy answers 504 with state sH.
func plan(n, hangs int, seed uint64) []call {
	r := rand.New(rand.NewPCG(seed, 1))
	calls := make([]call, n)
	for i := range calls {
		c := &calls[i]
		c.route, c.status = "/users/{id}", 200
		if i%10 == 3 {
			c.route = "/orders"
		}
		switch p := r.Float64(); {
		case p < 0.03:
			c.status = 500
		case p < 0.15:
			c.delay = time.Duration(100+r.IntN(200)) * time.Millisecond
		default:
			c.delay = time.Duration(5+r.IntN(25)) * time.Millisecond
		}
	}
	for k := range hangs {
		c := &calls[(k*n)/hangs+n/(2*hangs)]
		c.status, c.delay, c.hang = 200, hangFor, true
	}
	return calls
}

// logSink receives HAProxy's syslog datagrams on a UDP port of 127.0.0.1.
//
// Not a unix datagram socket: Linux queues at most net.unix.max_dgram_qlen
// datagrams on one (10 here), HAProxy drops a log it cannot send at once
// (its DroppedLogs counter), and a first version of this test lost 4 of
// 3,001 lines that way. A UDP socket queues by bytes, up to its read buffer.
type logSink struct {
	conn  *net.UDPConn
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func listenLog(t *testing.T) *logSink {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	require.NoError(t, conn.SetReadBuffer(4<<20))
	s := &logSink{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			line := strings.TrimRight(string(buf[:n]), "\n\x00")
			s.mu.Lock()
			s.lines = append(s.lines, line)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-s.done })
	return s
}

func (s *logSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lines)
}

// TestHAProxyAccessLog runs a seeded mixture of calls through a real HAProxy
// with "option httplog" logging over syslog to a UDP port of the test (so
// the lines carry HAProxy's own RFC 3164 syslog header), then analyses the
// log it wrote and checks the result against what the backend measured.
func TestHAProxyAccessLog(t *testing.T) {
	bin := requireBinary(t, "haproxy", "haproxy")
	const (
		requests    = 2500
		hangs       = 8
		concurrency = 16
	)
	calls := plan(requests, hangs, 20261129)
	var tookMu sync.Mutex // orders the handlers' writes of took before the reads

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		i, err := strconv.Atoi(r.URL.Query().Get("i"))
		if err != nil || i < 0 || i >= len(calls) {
			http.Error(w, "no such call", http.StatusBadRequest)
			return
		}
		c := &calls[i]
		if c.hang {
			select { // HAProxy gives up after 1 s and closes the connection
			case <-time.After(c.delay):
			case <-r.Context().Done():
			}
			return
		}
		time.Sleep(c.delay)
		took := time.Since(start)
		tookMu.Lock()
		c.took = took
		tookMu.Unlock()
		w.WriteHeader(c.status)
	}))
	defer backend.Close()

	dir := t.TempDir()
	sink := listenLog(t)
	port := freePort(t)
	cfg := fmt.Sprintf(`global
    log %s len 8192 local0

defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 5s
    timeout server 1s

frontend fe
    bind 127.0.0.1:%d
    capture request header Host len 64
    capture request header User-Agent len 64
    default_backend app

backend app
    server go %s
`, sink.conn.LocalAddr(), port, strings.TrimPrefix(backend.URL, "http://"))
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))

	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	require.NoError(t, cmd.Start())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	defer stop()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitForPort(t, addr, stderr)

	// Send the calls with bounded concurrency, to 127.0.0.1 only.
	started := time.Now()
	got, rtts := sendCalls(t, len(calls), concurrency, func(i int) *http.Request {
		path := fmt.Sprintf("/users/%d?i=%d", 100+i%50, i)
		if calls[i].route == "/orders" {
			path = fmt.Sprintf("/orders?i=%d", i)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Host = "shop.example.com"
		req.Header.Set("User-Agent", "tunetimeout e2e (haproxy; {braces} | bars)")
		return req
	})
	finished := time.Now()
	for i := range calls {
		calls[i].rtt = rtts[i]
	}
	tookMu.Lock() // every handler has written took
	tookMu.Unlock()
	t.Logf("%d calls through HAProxy in %v", len(calls), finished.Sub(started).Round(time.Millisecond))

	var fast500, slow504 int
	for i, c := range calls {
		switch {
		case c.hang:
			require.Equal(t, http.StatusGatewayTimeout, got[i], "call %d hangs past timeout server", i)
			slow504++
		case c.status == 500:
			require.Equal(t, 500, got[i], "call %d", i)
			fast500++
		default:
			require.Equal(t, 200, got[i], "call %d", i)
		}
	}

	// HAProxy logs each call when it ends: wait for all the lines (and the
	// probe's, see below), then stop.
	waitUntil(time.Minute, 20*time.Millisecond, func() bool { return sink.count() >= len(calls)+1 })
	stop()
	sink.mu.Lock()
	lines := slices.Clone(sink.lines)
	sink.mu.Unlock()
	// Connections without a request: waitForPort's probe (closed at once,
	// state CR--) and any the client's transport dialled but did not use
	// (closed by "timeout client" 5 s later, 408 and cR--, if that was
	// before the end). HAProxy logs them as "<BADREQ>": lines to exclude.
	noRequest := 0
	for _, l := range lines {
		if strings.Contains(l, `"<BADREQ>"`) {
			noRequest++
			require.True(t, strings.Contains(l, " CR-- ") || strings.Contains(l, " cR-- "), l)
		}
	}
	require.GreaterOrEqual(t, noRequest, 1, "the probe's line")
	require.Equal(t, len(calls)+noRequest, len(lines), "log lines received; haproxy said:\n%s", stderr.String())
	t.Logf("a log line: %s", lines[len(lines)/2])
	require.True(t, strings.HasPrefix(lines[0], "<134>"), "a syslog line with facility local0, level info: %s", lines[0])
	logPath := filepath.Join(dir, "haproxy.log")
	require.NoError(t, os.WriteFile(logPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644))

	// What HAProxy itself measured, read from each line by the test, and
	// checked against the clocks of the backend and the client.
	logged := make([]haproxyLine, len(lines))
	for n, line := range lines {
		l, err := parseHAProxyLine(line)
		require.NoError(t, err)
		logged[n] = l
	}
	strays := checkHAProxyClocks(t, logged, calls, started, finished)

	t.Run("ingest", func(t *testing.T) { checkHAProxySamples(t, logPath, logged, calls) })
	if t.Failed() {
		return
	}

	// The whole pipeline on the file HAProxy wrote.
	rep, err := analysis.Run(context.Background(), analysis.Options{
		Inputs:    []string{logPath},
		Format:    "haproxy",
		Ingest:    ingest.Options{By: []string{"route"}},
		Recommend: recommend.DefaultOptions(),
	}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, len(lines), rep.Input.Records)
	assert.Zero(t, rep.Input.BadRecords, "%v", rep.Input.BadExamples)
	require.Len(t, rep.Groups, 2, "the probe's group has no latency and is left out: %v", rep.Input.Notes)
	var censored, excluded5xx, samples int64
	for _, g := range rep.Groups {
		censored += g.Censored
		excluded5xx += g.Excluded[ingest.Excluded5xx]
		assert.Len(t, g.Excluded, 1, "group %s: only 5xx excluded: %v", g.Name, g.Excluded)
		samples += g.Samples
		// Tc feeds the connect timeout, but a Tc of 0 (HAProxy logs whole
		// milliseconds, and 0 for a connection it reused) is no connect:
		// on loopback most are 0, and only the others count.
		assert.Positive(t, g.Recommendation.ConnectsMeasured+g.Recommendation.ReusedConnects, "group %s: every call's Tc is read", g.Name)
		if g.Recommendation.ConnectsMeasured > 0 {
			assert.NotNil(t, g.Recommendation.ConnectTimeoutSeconds, "group %s: measured Tc feeds the connect timeout", g.Name)
		} else {
			assert.Nil(t, g.Recommendation.ConnectTimeoutSeconds, "group %s: no connect measured, none recommended", g.Name)
		}

		// Each percentile is HAProxy's own: the order statistic of the Ta
		// HAProxy logged for the group's calls (the hangs' 504s, censored
		// at "timeout server 1s", included; the fast 500s not), up to the
		// histogram's precision. The backend's and the client's order
		// statistics of the same rank bracket it, but for the strays of
		// checkHAProxyClocks; they are logged for the reader.
		var haproxyTimes, backendTimes, clientTimes []time.Duration
		for _, l := range logged {
			if l.call < 0 {
				continue // no request
			}
			c := calls[l.call]
			if c.route != g.Name || c.status == 500 {
				continue
			}
			haproxyTimes = append(haproxyTimes, l.ta)
			if c.hang {
				backendTimes = append(backendTimes, time.Second) // HAProxy's timeout server
			} else {
				backendTimes = append(backendTimes, c.took)
			}
			clientTimes = append(clientTimes, c.rtt)
		}
		haproxyTimes, backendTimes, clientTimes = sortedDurations(haproxyTimes), sortedDurations(backendTimes), sortedDurations(clientTimes)
		require.EqualValues(t, len(haproxyTimes), g.Samples, "group %s", g.Name)
		for _, p := range g.Percentiles {
			toolSays, haproxySays := reportDuration(p.Seconds), orderStat(haproxyTimes, p.Quantile)
			t.Logf("group %s p%v: backend %v, HAProxy Ta %v, tool %v, client %v", g.Name, p.Quantile*100,
				orderStat(backendTimes, p.Quantile).Round(time.Microsecond), haproxySays, toolSays, orderStat(clientTimes, p.Quantile).Round(time.Microsecond))
			assertHDR(t, haproxySays, toolSays, "group %s p%v", g.Name, p.Quantile*100)
		}
	}
	t.Logf("backend: %d fast 500s, %d hangs answered 504; report: %d records, %d samples, %d censored, %d excluded as 5xx; %d strays",
		fast500, slow504, rep.Input.Records, samples, censored, excluded5xx, strays)
	assert.EqualValues(t, slow504, censored, "the 504s are censored, one per hanging call")
	assert.EqualValues(t, fast500, excluded5xx, "the fast 500s are excluded")
	assert.EqualValues(t, len(calls)-fast500, samples)

	checkFixedPoint(t, analysis.Options{
		Inputs:    []string{logPath},
		Format:    "haproxy",
		Ingest:    ingest.Options{By: []string{"route"}},
		Recommend: recommend.DefaultOptions(),
	})
}

// msSlack is how far HAProxy's timers may stray from a Go clock measuring
// the same span: they count whole milliseconds of HAProxy's event-loop date.
const msSlack = 2 * time.Millisecond

// haproxyLine is what HAProxy logged for one connection, read by the test
// alone.
type haproxyLine struct {
	call int // the call's index, from its query string; -1 for "<BADREQ>"
	// accept is the accept date, whole ms, in the machine's time zone, as
	// HAProxy writes it; acceptUTC the same date and time read as UTC, as
	// the decoder does (see haproxyParser).
	accept, acceptUTC time.Time
	// The timers TR, Tw, Tc, Tr, Ta in whole ms; -1 for a phase that did
	// not complete.
	tr, tw, tc, tresp, ta time.Duration
	status                int
	state                 string // the termination state, "sH--"
}

// haproxyLineRE matches an "option httplog" line of the test's frontend.
var haproxyLineRE = regexp.MustCompile(`^<134>\w{3} [ \d]\d [\d:]{8} haproxy\[\d+\]: 127\.0\.0\.1:\d+ \[([^\]]+)\] fe (?:app/go|fe/<NOSRV>) (-?\d+)/(-?\d+)/(-?\d+)/(-?\d+)/(-?\d+) (\d{3}) \d+ - - (\S{4}) .*"(?:GET \S*[?&]i=(\d+) HTTP/1\.1|<BADREQ>)"$`)

func parseHAProxyLine(line string) (haproxyLine, error) {
	m := haproxyLineRE.FindStringSubmatch(line)
	if m == nil {
		return haproxyLine{}, fmt.Errorf("not an httplog line of the test's frontend: %s", line)
	}
	l := haproxyLine{call: -1, state: m[8]}
	var err error
	const layout = "02/Jan/2006:15:04:05.000"
	if l.accept, err = time.ParseInLocation(layout, m[1], time.Local); err != nil {
		return l, fmt.Errorf("%v: %s", err, line)
	}
	l.acceptUTC, _ = time.Parse(layout, m[1])
	for k, d := range []*time.Duration{&l.tr, &l.tw, &l.tc, &l.tresp, &l.ta} {
		ms, _ := strconv.Atoi(m[2+k])
		*d = time.Duration(ms) * time.Millisecond
	}
	l.status, _ = strconv.Atoi(m[7])
	if m[9] != "" {
		l.call, _ = strconv.Atoi(m[9])
	}
	return l, nil
}

// checkHAProxyClocks checks what HAProxy logged against the clocks of the
// client and the backend, call by call: Ta covers the handler and a little
// more (HAProxy's and the Go server's own work), and the client's round
// trip covers Ta, up to HAProxy's clock: whole ms, read when its event
// loop wakes. Tc is part of Ta. It returns how many calls had a Ta outside
// [backend time, client time].
//
// The clock read at the wake-up stamps all the work of that pass of the
// loop, so a request HAProxy reads speculatively late in a long pass (on a
// busy machine) can be stamped before it arrived, and its "timeout server
// 1s", armed on that clock, fire before the client has waited 1 s: CI saw
// HAProxy log Ta 1000 ms for a hang the client saw end after 997.8 ms. The
// hangs are held to the same allowance as the calls that completed.
//
// There may be a few: HAProxy's timers count its own clock, which it
// advances by at most its poll timeout when the system date moves more than
// 100 ms past it (src/clock.c, clock_update_local_date, takes that for a
// clock jump), so a HAProxy starved of CPU for a while, on a busy test
// machine, undercounts the calls it was handling then by about that much.
func checkHAProxyClocks(t *testing.T, logged []haproxyLine, calls []call, started, finished time.Time) int {
	t.Helper()
	seen := make([]bool, len(calls))
	var diffs []time.Duration // Ta - the backend's time, for calls that completed
	var outside []string      // calls whose Ta is not between the backend's and the client's time
	for _, l := range logged {
		if l.call < 0 {
			continue
		}
		require.False(t, seen[l.call], "call %d logged twice", l.call)
		seen[l.call] = true
		c := calls[l.call]
		// The accept date is HAProxy's clock as it woke for the pass of its
		// event loop that accepted the call, to the millisecond: on a busy
		// machine it may read up to msSlack before the client sent it (seen:
		// .625 for a first call sent at .626070).
		assert.False(t, l.accept.Before(started.Truncate(time.Millisecond).Add(-msSlack)) || l.accept.After(finished),
			"call %d: HAProxy accepted it at %v, not between the first call and the last answer (%v, %v), within %v", l.call, l.accept, started, finished, msSlack)
		assert.GreaterOrEqual(t, l.tc, time.Duration(0), "call %d: connected", l.call)
		assert.LessOrEqual(t, l.tc, l.ta, "call %d: Tc is part of Ta", l.call)
		if c.hang {
			assert.Equal(t, 504, l.status, "call %d", l.call)
			assert.Equal(t, "sH--", l.state, "call %d: the server timeout, waiting for the headers", l.call)
			assert.GreaterOrEqual(t, l.ta, time.Second-msSlack, "call %d: timeout server 1s ended it", l.call)
			if l.ta > c.rtt+msSlack {
				outside = append(outside, fmt.Sprintf("call %d (a hang): Ta %v, client %v", l.call, l.ta, c.rtt))
			}
			continue
		}
		assert.Equal(t, c.status, l.status, "call %d", l.call)
		assert.Equal(t, "----", l.state, "call %d", l.call)
		diff := l.ta - c.took
		if diff < -msSlack || l.ta > c.rtt+msSlack {
			outside = append(outside, fmt.Sprintf("call %d: backend %v, Ta %v, client %v", l.call, c.took, l.ta, c.rtt))
		}
		diffs = append(diffs, diff)
	}
	if len(outside) > 0 {
		t.Logf("%d calls with Ta outside [backend, client] +/- %v (HAProxy starved of CPU?), such as %v",
			len(outside), msSlack, outside[:min(len(outside), 3)])
	}
	assert.LessOrEqual(t, len(outside), len(calls)/50, "at most 2 % of the calls")
	// How much a busy machine adds to HAProxy's time, for the reader.
	slices.Sort(diffs)
	t.Logf("Ta - backend time over %d calls: min %v, median %v, p90 %v, p99 %v, max %v", len(diffs),
		diffs[0], diffs[len(diffs)/2], diffs[len(diffs)*90/100], diffs[len(diffs)*99/100], diffs[len(diffs)-1])
	return len(outside)
}

// checkHAProxySamples decodes the log and checks each sample against the
// line HAProxy wrote: the latency is Ta and the connect time Tc, to the
// microsecond (HAProxy logs whole ms), the status and the accept date are
// HAProxy's, the 504s of "timeout server" are censored, and the group is
// the call's route and the captured Host.
func checkHAProxySamples(t *testing.T, logPath string, logged []haproxyLine, calls []call) {
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	d, err := ingest.NewDecoder("haproxy", f, logPath, ingest.Options{By: []string{"route", "host"}})
	require.NoError(t, err)
	for n := 0; ; n++ {
		s, err := d.Next()
		if errors.Is(err, io.EOF) {
			require.Equal(t, len(logged), n)
			break
		}
		require.NoError(t, err)
		l := logged[n]
		assert.True(t, l.acceptUTC.Equal(s.Time), "line %d: accepted %v, read as %v", n+1, l.acceptUTC, s.Time)
		if l.call < 0 {
			assert.Contains(t, []string{"haproxy CR", "haproxy cR"}, s.Excluded)
			assert.Equal(t, "/ -", s.Group)
			continue
		}
		c := calls[l.call]
		assert.Equal(t, c.route+" shop.example.com", s.Group, "the first captured header is the Host")
		assert.Equal(t, l.ta, s.Latency, "call %d: Ta", l.call)
		require.True(t, s.ConnectKnown, "Tc is known: call %d", l.call)
		assert.Equal(t, l.tc, s.Connect, "call %d: Tc", l.call)
		assert.Equal(t, l.status, s.Status, "call %d", l.call)
		assert.Empty(t, s.Excluded, "call %d", l.call)
		assert.Equal(t, c.hang, s.Censored, "call %d: censored when timeout server ended it", l.call)
	}
}

// waitForPort waits until addr accepts connections (the server is up).
func waitForPort(t *testing.T, addr string, stderr *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a bound, not an expectation: servers start in milliseconds
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server does not listen on %s: %v; it said:\n%s", addr, err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer collects a process's output while tests may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
