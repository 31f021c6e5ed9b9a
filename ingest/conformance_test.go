package ingest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusFile is one file of real lines (testdata/conformance/README.md and
// the other READMEs under testdata) with the format auto-detection must
// pick for it and the options it needs.
type corpusFile struct {
	path, format string
	o            Options
	ownsSyslog   bool // the format reads syslog headers itself (HAProxy)
}

var corpusFiles = []corpusFile{
	{path: "testdata/conformance/aws-alb.log", format: "alb"},
	{path: "testdata/conformance/envoy-default.log", format: "envoy"},
	{path: "testdata/envoy/istio.log", format: "envoy"},
	{path: "testdata/conformance/haproxy-httplog.log", format: "haproxy", ownsSyslog: true},
	{path: "testdata/haproxy/haproxy-2.6-syslog.log", format: "haproxy", ownsSyslog: true},
	{path: "testdata/conformance/haproxy-2.6-events.log", format: "haproxy", ownsSyslog: true},
	{path: "testdata/conformance/ingress-nginx-upstreaminfo.log", format: "ingress-nginx"},
	{path: "testdata/conformance/caddy-2.6.log", format: "caddy"},
	// A LogFormat with %directives names Apache: detection is not sniffing there.
	{path: "testdata/conformance/apache-2.4.log", format: "apache", o: Options{LogFormat: apacheE2EFormat}},
	{path: "../testdata/nginx/access.log", format: "nginx", o: Options{NginxConf: "../testdata/nginx/nginx.conf", LogFormatName: "timing"}},
}

// apacheE2EFormat is the LogFormat e2e/TestApacheAccessLog ran Apache with.
const apacheE2EFormat = `%h %l %u [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] "%r" %>s %b "%{Referer}i" "%{User-agent}i" %D %{ms}T %{us}T`

// decoded is what a decoder made of one line.
type decoded struct {
	s          Sample
	notRequest string
	bad        string
}

// decodeFile decodes data with format ("auto" included) and returns what
// came of each line and the format used.
func decodeFile(t *testing.T, format string, data []byte, name string, o Options) ([]decoded, string) {
	t.Helper()
	f, r, err := Detect(format, bytes.NewReader(data), name, o)
	require.NoError(t, err, name)
	d, err := f.New(r, name, o)
	require.NoError(t, err, name)
	var out []decoded
	for n := 0; ; n++ {
		require.Less(t, n, 1_000_000)
		s, err := d.Next()
		if err == io.EOF {
			return out, f.Name
		}
		var nr *NotRequestError
		var pe *ParseError
		switch {
		case errors.As(err, &nr):
			out = append(out, decoded{notRequest: nr.Reason})
		case errors.As(err, &pe):
			out = append(out, decoded{bad: pe.Error()})
		default:
			require.NoError(t, err)
			out = append(out, decoded{s: s})
		}
	}
}

// TestConformanceDetect: auto-detection picks each real file's format, and
// no line of them is bad.
func TestConformanceDetect(t *testing.T) {
	for _, c := range corpusFiles {
		t.Run(c.path, func(t *testing.T) {
			data, err := os.ReadFile(c.path)
			require.NoError(t, err)
			got, format := decodeFile(t, "auto", data, c.path, c.o)
			assert.Equal(t, c.format, format)
			for i, d := range got {
				assert.Empty(t, d.bad, "line %d", i+1)
			}
		})
	}
}

// corpusPrefixes are what log pipelines put before lines (prefix.go), one
// function per pipeline; syslog ones are left out for formats that read
// syslog headers themselves.
var corpusPrefixes = []struct {
	name   string
	syslog bool
	wrap   func(line string) string
}{
	{"kubectl logs --timestamps", false, func(l string) string { return "2026-12-01T20:26:27.123456789Z " + l }},
	{"kubectl logs --timestamps, an offset", false, func(l string) string { return "2026-12-01T21:26:27+01:00 " + l }},
	{"kubectl logs --prefix", false, func(l string) string { return "[pod/web-7d4b9c8f5-x2x9q/proxy] " + l }},
	{"docker compose logs", false, func(l string) string { return "proxy-1  | " + l }},
	{"docker compose logs, colours", false, func(l string) string { return "\x1b[36mproxy-1  |\x1b[0m " + l }},
	{"docker compose logs -t", false, func(l string) string { return "proxy-1  | 2026-12-01T20:26:27.123456789Z " + l }},
	{"the OpenTelemetry collector", false, func(l string) string { return "Body: Str(" + l + ")" }},
	{"the OpenTelemetry collector, old", false, func(l string) string { return "Body: " + l }},
	{"syslog RFC 3164", true, func(l string) string { return "<190>Dec  1 20:26:27 web-1 proxy: " + l }},
	{"syslog RFC 3164, no host", true, func(l string) string { return "<190>Dec  1 20:26:27 proxy[123]: " + l }},
	{"rsyslog's file", true, func(l string) string { return "Dec  1 20:26:27 web-1 proxy[123]: " + l }},
	{"rsyslog's RFC 3339 file", true, func(l string) string { return "2026-12-01T20:26:27.123456+00:00 web-1 proxy: " + l }},
	{"syslog RFC 5424", true, func(l string) string { return "<134>1 2026-12-01T20:26:27.1Z web-1 proxy 123 - - " + l }},
	{"syslog RFC 5424, structured data", true, func(l string) string {
		return `<134>1 2026-12-01T20:26:27Z web-1 proxy 123 ID47 [x@32473 a="1\]" b="2"][y@1 c="3"] ` + l
	}},
}

// TestConformancePrefixes: every real file, each line behind each prefix
// of a log pipeline, is detected as its format and decodes line for line as
// the file itself does.
func TestConformancePrefixes(t *testing.T) {
	for _, c := range corpusFiles {
		data, err := os.ReadFile(c.path)
		require.NoError(t, err)
		want, _ := decodeFile(t, c.format, data, c.path, c.o)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		for _, p := range corpusPrefixes {
			if p.syslog && c.ownsSyslog {
				continue
			}
			t.Run(c.path+"/"+p.name, func(t *testing.T) {
				var b strings.Builder
				for _, l := range lines {
					if strings.TrimSpace(l) != "" {
						b.WriteString(p.wrap(l))
					}
					b.WriteByte('\n')
				}
				got, format := decodeFile(t, "auto", []byte(b.String()), c.path, c.o)
				assert.Equal(t, c.format, format)
				require.Equal(t, len(want), len(got))
				for i := range want {
					assert.Equal(t, want[i], got[i], "line %d: %s", i+1, p.wrap(lines[min(i, len(lines)-1)]))
				}
			})
		}
	}
}

// corpusCounts sums what the status rule makes of decoded lines.
type corpusCounts struct {
	samples, censored int
	excluded          map[string]int // by reason, the decoder's or the status rule's
	notRequests       map[string]int
}

func countDecoded(got []decoded) corpusCounts {
	c := corpusCounts{excluded: map[string]int{}, notRequests: map[string]int{}}
	var rule StatusRule
	for _, d := range got {
		if d.notRequest != "" {
			c.notRequests[d.notRequest]++
			continue
		}
		s := d.s
		if reason := rule.Classify(&s); reason != "" {
			c.excluded[reason]++
			continue
		}
		c.samples++
		if s.Censored {
			c.censored++
		}
	}
	return c
}

// TestCaddyConformance reads what a real Caddy 2.6 wrote to stderr
// (testdata/conformance/README.md): its own messages, access log entries
// (status 0 for a client gone, 500s, 502s from a dead upstream) and the
// error log's copies of the 502s.
func TestCaddyConformance(t *testing.T) {
	const name = "testdata/conformance/caddy-2.6.log"
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	got, format := decodeFile(t, "auto", data, name, Options{By: []string{"route"}})
	require.Equal(t, "caddy", format)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, got, len(lines))
	require.Len(t, lines, 93)
	for i, d := range got {
		l := lines[i]
		switch {
		case strings.Contains(l, `"logger":"http.log.error`):
			assert.Equal(t, "caddy error log entry", d.notRequest, l)
		case !strings.Contains(l, `"msg":"handled request"`):
			assert.Equal(t, "caddy log message", d.notRequest, l)
		default:
			require.Empty(t, d.notRequest, l)
			_, st, _ := strings.Cut(l, `"status":`)
			status, err := strconv.Atoi(st[:strings.IndexByte(st, ',')])
			require.NoError(t, err)
			assert.Equal(t, status, d.s.Status)
			assert.Equal(t, status == 0, d.s.Censored, "status 0 is censored: %s", l)
			_, dur, _ := strings.Cut(l, `"duration":`)
			secs, err := strconv.ParseFloat(dur[:strings.IndexByte(dur, ',')], 64)
			require.NoError(t, err)
			assert.InDelta(t, secs, d.s.Latency.Seconds(), 1e-9, l)
			if status == 0 {
				assert.GreaterOrEqual(t, d.s.Latency, 295*time.Millisecond, "the client gave up after 300 ms: %s", l)
			}
		}
	}
	c := countDecoded(got)
	assert.Equal(t, corpusCounts{
		samples: 26, censored: 6, // 20 of status 200, 6 of status 0
		excluded:    map[string]int{Excluded5xx: 49},                                     // 44 500s, 5 502s
		notRequests: map[string]int{"caddy log message": 13, "caddy error log entry": 5}, // startup and shutdown; the 502s' error entries
	}, c)
}

