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
// that LogFormat and compares it with what the upstream and the client
// measured. The calls that outlive the proxy's 1 s timeout come back as 502
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
	for i := range calls {
		calls[i].rtt = rtts[i]
	}
	tookMu.Lock()
	tookMu.Unlock()
	t.Logf("%d calls through Apache in %v", len(calls), time.Since(started).Round(time.Millisecond))
	var fast500, hung502 int
	for i, c := range calls {
		switch {
		case c.hang:
			require.Equal(t, http.StatusBadGateway, got[i], "call %d outlives the proxy timeout", i)
			hung502++
		case c.status == 500:
			require.Equal(t, 500, got[i], "call %d", i)
			fast500++
		default:
			require.Equal(t, 200, got[i], "call %d", i)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for nginxCountLines(logPath) < len(calls) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
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

	logFormat := strings.ReplaceAll(apacheLogFormat, `\"`, `"`)
	var noise time.Duration
	var strays int
	t.Run("ingest", func(t *testing.T) { noise, strays = checkApacheSamples(t, logPath, logFormat, lines, calls) })
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
		var upstreamTimes, clientTimes []time.Duration
		for _, c := range calls {
			if c.route != g.Name || c.status == 500 || c.hang {
				continue
			}
			upstreamTimes = append(upstreamTimes, c.took)
			clientTimes = append(clientTimes, c.rtt)
		}
		slices.Sort(upstreamTimes)
		slices.Sort(clientTimes)
		require.EqualValues(t, len(upstreamTimes), g.Samples, "group %s", g.Name)
		for _, p := range g.Percentiles {
			if p.Quantile > 0.99 {
				continue
			}
			rank := max(int(float64(len(upstreamTimes))*p.Quantile+0.5), 1) - 1
			upstreamSays, clientSays := upstreamTimes[rank], clientTimes[min(rank+strays, len(clientTimes)-1)]
			apacheSays := time.Duration(p.Seconds * float64(time.Second))
			t.Logf("group %s p%v: upstream %v, Apache %%D %v, client %v", g.Name, p.Quantile*100,
				upstreamSays.Round(time.Microsecond), apacheSays.Round(time.Microsecond), clientSays.Round(time.Microsecond))
			slack := time.Millisecond + apacheSays/200
			assert.GreaterOrEqual(t, apacheSays+slack, upstreamSays, "group %s p%v: below the upstream's time", g.Name, p.Quantile*100)
			assert.LessOrEqual(t, apacheSays-slack, clientSays, "group %s p%v: above the client's time", g.Name, p.Quantile*100)
			if (p.Quantile == 0.5 || p.Quantile == 0.9) && noise < 10*time.Millisecond {
				assert.InDelta(t, upstreamSays.Seconds(), apacheSays.Seconds(), 0.005, "group %s p%v", g.Name, p.Quantile*100)
			}
		}
	}
	t.Logf("upstream: %d fast 500s, %d hangs answered 502; report: %d records, %d samples, %d excluded as 5xx",
		fast500, hung502, rep.Input.Records, samples, excluded5xx)
	assert.EqualValues(t, fast500+hung502, excluded5xx, "the 500s and Apache's 502 after its proxy timeout are excluded")
	assert.EqualValues(t, len(calls)-fast500-hung502, samples)
}

// checkApacheSamples decodes the log three times, each with another of its
// duration directives as the latency (%D, then %{us}T with %D's place read
// as a header, then %{ms}T), and compares each call with what the upstream
// and the client measured. It returns the p99 of %D minus the upstream's
// time, and how many calls %D timed longer than the client waited.
func checkApacheSamples(t *testing.T, logPath, logFormat string, lines []string, calls []nginxCall) (noise time.Duration, strays int) {
	for _, v := range []struct {
		name, format string
		unit         time.Duration
	}{
		{"%D", logFormat, time.Microsecond},
		{"%{us}T", strings.Replace(logFormat, "%D", "%{X-D}i", 1), time.Microsecond},
		{"%{ms}T", strings.Replace(strings.Replace(logFormat, "%D", "%{X-D}i", 1), "%{us}T", "%{X-Us}i", 1), time.Millisecond},
	} {
		f, err := os.Open(logPath)
		require.NoError(t, err)
		d, err := ingest.NewDecoder("apache", f, logPath, ingest.Options{LogFormat: v.format, By: []string{"route"}})
		require.NoError(t, err)
		notes, _ := d.(ingest.Noter)
		if notes != nil {
			assert.Empty(t, notes.Notes(), "the msec_frac time is read back")
		}
		var diffs []time.Duration
		withMillis := 0
		var above []string // calls Apache timed longer than the client waited
		for n := 0; ; n++ {
			s, err := d.Next()
			if errors.Is(err, io.EOF) {
				require.Equal(t, len(lines), n)
				break
			}
			require.NoError(t, err)
			_, q, ok := strings.Cut(lines[n], "i=")
			require.True(t, ok, lines[n])
			i, err := strconv.Atoi(q[:strings.IndexByte(q, ' ')])
			require.NoError(t, err)
			c := calls[i]
			assert.Equal(t, c.route, s.Group, lines[n])
			assert.WithinDuration(t, time.Now(), s.Time, 5*time.Minute, lines[n])
			if s.Time.Nanosecond() != 0 {
				withMillis++
			}
			switch {
			case c.hang:
				assert.Equal(t, 502, s.Status, lines[n])
				assert.GreaterOrEqual(t, s.Latency, time.Second-v.unit, lines[n])
				assert.Less(t, s.Latency, 1500*time.Millisecond, lines[n])
			default:
				assert.Equal(t, c.status, s.Status, lines[n])
				if s.Latency > c.rtt+time.Millisecond {
					above = append(above, fmt.Sprintf("call %d: Apache %v, the client waited %v", i, s.Latency, c.rtt))
				}
				diffs = append(diffs, s.Latency-c.took)
			}
		}
		f.Close()
		assert.Greater(t, withMillis, len(lines)/2, "the milliseconds of msec_frac are read")
		// Apache takes the time when it logs, after the response is sent:
		// on a busy machine that may come after the client has its answer.
		if len(above) > 0 {
			t.Logf("%s: %d calls timed longer than the client waited, such as %v", v.name, len(above), above[:min(3, len(above))])
		}
		assert.LessOrEqual(t, len(above), len(calls)/50, "%s: at most 2 %% of the calls", v.name)
		if v.name == "%D" {
			strays = len(above)
		}
		slices.Sort(diffs)
		median, p90 := diffs[len(diffs)/2], diffs[len(diffs)*90/100]
		t.Logf("%s: Apache - upstream over %d calls: min %v, median %v, p90 %v, p99 %v, max %v", v.name,
			len(diffs), diffs[0], median, p90, diffs[len(diffs)*99/100], diffs[len(diffs)-1])
		// %{ms}T truncates to whole ms: up to 1 ms below the upstream's time.
		assert.Greater(t, diffs[len(diffs)/100], -v.unit-time.Millisecond, "%s is not below the upstream's time", v.name)
		assert.Less(t, median, 2*time.Millisecond, "%s agrees with the upstream's time", v.name)
		assert.Less(t, p90, 10*time.Millisecond, "%s within 10 ms for 90 %% of the calls", v.name)
		if v.name == "%D" {
			noise = diffs[len(diffs)*99/100]
		}
	}
	return noise, strays
}
