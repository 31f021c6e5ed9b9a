package ingest

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envoyLine is a line of Envoy's default format with the given response
// code, flags, duration and upstream service time.
func envoyLine(code, flags, duration, ust string) string {
	return `[2019-02-12T18:37:42.921Z] "GET /users/42?x=1 HTTP/1.1" ` + code + " " + flags + " 0 43 " + duration + " " + ust +
		` "172.17.0.5" "curl/7.59.0" "c62ec130-6dee-4f3b-a52b-4f0d1312d89d" "api.example.com" "10.0.0.7:8080"`
}

// envoyParsed is what a LineParser made of one line.
type envoyParsed struct {
	s   Sample
	f   Fields
	err error
}

func parseEnvoy(t testing.TB, latency, line string) envoyParsed {
	t.Helper()
	p, err := newEnvoyParser(Options{Latency: latency})
	require.NoError(t, err)
	var r envoyParsed
	r.err = p.Parse([]byte(line), &r.s, &r.f)
	return r
}

// envoyDecodeFile runs the named format over a testdata file.
func envoyDecodeFile(t *testing.T, format, path string, o Options) ([]Sample, []*ParseError) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	d, err := NewDecoder(format, f, path, o)
	require.NoError(t, err)
	return decodeAll(t, d)
}

// TestEnvoyConformance pins the expectations of
// the shared conformance folder beside the repository (its README) for envoy-default.log: line 1 is a TCP
// proxy entry that failed (UF,URX, duration 0), never a 0 ms success; line
// 2 is GET /httpbin/ip, 200, 217 ms, upstream service time 216 ms.
func TestEnvoyConformance(t *testing.T) {
	const path = "testdata/conformance/envoy-default.log"
	for _, latency := range []string{"", "request", "upstream"} {
		t.Run("latency="+latency, func(t *testing.T) {
			samples, errs := envoyDecodeFile(t, "auto", path, Options{Latency: latency, By: []string{"method", "route", "host", "upstream"}})
			require.Empty(t, errs)
			require.Len(t, samples, 2)

			tcp := samples[0]
			assert.Equal(t, 0, tcp.Status)
			assert.Equal(t, "envoy UF,URX", tcp.Excluded, "a failed TCP connection is no 0 ms success")
			assert.False(t, tcp.Censored)
			assert.Equal(t, time.Date(2019, 4, 6, 6, 20, 5, 972e6, time.UTC), tcp.Time)
			assert.Equal(t, "- / - 127.0.0.1:9200", tcp.Group)

			get := samples[1]
			assert.Equal(t, 200, get.Status)
			assert.Empty(t, get.Excluded)
			assert.False(t, get.Censored)
			want := 217 * time.Millisecond
			if latency == "upstream" {
				want = 216 * time.Millisecond
			}
			assert.Equal(t, want, get.Latency)
			assert.Equal(t, time.Date(2019, 2, 12, 18, 37, 42, 921e6, time.UTC), get.Time)
			assert.Equal(t, "GET /httpbin/ip httpbin.org 52.87.35.92:80", get.Group)
		})
	}
}

