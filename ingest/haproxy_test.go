package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hapLine is the example of the HAProxy manual (section 8.2.3) without its
// syslog prefix; tests replace parts of it.
const hapLine = `10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html HTTP/1.1"`

// hapWith returns hapLine with the timers, status and termination state
// replaced.
func hapWith(timers, status, state string) string {
	return strings.Replace(hapLine, "10/0/30/69/109 200 2750 - - ----", timers+" "+status+" 2750 - - "+state, 1)
}

// parsed is what one line gave: the sample and its request fields as strings.
type parsed struct {
	s                            Sample
	method, path, host, upstream string
}

func parseWith(t *testing.T, p LineParser, line string) (parsed, error) {
	t.Helper()
	var s Sample
	var f Fields
	err := p.Parse([]byte(line), &s, &f)
	return parsed{s, string(f.Method), string(f.Path), string(f.Host), string(f.Upstream)}, err
}

func hapParser(upstream bool) *haproxyParser {
	return &haproxyParser{tr: upstream, reasons: map[[2]byte]string{}}
}

func TestHAProxyLine(t *testing.T) {
	ms := time.Millisecond
	when := time.Date(2009, 2, 6, 12, 14, 14, 655e6, time.UTC)
	tests := []struct {
		name     string
		line     string
		upstream bool // Latency "upstream" (Tr)
		want     Sample
		// request fields; "" when not checked, "none" for empty
		method, path, host, backend string
	}{
		{
			name:   "raw, as written by log stdout format raw",
			line:   hapLine,
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/index.html", host: "1wt.eu", backend: "static",
		},
		{
			name:   "RFC 3164 prefix",
			line:   "Feb  6 12:14:14 localhost haproxy[14389]: " + hapLine,
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/index.html", host: "1wt.eu", backend: "static",
		},
		{
			name: "RFC 3164 prefix with PRI and a tag without pid",
			line: "<134>Feb  6 12:14:14 localhost haproxy: " + hapLine,
			want: Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
		},
		{
			name:   "RFC 5424 prefix",
			line:   "<134>1 2026-11-29T10:00:00Z host haproxy 123 - - " + hapLine,
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/index.html",
		},
		{
			name: "RFC 5424 prefix with structured data in brackets",
			line: `<134>1 2026-11-29T10:00:00.123+01:00 host haproxy 123 - [meta sequenceId="1"][x@1 a="[2]"] ` + hapLine,
			want: Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
		},
		{
			name: "Tr with --latency upstream",
			line: hapLine, upstream: true,
			want: Sample{Latency: 69 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
		},
		{
			name:   "no header captures",
			line:   strings.Replace(hapLine, "{1wt.eu} {} ", "", 1),
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/index.html", host: "none",
		},
		{
			name:   "empty captures",
			line:   strings.Replace(hapLine, "{1wt.eu} {}", "{|||} {||}", 1),
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/index.html", host: "none",
		},
		{
			name:   "captured headers with spaces: a user agent first is no host",
			line:   strings.Replace(hapLine, "{1wt.eu} {}", "{Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101|www.example.com} {text/html; charset=utf-8|Apache 2}", 1),
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/index.html", host: "none",
		},
		{
			name: "captured host with a port, then a user agent",
			line: strings.Replace(hapLine, "{1wt.eu} {}", "{api.example.com:8443|curl/8.0 (x)} {}", 1),
			want: Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			host: "api.example.com:8443",
		},
		{
			name: "captured IP address is no host",
			line: strings.Replace(hapLine, "{1wt.eu} {}", "{10.1.2.3} {}", 1),
			want: Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			host: "none",
		},
		{
			name:   "one extra field before the timers (custom log-format)",
			line:   `-:47625 [22/Jun/2021:12:02:53.473] www-https~ app/app-node2 app.domain.com 0/0/1/17/18 302 291 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1"`,
			want:   Sample{Latency: 18 * ms, Time: time.Date(2021, 6, 22, 12, 2, 53, 473e6, time.UTC), Status: 302, Connect: 1 * ms, ConnectKnown: true},
			method: "GET", path: "/", host: "none", backend: "app",
		},
		{
			name:    "two extra fields, one with slashes",
			line:    `-:47625 [22/Jun/2021:12:02:53.473] fe be/s1 app.domain.com /a/b/c/d 0/0/1/17/18 302 291 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1"`,
			want:    Sample{Latency: 18 * ms, Time: time.Date(2021, 6, 22, 12, 2, 53, 473e6, time.UTC), Status: 302, Connect: 1 * ms, ConnectKnown: true},
			backend: "be",
		},
		{
			name:   "request date without milliseconds, request without HTTP version",
			line:   `127.0.0.1:34014 [09/Aug/2004:20:26:09] proxy-out proxy-out/cache1 0/0/0/162/162 200 350 - - ---- 0/0/0/0/0 0/0 "GET http://fr.adserver.yahoo.com/"`,
			want:   Sample{Latency: 162 * ms, Time: time.Date(2004, 8, 9, 20, 26, 9, 0, time.UTC), Status: 200, ConnectKnown: true},
			method: "GET", path: "http://fr.adserver.yahoo.com/",
		},
		{
			name: "option logasap: +Ta is the time to the response headers, measured",
			line: `127.0.0.1:33320 [15/Oct/2003:08:32:17.654] px-http px-http/srv1 9/0/7/14/+30 200 +243 - - ---- 3/3/3/1/0 0/0 "GET /image.iso HTTP/1.0"`,
			want: Sample{Latency: 30 * ms, Time: time.Date(2003, 10, 15, 8, 32, 17, 654e6, time.UTC), Status: 200, Connect: 7 * ms, ConnectKnown: true},
		},
		{
			name: "sH: timeout server before the headers, censored at Ta",
			line: hapWith("0/0/1/-1/1002", "504", "sH--"),
			want: Sample{Latency: 1002 * ms, Time: when, Status: 504, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "sH with Tr: censored at Ta-(TR+Tw+Tc)",
			line: hapWith("2/3/1/-1/1006", "504", "sH--"), upstream: true,
			want: Sample{Latency: 1000 * ms, Time: when, Status: 504, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "sD: timeout server during the body, censored at Ta",
			line: hapWith("0/0/1/20/1021", "200", "sD--"),
			want: Sample{Latency: 1021 * ms, Time: when, Status: 200, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "sD with Tr: the headers came, Tr is complete",
			line: hapWith("0/0/1/20/1021", "200", "sD--"), upstream: true,
			want: Sample{Latency: 20 * ms, Time: when, Status: 200, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "sC: timeout connect, censored at Ta, no connect time",
			line: hapWith("0/0/-1/-1/3001", "503", "sC--"),
			want: Sample{Latency: 3001 * ms, Time: when, Status: 503, Censored: true},
		},
		{
			name: "sC with Tr: no server time at all",
			line: hapWith("0/0/-1/-1/3001", "503", "sC--"), upstream: true,
			want: Sample{Time: when, Status: 503, Excluded: "haproxy sC"},
		},
		{
			name: "sQ: timeout queue, censored at Ta",
			line: hapWith("0/1000/-1/-1/1000", "503", "sQ--"),
			want: Sample{Latency: 1000 * ms, Time: when, Status: 503, Censored: true},
		},
		{
			name: "SH: the server aborted, a fast failure",
			line: hapWith("0/0/1/-1/5", "502", "SH--"),
			want: Sample{Latency: 0, Time: when, Status: 502, Connect: 1 * ms, ConnectKnown: true, Excluded: "haproxy SH"},
		},
		{
			name: "SC: connection refused",
			line: hapWith("3183/-1/-1/-1/11215", "503", "SC--"),
			want: Sample{Time: when, Status: 503, Excluded: "haproxy SC"},
		},
		{
			name: "CH: the client gave up waiting for the headers, like nginx 499",
			line: hapWith("0/0/1/-1/2500", "-1", "CH--"),
			want: Sample{Latency: 2500 * ms, Time: when, Status: 0, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "CH with Tr: censored at Ta-(TR+Tw+Tc)",
			line: hapWith("0/0/1/-1/2500", "-1", "CH--"), upstream: true,
			want: Sample{Latency: 2499 * ms, Time: when, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "CD: the client aborted during the body, censored",
			line: hapWith("0/0/1/20/3000", "200", "CD--"),
			want: Sample{Latency: 3000 * ms, Time: when, Status: 200, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "cD: the client stopped reading, Ta measures the client",
			line: hapWith("0/0/1/20/5021", "200", "cD--"),
			want: Sample{Time: when, Status: 200, Connect: 1 * ms, ConnectKnown: true, Excluded: "haproxy cD"},
		},
		{
			name: "cD with Tr: the server's part is complete",
			line: hapWith("0/0/1/20/5021", "200", "cD--"), upstream: true,
			want: Sample{Latency: 20 * ms, Time: when, Status: 200, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name: "cH: timeout client while waiting for the server, censored",
			line: hapWith("0/0/1/-1/5001", "-1", "cH--"),
			want: Sample{Latency: 5001 * ms, Time: when, Censored: true, Connect: 1 * ms, ConnectKnown: true},
		},
		{
			name:   "cR: timeout http-request, 408, never reached a server",
			line:   `127.0.0.1:34549 [15/Oct/2003:15:19:06.103] px-http px-http/<NOSRV> -1/-1/-1/-1/50001 408 0 - - cR-- 2/2/2/0/0 0/0 ""`,
			want:   Sample{Time: time.Date(2003, 10, 15, 15, 19, 6, 103e6, time.UTC), Status: 408, Excluded: "haproxy cR"},
			method: "none", path: "none", backend: "px-http",
		},
		{
			name: "CR with status -1 and an empty request",
			line: `127.0.0.1:34548 [15/Oct/2003:15:18:55.798] px-http px-http/<NOSRV> -1/-1/-1/-1/8490 -1 0 - - CR-- 2/2/2/0/0 0/0 ""`,
			want: Sample{Time: time.Date(2003, 10, 15, 15, 18, 55, 798e6, time.UTC), Excluded: "haproxy CR"},
		},
		{
			name:   "BADREQ",
			line:   `10.0.0.1:5000 [15/Oct/2003:15:18:55.798] fe fe/<NOSRV> 0/-1/-1/-1/0 400 187 - - PR-- 1/1/0/0/0 0/0 "<BADREQ>"`,
			want:   Sample{Time: time.Date(2003, 10, 15, 15, 18, 55, 798e6, time.UTC), Status: 400, Excluded: "haproxy PR"},
			method: "none", path: "none", backend: "fe",
		},
		{
			name: "PH: the proxy blocked the response",
			line: hapWith("9/0/7/14/30", "502", "PH--"),
			want: Sample{Time: when, Status: 502, Connect: 7 * ms, ConnectKnown: true, Excluded: "haproxy PH"},
		},
		{
			name: "LR: a redirect answered by HAProxy",
			line: hapWith("0/-1/-1/-1/0", "301", "LR--"),
			want: Sample{Time: when, Status: 301, Excluded: "haproxy LR"},
		},
		{
			name: "an unknown cause is excluded under its own name",
			line: hapWith("0/0/1/5/6", "200", "XH--"),
			want: Sample{Time: when, Status: 200, Connect: 1 * ms, ConnectKnown: true, Excluded: "haproxy XH"},
		},
		{
			name: "Tr -1 on a normal end with --latency upstream",
			line: hapWith("0/0/1/-1/6", "200", "----"), upstream: true,
			want: Sample{Time: when, Status: 200, Connect: 1 * ms, ConnectKnown: true, Excluded: "haproxy Tr -1"},
		},
		{
			name: "Ta -1 (never logged so): the completed timers, censored",
			line: hapWith("1/2/3/4/-1", "200", "----"),
			want: Sample{Latency: 10 * ms, Time: when, Status: 200, Censored: true, Connect: 3 * ms, ConnectKnown: true},
		},
		{
			name: "persistence cookie flags",
			line: hapWith("10/0/30/69/109", "200", "--VN"),
			want: Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
		},
		{
			name:   "quotes escaped by syslog-ng inside the request",
			line:   strings.Replace(hapLine, `"GET /index.html HTTP/1.1"`, `"GET /q?a=\"x y\" HTTP/1.1"`, 1),
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: `/q?a=\"x`,
		},
		{
			name:   "a request cut by the syslog buffer, without its closing quote",
			line:   strings.Replace(hapLine, `"GET /index.html HTTP/1.1"`, `"GET /very/long/url?x=123`, 1),
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "GET", path: "/very/long/url?x=123",
		},
		{
			name:   "a line cut inside the captures keeps its timers",
			line:   strings.Replace(hapLine, `{1wt.eu} {} "GET /index.html HTTP/1.1"`, "{1wt.eu|Mozilla/5.0 (X11", 1),
			want:   Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
			method: "none", path: "none", host: "none",
		},
		{
			name: "a client on a unix socket",
			line: strings.Replace(hapLine, "10.0.1.2:33317", "unix:1", 1),
			want: Sample{Latency: 109 * ms, Time: when, Status: 200, Connect: 30 * ms, ConnectKnown: true},
		},
		{
			name: "leap day",
			line: strings.Replace(hapLine, "06/Feb/2009", "29/Feb/2024", 1),
			want: Sample{Latency: 109 * ms, Time: time.Date(2024, 2, 29, 12, 14, 14, 655e6, time.UTC), Status: 200, Connect: 30 * ms, ConnectKnown: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWith(t, hapParser(tt.upstream), tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.s)
			for _, c := range []struct{ name, want, got string }{
				{"method", tt.method, got.method}, {"path", tt.path, got.path},
				{"host", tt.host, got.host}, {"upstream", tt.backend, got.upstream},
			} {
				switch c.want {
				case "":
				case "none":
					assert.Empty(t, c.got, c.name)
				default:
					assert.Equal(t, c.want, c.got, c.name)
				}
			}
		})
	}
}

func TestHAProxyErrors(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"Ta not a number", hapWith("10/0/30/69/abc", "200", "----"), `x.log:1: field "Ta": "abc" is not a number`},
		{"Tc negative", hapWith("10/0/-5/69/109", "200", "----"), `x.log:1: field "Tc": "-5" is negative`},
		{"Ta empty", hapWith("10/0/30/69/", "200", "----"), `x.log:1: has no TR/Tw/Tc/Tr/Ta timers followed by a status (a tcplog line, or not option httplog?)`},
		{"Tr beyond a duration", hapWith("10/0/30/99999999999999/109", "200", "----"), `x.log:1: field "Tr": "99999999999999" is out of range`},
		{"Tw with a plus", hapWith("10/+0/30/69/109", "200", "----"), `x.log:1: field "Tw": "+0" is not a number`},
		{"status", hapWith("10/0/30/69/109", "2x0", "----"), `x.log:1: field "status": "2x0" is not a status code`},
		{"termination state", hapWith("10/0/30/69/109", "200", "s?--"), `x.log:1: field "termination_state": "s?--" is not a termination state (like ---- or sH--)`},
		{"no date", `10.0.1.2:33317 http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 "GET / HTTP/1.1"`,
			`x.log:1: is not an HAProxy httplog line: no request date like [30/Jul/2018:09:03:52.726]`},
		{"bad date", strings.Replace(hapLine, "06/Feb/2009", "06/Fob/2009", 1), `x.log:1: field "request_date": "06/Fob/2009:12:14:14.655" is not a date like 30/Jul/2018:09:03:52.726`},
		{"31 February", strings.Replace(hapLine, "06/Feb/2009", "31/Feb/2009", 1), `x.log:1: field "request_date": "31/Feb/2009:12:14:14.655" is not a date like 30/Jul/2018:09:03:52.726`},
		{"a tcplog line", `haproxy[18989]: 127.0.0.1:34550 [15/Oct/2003:15:24:28.312] px-tcp px-tcp/srv1 0/0/5007 0 cD 0/0/0/0/0 0/0`,
			`x.log:1: has no TR/Tw/Tc/Tr/Ta timers followed by a status (a tcplog line, or not option httplog?)`},
		{"cut after the status", strings.SplitAfter(hapLine, " 200")[0], `x.log:1: ends before the termination state`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoder("haproxy", strings.NewReader(tt.line+"\n"+hapLine+"\n"), "x.log", Options{})
			require.NoError(t, err)
			_, err = d.Next()
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.want, err.Error())
			s, err := d.Next() // the decoder goes on after a bad line
			require.NoError(t, err)
			assert.Equal(t, 109*time.Millisecond, s.Latency)
		})
	}
}

func TestHAProxyOptions(t *testing.T) {
	_, err := NewDecoder("haproxy", strings.NewReader(hapLine), "x.log", Options{Latency: "upstream-last"})
	require.EqualError(t, err, `unknown latency measure "upstream-last" for haproxy logs: want request, upstream, upstream-header`)
	_, err = NewDecoder("haproxy", strings.NewReader(hapLine), "x.log", Options{By: []string{"colour"}})
	require.Error(t, err)

	in := strings.Join([]string{
		hapLine,
		strings.Replace(hapLine, "/index.html", "/users/42?x=1", 1),
		strings.Replace(hapLine, "/index.html", "/users/43", 1),
		"",
		strings.Replace(hapLine, "static/srv1", "api/srv2", 1),
	}, "\r\n")
	d, err := NewDecoder("haproxy", strings.NewReader(in), "x.log", Options{By: []string{"upstream", "route", "host", "method"}, Latency: "upstream"})
	require.NoError(t, err)
	var groups []string
	for {
		s, err := d.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, 69*time.Millisecond, s.Latency)
		groups = append(groups, s.Group)
	}
	assert.Equal(t, []string{
		"static /index.html 1wt.eu GET",
		"static /users/{id} 1wt.eu GET",
		"static /users/{id} 1wt.eu GET",
		"api /index.html 1wt.eu GET",
	}, groups)
}

// hapConformance holds the lines of the shared conformance file (see
// testdata/conformance/README.md).
const hapConformance = "testdata/conformance/haproxy-httplog.log"

func TestHAProxyConformance(t *testing.T) {
	data, err := os.ReadFile(hapConformance)
	require.NoError(t, err)
	d, err := NewDecoder("haproxy", bytes.NewReader(data), hapConformance, Options{})
	require.NoError(t, err)
	var ta, tc []time.Duration
	var statuses []int
	for {
		s, err := d.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.False(t, s.Censored)
		assert.Empty(t, s.Excluded)
		require.True(t, s.ConnectKnown)
		ta = append(ta, s.Latency)
		tc = append(tc, s.Connect)
		statuses = append(statuses, s.Status)
	}
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	assert.Equal(t, ms(2, 18, 18, 56, 31, 35, 2606, 30, 41, 47), ta, "Ta")
	assert.Equal(t, ms(1, 0, 1, 1, 1, 3, 1, 1, 2, 2), tc, "Tc")
	assert.Equal(t, []int{304, 200, 302, 200, 200, 403, 200, 404, 200, 404}, statuses)

	// Tr for the same lines.
	d, err = NewDecoder("haproxy", bytes.NewReader(data), hapConformance, Options{Latency: "upstream"})
	require.NoError(t, err)
	var tr []time.Duration
	for {
		s, err := d.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		tr = append(tr, s.Latency)
	}
	assert.Equal(t, ms(0, 18, 17, 55, 30, 32, 15, 29, 39, 45), tr, "Tr")

	// The first line's captured headers, {docs.example.internal||} {|||}.
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	first, err := parseWith(t, hapParser(false), lines[0])
	require.NoError(t, err)
	assert.Equal(t, parsed{
		s:        Sample{Latency: 2 * time.Millisecond, Time: time.Date(2018, 7, 30, 9, 3, 52, 726e6, time.UTC), Status: 304, Connect: time.Millisecond, ConnectKnown: true},
		method:   "GET",
		path:     "/component---src-pages-index-js-4b15624544f97cf0bb8f.js",
		host:     "docs.example.internal",
		upstream: "docs_microservice",
	}, first)
	// A line of the custom log-format with a Host field before the timers:
	// the field is not read as the host (it could as well be the machine's).
	seventh, err := parseWith(t, hapParser(false), lines[6])
	require.NoError(t, err)
	assert.Equal(t, parsed{
		s:        Sample{Latency: 2606 * time.Millisecond, Time: time.Date(2021, 6, 22, 12, 2, 55, 202e6, time.UTC), Status: 200, Connect: time.Millisecond, ConnectKnown: true},
		method:   "GET",
		path:     "/static/files/3rsdfas3.js",
		upstream: "app",
	}, seventh)

	// Auto-detection picks haproxy for this file.
	d, err = NewDecoder("auto", bytes.NewReader(data), hapConformance, Options{})
	require.NoError(t, err)
	_, ok := d.(*lineDecoder).p.(*haproxyParser)
	assert.True(t, ok, "auto chose %T", d.(*lineDecoder).p)
}

// TestHAProxyRealLog reads lines a real HAProxy 2.6 wrote over syslog (see
// testdata/haproxy/README.md).
func TestHAProxyRealLog(t *testing.T) {
	const name = "testdata/haproxy/haproxy-2.6-syslog.log"
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	for _, latency := range []string{"request", "upstream"} {
		t.Run(latency, func(t *testing.T) {
			d, err := NewDecoder("auto", bytes.NewReader(data), name, Options{By: []string{"host", "upstream"}, Latency: latency})
			require.NoError(t, err)
			type row struct {
				ms, tc   int // latency and Tc in ms, -1: unknown
				status   int
				censored bool
				excluded string
				group    string
			}
			var got []row
			for {
				s, err := d.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				r := row{int(s.Latency / time.Millisecond), int(s.Connect / time.Millisecond), s.Status, s.Censored, s.Excluded, s.Group}
				if !s.ConnectKnown {
					r.tc = -1
				}
				got = append(got, r)
			}
			ok := "shop.example.com app"
			want := []row{{0, -1, 400, false, "haproxy CR", "- fe"}}
			for i, ta := range []int{15, 15, 18, 16, 15, 23, 11, 14, 15, 12, 28, 32} {
				tc := []int{1, 1, 1, 1, 0, 2, 0, 0, 0, 0, 1, 1}[i]
				if latency == "upstream" {
					ta -= tc // Tr: these lines have TR = Tw = 0 and no body time
				}
				want = append(want, row{ta, tc, 200, false, "", ok})
			}
			want = append(want, row{0, 0, 500, false, "", ok}, row{0, 0, 500, false, "", ok}, row{1, 0, 500, false, "", ok}) // Tr = Ta
			// timeout server: censored at Ta (Tr: at Ta-(TR+Tw+Tc), the same here)
			want = append(want, row{1000, 0, 504, true, "", ok}, row{1002, 0, 504, true, "", ok}, row{1001, 0, 504, true, "", ok})
			want = append(want, row{0, -1, 408, false, "haproxy cR", "- fe"})
			assert.Equal(t, want, got)
		})
	}
}

func TestSniffHAProxy(t *testing.T) {
	for _, line := range []string{
		hapLine,
		"Feb  6 12:14:14 localhost haproxy[14389]: " + hapLine,
		"<134>1 2026-11-29T10:00:00Z host haproxy 123 - - " + hapLine,
	} {
		assert.True(t, sniffHAProxy([]byte(line)), line)
	}
	for _, line := range []string{
		`127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "-" "Mozilla/4.08"`,
		`haproxy[18989]: 127.0.0.1:34550 [15/Oct/2003:15:24:28.312] px-tcp px-tcp/srv1 0/0/5007 0 cD 0/0/0/0/0 0/0`,
		`timestamp,route,latency_ms`,
		`[2016-04-15T20:17:00.310Z] "GET / HTTP/2" 200 - 0 17 217 216 "-" "curl/7.47.0" "x" "a.b" "1.2.3.4:80"`,
		albSample,
	} {
		assert.False(t, sniffHAProxy([]byte(line)), line)
	}
}

// TestHAProxyParseAllocs pins the hot path at zero allocations per line once
// the group names and exclusion reasons have been seen.
func TestHAProxyParseAllocs(t *testing.T) {
	p := hapParser(false)
	g, err := NewGrouper([]string{"route", "upstream", "host"}, nil)
	require.NoError(t, err)
	lines := [][]byte{
		[]byte("Feb  6 12:14:14 localhost haproxy[14389]: " + hapLine),
		[]byte(strings.Replace(hapWith("0/0/1/-1/1002", "504", "sH--"), "/index.html", "/users/42", 1)),
		[]byte(hapWith("0/0/1/-1/5", "502", "SH--")),
	}
	var s Sample
	var f Fields
	run := func() {
		for _, l := range lines {
			s, f = Sample{}, Fields{}
			if err := p.Parse(l, &s, &f); err != nil {
				panic(err)
			}
			s.Group = g.Key(&s, &f)
		}
	}
	run()
	assert.Zero(t, testing.AllocsPerRun(100, run))
}

// hapGenerate returns n lines of a synthetic httplog with syslog prefixes,
// header captures, 40 routes (with ids), 4 backends, a few timeouts and
// fast failures.
func hapGenerate(n int) []byte {
	var b bytes.Buffer
	routes := []string{"/api/users/%d", "/api/orders/%d/items", "/static/app.%x.js", "/health", "/api/search?q=%d"}
	for i := range n {
		ta := 5 + (i*7919)%300
		tr := ta - 3
		status, state := 200, "----"
		switch {
		case i%97 == 0:
			status, state, tr = 504, "sH--", -1
		case i%53 == 0:
			status, state = 500, "----"
		case i%211 == 0:
			status, state, tr = 502, "SH--", -1
		}
		path := fmt.Sprintf(routes[i%len(routes)], i%8+i%3*1000)
		fmt.Fprintf(&b, "Jul 30 09:%02d:%02d lb1 haproxy[32450]: 10.0.%d.%d:%d [30/Jul/2026:09:%02d:%02d.%03d] www~ be%d/srv%d 0/0/1/%d/%d %d %d - - %s 6/6/0/0/0 0/0 {shop.example.com|Mozilla/5.0 (X11; Linux x86_64)} {} \"GET %s HTTP/1.1\"\n",
			i/60%60, i%60, i%256, i%200, 1024+i%60000, i/60%60, i%60, i%1000, i%4, i%3, tr, ta, status, 100+i%5000, state, path)
	}
	return b.Bytes()
}

// benchLines decodes data (n lines) with format, grouped by route, once per
// iteration, and reports ns/line and allocs/line.
func benchLines(b *testing.B, format string, data []byte, n int) {
	benchDecode(b, len(data), n, func() (Decoder, error) {
		return NewDecoder(format, bytes.NewReader(data), "bench.log", Options{By: []string{"route"}})
	})
}

func BenchmarkHAProxy(b *testing.B) {
	const n = 10_000
	benchLines(b, "haproxy", hapGenerate(n), n)
}

// hapFuzzSeeds are lines the fuzzer starts from.
func hapFuzzSeeds(t testing.TB) []string {
	data, err := os.ReadFile(hapConformance)
	require.NoError(t, err)
	seeds := strings.Split(strings.TrimSpace(string(data)), "\n")
	return append(seeds,
		hapLine,
		"<134>1 2026-11-29T10:00:00Z host haproxy 123 - [a b=\"]\"] "+hapLine,
		hapWith("0/0/1/-1/+1002", "504", "sH--"),
		hapWith("-1/-1/-1/-1/-1", "-1", "CR"),
		hapWith("1/2/3/4/99999999999999999999", "200", "----"),
		strings.Replace(hapLine, "{1wt.eu} {}", "{a b|c} {", 1),
		`x [01/Jan/2000:00:00:00] a b/c 0/0/0/0/0 0`,
		`[01/Jan/2000:00:00:00.`,
		string(hapGenerate(3)),
	)
}

// FuzzHAProxy checks that the decoder never panics or loops, that every
// error is a *ParseError with a line number, and that samples are sane:
// latencies and connect times whole non-negative milliseconds, censored or
// excluded but not both, exclusion reasons named after HAProxy.
func FuzzHAProxy(f *testing.F) {
	for _, s := range hapFuzzSeeds(f) {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, upstream bool) {
		o := Options{By: []string{"route", "upstream", "host"}}
		if upstream {
			o.Latency = "upstream"
		}
		fuzzLineFormat(t, "haproxy", data, o, func(s Sample) {
			if s.Latency%time.Millisecond != 0 || s.Connect%time.Millisecond != 0 || s.Connect < 0 {
				t.Fatalf("latency %v, connect %v: not whole ms", s.Latency, s.Connect)
			}
			if s.Excluded != "" && !strings.HasPrefix(s.Excluded, "haproxy ") {
				t.Fatalf("reason %q", s.Excluded)
			}
		})
	})
}

// fuzzLineFormat decodes data with the named line format and checks the
// properties every line format has; check adds the format's own.
func fuzzLineFormat(t *testing.T, format string, data []byte, o Options, check func(Sample)) {
	t.Helper()
	d, err := NewDecoder(format, bytes.NewReader(data), "fuzz.log", o)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	last := 0
	for n := 0; ; n++ {
		if n > len(data)+2 {
			t.Fatalf("Next called %d times on %d bytes without io.EOF", n, len(data))
		}
		s, err := d.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("not a *ParseError: %T %v", err, err)
			}
			if pe.Line < 1 || pe.Line <= last {
				t.Fatalf("error at line %d after line %d: %v", pe.Line, last, err)
			}
			last = pe.Line
			if len(pe.Value) > maxValueLen+len("...") {
				t.Fatalf("value of %d bytes not cut: %v", len(pe.Value), pe)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("fuzz.log:%d: ", pe.Line)) {
				t.Fatalf("bad error text: %v", err)
			}
			continue
		}
		if s.Latency < 0 {
			t.Fatalf("negative latency %v", s.Latency)
		}
		if s.Status < 0 || s.Status > 999 {
			t.Fatalf("status %d", s.Status)
		}
		if s.Censored && s.Excluded != "" {
			t.Fatalf("censored and excluded (%s)", s.Excluded)
		}
		if s.Group == "" {
			t.Fatal("no group")
		}
		check(s)
	}
}
