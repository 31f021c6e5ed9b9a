package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/tunetimeout/tunetimeout/internal/e2etest"
	"github.com/tunetimeout/tunetimeout/recommend"
)

// apacheLogFormat is mod_log_config's documented time with milliseconds
// and the three duration directives: %D (us), %{ms}T, %{us}T.
const apacheLogFormat = `%h %l %u [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\" %D %{ms}T %{us}T`

const apacheConf = `ServerRoot {{dir}}
PidFile {{dir}}/httpd.pid
ServerName 127.0.0.1
Listen 127.0.0.1:{{port}}
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so
ErrorLog {{dir}}/error.log
LogLevel warn
LogFormat "{{format}}" timing
CustomLog {{dir}}/access.log timing
ProxyPass "/" "http://{{upstream}}/" timeout=1
`

// TestApacheAccessLog runs calls through a real Apache httpd 2.4 (Debian's
// apache2 package) reverse proxy (mod_proxy_http, timeout=1) in front of a
// Go upstream, logging with apacheLogFormat, then analyses the log with
// that LogFormat and compares it with what Apache itself logged, which the
// upstream's and the client's clocks bracket. The calls that outlive the proxy's 1 s timeout come back as 502
// (Apache's "Error reading from remote server"), not 504: the status rule
// excludes them as 5xx, a fact about Apache the test pins.
func TestApacheAccessLog(t *testing.T) {
	bin := requireBinary(t, "apache2", "apache2")
	e2etest.RequireFile(t, "/usr/lib/apache2/modules/mod_proxy_http.so", "apt-get install -y apache2")
	const (
		requests    = 1500
		hangs       = 5
		concurrency = 16
	)
	calls := nginxPlan(requests, hangs, 20261201)
	var tookMu sync.Mutex
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		i, err := strconv.Atoi(r.URL.Query().Get("i"))
		if err != nil || i < 0 || i >= len(calls) {
			http.Error(w, "no such call", http.StatusBadRequest)
			return
		}
		c := &calls[i]
		select {
		case <-time.After(c.delay):
		case <-r.Context().Done():
			return
		}
		if c.hang {
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
	port := freePort(t)
	conf := strings.NewReplacer("{{dir}}", dir, "{{port}}", strconv.Itoa(port), "{{format}}", apacheLogFormat,
		"{{upstream}}", strings.TrimPrefix(upstream.URL, "http://")).Replace(apacheConf)
	confPath := filepath.Join(dir, "httpd.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	logPath := filepath.Join(dir, "access.log")

	// -X: one process in the foreground, no daemon, stopped with SIGTERM.
	cmd := exec.Command(bin, "-X", "-f", confPath)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
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
	waitForPort(t, addr, out)

	started := time.Now()
	got, rtts := sendCalls(t, len(calls), concurrency, func(i int) *http.Request {
		path := fmt.Sprintf("/api/items/%d?i=%d", 100+i%50, i)
		if calls[i].route == "/api/search" {
			path = fmt.Sprintf("/api/search?q=shoes&i=%d", i)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("User-Agent", `tunetimeout e2e (apache; "quoted" \ words)`)
		return req
	})
	finished := time.Now()
	for i := range calls {
		calls[i].rtt = rtts[i]
	}
	tookMu.Lock()
	tookMu.Unlock()
	t.Logf("%d calls through Apache in %v", len(calls), finished.Sub(started).Round(time.Millisecond))
	fast500, hung502 := checkAnswers(t, calls, got, http.StatusBadGateway, "outlives the proxy timeout")
	waitUntil(time.Minute, 20*time.Millisecond, func() bool { return nginxCountLines(logPath) >= len(calls) })
	stop()
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	errorLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	require.Len(t, lines, len(calls), "apache said:\n%s%s", out.String(), errorLog)
	if sample := os.Getenv("TUNETIMEOUT_APACHE_SAMPLE"); sample != "" {
		// Keeps the first 40 lines and every line that is not a 200 for
		// ingest's conformance corpus: go test ./e2e -run
		// TestApacheAccessLog with
		// TUNETIMEOUT_APACHE_SAMPLE=$PWD/ingest/testdata/conformance/apache-2.4.log
		var b strings.Builder
		for n, l := range lines {
			if n < 40 || !strings.Contains(l, `" 200 `) {
				b.WriteString(l + "\n")
			}
		}
		require.NoError(t, os.WriteFile(sample, []byte(b.String()), 0o644))
	}
	t.Logf("a log line: %s", lines[len(lines)/2])

	// What Apache itself measured, read from each line by the test, and
	// checked against the clocks of the upstream and the client.
	logged := make([]apacheLine, len(lines))
	for n, line := range lines {
		l, err := parseApacheLine(line)
		require.NoError(t, err)
		logged[n] = l
	}
	checkApacheClocks(t, logged, calls, started, finished)

	logFormat := strings.ReplaceAll(apacheLogFormat, `\"`, `"`)
	t.Run("ingest", func(t *testing.T) { checkApacheSamples(t, logPath, logFormat, logged, calls) })
	if t.Failed() {
		return
	}

	rep, err := analysis.Run(context.Background(), analysis.Options{
		Inputs:    []string{logPath},
		Format:    "auto", // a --log-format with %directives means apache
		Ingest:    ingest.Options{LogFormat: logFormat, By: []string{"route"}},
		Recommend: recommend.DefaultOptions(),
	}, nil)
	require.NoError(t, err)
	assert.EqualValues(t, len(calls), rep.Input.Records)
	assert.Zero(t, rep.Input.BadRecords, "%v", rep.Input.BadExamples)
	require.Len(t, rep.Groups, 2, "%v", rep.Input.Notes)
	var excluded5xx, samples int64
	for _, g := range rep.Groups {
		excluded5xx += g.Excluded[ingest.Excluded5xx]
		samples += g.Samples
		assert.Equal(t, "measured", g.LittlesLaw.RateSource, "group %s: the times read back from the strftime directives give a rate", g.Name)
		// Each percentile is Apache's own: the order statistic of the %D
		// Apache logged for the group's calls (not the 500s, nor the 502s
		// of the hangs), up to the histogram's precision. The upstream's
		// and the client's of the same rank are logged for the reader.
		var apacheTimes, upstreamTimes, clientTimes []time.Duration
		for _, l := range logged {
			c := calls[l.call]
			if c.route != g.Name || c.status == 500 || c.hang {
				continue
			}
			apacheTimes = append(apacheTimes, l.d)
			upstreamTimes = append(upstreamTimes, c.took)
			clientTimes = append(clientTimes, c.rtt)
		}
		apacheTimes, upstreamTimes, clientTimes = sortedDurations(apacheTimes), sortedDurations(upstreamTimes), sortedDurations(clientTimes)
		require.EqualValues(t, len(apacheTimes), g.Samples, "group %s", g.Name)
		for _, p := range g.Percentiles {
			toolSays, apacheSays := reportDuration(p.Seconds), orderStat(apacheTimes, p.Quantile)
			t.Logf("group %s p%v: upstream %v, Apache %%D %v, tool %v, client %v", g.Name, p.Quantile*100,
				orderStat(upstreamTimes, p.Quantile).Round(time.Microsecond), apacheSays, toolSays, orderStat(clientTimes, p.Quantile).Round(time.Microsecond))
			assertHDR(t, apacheSays, toolSays, "group %s p%v", g.Name, p.Quantile*100)
		}
	}
	t.Logf("upstream: %d fast 500s, %d hangs answered 502; report: %d records, %d samples, %d excluded as 5xx",
		fast500, hung502, rep.Input.Records, samples, excluded5xx)
	assert.EqualValues(t, fast500+hung502, excluded5xx, "the 500s and Apache's 502 after its proxy timeout are excluded")
	assert.EqualValues(t, len(calls)-fast500-hung502, samples)
}

// apacheLine is what Apache logged for one call, read by the test alone.
type apacheLine struct {
	call   int           // the call's index, from its query string
	at     time.Time     // %t with msec_frac: when Apache read the request line, whole ms
	status int           // %>s
	d      time.Duration // %D, whole µs
	ms     time.Duration // %{ms}T, whole ms
	us     time.Duration // %{us}T, whole µs
}

// apacheLineRE matches a line of apacheLogFormat.
var apacheLineRE = regexp.MustCompile(`^127\.0\.0\.1 - - \[([^\]]+)\] "GET \S*[?&]i=(\d+) HTTP/1\.1" (\d{3}) \S+ "-" ".*" (\d+) (\d+) (\d+)$`)

func parseApacheLine(line string) (apacheLine, error) {
	m := apacheLineRE.FindStringSubmatch(line)
	if m == nil {
		return apacheLine{}, fmt.Errorf("not a line of apacheLogFormat: %s", line)
	}
	var l apacheLine
	var err error
	if l.at, err = time.Parse("02/Jan/2006:15:04:05.000 -0700", m[1]); err != nil {
		return l, fmt.Errorf("%v: %s", err, line)
	}
	l.call, _ = strconv.Atoi(m[2])
	l.status, _ = strconv.Atoi(m[3])
	for k, v := range []struct {
		d    *time.Duration
		unit time.Duration
	}{{&l.d, time.Microsecond}, {&l.ms, time.Millisecond}, {&l.us, time.Microsecond}} {
		n, _ := strconv.ParseInt(m[4+k], 10, 64)
		*v.d = time.Duration(n) * v.unit
	}
	return l, nil
}

// checkApacheClocks checks what Apache logged against the clocks of the
// client and the upstream, call by call. Apache reads the request's start
// after the request line came in, before the upstream began, and its end
// once, when it logs (mod_log_config's request end time serves %D and
// every %T alike, so %{us}T is %D and %{ms}T its whole ms), after the
// answer was sent: %D covers the upstream's time, however busy the
// machine, and a hang's %D covers the proxy's timeout of 1 s. The client
// may have the answer before Apache logs, a few µs before on an idle
// machine, but on a busy one Apache may wait for the CPU in between: a few
// calls' %D exceed the client's wait by more than 1 ms, at most 2 % of
// them.
func checkApacheClocks(t *testing.T, logged []apacheLine, calls []nginxCall, started, finished time.Time) {
	t.Helper()
	seen := make([]bool, len(calls))
	var diffs []time.Duration // %D - the upstream's time, for calls that completed
	var above []string        // calls Apache timed longer than the client waited
	withMillis := 0
	for _, l := range logged {
		require.False(t, seen[l.call], "call %d logged twice", l.call)
		seen[l.call] = true
		c := calls[l.call]
		assert.False(t, l.at.Before(started.Truncate(time.Millisecond)) || l.at.After(finished),
			"call %d: Apache read it at %v, not between the first call and the last answer (%v, %v)", l.call, l.at, started, finished)
		if l.at.Nanosecond() != 0 {
			withMillis++
		}
		assert.Equal(t, l.d, l.us, "call %d: %%{us}T is %%D", l.call)
		assert.Equal(t, l.d.Truncate(time.Millisecond), l.ms, "call %d: %%{ms}T is %%D's whole ms", l.call)
		if l.d > c.rtt+time.Millisecond { // the work between Apache's write and its log
			above = append(above, fmt.Sprintf("call %d: Apache %v, the client waited %v", l.call, l.d, c.rtt))
		}
		if c.hang {
			assert.Equal(t, 502, l.status, "call %d", l.call)
			assert.GreaterOrEqual(t, l.d, time.Second, "call %d: the proxy's timeout ended it", l.call)
			continue
		}
		assert.Equal(t, c.status, l.status, "call %d", l.call)
		assert.GreaterOrEqual(t, l.d, c.took, "call %d: Apache %v, the upstream took %v", l.call, l.d, c.took)
		diffs = append(diffs, l.d-c.took)
	}
	assert.Greater(t, withMillis, len(logged)/2, "msec_frac writes the milliseconds")
	if len(above) > 0 {
		t.Logf("%d calls timed longer than the client waited, such as %v", len(above), above[:min(3, len(above))])
	}
	assert.LessOrEqual(t, len(above), len(calls)/50, "at most 2 % of the calls")
	// How much a busy machine adds to Apache's time, for the reader.
	slices.Sort(diffs)
	t.Logf("%%D - the upstream's time over %d calls: min %v, median %v, p90 %v, p99 %v, max %v", len(diffs),
		diffs[0], diffs[len(diffs)/2], diffs[len(diffs)*90/100], diffs[len(diffs)*99/100], diffs[len(diffs)-1])
}

// checkApacheSamples decodes the log three times, each with another of its
// duration directives as the latency (%D, then %{us}T with %D's place read
// as a header, then %{ms}T), and checks each sample against the line
// Apache wrote: the latency is the directive's value exactly, the time the
// one %t wrote, with its milliseconds, the status Apache's, the group the
// call's route.
func checkApacheSamples(t *testing.T, logPath, logFormat string, logged []apacheLine, calls []nginxCall) {
	for _, v := range []struct {
		name, format string
		latency      func(apacheLine) time.Duration
	}{
		{"%D", logFormat, func(l apacheLine) time.Duration { return l.d }},
		{"%{us}T", strings.Replace(logFormat, "%D", "%{X-D}i", 1), func(l apacheLine) time.Duration { return l.us }},
		{"%{ms}T", strings.Replace(strings.Replace(logFormat, "%D", "%{X-D}i", 1), "%{us}T", "%{X-Us}i", 1), func(l apacheLine) time.Duration { return l.ms }},
	} {
		f, err := os.Open(logPath)
		require.NoError(t, err)
		d, err := ingest.NewDecoder("apache", f, logPath, ingest.Options{LogFormat: v.format, By: []string{"route"}})
		require.NoError(t, err)
		notes, _ := d.(ingest.Noter)
		if notes != nil {
			assert.Empty(t, notes.Notes(), "the msec_frac time is read back")
		}
		for n := 0; ; n++ {
			s, err := d.Next()
			if errors.Is(err, io.EOF) {
				require.Equal(t, len(logged), n)
				break
			}
			require.NoError(t, err)
			l := logged[n]
			assert.Equal(t, v.latency(l), s.Latency, "%s, call %d", v.name, l.call)
			assert.True(t, l.at.Equal(s.Time), "call %d: %%t %v, read as %v", l.call, l.at, s.Time)
			assert.Equal(t, l.status, s.Status, "call %d", l.call)
			assert.Equal(t, calls[l.call].route, s.Group, "call %d", l.call)
		}
		f.Close()
	}
}
