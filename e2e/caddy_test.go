package e2e

import (
	"bufio"
	"context"
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
// censored sample. The analysis of that log is compared with what the
// upstream and the client measured.
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
			sent := time.Now()
			resp, err := impatient.Get(url(i))
			calls[i].rtt = time.Since(sent)
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
	deadline := time.Now().Add(10 * time.Second)
	for caddyCount(logPath, `"msg":"handled request"`) < len(calls) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
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

	var noise time.Duration
	t.Run("ingest", func(t *testing.T) { noise = checkCaddySamples(t, logPath, lines, calls) })
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
		var upstreamTimes, clientTimes []time.Duration
		for _, c := range calls {
			if c.route != g.Name || c.status >= 500 {
				continue
			}
			if c.gone {
				upstreamTimes = append(upstreamTimes, caddyGiveUp)
			} else {
				upstreamTimes = append(upstreamTimes, c.took)
			}
			clientTimes = append(clientTimes, c.rtt)
		}
		slices.Sort(upstreamTimes)
		slices.Sort(clientTimes)
		require.EqualValues(t, len(upstreamTimes), g.Samples, "group %s", g.Name)
		for _, p := range g.Percentiles {
			if p.Quantile > 0.99 {
				continue // the gone calls, censored at about 300 ms, and the tail above them
			}
			rank := max(int(float64(len(upstreamTimes))*p.Quantile+0.5), 1) - 1
			upstreamSays, clientSays := upstreamTimes[rank], clientTimes[rank]
			caddySays := time.Duration(p.Seconds * float64(time.Second))
			t.Logf("group %s p%v: upstream %v, Caddy duration %v, client %v", g.Name, p.Quantile*100,
				upstreamSays.Round(time.Microsecond), caddySays.Round(time.Microsecond), clientSays.Round(time.Microsecond))
			slack := time.Millisecond + caddySays/200 // the histogram's precision
			assert.GreaterOrEqual(t, caddySays+slack, upstreamSays, "group %s p%v: below the upstream's time", g.Name, p.Quantile*100)
			assert.LessOrEqual(t, caddySays-slack, clientSays, "group %s p%v: above the client's time", g.Name, p.Quantile*100)
			if (p.Quantile == 0.5 || p.Quantile == 0.9) && noise < 10*time.Millisecond {
				assert.InDelta(t, upstreamSays.Seconds(), caddySays.Seconds(), 0.005, "group %s p%v", g.Name, p.Quantile*100)
			}
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

// checkCaddySamples decodes the log, detecting its format, and compares
// each access log entry with what the upstream and the client measured for
// its call. It returns the p99 of Caddy's duration minus the upstream's time.
func checkCaddySamples(t *testing.T, logPath string, lines []string, calls []caddyCall) (noise time.Duration) {
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	d, err := ingest.NewDecoder("auto", f, logPath, ingest.Options{By: []string{"route"}})
	require.NoError(t, err, "auto-detection reads past Caddy's startup messages")
	reasons := map[string]int{}
	var diffs []time.Duration
	for n := 0; ; n++ {
		s, err := d.Next()
		if errors.Is(err, io.EOF) {
			require.Equal(t, len(lines), n)
			break
		}
		var nr *ingest.NotRequestError
		if errors.As(err, &nr) {
			reasons[nr.Reason]++
			assert.NotContains(t, lines[n], `"msg":"handled request"`)
			continue
		}
		require.NoError(t, err, lines[n])
		require.Contains(t, lines[n], `"msg":"handled request"`)
		_, q, ok := strings.Cut(lines[n], "i=")
		require.True(t, ok, lines[n])
		i, err := strconv.Atoi(q[:strings.IndexByte(q, '"')])
		require.NoError(t, err)
		c := calls[i]
		assert.Equal(t, c.route, s.Group, lines[n])
		assert.WithinDuration(t, time.Now(), s.Time, 5*time.Minute, lines[n])
		assert.Empty(t, s.Excluded, lines[n])
		switch {
		case c.gone:
			assert.Equal(t, 0, s.Status, lines[n])
			assert.True(t, s.Censored, "status 0: the client left, %s", lines[n])
			assert.GreaterOrEqual(t, s.Latency, caddyGiveUp-5*time.Millisecond, lines[n])
			assert.Less(t, s.Latency, caddyGiveUp+200*time.Millisecond, lines[n])
		case c.dead:
			assert.Equal(t, 502, s.Status, lines[n])
			assert.False(t, s.Censored)
		default:
			assert.Equal(t, c.status, s.Status, lines[n])
			assert.False(t, s.Censored)
			assert.LessOrEqual(t, s.Latency, c.rtt+time.Millisecond, "call %d: Caddy %v, the client waited %v", i, s.Latency, c.rtt)
			diffs = append(diffs, s.Latency-c.took)
		}
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
	slices.Sort(diffs)
	median, p90 := diffs[len(diffs)/2], diffs[len(diffs)*90/100]
	t.Logf("Caddy duration - upstream over %d calls: min %v, median %v, p90 %v, p99 %v, max %v",
		len(diffs), diffs[0], median, p90, diffs[len(diffs)*99/100], diffs[len(diffs)-1])
	assert.Greater(t, diffs[len(diffs)/100], -time.Millisecond, "Caddy's time is not below the upstream's")
	assert.Less(t, median, 2*time.Millisecond, "Caddy's time agrees with the upstream's")
	assert.Less(t, p90, 10*time.Millisecond, "within 10 ms for 90 %% of the calls")
	return diffs[len(diffs)*99/100]
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
