package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApacheCompiler(t *testing.T) {
	oct10 := time.Date(2000, 10, 10, 20, 55, 36, 0, time.UTC)
	tests := []struct {
		name, format, line string
		want               lineResult
	}{
		{"common + %D (microseconds)", apacheCommonD,
			`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 1234`,
			lineResult{Latency: 1234 * time.Microsecond, Status: 200, Time: oct10, Method: "GET", Path: "/apache_pb.gif"}},
		{"combined + %D, escaped quotes in the user agent", apacheCombinedD,
			`::1 - - [10/Oct/2000:13:55:36 -0700] "GET /a?b=\"c\" HTTP/1.1" 304 - "-" "Mozilla \"x\" \\" 5`,
			lineResult{Latency: 5 * time.Microsecond, Status: 304, Time: oct10, Method: "GET", Path: `/a?b=\"c\"`}},
		{"%T is whole seconds", `%h %>s %T`, `h 200 2`,
			lineResult{Latency: 2 * time.Second, Status: 200}},
		{"%{ms}T", `%h %>s %{ms}T`, `h 200 15`,
			lineResult{Latency: 15 * time.Millisecond, Status: 200}},
		{"%{us}T", `%h %>s %{us}T`, `h 200 15`,
			lineResult{Latency: 15 * time.Microsecond, Status: 200}},
		{"%D wins over %T", `%T %D %>s`, `1 1500000 200`,
			lineResult{Latency: 1500 * time.Millisecond, Status: 200}},
		{"the final status %>s wins over %s", `%s %>s %D`, `302 200 10`,
			lineResult{Latency: 10 * time.Microsecond, Status: 200}},
		{"%s alone", `%s %D`, `404 10`,
			lineResult{Latency: 10 * time.Microsecond, Status: 404}},
		{"%m %U %{Host}i %v", `%m %U %{Host}i %v %D`, `POST /users/7 api.example.com vhost 99`,
			lineResult{Latency: 99 * time.Microsecond, Method: "POST", Path: "/users/7", Host: "api.example.com"}},
		{"%v when the Host header is not logged", `%v %D`, `vhost 99`,
			lineResult{Latency: 99 * time.Microsecond, Host: "vhost"}},
		{"%{msec}t", `%{msec}t %D`, `971211336123 1`,
			lineResult{Latency: time.Microsecond, Time: time.Date(2000, 10, 10, 20, 55, 36, 123e6, time.UTC)}},
		{"%{end:usec}t", `%{end:usec}t %D`, `971211336123456 1`,
			lineResult{Latency: time.Microsecond, Time: time.Date(2000, 10, 10, 20, 55, 36, 123456e3, time.UTC)}},
		{"%{sec}t", `%{sec}t %D`, `971211336 1`,
			lineResult{Latency: time.Microsecond, Time: oct10}},
		{"the strftime format of %t, without brackets", `%{%d/%b/%Y:%H:%M:%S %z}t %D`, `10/Oct/2000:13:55:36 -0700 1`,
			lineResult{Latency: time.Microsecond, Time: oct10}},
		{"status conditions, %%, escapes", `%400,501{User-agent}i 100%% \"%r\"\t%D`, "- 100% \"GET / HTTP/1.1\"\t7",
			lineResult{Latency: 7 * time.Microsecond, Method: "GET", Path: "/"}},
		{"balancer worker as upstream", `%{BALANCER_WORKER_NAME}e %D`, `http://10.0.0.1:8080 7`,
			lineResult{Latency: 7 * time.Microsecond, Upstream: "http://10.0.0.1:8080"}},
		{"^ti and unknown letters are read past", `%{X}^ti %Z %D`, `a b 7`,
			lineResult{Latency: 7 * time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := compileApache(tt.format, "test", "")
			require.NoError(t, err)
			got, err := parseLine(t, p, tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestApacheErrors(t *testing.T) {
	tests := []struct {
		name, format, latency string
		want                  string
	}{
		{"no duration", `%h %>s`, "", `--log-format ("%h %>s"): it has no duration. Add %D`},
		{"combined", "combined", "", `Apache's common and combined formats record no duration. Add %D (microseconds) to the LogFormat`},
		{"upstream measure", apacheCommonD, "upstream", `latency measure "upstream": Apache's access log records only the whole request's duration`},
		{"own strftime", `%{%Y-%m-%d %H:%M:%S}t %D`, "", `%{%Y-%m-%d %H:%M:%S}t: a time in a strftime format of its own cannot be read back`},
		{"unclosed brace", `%{Referer %D`, "", `the { of %{Referer %D is not closed`},
		{"a lone % at the end", `%D %`, "", `"%" at the end of the format lacks its directive letter`},
		{"not a directive", `%D %-`, "", `"%-" is not a LogFormat directive`},
		{"an nginx format", `$status $request_time`, "", `it looks like an nginx log_format: use --input nginx`},
		{"side by side", `%D%>s`, "", `%D and %>s follow each other with no text between them`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewApache(strings.NewReader("x\n"), "access_log", Options{LogFormat: tt.format, Latency: tt.latency})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "access_log: "), err.Error())
		})
	}
	t.Run("a bad line", func(t *testing.T) {
		d, err := NewApache(strings.NewReader("h 200 12\nh 200 1.5.1\n"), "access_log", Options{LogFormat: `%h %>s %D`})
		require.NoError(t, err)
		samples, errs := decodeAll(t, d)
		assert.Len(t, samples, 1)
		require.Len(t, errs, 1)
		assert.Equal(t, `access_log:2: field "%D": "1.5.1" is not a number`, errs[0].Error())
	})
}

func TestApacheFormatFlag(t *testing.T) {
	tests := []struct{ in, want string }{
		{`%h %l %u %t \"%r\" %>s %b %D`, `%h %l %u %t \"%r\" %>s %b %D`}, // \" is read by the compiler
		{`LogFormat "%h %l %u %t \"%r\" %>s %b %D" timed`, `%h %l %u %t \"%r\" %>s %b %D`},
		{`logformat %h|%D`, `%h|%D`},
		{"common", apacheCommon},
		{"combined", apacheCombined},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, apacheFormatFlag(tt.in), tt.in)
	}
	// A pasted directive decodes like the plain format.
	d, err := NewApache(strings.NewReader(`1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 321`+"\n"), "access_log",
		Options{LogFormat: `LogFormat "%h %l %u %t \"%r\" %>s %b %D" timed`})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errs)
	assert.Equal(t, []time.Duration{321 * time.Microsecond}, latencies(samples))
}

func TestApacheWithoutFormat(t *testing.T) {
	const combined = `1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "curl"`
	d, err := NewApache(strings.NewReader(combined+" 1500\n"+combined+" 2500\n"), "access_log", Options{By: []string{"route"}})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errs)
	assert.Equal(t, []time.Duration{1500 * time.Microsecond, 2500 * time.Microsecond}, latencies(samples))
	assert.Equal(t, "/x", samples[0].Group)

	_, err = NewApache(strings.NewReader(combined+" 0.5\n"), "access_log", Options{})
	assert.ErrorContains(t, err, "access_log: give the LogFormat the log was written with: --log-format")
	_, err = NewApache(strings.NewReader(combined+"\n"), "access_log", Options{NginxConf: "nginx.conf"})
	assert.ErrorContains(t, err, "--nginx-conf is for nginx logs")
}
