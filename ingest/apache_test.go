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
		{"upstream measure", apacheCommonD, "upstream", `unknown latency measure "upstream" for apache logs: want request (Apache's access log records only the whole request's duration, %D or %T)`},
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

// TestApacheStrftime: times in strftime formats of the user's own are read
// back when they hold a whole date and time, and otherwise left out with a
// note; the format is never refused for them (latency does not need them).
func TestApacheStrftime(t *testing.T) {
	const req = `"GET /a HTTP/1.1" 200 3 1500`
	tests := []struct {
		name, format, line string
		want               time.Time // zero: no time
		note               string
	}{
		{"mod_log_config's milliseconds", `%h [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] "%r" %>s %b %D`,
			`127.0.0.1 [01/Dec/2026:21:16:15.146 +0100] ` + req, time.Date(2026, 12, 1, 20, 16, 15, 146e6, time.UTC), ""},
		{"microseconds, end of the request", `%h [%{end:%d/%b/%Y:%H:%M:%S}t.%{end:usec_frac}t] "%r" %>s %b %D`,
			`127.0.0.1 [01/Dec/2026:20:16:15.000146] ` + req, time.Date(2026, 12, 1, 20, 16, 15, 146e3, time.UTC), ""},
		{"a space inside the value", `%{%Y-%m-%d %H:%M:%S}t %h "%r" %>s %b %D`,
			`2026-12-01 20:16:15 127.0.0.1 ` + req, time.Date(2026, 12, 1, 20, 16, 15, 0, time.UTC), ""},
		{"aliases and names", `[%{%a %b %e %T %Y}t] "%r" %>s %b %D`,
			`[Tue Dec  1 20:16:15 2026] ` + req, time.Date(2026, 12, 1, 20, 16, 15, 0, time.UTC), ""},
		{"date and time apart", `%{%F}t %h %{%T}t "%r" %>s %b %D`,
			`2026-12-01 127.0.0.1 20:16:15 ` + req, time.Date(2026, 12, 1, 20, 16, 15, 0, time.UTC), ""},
		{"%t's own format", `[%{%d/%b/%Y:%T %z}t] "%r" %>s %b %D`,
			`[01/Dec/2026:20:16:15 +0000] ` + req, time.Date(2026, 12, 1, 20, 16, 15, 0, time.UTC), ""},
		{"Unix seconds", `%{%s}t "%r" %>s %b %D`, `1796156175 ` + req, time.Unix(1796156175, 0).UTC(), ""},
		{"no date", `[%{%H:%M:%S}t] "%r" %>s %b %D`, `[20:16:15] ` + req, time.Time{},
			`the times in %{%H:%M:%S}t are not read (between them they hold no whole date and time)`},
		{"a conversion not read back", `[%{%Y %j %H:%M:%S}t] "%r" %>s %b %D`, `[2026 335 20:16:15] ` + req, time.Time{},
			`the times in %{%Y %j %H:%M:%S}t are not read (it holds a conversion that is not read back)`},
		{"a time beside %t is not needed", `%t %{%Y}t "%r" %>s %b %D`, `[01/Dec/2026:20:16:15 +0000] 2026 ` + req,
			time.Date(2026, 12, 1, 20, 16, 15, 0, time.UTC), ""},
		{"a value that does not read", `[%{%d/%b/%Y:%H:%M:%S}t] "%r" %>s %b %D`, `[01/Dxx/2026:20:16:15] ` + req, time.Time{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewApache(strings.NewReader(tt.line+"\n"), "access_log", Options{LogFormat: tt.format})
			require.NoError(t, err)
			samples, errs := decodeAll(t, d)
			require.Empty(t, errs)
			require.Len(t, samples, 1)
			assert.Equal(t, 1500*time.Microsecond, samples[0].Latency)
			assert.Equal(t, 200, samples[0].Status)
			assert.True(t, tt.want.Equal(samples[0].Time), "time %v, want %v", samples[0].Time, tt.want)
			notes := d.(Noter).Notes()
			if tt.note == "" {
				assert.Empty(t, notes)
			} else {
				require.Len(t, notes, 1)
				assert.Contains(t, notes[0], tt.note)
			}
		})
	}
}

// FuzzApacheTime checks that reading strftime times back never panics and
// never turns a line the layout accepts into an error or changes its
// latency, whatever the line and the time format.
func FuzzApacheTime(f *testing.F) {
	for _, s := range []string{
		"[01/Dec/2026:21:16:15.146 +0100] 1500", "[Tue Dec  1 20:16:15 2026] 15", "[2026-12-01 20:16:15] 0",
		"[01/Dxx/2026:20:16:15.9999999999 +9999] 1", "[] 1", "[%] 2",
	} {
		for spec := range uint8(5) {
			f.Add(spec, s)
		}
	}
	specs := []string{
		`[%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] %D`, `[%{%a %b %e %T %Y}t] %D`, `[%{%F %T}t] %D`,
		`[%{%Y%m%d%H%M%S}t%{usec_frac}t] %D`, `[%{%B %d %y %H %M %S %Z %%}t] %D`,
	}
	f.Fuzz(func(t *testing.T, spec uint8, line string) {
		format := specs[int(spec)%len(specs)]
		l, err := compileApache(format, "fuzz", "")
		if err != nil {
			t.Fatal(err)
		}
		var s0 Sample
		var f0 Fields
		plain := l.Parse([]byte(line), &s0, &f0)
		d, err := NewApache(strings.NewReader(line+"\n"), "fuzz", Options{LogFormat: format})
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.Next()
		if plain == nil && err != nil && !strings.ContainsAny(line, "\n\r") && strings.TrimSpace(line) != "" {
			t.Fatalf("the layout reads %q, the decoder says %v", line, err)
		}
		if err == nil && s.Latency != s0.Latency && plain == nil && strings.TrimSpace(line) == line {
			t.Fatalf("latency %v, the layout's %v", s.Latency, s0.Latency)
		}
	})
}
