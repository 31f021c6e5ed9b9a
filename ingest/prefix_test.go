package ingest

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStripPrefixes(t *testing.T) {
	const envoy = `[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0" "locations" "tcp://10.0.2.1:80"`
	const combined = `127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 2326 "-" "curl" 0.012`
	tests := []struct {
		name, in, want string
		rules          prefixRules // 0: allPrefixes
	}{
		{"kubectl", "2020-11-25T21:26:18.409123456Z " + combined, combined, 0},
		{"kubectl, no fraction", "2020-11-25T21:26:18Z " + combined, combined, 0},
		{"kubectl, an offset", "2020-11-25T21:26:18.4+05:30 " + combined, combined, 0},
		{"kubectl before Envoy", "2020-11-25T21:26:18.409123456Z " + envoy, envoy, 0},
		{"kubectl --prefix", "[pod/web-7d4b9c8f5-x2x9q/nginx] " + combined, combined, 0},
		{"compose", "caddy  | {\"a\":1}", `{"a":1}`, 0},
		{"compose, one space", "web-1 | " + combined, combined, 0},
		{"compose, colours", "\x1b[36mweb-1  |\x1b[0m " + combined, combined, 0},
		{"compose, an empty line", "web-1  |", "", 0},
		{"compose, then kubectl's time", "web-1  | 2020-11-25T21:26:18Z " + envoy, envoy, 0},
		{"the collector's Body: Str()", "Body: Str(" + envoy + ")", envoy, 0},
		{"the collector's Body:", "Body: " + envoy, envoy, 0},
		{"RFC 3164", "<190>Nov 29 16:02:18 web-1 nginx: " + combined, combined, 0},
		{"RFC 3164, no host", "<134>Nov  9 16:02:18 haproxy[27436]: x y", "x y", 0},
		{"rsyslog's file", "Nov 29 16:02:18 web-1 nginx[12]: " + combined, combined, 0},
		{"rsyslog's RFC 3339 file", "2026-11-29T16:02:18.123456+01:00 web-1 nginx: " + combined, combined, 0},
		{"RFC 5424", "<134>1 2026-11-29T10:00:00Z host app 123 - - " + combined, combined, 0},
		{"RFC 5424, all unset", "<134>1 - - - - - - " + combined, combined, 0},
		{"RFC 5424, structured data", `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application \] x"][b@1 c="d"] ` + "\xef\xbb\xbf" + combined, combined, 0},
		{"syslog left to the format", "<134>Nov 29 16:02:18 haproxy[1]: x y", "<134>Nov 29 16:02:18 haproxy[1]: x y", allPrefixes &^ prefixSyslog},
		{"kubectl before syslog left to the format", "2020-11-25T21:26:18Z Nov 29 16:02:18 haproxy[1]: x", "Nov 29 16:02:18 haproxy[1]: x", allPrefixes &^ prefixSyslog},
		// Lines of the formats themselves.
		{"a JSON line", `{"ts":1,"msg":"x"}`, `{"ts":1,"msg":"x"}`, 0},
		{"an Envoy line", envoy, envoy, 0},
		{"an nginx line", combined, combined, 0},
		{"an IPv6 client", "2001:db8::1 - - [10/Oct/2000:13:55:36 -0700] x", "2001:db8::1 - - [10/Oct/2000:13:55:36 -0700] x", 0},
		{"an ALB line", "https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 x", "https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 x", 0},
		{"an hlog line", "#[StartTime: 1.0]", "#[StartTime: 1.0]", 0},
		{"a time without a space after it", "2020-11-25T21:26:18Zx", "2020-11-25T21:26:18Zx", 0},
		{"a bar inside a line", "a b | c", "a b | c", 0},
		{"a pipe without a space before", "a| c", "a| c", 0},
		{"not a month", "Foo 29 16:02:18 host x: y", "Foo 29 16:02:18 host x: y", 0},
		{"a syslog time without a tag", "Nov 29 16:02:18 host x y", "Nov 29 16:02:18 host x y", 0},
		{"a PRI alone", "<134>hello world", "<134>hello world", 0},
		{"a pod without a container", "[pod/web] x", "[pod/web] x", 0},
		{"more prefixes than maxPrefixes", "a-1 | b-1 | c-1 | d-1 | e-1 | x", "e-1 | x", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := tt.rules
			if rules == 0 {
				rules = allPrefixes
			}
			assert.Equal(t, tt.want, string(stripPrefixes([]byte(tt.in), rules)))
		})
	}
}

func TestStripPrefixesAllocs(t *testing.T) {
	line := []byte("proxy-1  | 2020-11-25T21:26:18.409123456Z <190>Nov 29 16:02:18 web-1 nginx: 127.0.0.1 - -")
	allocs := testing.AllocsPerRun(100, func() { stripPrefixes(line, allPrefixes) })
	assert.Zero(t, allocs)
}