// TestHAProxyEvents reads what a real HAProxy 2.6 sent to syslog besides
// its requests (testdata/conformance/haproxy-2.6-events.sh): a server going
// down, a backend left without servers, two TLS handshakes that failed and
// the soft stop of each proxy. The file starts with such a line.
func TestHAProxyEvents(t *testing.T) {
	const name = "testdata/conformance/haproxy-2.6-events.log"
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	for _, latency := range []string{"request", "upstream"} {
		got, format := decodeFile(t, "auto", data, name, Options{Latency: latency})
		require.Equal(t, "haproxy", format)
		require.Len(t, got, 11)
		c := countDecoded(got)
		assert.Equal(t, corpusCounts{
			samples: 2, excluded: map[string]int{"haproxy SC": 1}, // 503: no server to connect to
			notRequests: map[string]int{
				"haproxy server state": 1, "haproxy no server available": 1,
				"haproxy SSL handshake failure": 2, "haproxy proxy stopped": 4,
			},
		}, c, latency)
		assert.Equal(t, []time.Duration{7 * time.Millisecond, 5 * time.Millisecond},
			[]time.Duration{got[2].s.Latency, got[4].s.Latency}, latency)
	}
}

// TestApacheConformance reads what a real Apache 2.4 wrote with
// mod_log_config's time with milliseconds and %D, %{ms}T and %{us}T
// (apacheE2EFormat), taking each of the three as the latency in turn.
func TestApacheConformance(t *testing.T) {
	const name = "testdata/conformance/apache-2.4.log"
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 89)
	for _, v := range []struct {
		name, format string
		field        int // which of the three numbers at the end is the latency
		unit         time.Duration
	}{
		{"%D", apacheE2EFormat, 0, time.Microsecond},
		{"%{us}T", strings.Replace(apacheE2EFormat, "%D", "%{X-D}i", 1), 2, time.Microsecond},
		{"%{ms}T", strings.Replace(strings.Replace(apacheE2EFormat, "%D", "%{X-D}i", 1), "%{us}T", "%{X-Us}i", 1), 1, time.Millisecond},
	} {
		t.Run(v.name, func(t *testing.T) {
			d, err := NewApache(bytes.NewReader(data), name, Options{LogFormat: v.format})
			require.NoError(t, err)
			assert.Empty(t, d.(Noter).Notes())
			samples, errs := decodeAll(t, d)
			require.Empty(t, errs)
			require.Len(t, samples, len(lines))
			statuses := map[int]int{}
			for i, s := range samples {
				f := strings.Fields(lines[i])
				n, err := strconv.Atoi(f[len(f)-3+v.field])
				require.NoError(t, err)
				assert.Equal(t, time.Duration(n)*v.unit, s.Latency, lines[i])
				// [01/Dec/2026:20:26:37.442 +0000]
				stamp := strings.TrimPrefix(f[3], "[") + " " + strings.TrimSuffix(f[4], "]")
				want, err := time.Parse("02/Jan/2006:15:04:05.000 -0700", stamp)
				require.NoError(t, err)
				assert.True(t, want.Equal(s.Time), "time %v, want %v: %s", s.Time, want, lines[i])
				statuses[s.Status]++
			}
			assert.Equal(t, map[int]int{200: 37, 500: 47, 502: 5}, statuses)
		})
	}
	got, _ := decodeFile(t, "apache", data, name, Options{LogFormat: apacheE2EFormat})
	assert.Equal(t, corpusCounts{samples: 37, excluded: map[string]int{Excluded5xx: 52}, notRequests: map[string]int{}}, countDecoded(got),
		"Apache answers a call that outlives its proxy timeout with a 502: excluded, not censored")
}

