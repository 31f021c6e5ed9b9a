package e2e

import (
	"bufio"
	"bytes"
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

// nginxCall is what the upstream was told to do for one request, and what
// it measured doing it.
type nginxCall struct {
	route  string        // "/api/items/{id}" or "/api/search"
	delay  time.Duration // how long the handler waits before answering
	status int           // 200, or 500 for a fast failure
	hang   bool          // delay is past nginx's proxy_read_timeout 1s
	took   time.Duration // measured by the handler, from its start to the answer
	rtt    time.Duration // measured by the client, from sending to the end of the body
}

// checkAnswers checks the status each planned call got through a proxy:
// hangStatus for a hang (hangWhy says why), 500 for a fast failure, 200
// otherwise; it returns how many fast failures and hangs there were.
func checkAnswers(t *testing.T, calls []nginxCall, got []int, hangStatus int, hangWhy string) (fast500, hung int) {
	t.Helper()
	for i, c := range calls {
		switch {
		case c.hang:
			require.Equal(t, hangStatus, got[i], "call %d %s", i, hangWhy)
			hung++
		case c.status == 500:
			require.Equal(t, 500, got[i], "call %d", i)
			fast500++
		default:
			require.Equal(t, 200, got[i], "call %d", i)
		}
	}
	return fast500, hung
}

// hangFor is how long a hanging call of the plans sleeps, past the
// proxies' 1 s timeouts (nginx's proxy_read_timeout, HAProxy's timeout
// server, Apache's ProxyPass timeout). The plans keep their classes apart
// by more than a loaded machine stalls a server (up to about 0.5 s seen
// with TUNETIMEOUT_E2E_LOAD=8): an answered call takes at most 300 ms, 0.7
// s before the timeout, a hang answers 2 s after it, so a late timer or a
// late answer does not turn one into the other. The proxy gives up at its
// timeout; the hang's handler then returns at once.
const hangFor = 3 * time.Second

// nginxPlan returns n calls of a seeded mixture: mostly 5-30 ms, 12 %
// 100-300 ms, about 3 % fast 500s, and `hangs` calls that sleep hangFor,
// past proxy_read_timeout 1s, so that nginx answers 504.
func nginxPlan(n, hangs int, seed uint64) []nginxCall {
	r := rand.New(rand.NewPCG(seed, 2))
	calls := make([]nginxCall, n)
	for i := range calls {
		c := &calls[i]
		c.route, c.status = "/api/items/{id}", 200
		if i%2 == 1 {
			c.route = "/api/search"
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
	for k := range hangs {
		c := &calls[(k*n)/hangs+n/(2*hangs)]
		c.status, c.delay, c.hang = 200, hangFor, true
	}
	return calls
}

const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log info;

events {
    worker_connections 1024;
}

http {
    client_body_temp_path {{dir}}/client_body;
    proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi;
    uwsgi_temp_path {{dir}}/uwsgi;
    scgi_temp_path {{dir}}/scgi;

    log_format timing '$remote_addr [$time_local] "$request" $status $request_time '
                      '$upstream_connect_time $upstream_response_time "$http_user_agent"';
    access_log {{dir}}/access.log timing;

    server {
        listen 127.0.0.1:{{port}};
        location / {
            proxy_pass http://{{upstream}};
            proxy_read_timeout 1s;
        }
    }
}
`

// TestNginxAccessLog runs requests through a real nginx in front of a Go
// upstream with a known latency mixture, then analyses the access log nginx
// wrote, with the log_format read from nginx's own config, and checks the
// result against what nginx itself logged, which the upstream's and the
// client's clocks bracket.
func TestNginxAccessLog(t *testing.T) {
	bin := requireBinary(t, "nginx", "nginx")
	const (
		requests    = 3000
		hangs       = 8
		concurrency = 16
	)
	calls := nginxPlan(requests, hangs, 20261129)
	var tookMu sync.Mutex // orders the handlers' writes of took before the reads

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		i, err := strconv.Atoi(r.URL.Query().Get("i"))
		if err != nil || i < 0 || i >= len(calls) {
			http.Error(w, "no such call", http.StatusBadRequest)
			return
		}
		c := &calls[i]
		if c.hang {
			select { // nginx gives up after 1 s and closes the connection
			case <-time.After(c.delay):
			case <-r.Context().Done():
			}
			return
		}
		time.Sleep(c.delay)
		w.WriteHeader(c.status)
		took := time.Since(start)
		tookMu.Lock()
		c.took = took
		tookMu.Unlock()
	}))
	defer upstream.Close()

	dir := t.TempDir()
	port := freePort(t)
	conf := strings.NewReplacer("{{dir}}", dir, "{{port}}", strconv.Itoa(port),
		"{{upstream}}", strings.TrimPrefix(upstream.URL, "http://")).Replace(nginxConf)
	confPath := filepath.Join(dir, "nginx.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	logPath := filepath.Join(dir, "access.log")

	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var stderr bytes.Buffer // written by the process, read after Wait or on failure
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGQUIT) // graceful shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	defer stop()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	nginxWaitPort(t, addr, exited, dir)

	// Send the calls with bounded concurrency, to 127.0.0.1 only.
	started := time.Now()
	wall := watchWallClock()
	got, rtts := sendCalls(t, len(calls), concurrency, func(i int) *http.Request {
		path := fmt.Sprintf("/api/items/%d?i=%d", 100+i%50, i)
		if calls[i].route == "/api/search" {
			path = fmt.Sprintf("/api/search?q=shoes&i=%d", i)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("User-Agent", `tunetimeout e2e (nginx; "quoted" words)`)
		return req
	})
	finished := time.Now()
	skew := wall.Stop()
	for i := range calls {
		calls[i].rtt = rtts[i]
	}
	tookMu.Lock() // every handler has written took
	tookMu.Unlock()
	t.Logf("%d calls through nginx in %v; the wall clock moved %v against the monotonic clock", len(calls), finished.Sub(started).Round(time.Millisecond), skew)

	fast500, slow504 := checkAnswers(t, calls, got, http.StatusGatewayTimeout, "hangs past proxy_read_timeout")

	// nginx writes a line when a request ends: wait for all of them, then stop.
	waitUntil(time.Minute, 20*time.Millisecond, func() bool { return nginxCountLines(logPath) >= len(calls) })
	stop()
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, len(calls), "nginx said:\n%s%s", stderr.String(), nginxErrorLog(dir))
	if out := os.Getenv("TUNETIMEOUT_NGINX_SAMPLE"); out != "" {
		// Keeps a real nginx log and its config for the README's example
		// (testdata/nginx/): go test ./e2e -run TestNginxAccessLog with
		// TUNETIMEOUT_NGINX_SAMPLE=$PWD/testdata/nginx.
		require.NoError(t, os.MkdirAll(out, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(out, "access.log"), data, 0o644))
		sample := strings.ReplaceAll(conf, dir, "/var/lib/tunetimeout-e2e")
		require.NoError(t, os.WriteFile(filepath.Join(out, "nginx.conf"), []byte(sample), 0o644))
	}
	t.Logf("a log line: %s", lines[len(lines)/2])

	// What nginx itself measured, read from each line by the test, and
	// checked against the clocks of the upstream and the client.
	logged := make([]nginxLine, len(lines))
	for n, line := range lines {
		l, err := parseNginxLine(line)
		require.NoError(t, err)
		logged[n] = l
	}
	checkNginxClocks(t, logged, calls, started, finished, skew)

	t.Run("ingest", func(t *testing.T) { checkNginxSamples(t, confPath, logPath, logged, calls) })
	if t.Failed() {
		return
	}

	// The whole pipeline on the file nginx wrote, with the log_format read
	// from the config nginx ran with.
	rep, err := analysis.Run(context.Background(), analysis.Options{
		Inputs:    []string{logPath},
		Format:    "nginx",
		Ingest:    ingest.Options{NginxConf: confPath, LogFormatName: "timing", By: []string{"route"}},
		Recommend: recommend.DefaultOptions(),
	}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, len(calls), rep.Input.Records)
	assert.Zero(t, rep.Input.BadRecords, "%v", rep.Input.BadExamples)
	require.Len(t, rep.Groups, 2, "%v", rep.Input.Notes)
	var censored, excluded5xx, samples int64
	for _, g := range rep.Groups {
		censored += g.Censored
		excluded5xx += g.Excluded[ingest.Excluded5xx]
		samples += g.Samples
		assert.NotNil(t, g.Recommendation.ConnectTimeoutSeconds, "group %s: $upstream_connect_time feeds the connect timeout", g.Name)

		// Each percentile is nginx's own: the order statistic of the
		// $request_time nginx logged for the group's calls (the hangs'
		// 504s, censored at nginx's 1 s, included; the fast 500s not), up
		// to the histogram's precision. The upstream's and the client's
		// order statistics of the same rank bracket it (checkNginxClocks
		// checks that call by call); they are logged for the reader.
		var nginxTimes, upstreamTimes, clientTimes []time.Duration
		for _, l := range logged {
			c := calls[l.call]
			if c.route != g.Name || c.status == 500 {
				continue
			}
			nginxTimes = append(nginxTimes, l.request)
			if c.hang {
				upstreamTimes = append(upstreamTimes, time.Second) // nginx's proxy_read_timeout
			} else {
				upstreamTimes = append(upstreamTimes, c.took)
			}
			clientTimes = append(clientTimes, c.rtt)
		}
		nginxTimes, upstreamTimes, clientTimes = sortedDurations(nginxTimes), sortedDurations(upstreamTimes), sortedDurations(clientTimes)
		require.EqualValues(t, len(nginxTimes), g.Samples, "group %s", g.Name)
		for _, p := range g.Percentiles {
			toolSays, nginxSays := reportDuration(p.Seconds), orderStat(nginxTimes, p.Quantile)
			t.Logf("group %s p%v: upstream %v, nginx $request_time %v, tool %v, client %v", g.Name, p.Quantile*100,
				orderStat(upstreamTimes, p.Quantile).Round(time.Microsecond), nginxSays, toolSays, orderStat(clientTimes, p.Quantile).Round(time.Microsecond))
			assertHDR(t, nginxSays, toolSays, "group %s p%v", g.Name, p.Quantile*100)
		}
	}
	t.Logf("upstream: %d fast 500s, %d hangs answered 504; report: %d records, %d samples, %d censored, %d excluded as 5xx",
		fast500, slow504, rep.Input.Records, samples, censored, excluded5xx)
	assert.EqualValues(t, slow504, censored, "the 504s are censored, one per hanging call")
	assert.EqualValues(t, fast500, excluded5xx, "the fast 500s are excluded")
	assert.EqualValues(t, len(calls)-fast500, samples)

	checkFixedPoint(t, analysis.Options{
		Inputs:    []string{logPath},
		Format:    "nginx",
		Ingest:    ingest.Options{NginxConf: confPath, LogFormatName: "timing", By: []string{"route"}},
		Recommend: recommend.DefaultOptions(),
	})
}

// nginxLine is what nginx wrote for one call, read by the test alone.
type nginxLine struct {
	call     int           // the call's index, from its query string
	at       time.Time     // $time_local: when nginx logged the call, whole seconds
	status   int           // $status
	request  time.Duration // $request_time, whole ms
	connect  time.Duration // $upstream_connect_time, whole ms
	upstream time.Duration // $upstream_response_time, whole ms
}

// nginxLineRE matches a line of the "timing" log_format for one upstream.
var nginxLineRE = regexp.MustCompile(`^127\.0\.0\.1 \[([^\]]+)\] "GET \S*[?&]i=(\d+) HTTP/1\.1" (\d{3}) (\d+\.\d{3}) (\d+\.\d{3}) (\d+\.\d{3}) "`)

func parseNginxLine(line string) (nginxLine, error) {
	m := nginxLineRE.FindStringSubmatch(line)
	if m == nil {
		return nginxLine{}, fmt.Errorf("not a line of the timing log_format: %s", line)
	}
	var l nginxLine
	var err error
	if l.at, err = time.Parse("02/Jan/2006:15:04:05 -0700", m[1]); err != nil {
		return l, fmt.Errorf("%v: %s", err, line)
	}
	l.call, _ = strconv.Atoi(m[2])
	l.status, _ = strconv.Atoi(m[3])
	for k, d := range []*time.Duration{&l.request, &l.connect, &l.upstream} {
		ms, _ := strconv.Atoi(strings.Replace(m[4+k], ".", "", 1)) // "0.012": 12 ms
		*d = time.Duration(ms) * time.Millisecond
	}
	return l, nil
}

// checkNginxClocks checks what nginx logged against the clocks of the
// client and the upstream, call by call. nginx reads its clock once per
// turn of its event loop, in whole ms, but never before the events of the
// turn happened: a request's start is read after the client sent it and
// before the upstream began; its end after the upstream finished and
// before nginx wrote the answer the client waits for. So $request_time
// lies between the upstream's time and the client's round trip, up to the
// 1 ms the truncation of each end may take away or add, however late the
// turns come on a busy machine; a hang's $request_time is at least
// proxy_read_timeout. $upstream_connect_time and $upstream_response_time
// count on one clock from the same start: connect <= response. nginx
// reads $request_time on the wall clock (ngx_timeofday()) and the
// upstream's times on its monotonic clock (ngx_current_msec): where the
// two are compared, the tolerance grows by skew, how far the machine's wall
// clock moved against its monotonic clock during the calls (a virtual
// machine's clock stepped by its host; 0 where the clocks agree), and by
// one more ms: each clock is read and cut to whole ms on its own, so the
// two truncations of one interval and of the other can differ by up to
// 2ms (seen here: 208ms upstream against 206ms for the request, with the
// clocks 10µs apart).
func checkNginxClocks(t *testing.T, logged []nginxLine, calls []nginxCall, started, finished time.Time, skew time.Duration) {
	t.Helper()
	const ms = time.Millisecond
	seen := make([]bool, len(calls))
	var diffs []time.Duration // $request_time - the upstream's time, for calls that completed
	for _, l := range logged {
		require.False(t, seen[l.call], "call %d logged twice", l.call)
		seen[l.call] = true
		c := calls[l.call]
		assert.False(t, l.at.Before(started.Truncate(time.Second)) || l.at.After(finished),
			"call %d: nginx logged it at %v, not between the first call and the last answer (%v, %v)", l.call, l.at, started, finished)
		assert.LessOrEqual(t, l.request, c.rtt+ms+skew, "call %d: nginx %v, the client waited %v", l.call, l.request, c.rtt)
		assert.LessOrEqual(t, l.connect, l.upstream, "call %d: $upstream_connect_time is part of $upstream_response_time", l.call)
		assert.LessOrEqual(t, l.upstream, l.request+2*ms+skew, "call %d: $upstream_response_time is part of $request_time (the wall clock moved %v)", l.call, skew)
		if c.hang {
			assert.Equal(t, 504, l.status, "call %d", l.call)
			assert.GreaterOrEqual(t, l.request, time.Second-ms, "call %d: proxy_read_timeout 1s ended it", l.call)
			continue
		}
		assert.Equal(t, c.status, l.status, "call %d", l.call)
		assert.Greater(t, l.request, c.took-ms-skew, "call %d: nginx %v, the upstream took %v", l.call, l.request, c.took)
		assert.Greater(t, l.upstream, c.took-ms, "call %d: nginx's upstream time %v, the upstream took %v", l.call, l.upstream, c.took)
		diffs = append(diffs, l.request-c.took)
	}
	// How much a busy machine adds to nginx's time, for the reader.
	slices.Sort(diffs)
	t.Logf("$request_time - the upstream's time over %d calls: min %v, median %v, p90 %v, p99 %v, max %v", len(diffs),
		diffs[0], diffs[len(diffs)/2], diffs[len(diffs)*90/100], diffs[len(diffs)*99/100], diffs[len(diffs)-1])
}

// checkNginxSamples decodes the log with the format from nginx's config,
// once with each of nginx's latencies, and checks each sample against the
// line nginx wrote: the latency, the connect time, the status and the time
// are nginx's to the microsecond (nginx writes whole ms); the group is the
// call's route.
func checkNginxSamples(t *testing.T, confPath, logPath string, logged []nginxLine, calls []nginxCall) {
	for _, latency := range []string{"request", "upstream"} {
		f, err := os.Open(logPath)
		require.NoError(t, err)
		d, err := ingest.NewDecoder("nginx", f, logPath,
			ingest.Options{NginxConf: confPath, LogFormatName: "timing", Latency: latency, By: []string{"route"}})
		require.NoError(t, err)
		for n := 0; ; n++ {
			s, err := d.Next()
			if errors.Is(err, io.EOF) {
				require.Equal(t, len(logged), n)
				break
			}
			require.NoError(t, err)
			l := logged[n]
			want := l.request
			if latency == "upstream" {
				want = l.upstream
			}
			assert.Equal(t, want, s.Latency, "--latency %s, call %d", latency, l.call)
			require.True(t, s.ConnectKnown, "$upstream_connect_time is known: call %d", l.call)
			assert.Equal(t, l.connect, s.Connect, "call %d", l.call)
			assert.Equal(t, l.status, s.Status, "call %d", l.call)
			assert.True(t, l.at.Equal(s.Time), "call %d: $time_local %v, read as %v", l.call, l.at, s.Time)
			assert.Equal(t, calls[l.call].route, s.Group, "call %d", l.call)
			assert.Empty(t, s.Excluded, "call %d", l.call)
		}
		f.Close()
	}
}

// nginxWaitPort waits until nginx accepts connections on addr, failing early
// with its error log when it exits.
func nginxWaitPort(t *testing.T, addr string, exited <-chan error, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a bound, not an expectation: nginx starts in milliseconds
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("nginx exited: %v\n%s", err, nginxErrorLog(dir))
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nginx does not listen on %s\n%s", addr, nginxErrorLog(dir))
}

func nginxErrorLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	return string(b)
}

// nginxCountLines counts the lines of a file, 0 when it does not exist.
func nginxCountLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n
}