// TestLineDecoderPrefixes: the line decoder reads lines behind prefixes,
// and lines that only look prefixed as they stand, both in one input; the
// order it tries is settled by the first line.
func TestLineDecoderPrefixes(t *testing.T) {
	// "2020-11-25T21:26:18Z" parses as a method for msParser: a line that
	// starts like a prefix and is the line itself.
	in := "2020-11-25T21:26:18Z /a 10\n" + // as it stands: a method that looks like kubectl's time
		"2020-11-25T21:26:18Z GET /b 20\n" + // prefixed
		"web-1  | GET /c 30\n" +
		"web-1  |\n" + // a blank line behind its prefix
		"GET /d 40\n"
	samples, errs := decodeAll(t, NewLineDecoder(strings.NewReader(in), "x.log", msParser{}, groupByPath(t)))
	require.Empty(t, errs)
	var got []string
	for _, s := range samples {
		got = append(got, s.Group+" "+s.Latency.String())
	}
	assert.Equal(t, []string{"/a 10ms", "/b 20ms", "/c 30ms", "/d 40ms"}, got)

	// An input of prefixed lines, one of them blank behind its prefix.
	samples, errs = decodeAll(t, NewLineDecoder(strings.NewReader("web-1  | GET /a 1\nweb-1  |\nweb-1  | GET /b 2\n"), "x.log", msParser{}, nil))
	assert.Empty(t, errs)
	assert.Len(t, samples, 2)

	// A bad line behind a prefix says what is wrong with the line, once
	// the first line has shown that this input is prefixed.
	in = "web-1  | GET /a 10\nweb-1  | GET /b x\n"
	_, errs = decodeAll(t, NewLineDecoder(strings.NewReader(in), "x.log", msParser{}, nil))
	assert.Equal(t, []string{`x.log:2: field "ms": "x" is not a number`}, messages(errs))
}

func groupByPath(t *testing.T) *Grouper {
	g, err := NewGrouper([]string{"route"}, nil)
	require.NoError(t, err)
	return g
}

// TestNotRequestError: a line a parser says is not a request comes out as
// a *NotRequestError that unwraps to a *ParseError.
func TestNotRequestError(t *testing.T) {
	d, err := NewDecoder("haproxy", strings.NewReader("<132>Dec  1 20:26:27 haproxy[1]: Proxy fe stopped (cumulated conns: FE: 5, BE: 0).\n"), "h.log", Options{})
	require.NoError(t, err)
	_, err = d.Next()
	var nr *NotRequestError
	require.ErrorAs(t, err, &nr)
	assert.Equal(t, NotRequestError{File: "h.log", Line: 1, Reason: "haproxy proxy stopped"}, *nr)
	assert.Equal(t, "h.log:1: is not a request (haproxy proxy stopped)", err.Error())
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "h.log:1: is not a request (haproxy proxy stopped)", pe.Error())
	_, err = d.Next()
	assert.Equal(t, io.EOF, err)
}