// TestEnvoyIstioLog reads real lines of Istio's text format, which puts
// three fields between the flags and the byte counts and appends seven.
func TestEnvoyIstioLog(t *testing.T) {
	ms := time.Millisecond
	type want struct {
		status   int
		latency  time.Duration
		censored bool
		excluded string
		group    string
	}
	tests := []struct {
		latency string
		want    []want
	}{
		{"request", []want{
			{418, 3 * ms, false, "", "/status/{id} httpbin:8000 127.0.0.1:80"},
			{200, 412 * ms, false, "", "/productpage 104.154.47.222 10.28.0.18:9080"},
			{504, 3001 * ms, true, "", "/delay/{id} httpbin.org 44.195.190.188:80"},
			{0, 497 * ms, true, "", "/reviews/{id} reviews:9080 10.0.2.12:9080"},
			{0, 999 * ms, true, "", "/hello helloworld.sample.svc:5000 -"},
			{504, 501 * ms, true, "", "/items catalog.istioinaction.io:30000 10.10.0.13:3000"},
			{200, 206 * ms, false, "", "/posts jsonplaceholder.typicode.com 104.21.48.1:80"},
		}},
		// The upstream never answered the UT and DC calls: their duration is
		// the censored upstream time.
		{"upstream", []want{
			{418, 1 * ms, false, "", "/status/{id} httpbin:8000 127.0.0.1:80"},
			{200, 411 * ms, false, "", "/productpage 104.154.47.222 10.28.0.18:9080"},
			{504, 3001 * ms, true, "", "/delay/{id} httpbin.org 44.195.190.188:80"},
			{0, 497 * ms, true, "", "/reviews/{id} reviews:9080 10.0.2.12:9080"},
			{0, 999 * ms, true, "", "/hello helloworld.sample.svc:5000 -"},
			{504, 501 * ms, true, "", "/items catalog.istioinaction.io:30000 10.10.0.13:3000"},
			{200, 206 * ms, false, "", "/posts jsonplaceholder.typicode.com 104.21.48.1:80"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.latency, func(t *testing.T) {
			samples, errs := envoyDecodeFile(t, "auto", "testdata/envoy/istio.log",
				Options{Latency: tt.latency, By: []string{"route", "host", "upstream"}})
			require.Empty(t, errs)
			require.Len(t, samples, len(tt.want))
			for i, w := range tt.want {
				s := samples[i]
				assert.Equal(t, w, want{s.Status, s.Latency, s.Censored, s.Excluded, s.Group}, "line %d", i+1)
			}
		})
	}
}

// TestEnvoyFlags checks each class of response flags in both latency
// modes, with the upstream service time known and unknown.
func TestEnvoyFlags(t *testing.T) {
	ms := time.Millisecond
	type want struct {
		latency  time.Duration
		censored bool
		excluded string
	}
	tests := []struct {
		name, code, flags, ust string
		request, upstream      want
	}{
		{"no flags", "200", "-", "90", want{100 * ms, false, ""}, want{90 * ms, false, ""}},
		{"no flags, no upstream time", "200", "-", "-", want{100 * ms, false, ""}, want{100 * ms, false, ExcludedNoUpstream}},
		{"UT upstream request timeout", "504", "UT", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"SI stream idle timeout", "408", "SI", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"DT max duration", "200", "DT", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"UMSDR max stream duration", "504", "UMSDR", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"UT after the upstream's headers", "504", "UT", "90", want{100 * ms, true, ""}, want{90 * ms, false, ""}},
		{"DC client went away", "0", "DC", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"DR downstream reset", "0", "DR", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"DC during the body", "200", "DC", "90", want{100 * ms, true, ""}, want{90 * ms, false, ""}},
		{"UF connection failure", "503", "UF", "-", want{100 * ms, false, "envoy UF"}, want{100 * ms, false, "envoy UF"}},
		{"UF,URX", "503", "UF,URX", "-", want{100 * ms, false, "envoy UF,URX"}, want{100 * ms, false, "envoy UF,URX"}},
		{"UO circuit breaker", "503", "UO", "-", want{100 * ms, false, "envoy UO"}, want{100 * ms, false, "envoy UO"}},
		{"NR no route", "404", "NR", "-", want{100 * ms, false, "envoy NR"}, want{100 * ms, false, "envoy NR"}},
		{"UH no healthy upstream", "503", "UH", "-", want{100 * ms, false, "envoy UH"}, want{100 * ms, false, "envoy UH"}},
		{"UC upstream termination", "503", "UC", "90", want{100 * ms, false, "envoy UC"}, want{90 * ms, false, "envoy UC"}},
		{"RL rate limited", "429", "RL", "-", want{100 * ms, false, "envoy RL"}, want{100 * ms, false, "envoy RL"}},
		{"UAEX ext authz", "403", "UAEX", "-", want{100 * ms, false, "envoy UAEX"}, want{100 * ms, false, "envoy UAEX"}},
		{"DI injected delay", "200", "DI", "5", want{100 * ms, false, "envoy DI"}, want{5 * ms, false, "envoy DI"}},
		{"RFCF from cache", "200", "RFCF", "-", want{100 * ms, false, ""}, want{100 * ms, false, ExcludedNoUpstream}},
		{"unknown flag is a failure", "503", "ZZ", "-", want{100 * ms, false, "envoy ZZ"}, want{100 * ms, false, "envoy ZZ"}},
		{"timeout wins over failure", "504", "UT,URX", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"failure wins over client gone", "503", "UC,DC", "-", want{100 * ms, false, "envoy UC,DC"}, want{100 * ms, false, "envoy UC,DC"}},
		{"long names", "504", "UpstreamRequestTimeout", "-", want{100 * ms, true, ""}, want{100 * ms, true, ""}},
		{"long failure name", "503", "UpstreamConnectionFailure", "-",
			want{100 * ms, false, "envoy UpstreamConnectionFailure"}, want{100 * ms, false, "envoy UpstreamConnectionFailure"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := envoyLine(tt.code, tt.flags, "100", tt.ust)
			for latency, w := range map[string]want{"request": tt.request, "upstream": tt.upstream} {
				r := parseEnvoy(t, latency, line)
				require.NoError(t, r.err, latency)
				assert.Equal(t, w, want{r.s.Latency, r.s.Censored, r.s.Excluded}, latency)
			}
		})
	}
}

func TestEnvoyLines(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name        string
		line        string
		wantLatency time.Duration
		wantStatus  int
		wantFields  [4]string // method, path, host, upstream
		wantErr     string
	}{
		{name: "the documentation's example",
			line:        `[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"`,
			wantLatency: 226 * ms, wantStatus: 204, wantFields: [4]string{"POST", "/api/v1/locations", "locations", "tcp://10.0.2.1:80"}},
		{name: "fields appended after UPSTREAM_HOST",
			line:        envoyLine("200", "-", "7", "6") + ` outbound|80||api.default.svc.cluster.local 10.0.0.1:4000 - "x y"`,
			wantLatency: 7 * ms, wantStatus: 200, wantFields: [4]string{"GET", "/users/42?x=1", "api.example.com", "10.0.0.7:8080"}},
		{name: "a line that ends after the upstream service time",
			line:        `[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 0 12 -`,
			wantLatency: 12 * ms, wantStatus: 200, wantFields: [4]string{"GET", "/", "", ""}},
		{name: "a quote inside the user agent",
			line:        `[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 0 12 11 "-" "a "quoted" agent" "id" "host" "1.2.3.4:80"`,
			wantLatency: 12 * ms, wantStatus: 200, wantFields: [4]string{"GET", "/", "host", "1.2.3.4:80"}},
		{name: "CRLF is the line decoder's job; a trailing space is a field",
			line:        envoyLine("200", "-", "7", "6") + " ",
			wantLatency: 7 * ms, wantStatus: 200, wantFields: [4]string{"GET", "/users/42?x=1", "api.example.com", "10.0.0.7:8080"}},
		{name: "duration not a number", line: envoyLine("200", "-", "abc", "6"),
			wantErr: `field "duration": "abc" is not a number`},
		{name: "negative duration", line: envoyLine("200", "-", "-5", "6"),
			wantErr: `field "duration": "-5" is negative`},
		{name: "upstream time not a number", line: envoyLine("200", "-", "5", "x"),
			wantErr: `field "upstream_service_time": "x" is not a number`},
		{name: "bad status", line: envoyLine("2000", "-", "5", "6"),
			wantErr: `field "response_code": "2000" is not a status code`},
		{name: "bad flags", line: envoyLine("200", "U-T", "5", "6"),
			wantErr: `field "response_flags": "U-T" is not a list of response flags`},
		{name: "trailing comma in flags", line: envoyLine("200", "UT,", "5", "6"),
			wantErr: `field "response_flags": "UT," is not a list of response flags`},
		{name: "bad time", line: strings.Replace(envoyLine("200", "-", "5", "6"), "2019-02-12", "2019-02-30", 1),
			wantErr: `field "start_time": "2019-02-30T18:37:42.921Z" ` + reasonTime},
		{name: "bytes not a number", line: `[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 x 12 11`,
			wantErr: `field "bytes_sent": "x" is not a number`},
		{name: "no request line", line: `[2016-04-15T20:17:00.310Z] GET / 200`,
			wantErr: `has no quoted request line ("METHOD PATH PROTOCOL") after [START_TIME]`},
		{name: "request line of two words", line: `[2016-04-15T20:17:00.310Z] "GET /" 200 - 0 0 1 1`,
			wantErr: `field "request": "GET /" is not METHOD PATH PROTOCOL`},
		{name: "cut short", line: `[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 0`,
			wantErr: `ends before duration: not Envoy's default format`},
		{name: "not envoy", line: `127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326`,
			wantErr: `is not an Envoy access log line: it does not start with [START_TIME]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoder("envoy", strings.NewReader(tt.line+"\r\n"), "access.log", Options{})
			require.NoError(t, err)
			p, _ := newEnvoyParser(Options{})
			var s Sample
			var f Fields
			perr := p.Parse([]byte(tt.line), &s, &f)
			samples, errs := decodeAll(t, d)
			if tt.wantErr != "" {
				require.Empty(t, samples)
				require.Len(t, errs, 1)
				assert.Equal(t, "access.log:1: "+tt.wantErr, errs[0].Error())
				assert.Error(t, perr)
				return
			}
			require.Empty(t, errs)
			require.Len(t, samples, 1)
			assert.Equal(t, tt.wantLatency, samples[0].Latency)
			assert.Equal(t, tt.wantStatus, samples[0].Status)
			assert.Equal(t, tt.wantFields, [4]string{string(f.Method), string(f.Path), string(f.Host), string(f.Upstream)})
		})
	}
}

func TestEnvoyLatencyOption(t *testing.T) {
	for _, l := range []string{"upstream-last", "upstream-header", "Request"} {
		_, err := NewDecoder("envoy", strings.NewReader(""), "access.log", Options{Latency: l})
		assert.ErrorContains(t, err, `access.log: unknown latency measure "`+l+`" for envoy logs: want request, upstream`)
	}
}

// TestEnvoyClock compares the fast timestamp reader with time.Parse, and
// checks that what it does not take goes to parseTime.
func TestEnvoyClock(t *testing.T) {
	valid := []string{
		"2019-02-12T18:37:42.921Z", "2019-02-12T18:37:42Z", "2019-02-12T18:37:42.9Z",
		"2020-03-17T13:56:41.585467093Z", "2019-02-12T18:59:59.999Z", "2019-02-12T19:00:00.000Z",
		"2020-02-29T00:00:00.000Z", "1970-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999999999Z",
	}
	var c envoyClock
	for _, s := range valid {
		want, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		got, ok := c.fast([]byte(s))
		require.True(t, ok, s)
		assert.True(t, want.Equal(got), "%s: got %v", s, got)
		assert.Equal(t, time.UTC, got.Location())
		got, ok = c.parse([]byte(s)) // again, from the cached hour
		require.True(t, ok, s)
		assert.True(t, want.Equal(got), "%s: got %v", s, got)
	}
	for _, s := range []string{
		"2019-02-30T00:00:00Z", "2019-13-01T00:00:00Z", "2019-00-01T00:00:00Z", "2019-02-12T24:00:00Z",
		"2019-02-12T18:60:00Z", "2019-02-12T18:00:60Z", "2019-02-12T18:00:00.Z", "2019-02-12T18:00:00,5Z",
		"2019-02-12T18:00:00.1234567890Z", "2019-02-12T18:00:0xZ", "x019-02-12T18:00:00Z", "2019-02-12",
	} {
		_, ok := c.fast([]byte(s))
		assert.False(t, ok, s)
		_, err := time.Parse(time.RFC3339Nano, s)
		if t2, ok := c.parse([]byte(s)); ok {
			assert.NoError(t, err, "%s: parse took it as %v", s, t2)
		}
	}
	// Other forms go to parseTime.
	got, ok := c.parse([]byte("2019-02-12T18:37:42.921+01:00"))
	require.True(t, ok)
	assert.True(t, time.Date(2019, 2, 12, 17, 37, 42, 921e6, time.UTC).Equal(got))
	got, ok = c.parse([]byte("1550000000"))
	require.True(t, ok)
	assert.Equal(t, int64(1550000000), got.Unix())
}

func TestSniffEnvoy(t *testing.T) {
	yes := []string{
		envoyLine("200", "-", "1", "1"),
		`[2019-04-06T06:20:05.972Z] "- - -" 0 UF,URX 0 0 0 - "-" "-" "-" "-" "127.0.0.1:9200"`,
		`[2020-11-25T21:26:18.409Z] "GET /status/418 HTTP/1.1" 418 - via_upstream - "-" 0 135 3 1 "-" "curl/7.73.0-DEV" "84961386-6d84-929d-98bd-c5aee93b5c88" "httpbin:8000" "127.0.0.1:80" inbound|8000|| 127.0.0.1:41854 10.44.1.27:80 10.44.1.23:37652 outbound_.8000_._.httpbin.foo.svc.cluster.local default`,
	}
	no := []string{
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326`,
		`[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 0 12 -`, // too short to be sure
		`[2016-04-15 20:17:00] something else entirely, with "quotes" "and" "more" "quotes" "here"`,
		`{"duration": 1}`,
		`latency_ms`,
	}
	for _, l := range yes {
		assert.True(t, sniffEnvoy([]byte(l)), l)
	}
	for _, l := range no {
		assert.False(t, sniffEnvoy([]byte(l)), l)
	}
}

// TestEnvoyReasonsInterned checks that a flag list costs one string, not
// one per line.
func TestEnvoyReasonsInterned(t *testing.T) {
	p, err := newEnvoyParser(Options{})
	require.NoError(t, err)
	line := []byte(envoyLine("503", "UF,URX", "1", "-"))
	var s Sample
	var f Fields
	require.NoError(t, p.Parse(line, &s, &f))
	allocs := testing.AllocsPerRun(100, func() {
		s, f = Sample{}, Fields{}
		_ = p.Parse(line, &s, &f)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, "envoy UF,URX", s.Excluded)
}
