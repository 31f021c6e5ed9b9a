package ingest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineResult is what one line yields, in a form tests can compare.
type lineResult struct {
	Latency      time.Duration
	Status       int
	Time         time.Time
	Connect      time.Duration
	ConnectKnown bool
	Excluded     string
	Method, Path string
	Host         string
	Upstream     string
}

func parseLine(t *testing.T, p LineParser, line string) (lineResult, error) {
	t.Helper()
	var s Sample
	var f Fields
	err := p.Parse([]byte(line), &s, &f)
	return lineResult{
		Latency: s.Latency, Status: s.Status, Time: s.Time, Connect: s.Connect, ConnectKnown: s.ConnectKnown,
		Excluded: s.Excluded, Method: string(f.Method), Path: string(f.Path), Host: string(f.Host), Upstream: string(f.Upstream),
	}, err
}

func millis(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestNginxCompiler(t *testing.T) {
	feb7 := time.Date(2020, 2, 7, 11, 48, 51, 0, time.UTC)
	tests := []struct {
		name    string
		format  string
		latency string
		line    string
		want    lineResult
	}{
		{
			name:   "combined + request_time, user agent with spaces and quotes",
			format: nginxCombinedTimed,
			line:   `10.0.0.1 - bob [07/Feb/2020:11:48:51 +0000] "GET /users/42?x=1 HTTP/1.1" 200 512 "http://a/ b" "Mozilla/5.0 (X11; Linux x86_64) \x22quoted\x22" 0.250`,
			want:   lineResult{Latency: millis(250), Status: 200, Time: feb7, Method: "GET", Path: "/users/42?x=1"},
		},
		{
			name:   "empty quoted values",
			format: nginxCombinedTimedUpstream,
			line:   `::1 - - [07/Feb/2020:11:48:51 +0000] "" 400 0 "" "" 0.000 -`,
			want:   lineResult{Status: 400, Time: feb7},
		},
		{
			name:   "${var} form inside words",
			format: `rt=${request_time}s st=${status}!`,
			line:   `rt=1.5s st=504!`,
			want:   lineResult{Latency: 1500 * time.Millisecond, Status: 504},
		},
		{
			name:   "literal brackets around values",
			format: `[$time_local] [$request_time] [$proxy_upstream_name] $status`,
			line:   `[07/Feb/2020:11:48:51 +0000] [0.012] [default-web-8080] 200`,
			want:   lineResult{Latency: millis(12), Status: 200, Time: feb7, Upstream: "default-web-8080"},
		},
		{
			name:   "empty brackets",
			format: `[$proxy_upstream_name] [$proxy_alternative_upstream_name] $request_time`,
			line:   `[] [] 0.001`,
			want:   lineResult{Latency: millis(1)},
		},
		{
			name:   "variables back to back, one space apart, format ending in a variable",
			format: `$status $request_time $upstream_response_time`,
			line:   `200 0.020 0.019`,
			want:   lineResult{Latency: millis(20), Status: 200},
		},
		{
			name:   "time_local without brackets: its space does not end it",
			format: `$time_local $request_time $status`,
			line:   `07/Feb/2020:11:48:51 +0000 0.003 200`,
			want:   lineResult{Latency: millis(3), Status: 200, Time: feb7},
		},
		{
			name:    "upstream list over servers and redirects, summed",
			format:  `$upstream_response_time $status $upstream_addr`,
			latency: "upstream",
			line:    `0.100, 0.004 : 0.020 200 10.0.0.1:80, 10.0.0.2:80 : unix:/run/app.sock`,
			want:    lineResult{Latency: millis(124), Status: 200, Upstream: "unix:/run/app.sock"},
		},
		{
			name:    "upstream-last takes the last try",
			format:  `$upstream_response_time $status`,
			latency: "upstream-last",
			line:    `0.100, 0.004 : 0.020 200`,
			want:    lineResult{Latency: millis(20), Status: 200},
		},
		{
			name:    "a server never reached in the list",
			format:  `$upstream_response_time $status`,
			latency: "upstream",
			line:    `0.100, - 502`,
			want:    lineResult{Latency: millis(100), Status: 502},
		},
		{
			name:    "upstream-last skips a last entry without a value",
			format:  `$upstream_response_time $status`,
			latency: "upstream-last",
			line:    `0.100, - 502`,
			want:    lineResult{Latency: millis(100), Status: 502},
		},
		{
			name:    "no upstream reached: excluded, not a bad line",
			format:  `$status $request_time $upstream_response_time`,
			latency: "upstream",
			line:    `400 0.000 -`,
			want:    lineResult{Status: 400, Excluded: ExcludedNoUpstream},
		},
		{
			name:    "upstream-header, summed",
			format:  `$upstream_header_time|$upstream_response_time|$status`,
			latency: "upstream-header",
			line:    `0.005, 0.006|0.050, 0.060|200`,
			want:    lineResult{Latency: millis(11), Status: 200},
		},
		{
			name:   "connect time summed over tries",
			format: `$request_time $upstream_connect_time $status`,
			line:   `0.300 0.001, 0.002 : 0.004 200`,
			want:   lineResult{Latency: millis(300), Connect: millis(7), ConnectKnown: true, Status: 200},
		},
		{
			name:   "connect time of a request that reached no upstream",
			format: `$request_time $upstream_connect_time $status`,
			line:   `0.000 - 404`,
			want:   lineResult{Status: 404},
		},
		{
			name:   "list at the end of the line",
			format: `$request_time $upstream_addr`,
			line:   `0.010 [2a02:cf40::7]:5000, [2a02:cf40::::::::4e36]:500000000`,
			want:   lineResult{Latency: millis(10), Upstream: "[2a02:cf40::::::::4e36]:500000000"},
		},
		{
			name:   "msec before time_local; request_method and request_uri before request",
			format: `$msec [$time_local] $request_method $request_uri "$request" $request_time`,
			line:   `1580000000.123 [07/Feb/2020:11:48:51 +0000] POST /a/b?c=d "GET /x HTTP/1.1" 0.001`,
			want:   lineResult{Latency: millis(1), Time: time.Unix(1580000000, 123e6).UTC(), Method: "POST", Path: "/a/b?c=d"},
		},
		{
			name:   "time_iso8601, uri, host",
			format: `$time_iso8601 $host $uri $request_time`,
			line:   `2020-02-07T12:48:51+01:00 api.example.com /v1/items 0.002`,
			want:   lineResult{Latency: millis(2), Time: feb7, Host: "api.example.com", Path: "/v1/items"},
		},
		{
			name:   "http_host when host is absent",
			format: `$http_host $server_name $request_time`,
			line:   `a.example:8080 _ 0.002`,
			want:   lineResult{Latency: millis(2), Host: "a.example:8080"},
		},
		{
			name:   "an invalid request line is still a request",
			format: nginxCombinedTimed,
			line:   `1.2.3.4 - - [07/Feb/2020:11:48:51 +0000] "PATCHp /products/42 HTTP/1.1" 400 163 "-" "-" 0.000`,
			want:   lineResult{Status: 400, Time: feb7, Method: "PATCHp", Path: "/products/42"},
		},
		{
			name:   "a request of -",
			format: nginxCombinedTimed,
			line:   `1.2.3.4 - - [07/Feb/2020:11:48:51 +0000] "-" 400 0 "-" "-" 0.001`,
			want:   lineResult{Latency: millis(1), Status: 400, Time: feb7},
		},
		{
			name:   "trailing spaces after a format that ends in a variable",
			format: `$status $request_time`,
			line:   "200 0.500  \t",
			want:   lineResult{Latency: millis(500), Status: 200},
		},
		{
			name:   "the last quoted value may hold a quote: the line's end decides",
			format: `$request_time "$http_user_agent"`,
			line:   `0.001 "a "b" c"`,
			want:   lineResult{Latency: millis(1)},
		},
		{
			name:   "two skipped variables side by side read as one",
			format: `$request_time $remote_addr$remote_port $status`,
			line:   `0.001 10.0.0.1:5555 200`,
			want:   lineResult{Latency: millis(1), Status: 200},
		},
		{
			name:   "status 499 and 504 only set Status",
			format: `$status $request_time`,
			line:   `499 5.000`,
			want:   lineResult{Latency: 5 * time.Second, Status: 499},
		},
		{
			name:   "variable names are case-insensitive as nginx's",
			format: `$Request_Time $STATUS`,
			line:   `0.007 201`,
			want:   lineResult{Latency: millis(7), Status: 201},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := compileNginx(nginxFormat{text: tt.format, escape: "default", origin: "test"}, tt.latency)
			require.NoError(t, err)
			got, err := parseLine(t, p, tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNginxEscapeJSON(t *testing.T) {
	nf, err := nginxFormatFlag(`escape=json '{"ua":"$http_user_agent","uri":"$request_uri","request_time":$request_time}'`)
	require.NoError(t, err)
	assert.Equal(t, "json", nf.escape)
	p, err := compileNginx(nf, "")
	require.NoError(t, err)
	got, err := parseLine(t, p, `{"ua":"say \"hi\", \\","uri":"/a\"b","request_time":0.042}`)
	require.NoError(t, err)
	assert.Equal(t, millis(42), got.Latency)
	assert.Equal(t, `/a\"b`, got.Path, "values are not unescaped: only routes use them")
}

// decodeNginxLines runs the nginx decoder over lines named "access.log".
func decodeNginxLines(t *testing.T, o Options, lines ...string) ([]Sample, []*ParseError) {
	t.Helper()
	d, err := NewNginx(strings.NewReader(strings.Join(lines, "\n")+"\n"), "access.log", o)
	require.NoError(t, err)
	return decodeAll(t, d)
}

func TestNginxLineErrors(t *testing.T) {
	o := Options{LogFormat: `$remote_addr [$time_local] "$request" $status $request_time $upstream_connect_time $request_id`}
	good := `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200 0.001 0.001 2b8e`
	tests := []struct {
		name, line, want string
	}{
		{"latency not a number", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200 abc 0.001 2b8e`,
			`access.log:2: field "request_time": "abc" is not a number`},
		{"negative latency", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200 -0.5 0.001 2b8e`,
			`access.log:2: field "request_time": "-0.5" is negative`},
		{"unset request_time", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200 - 0.001 2b8e`,
			`access.log:2: field "request_time": "-" is unset (-)`},
		{"bad status", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 2000 0.001 0.001 2b8e`,
			`access.log:2: field "status": "2000" is not a status code`},
		{"bad time", `1.2.3.4 [31/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200 0.001 0.001 2b8e`,
			`access.log:2: field "time_local": "31/Feb/2020:11:48:51 +0000" is not a time like 07/Feb/2020:11:48:51 +0000`},
		{"cut short", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200`,
			`access.log:2: ends too soon: no " " after status where the log format has one (cut short, or written with another format)`},
		{"cut inside a quoted value", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTT`,
			`access.log:2: ends too soon: no "\" " after request where the log format has one (cut short, or written with another format)`},
		{"a list entry that is not a number", `1.2.3.4 [07/Feb/2020:11:48:51 +0000] "GET / HTTP/1.1" 200 0.001 0.001, x 2b8e`,
			`access.log:2: field "upstream_connect_time": "0.001, x" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, errs := decodeNginxLines(t, o, good, tt.line, good)
			assert.Len(t, samples, 2, "the lines around the bad one still count")
			require.Len(t, errs, 1)
			assert.Equal(t, tt.want, errs[0].Error())
		})
	}

	t.Run("a line that does not start like the format", func(t *testing.T) {
		_, errs := decodeNginxLines(t, Options{LogFormat: `rt=$request_time`}, `x=1`)
		require.Len(t, errs, 1)
		assert.Equal(t, `access.log:1: does not start with "rt=" like the log format`, errs[0].Error())
	})
	t.Run("a line that does not end like the format", func(t *testing.T) {
		_, errs := decodeNginxLines(t, Options{LogFormat: `$request_time "$http_user_agent"`}, `0.1 "curl`)
		require.Len(t, errs, 1)
		assert.Equal(t, `access.log:1: does not end with "\"" after http_user_agent like the log format (cut short, or written with another format)`, errs[0].Error())
	})
}

func TestNginxConstructorErrors(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string // substrings of the error
	}{
		{"format without the chosen variable",
			Options{LogFormat: `$remote_addr $status $upstream_response_time`},
			[]string{"access.log: --log-format", `"$remote_addr $status $upstream_response_time"`, "has no $request_time", "add it, or choose a measure the format has: --latency upstream ($upstream_response_time), --latency upstream-last ($upstream_response_time)"}},
		{"upstream measure, format without it",
			Options{LogFormat: `$status $request_time`, Latency: "upstream-header"},
			[]string{"has no $upstream_header_time, which --latency upstream-header needs", "choose a measure the format has: --latency request ($request_time)"}},
		{"combined alone",
			Options{LogFormat: "combined"},
			[]string{"nginx's combined format records no latency", "Add $request_time", "log_format timed"}},
		{"combined by name, without a config",
			Options{LogFormatName: "combined"},
			[]string{"nginx's combined format records no latency"}},
		{"a name without a config",
			Options{LogFormatName: "main"},
			[]string{`--log-format-name "main" needs --nginx-conf`}},
		{"both a format and a config",
			Options{LogFormat: "$request_time", NginxConf: "nginx.conf"},
			[]string{"either with --log-format or with --nginx-conf"}},
		{"unknown measure",
			Options{LogFormat: "$request_time", Latency: "total"},
			[]string{`unknown latency measure "total" for nginx logs: want request, upstream, upstream-last, upstream-header`}},
		{"a $ without a name",
			Options{LogFormat: "$request_time $ $status"},
			[]string{"a $ at offset 14 is not followed by a variable name"}},
		{"an unclosed ${",
			Options{LogFormat: "$request_time ${status"},
			[]string{"the closing bracket of ${status is missing"}},
		{"used variables side by side",
			Options{LogFormat: "$request_time$status"},
			[]string{"$request_time and $status follow each other with no text between them"}},
		{"an Apache format",
			Options{LogFormat: `%h %>s %D`},
			[]string{"it looks like an Apache LogFormat: use --input apache"}},
		{"bad group key",
			Options{LogFormat: "$request_time", By: []string{"colour"}},
			[]string{`cannot group by "colour"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewNginx(strings.NewReader("0.1\n"), "access.log", tt.o)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestNginxFormatFlag(t *testing.T) {
	tests := []struct {
		name, flag string
		want       nginxFormat
	}{
		{"as between the quotes, with escapes", `$status \"$request\"\t$request_time`,
			nginxFormat{text: "$status \"$request\"\t$request_time", escape: "default", origin: "--log-format"}},
		{"a pasted directive", `log_format main escape=none '$status '
			'$request_time';`,
			nginxFormat{text: "$status $request_time", escape: "none", origin: `--log-format (log_format "main")`}},
		{"quoted parts", `'$status ' "$request_time"`,
			nginxFormat{text: "$status $request_time", escape: "default", origin: "--log-format"}},
		{"a format starting with a double quote is a format", `"$request" $request_time`,
			nginxFormat{text: `"$request" $request_time`, escape: "default", origin: "--log-format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nginxFormatFlag(tt.flag)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := nginxFormatFlag(`log_format main escape=yaml '$request_time';`)
	assert.ErrorContains(t, err, "unknown escape=yaml")
}

func TestNginxWithoutFormat(t *testing.T) {
	const combined = `10.0.0.1 - - [07/Feb/2020:11:48:51 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8.0"`
	t.Run("combined + request_time", func(t *testing.T) {
		samples, errs := decodeNginxLines(t, Options{}, combined+" 0.120", combined+" 0.130")
		assert.Empty(t, errs)
		assert.Equal(t, []time.Duration{millis(120), millis(130)}, latencies(samples))
	})
	t.Run("combined + request_time + upstream_response_time", func(t *testing.T) {
		samples, errs := decodeNginxLines(t, Options{Latency: "upstream"}, combined+" 0.120 0.100, 0.015", combined+" 0.130 -")
		assert.Empty(t, errs)
		assert.Equal(t, []time.Duration{millis(115), 0}, latencies(samples))
		assert.Equal(t, ExcludedNoUpstream, samples[1].Excluded)
	})
	t.Run("combined alone", func(t *testing.T) {
		_, err := NewNginx(strings.NewReader(combined+"\n"), "access.log", Options{})
		assert.ErrorContains(t, err, "access.log: the lines look like the combined format (nginx's or Apache's), which records no latency")
	})
	t.Run("a custom format", func(t *testing.T) {
		_, err := NewNginx(strings.NewReader("0.1 200 /a\n"), "access.log", Options{})
		assert.ErrorContains(t, err, "access.log: nginx logs are written in a format of the user's choice: give it with --log-format")
	})
	t.Run("a trailing integer is not a request time", func(t *testing.T) {
		_, err := NewNginx(strings.NewReader(combined+" 1234\n"), "access.log", Options{})
		assert.ErrorContains(t, err, "give it with --log-format")
	})
	t.Run("empty input", func(t *testing.T) {
		_, err := NewNginx(strings.NewReader("\n\n"), "access.log", Options{})
		assert.True(t, errors.Is(err, ErrEmptyInput), "%v", err)
	})
}

func TestSniffAccessLogs(t *testing.T) {
	const combined = `10.0.0.1 - - [07/Feb/2020:11:48:51 +0000] "GET /a HTTP/1.1" 200 5 "-" "Mozilla/5.0 (X11)"`
	const common = `10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`
	tests := []struct {
		name, line string
		format     string // the format auto must choose; "" = none
		latency    time.Duration
	}{
		{"nginx combined + request_time", combined + " 0.123", "nginx", millis(123)},
		{"nginx combined + request_time + upstream list", combined + " 0.123 0.050, 0.060", "nginx", millis(123)},
		{"nginx combined + request_time + no upstream", combined + " 0.123 -", "nginx", millis(123)},
		{"apache combined + %D", combined + " 1234", "apache", 1234 * time.Microsecond},
		{"apache common + %D", common + " 1234", "apache", 1234 * time.Microsecond},
		{"ingress-nginx upstreaminfo",
			`192.168.64.1 - - [07/Feb/2020:11:48:51 +0000] "POST /products HTTP/1.1" 200 59 "-" "curl/7.54.0" 89 0.001 [default-web-8080] [] 172.17.0.5:8080 59 0.000 200 529a007902362a5f51385a5fa7049884`,
			"ingress-nginx", millis(1)},
		{"apache common without %D", common, "", 0},
		{"two trailing integers", combined + " 12 34", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []Format{formats["nginx"], formats["ingress-nginx"], formats["apache"]} {
				assert.Equal(t, f.Name == tt.format, f.Sniff([]byte(tt.line)), "%s sniffer", f.Name)
			}
			if tt.format == "" {
				return
			}
			d, err := NewDecoder("auto", strings.NewReader(tt.line+"\n"), "access.log", Options{})
			require.NoError(t, err)
			samples, errs := decodeAll(t, d)
			require.Empty(t, errs)
			require.Len(t, samples, 1)
			assert.Equal(t, tt.latency, samples[0].Latency)
		})
	}
	t.Run("combined without timing goes to nginx, which says what is missing", func(t *testing.T) {
		assert.True(t, formats["nginx"].Sniff([]byte(combined)))
		_, err := NewDecoder("auto", strings.NewReader(combined+"\n"), "access.log", Options{})
		assert.ErrorContains(t, err, "records no latency")
	})
}

func TestNginxGrouping(t *testing.T) {
	o := Options{
		LogFormat: `$host "$request" $status $request_time $upstream_addr`,
		By:        []string{"route", "method", "status_class", "host", "upstream"},
	}
	samples, errs := decodeNginxLines(t, o,
		`api.example.com "GET /users/42?full=1 HTTP/1.1" 200 0.010 10.0.0.1:80, 10.0.0.2:80`,
		`api.example.com "POST /users HTTP/2.0" 504 1.000 10.0.0.1:80`,
		`- "GET /health HTTP/1.1" 200 0.001 -`,
	)
	require.Empty(t, errs)
	var groups []string
	for _, s := range samples {
		groups = append(groups, s.Group)
	}
	assert.Equal(t, []string{
		"/users/{id} GET 2xx api.example.com 10.0.0.2:80",
		"/users POST 5xx api.example.com 10.0.0.1:80",
		"/health GET 2xx - -",
	}, groups)

	t.Run("route patterns", func(t *testing.T) {
		o := Options{LogFormat: `"$request" $request_time`, By: []string{"route"}, RoutePatterns: []string{"/users/{name}"}}
		samples, _ := decodeNginxLines(t, o, `"GET /users/alice HTTP/1.1" 0.1`)
		require.Len(t, samples, 1)
		assert.Equal(t, "/users/{name}", samples[0].Group)
	})
}

func TestTimeParsing(t *testing.T) {
	t.Run("time_local", func(t *testing.T) {
		tests := []struct {
			in   string
			want time.Time
			ok   bool
		}{
			{"07/Feb/2020:11:48:51 +0000", time.Date(2020, 2, 7, 11, 48, 51, 0, time.UTC), true},
			{"10/Oct/2000:13:55:36 -0700", time.Date(2000, 10, 10, 20, 55, 36, 0, time.UTC), true},
			{"01/Jan/2021:00:30:00 +0530", time.Date(2020, 12, 31, 19, 0, 0, 0, time.UTC), true},
			{"29/Feb/2024:23:59:59 -1200", time.Date(2024, 3, 1, 11, 59, 59, 0, time.UTC), true},
			{"31/Dec/1999:23:59:60 +0000", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), true}, // a leap second
			{"29/Feb/2023:00:00:00 +0000", time.Time{}, false},
			{"07/Foo/2020:11:48:51 +0000", time.Time{}, false},
			{"07/Feb/2020:24:00:00 +0000", time.Time{}, false},
			{"07/Feb/2020:11:48:51 0000", time.Time{}, false},
			{"07/Feb/2020:11:48:51 *0000", time.Time{}, false},
			{"07/Feb/2020 11:48:51 +0000", time.Time{}, false},
			{"7/Feb/2020:11:48:51 +0000", time.Time{}, false},
		}
		var c clfCache
		for _, tt := range tests {
			for range 2 { // the second time from the cache
				got, ok := c.parse([]byte(tt.in))
				assert.Equal(t, tt.ok, ok, tt.in)
				assert.True(t, tt.want.Equal(got), "%s: got %v, want %v", tt.in, got, tt.want)
				if ok {
					want, err := time.Parse("02/Jan/2006:15:04:05 -0700", tt.in)
					if err == nil { // time.Parse rejects leap seconds
						assert.True(t, want.Equal(got), "%s: time.Parse gives %v", tt.in, want)
					}
				}
			}
		}
	})
	t.Run("time_local cache keeps days apart", func(t *testing.T) {
		var c clfCache
		a, _ := c.parse([]byte("07/Feb/2020:11:48:51 +0000"))
		b, _ := c.parse([]byte("07/Feb/2020:11:48:52 +0000"))
		d, _ := c.parse([]byte("08/Feb/2020:11:48:52 +0000"))
		z, _ := c.parse([]byte("08/Feb/2020:11:48:52 +0100"))
		assert.Equal(t, time.Second, b.Sub(a))
		assert.Equal(t, 24*time.Hour, d.Sub(b))
		assert.Equal(t, -time.Hour, z.Sub(d))
	})
	t.Run("time_iso8601", func(t *testing.T) {
		tests := []struct {
			in   string
			want time.Time
			ok   bool
		}{
			{"2020-02-07T11:48:51+00:00", time.Date(2020, 2, 7, 11, 48, 51, 0, time.UTC), true},
			{"2020-02-07T11:48:51-07:00", time.Date(2020, 2, 7, 18, 48, 51, 0, time.UTC), true},
			{"2020-02-07T11:48:51Z", time.Date(2020, 2, 7, 11, 48, 51, 0, time.UTC), true},
			{"2020-02-07T11:48:51.250+01:00", time.Date(2020, 2, 7, 10, 48, 51, 250e6, time.UTC), true},
			{"2020-02-30T11:48:51+00:00", time.Time{}, false},
			{"2020-02-07T11:48:51", time.Time{}, false},
			{"2020-02-07T11:48:51+0000", time.Time{}, false},
			{"2020-02-07T11:48:51.+00:00", time.Time{}, false},
		}
		var c isoCache
		for _, tt := range tests {
			for range 2 {
				got, ok := c.parse([]byte(tt.in))
				assert.Equal(t, tt.ok, ok, tt.in)
				assert.True(t, tt.want.Equal(got), "%s: got %v, want %v", tt.in, got, tt.want)
			}
		}
	})
	t.Run("msec", func(t *testing.T) {
		p, err := compileNginx(nginxFormat{text: "$msec $request_time", origin: "test"}, "")
		require.NoError(t, err)
		got, err := parseLine(t, p, "1580000000.123 0.1")
		require.NoError(t, err)
		assert.Equal(t, time.Date(2020, 1, 26, 0, 53, 20, 123e6, time.UTC), got.Time)
		_, err = parseLine(t, p, "-1.5 0.1")
		assert.EqualError(t, err, `msec: -1.5 is not a Unix time`)
	})
}

func TestDaysFromCivil(t *testing.T) {
	for _, d := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		assert.Equal(t, d.Unix()/86400, daysFromCivil(d.Year(), int(d.Month()), d.Day()), d.String())
	}
}

// indexLit finds what bytes.Index finds.
func TestIndexLitAgreesWithIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte(` "[]-:,ab`)
	for range 50000 {
		s := make([]byte, r.IntN(30))
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
		}
		lit := make([]byte, 1+r.IntN(4))
		for i := range lit {
			lit[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := indexLit(s, lit), bytes.Index(s, lit); got != want {
			t.Fatalf("indexLit(%q, %q) = %d, bytes.Index %d", s, lit, got, want)
		}
	}
}

// indexByteNear finds what bytes.IndexByte finds, near the start and past it.
func TestIndexByteNear(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 50000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			s[i] = byte(r.IntN(8)) * 37
		}
		c := byte(r.IntN(8)) * 37
		if got, want := indexByteNear(s, c), bytes.IndexByte(s, c); got != want {
			t.Fatalf("indexByteNear(% x, %#x) = %d, bytes.IndexByte %d", s, c, got, want)
		}
	}
}