// FuzzPrefixes checks that stripping never panics, that it returns a part
// of the line, that nothing is stripped from a JSON line or an Envoy line
// behind any bytes and a space, and that
// the line decoder, over an input of such lines, yields what it yields for
// the lines without their prefixes.
func FuzzPrefixes(f *testing.F) {
	for _, s := range []string{
		"", "x", "<134>", "<134>1 ", "Body: Str(", "web-1  |", "[pod/a/b] ", "2020-11-25T21:26:18Z ",
		"<190>Nov 29 16:02:18 web-1 nginx: ", "Nov  9 16:02:18 haproxy[1]: ", "<1>1 - - - - - [a b=\"\\]\"] ",
		"\x1b[36mweb-1  |\x1b[0m 2020-11-25T21:26:18.409+01:00 ",
	} {
		f.Add([]byte(s), []byte(`{"duration":0.5}`), uint8(0))
		f.Add([]byte(s), []byte(`[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 1 2 1 "-" "-" "-" "-" "-"`), uint8(1))
	}
	f.Fuzz(func(t *testing.T, prefix, line []byte, which uint8) {
		for _, rules := range []prefixRules{allPrefixes, allPrefixes &^ prefixSyslog, prefixCompose | prefixOTel} {
			got := stripPrefixes(append(prefix[:len(prefix):len(prefix)], line...), rules)
			if len(got) > len(prefix)+len(line) {
				t.Fatalf("stripPrefixes grew the line: %q", got)
			}
		}
		// A line of a format behind the prefix: the prefix goes, the line stays.
		kept := []byte(`{"duration":0.5,"x":"` + strings.ReplaceAll(string(bytes.ToValidUTF8(line, nil)), `"`, "") + `"}`)
		if which%2 == 1 {
			kept = []byte(`[2016-04-15T20:17:00.310Z] "` + strings.ReplaceAll(string(line), "\n", "") + `"`)
		}
		// Every prefix ends with a space (or a line's end): so does p.
		p := append(bytes.ReplaceAll(prefix, []byte("\n"), nil), ' ')
		if got := stripPrefixes(append(p[:len(p):len(p)], kept...), allPrefixes); !bytes.HasSuffix(got, kept) {
			t.Fatalf("prefix %q: stripped %q to %q", p, kept, got)
		}
		// The decoder: JSON lines behind known prefixes read as the lines
		// alone, errors included.
		var plain, wrapped bytes.Buffer
		wraps := []string{"", "web-1  | ", "2020-11-25T21:26:18Z ", "<190>Nov 29 16:02:18 h n: ", "[pod/a/b] "}
		for i, l := range bytes.Split(line, []byte("\n")) {
			l = bytes.TrimRight(l, "\r")
			if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '{' {
				continue // only JSON lines: a line of garbage behind a prefix may be read as more prefix
			}
			plain.Write(l)
			plain.WriteByte('\n')
			if len(bytes.TrimSpace(l)) > 0 {
				wrapped.WriteString(wraps[(i+int(which))%len(wraps)])
			}
			wrapped.Write(l)
			wrapped.WriteByte('\n')
		}
		o := Options{Field: "d", Unit: time.Millisecond}
		plainData := plain.Bytes()
		a, err := NewDecoder("jsonl", bytes.NewReader(plainData), "a", o)
		if err != nil {
			return
		}
		b, err := NewDecoder("jsonl", bytes.NewReader(wrapped.Bytes()), "a", o)
		if err != nil {
			t.Fatalf("the plain input reads, the wrapped one not: %v", err)
		}
		for n := 0; n < 10000; n++ {
			sa, ea := a.Next()
			sb, eb := b.Next()
			if ea == io.EOF || eb == io.EOF {
				if ea != eb {
					t.Fatalf("line %d: one input ends, not the other: %v, %v", n+1, ea, eb)
				}
				return
			}
			if (ea == nil) != (eb == nil) || sa != sb {
				t.Fatalf("line %d %q: %v %v, behind a prefix %v %v", n+1, nthLine(plainData, n), sa, ea, sb, eb)
			}
		}
	})
}

// nthLine returns the n-th non-blank line (0-based) of data.
func nthLine(data []byte, n int) []byte {
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if n == 0 {
			return l
		}
		n--
	}
	return nil
}

// TestSniffPastNotRequests: auto-detection reads past the lines formats
// declare not to be requests, within sniffLines lines.
func TestSniffPastNotRequests(t *testing.T) {
	const caddyAccess = `{"level":"info","ts":1796156152.99,"logger":"http.log.access.log0","msg":"handled request","request":{"method":"GET","host":"a","uri":"/a"},"duration":0.02,"status":200}`
	const hapReq = `<134>Dec  1 20:26:27 haproxy[1]: 127.0.0.1:56162 [01/Dec/2026:20:26:27.098] fe app/www 0/0/0/7/7 200 182 - - ---- 1/1/0/0/0 0/0 "GET /index.html HTTP/1.1"`
	startup := `{"level":"info","ts":1796156150.969368,"msg":"maxprocs: Leaving GOMAXPROCS=2: CPU quota undefined"}` + "\n"
	tests := []struct {
		name, in, want, err string
	}{
		{"Caddy's startup", startup + startup + caddyAccess + "\n", "caddy", ""},
		{"Caddy behind docker compose", "caddy-1  | " + startup + "caddy-1  | " + caddyAccess + "\n", "caddy", ""},
		{"HAProxy's startup", "<133>Nov 29 16:02:18 haproxy[27436]: Proxy prod_http_in started.\n" + hapReq + "\n", "haproxy", ""},
		{"HAProxy's startup, only", "Proxy prod_http_in started.\nProxy prod_http_out started.\n", "haproxy", ""},
		{"past 64 lines", strings.Repeat("Proxy fe started.\n", sniffLines) + hapReq + "\n", "haproxy", ""},
		{"an unknown line after skipped ones", startup + "hello world\n", "",
			`x.log: cannot tell the input format from its line 2 (the first that is not a server's own message) "hello world"`},
		{"messages of two servers", startup + "Proxy fe started.\n", "", "its first 2 lines are not requests but messages of caddy and haproxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := Detect("auto", strings.NewReader(tt.in), "x.log", Options{})
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, f.Name)
		})
	}
}