// TestBuiltInShapesBehindPrefixes: the formats recognised without
// --log-format (nginx's combined + $request_time [$upstream_response_time],
// Apache's combined + %D) are recognised behind every prefix too, and read
// the same.
func TestBuiltInShapesBehindPrefixes(t *testing.T) {
	inputs := map[string]string{
		"nginx": `10.0.4.135 - - [02/Nov/2026:10:00:00 +0000] "GET /api/search?q=1 HTTP/1.1" 200 264 "-" "curl/8.5.0" 0.054 0.053` + "\n" +
			`10.0.7.132 - - [02/Nov/2026:10:00:01 +0000] "GET /api/users/65661 HTTP/1.1" 200 410 "-" "curl/8.5.0" 0.087 0.086` + "\n",
		"apache": `127.0.0.1 - frank [10/Oct/2026:13:55:36 -0700] "GET /a HTTP/1.0" 200 2326 "-" "Mozilla/5.0" 1234` + "\n" +
			`127.0.0.1 - - [10/Oct/2026:13:55:37 -0700] "POST /b HTTP/1.0" 503 0 "-" "curl" 99000` + "\n",
	}
	for format, data := range inputs {
		want, got := decodeFile(t, "auto", []byte(data), format, Options{})
		require.Equal(t, format, got)
		require.Len(t, want, 2)
		for _, p := range corpusPrefixes {
			t.Run(format+"/"+p.name, func(t *testing.T) {
				var b strings.Builder
				for _, l := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
					b.WriteString(p.wrap(l) + "\n")
				}
				for _, input := range []string{"auto", format} {
					dec, name := decodeFile(t, input, []byte(b.String()), format, Options{})
					assert.Equal(t, format, name)
					assert.Equal(t, want, dec, "--input %s", input)
				}
			})
		}
	}
}