// TestSniffReadsNoMoreThanItMust: a first line that decides is enough, as
// on a slow pipe (tail -f) that has sent nothing more.
func TestSniffReadsNoMoreThanItMust(t *testing.T) {
	r, w := io.Pipe()
	go func() { _, _ = w.Write([]byte("latency_ms\n")) }() // and nothing more until the test ends
	f, _, err := Detect("auto", r, "-", Options{})
	require.NoError(t, err)
	assert.Equal(t, "csv", f.Name)
	w.Close()
}

func TestHAProxyNotRequest(t *testing.T) {
	for line, want := range map[string]string{
		"Proxy prod_http_in started.":                                                             "haproxy proxy started",
		"Proxy fe stopped (cumulated conns: FE: 5, BE: 0).":                                       "haproxy proxy stopped",
		"Stopping frontend fe in 0 ms.":                                                           "haproxy proxy stopped",
		"Pausing frontend fe.":                                                                    "haproxy proxy paused or resumed",
		`Server gone/old is DOWN, reason: Layer4 connection problem`:                              "haproxy server state",
		"Health check for server app/go failed, reason: x":                                        "haproxy server state",
		"backend gone has no server available!":                                                   "haproxy no server available",
		"127.0.0.1:46900 [01/Dec/2026:20:26:27.124] fe/2: SSL handshake failure":                  "haproxy SSL handshake failure",
		"127.0.0.1:46900 [01/Dec/2026:20:26:27.124] fe/2: Timeout during SSL handshake":           "haproxy SSL handshake failure",
		"127.0.0.1:46900 [01/Dec/2026:20:26:27.124] fe/1: Connection closed during SSL handshake": "haproxy SSL handshake failure",
		"127.0.0.1:46900 [01/Dec/2026:20:26:27.124] fe/1: Connection error during PROXY header":   "haproxy connection error",
		"Connect from 127.0.0.1:1234 to 127.0.0.1:80 (fe/HTTP)":                                   "haproxy connection without httplog",
		hapLine: "",
		"Proxy": "",
		"127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 1": "",
		"[01/Dec/2026:20:26:27.124] fe/2: x":                                  "",
	} {
		assert.Equal(t, want, hapNotRequest([]byte(line)), line)
	}
}

func TestCaddyStatusZero(t *testing.T) {
	in := `{"level":"info","ts":1796156153.33,"logger":"http.log.access.log0","msg":"handled request","request":{"method":"GET","host":"a","uri":"/slow"},"duration":0.301418981,"size":0,"status":0}` + "\n" +
		`{"level":"info","ts":1796156153.33,"logger":"http.log.access.log0","msg":"handled request","request":{"method":"GET","host":"a","uri":"/a"},"duration":0.02,"size":3,"status":200}` + "\n" +
		`{"level":"info","ts":1796156153.33,"msg":"x","duration":0.02}` + "\n" // no request: not claimed, a line without a request object
	d, err := NewDecoder("caddy", strings.NewReader(in), "c.log", Options{})
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errs)
	require.Len(t, samples, 3)
	assert.True(t, samples[0].Censored, "status 0: the client went away")
	assert.Equal(t, 301418981*time.Nanosecond, samples[0].Latency)
	assert.False(t, samples[1].Censored)
	assert.False(t, samples[2].Censored, "no status is not status 0")
	var rule StatusRule
	s := samples[0]
	assert.Empty(t, rule.Classify(&s))
	assert.True(t, s.Censored)
}

// BenchmarkStripPrefixes measures what the line decoder adds to each line
// of an input without prefixes (an nginx line, an Envoy line, a HAProxy
// line whose syslog header the parser reads) and with them.
func BenchmarkStripPrefixes(b *testing.B) {
	for _, c := range []struct {
		name  string
		line  string
		rules prefixRules
	}{
		{"nginx", `10.0.3.17 - - [27/Oct/2024:03:00:00 +0000] "GET /api/v1/users/4 HTTP/1.1" 200 512 "-" "curl/8.5.0" 0.012 0.011`, allPrefixes},
		{"envoy", `[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http"`, allPrefixes},
		{"haproxy", `<134>Nov 29 16:02:18 haproxy[27436]: 127.0.0.1:43198 [29/Nov/2026:16:02:18.434] fe app/go 0/0/1/14/15 200 82`, allPrefixes &^ prefixSyslog},
		{"kubectl+compose", `web-1  | 2020-11-25T21:26:18.409123456Z 10.0.3.17 - - [27/Oct/2024:03:00:00 +0000] "GET / HTTP/1.1" 200`, allPrefixes},
	} {
		line := []byte(c.line)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				stripPrefixes(line, c.rules)
			}
		})
	}
}
