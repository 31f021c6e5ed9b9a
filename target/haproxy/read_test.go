package haproxy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/haproxy"
	"github.com/tunetimeout/tunetimeout/target/internal/targettest"
	"github.com/tunetimeout/tunetimeout/target/nginx"
)

var haproxyFixtures = targettest.ConfigFixtureDir("haproxy")

// haproxyCheckable drops what the targettest.Fixtures leave out from a config before
// haproxy -c reads it: the certificate files of "ssl crt" on bind lines.
func haproxyCheckable(conf []byte) []byte {
	return regexp.MustCompile(`(?m)^(\s*bind\s.*?) ssl crt \S+`).ReplaceAll(conf, []byte("$1"))
}

// haproxyAccepts runs the real haproxy -c on a config (haproxyCheckable)
// and returns what it said.
func haproxyAccepts(t *testing.T, conf []byte) (string, error) {
	t.Helper()
	haproxy := targettest.RequireTool(t, "haproxy", "apt-get install -y nginx haproxy")
	f := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(f, haproxyCheckable(conf), 0o644))
	out, err := exec.Command(haproxy, "-c", "-f", f).CombinedOutput()
	return string(out), err
}

// TestReadHAProxyFixtures reads HAProxy's own examples (ORIGIN.md), each
// of which haproxy -c accepts.
func TestReadHAProxyFixtures(t *testing.T) {
	targettest.RequireConfigFixtures(t, haproxyFixtures)
	tests := []struct {
		file  string
		want  []string
		notes map[string][]string
	}{{
		// Static and dynamic content: retries 2 and redispatch in each
		// backend; a host-prefix ACL the reader cannot hold as a match;
		// the queue timeout set in one and taken from timeout connect in
		// the other; maxconn 500 on each of 4 servers, with minconn.
		file: "content-sw-sample.cfg",
		want: []string{
			`backend "backend static" @37 timeout=5@content-sw-sample.cfg:44(idle) connect=5@content-sw-sample.cfg:43 queue=5=default attempts=3@content-sw-sample.cfg:41 retryOn=conn-failure=default nonIdempotent=false=default jitter=none`,
			`backend "backend dynamic" @50 timeout=30@content-sw-sample.cfg:56(idle) connect=5@content-sw-sample.cfg:55 queue=30@content-sw-sample.cfg:57 attempts=3@content-sw-sample.cfg:53 retryOn=conn-failure=default nonIdempotent=false=default maxInFlight=2000@content-sw-sample.cfg:50 jitter=none`,
		},
		notes: map[string][]string{
			"backend static":  {"use_backend in frontend public (content-sw-sample.cfg:32)", "hdr_beg(host)"},
			"backend dynamic": {"default_backend of frontend public (content-sw-sample.cfg:34)"},
		},
	}, {
		// A named defaults section (HAProxy 2.4's basic edge config): its
		// timeouts in the backend; four servers of maxconn 100.
		file: "basic-config-edge.cfg",
		want: []string{
			`backend "backend app1" @110 prefix=/#1 router="frontend pub1" timeout=60@basic-config-edge.cfg:48(idle) connect=10@basic-config-edge.cfg:49 queue=15@basic-config-edge.cfg:51 attempts=4=default retryOn=conn-failure=default nonIdempotent=false=default maxInFlight=400@basic-config-edge.cfg:110 jitter=none`,
		},
		notes: map[string][]string{"backend app1": {"timeout tunnel 4h (basic-config-edge.cfg:52)"}},
	}, {
		file: "option-http_proxy.cfg",
		want: []string{
			`backend "backend test-proxy-srv" @36 prefix=/#1 router="frontend test-proxy" timeout=5@option-http_proxy.cfg:39(idle) connect=5@option-http_proxy.cfg:38 queue=5=default attempts=3@option-http_proxy.cfg:40 retryOn=conn-failure=default nonIdempotent=false=default jitter=none`,
		},
	}, {
		// An anonymous defaults section and a listen section.
		file: "quick-test.cfg",
		want: []string{
			`listen "listen p" @20 timeout=60@quick-test.cfg:17(idle) connect=1@quick-test.cfg:18 queue=1=default attempts=4=default retryOn=conn-failure=default nonIdempotent=false=default jitter=none`,
		},
	}, {
		file: "transparent_proxy.cfg",
		want: []string{
			`backend "backend TransparentBack_http" @18 prefix=/#1 router="frontend MyFrontend" timeout=30@transparent_proxy.cfg:11(idle) connect=30@transparent_proxy.cfg:12 queue=30=default attempts=4=default retryOn=conn-failure=default nonIdempotent=false=default jitter=none`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(haproxyFixtures, tt.file))
			require.NoError(t, err)
			objs, err := haproxy.ReadConfig(tt.file, data, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, targettest.LBSummaries(objs))
			for name, parts := range tt.notes {
				o := targettest.LBObjectNamed(t, objs, name)
				assert.NotEmpty(t, targettest.LBNoteWith(o, parts...), "%s: no note with %q in %q", name, parts, o.Notes)
			}
			out, err := haproxyAccepts(t, data)
			require.NoError(t, err, out)
			assert.True(t, haproxy.Detect("config", data))
			assert.False(t, nginx.Detect("config", data), "nginx claims %s", tt.file)
		})
	}
}

// haproxyDefaults is a config of this test's own, which haproxy -c
// accepts (with warnings: a defaults section used both ways, a backend
// without timeout server).
const haproxyDefaults = `global
    log stderr format raw local0

defaults base
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 10s
    retries 2
    retry-on conn-failure empty-response 503
    option redispatch
    default-server maxconn 50

defaults short from base
    timeout server 500ms
    timeout queue 1s

frontend www
    bind 127.0.0.1:18080
    acl api path_beg /api/ /v2/
    acl host_shop hdr(host) -i shop.example.com
    use_backend api if api
    use_backend shop if host_shop METH_GET
    use_backend shop if { path_reg ^/cart/[0-9]+$ } host_shop
    use_backend legacy if !api
    use_backend envy if { path /env } || { path /env2 }
    default_backend web

backend api from short
    server a1 127.0.0.1:8001
    server a2 127.0.0.1:8002 maxconn 20
    server a3 127.0.0.1:8003 backup

backend shop
    no option redispatch
    retry-on none
    server-template s 3 127.0.0.1:8010

backend legacy
    timeout server 2m
    server l1 127.0.0.1:8020

backend envy
    timeout server "${SERVER_TIMEOUT-4s}"
.if defined(FOO)
    timeout connect 3s
.endif
.if 0
    retries 9
.endif
    server e1 127.0.0.1:8050

defaults
    mode http
    timeout client 30s
    timeout connect 5s

backend web
    server w1 127.0.0.1:8030

listen admin
    bind 127.0.0.1:18081
    timeout server 3s
    retries 0
    server x 127.0.0.1:8040 maxconn 5
`

func TestReadHAProxyDefaults(t *testing.T) {
	objs, err := haproxy.ReadConfig("haproxy.cfg", []byte(haproxyDefaults), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{
		// From short, which is from base: its own timeout server and
		// queue, base's connect, retries and retry-on (a 503 or an empty
		// response resends a request the server got, whatever its
		// method); default-server maxconn 50 and 20, the backup apart.
		`backend "backend api" @29 prefix=/api/#1 prefix=/v2/#1 router="frontend www" timeout=0.5@haproxy.cfg:15(idle) connect=2@haproxy.cfg:6 queue=1@haproxy.cfg:16 attempts=3@haproxy.cfg:9 retryOn=conn-failure,empty-response,503@haproxy.cfg:10 nonIdempotent=true@haproxy.cfg:10 maxInFlight=70@haproxy.cfg:29 jitter=none`,
		// The last defaults before it (short); retry-on none: one
		// attempt; three servers from a template.
		`backend "backend shop" @34 host=shop.example.com#2 method=GET#2 method=HEAD#2 regex=^/cart/[0-9]+$#3 host=shop.example.com#3 router="frontend www" timeout=0.5@haproxy.cfg:15(idle) connect=2@haproxy.cfg:6 queue=1@haproxy.cfg:16 attempts=1@haproxy.cfg:36 retryOn=@haproxy.cfg:36 nonIdempotent=false@haproxy.cfg:36 maxInFlight=150@haproxy.cfg:34 jitter=none`,
		`backend "backend legacy" @39 timeout=120@haproxy.cfg:40(idle) connect=2@haproxy.cfg:6 queue=1@haproxy.cfg:16 attempts=3@haproxy.cfg:9 retryOn=conn-failure,empty-response,503@haproxy.cfg:10 nonIdempotent=true@haproxy.cfg:10 maxInFlight=50@haproxy.cfg:39 jitter=none`,
		// An environment variable is not read; .if defined() is taken as
		// true, .if 0 as false.
		`backend "backend envy" @43 exact=/env#4 exact=/env2#5 router="frontend www" connect=3@haproxy.cfg:46 queue=1@haproxy.cfg:16 attempts=3@haproxy.cfg:9 retryOn=conn-failure,empty-response,503@haproxy.cfg:10 nonIdempotent=true@haproxy.cfg:10 maxInFlight=50@haproxy.cfg:43 jitter=none`,
		// An anonymous defaults section starts from HAProxy's own: no
		// timeout server, retries 3, timeout queue = timeout connect.
		`backend "backend web" @58 connect=5@haproxy.cfg:56 queue=5=default attempts=4=default retryOn=conn-failure=default nonIdempotent=false=default jitter=none`,
		`listen "listen admin" @61 timeout=3@haproxy.cfg:63(idle) connect=5@haproxy.cfg:56 queue=5=default attempts=1@haproxy.cfg:64 retryOn=conn-failure=default nonIdempotent=false=default maxInFlight=5@haproxy.cfg:61 jitter=none`,
	}, targettest.LBSummaries(objs))
	notes := []struct {
		object string
		parts  []string
	}{
		{"backend api", []string{"option redispatch (haproxy.cfg:11)", "last retry"}},
		{"backend api", []string{"1 backup server"}},
		{"backend legacy", []string{"use_backend in frontend www (haproxy.cfg:25)", "negated ACL !api"}},
		{"backend envy", []string{`timeout server ${SERVER_TIMEOUT-4s} (haproxy.cfg:44) is an environment variable: not read`}},
		{"backend envy", []string{"timeout connect (haproxy.cfg:46) is inside .if defined(FOO) (haproxy.cfg:45)"}},
		{"backend web", []string{"no timeout server: HAProxy waits forever and warns at startup"}},
		{"backend web", []string{"default_backend of frontend www (haproxy.cfg:27)"}},
		// After legacy's negated ACL, which requests reach the default is
		// not known: no match.
		{"backend web", []string{"after a use_backend rule not read as matches, the requests it takes are not known"}},
	}
	for _, n := range notes {
		o := targettest.LBObjectNamed(t, objs, n.object)
		assert.NotEmpty(t, targettest.LBNoteWith(o, n.parts...), "%s: no note with %q in %q", n.object, n.parts, o.Notes)
	}
	assert.Empty(t, targettest.LBNoteWith(targettest.LBObjectNamed(t, objs, "backend shop"), "redispatch"), "no option redispatch")
	assert.Equal(t, "maxconn 50+20", targettest.LBObjectNamed(t, objs, "backend api").MaxInFlight.Raw)
	out, err := haproxyAccepts(t, []byte(haproxyDefaults))
	require.NoError(t, err, out)
}

// TestReadHAProxyRoutes: the ACLs a use_backend rule names, as matches.
func TestReadHAProxyRoutes(t *testing.T) {
	tests := []struct {
		name, frontend string
		want           []target.Match
		note           string
	}{
		{"anonymous path_beg", "use_backend b if { path_beg /a /b }", []target.Match{{Kind: target.MatchPrefix, Value: "/a", Rule: 1}, {Kind: target.MatchPrefix, Value: "/b", Rule: 1}}, ""},
		{"path -i -m beg", "acl x path -i -m beg /A\n    use_backend b if x", []target.Match{{Kind: target.MatchPrefix, Value: "/A", CaseInsensitive: true, Rule: 1}}, ""},
		{"exact or regex: two rules", "use_backend b if { path /x } || { path_reg ^/y$ }", []target.Match{{Kind: target.MatchExact, Value: "/x", Rule: 1}, {Kind: target.MatchRegex, Value: "^/y$", Rule: 2}}, ""},
		{"two ACL lines", "acl x path /x\n    acl x path /y\n    use_backend b if x", []target.Match{{Kind: target.MatchExact, Value: "/x", Rule: 1}, {Kind: target.MatchExact, Value: "/y", Rule: 1}}, ""},
		{"host and method", "use_backend b if { req.hdr(host) -i API.example.com } METH_POST", []target.Match{{Kind: target.MatchHost, Value: "api.example.com", Rule: 1}, {Kind: target.MatchMethod, Value: "POST", Rule: 1}}, ""},
		{"or of two rules", "use_backend b if { path_beg /a }\n    use_backend b if { path_beg /c }", []target.Match{{Kind: target.MatchPrefix, Value: "/a", Rule: 1}, {Kind: target.MatchPrefix, Value: "/c", Rule: 2}}, ""},
		{"unless", "use_backend b unless { path_beg /a }", nil, "an unless condition"},
		{"values from a file", "use_backend b if { path_beg -f {{file}} }", nil, "values from a file"},
		{"an ACL of two kinds", "acl x path /x\n    acl x hdr(host) h\n    use_backend b if x", nil, "matches both exact and host"},
		{"path_end", "use_backend b if { path_end .php }", nil, "the criterion path_end"},
		{"FALSE", "use_backend b if FALSE\n    use_backend b if { path /z }", []target.Match{{Kind: target.MatchExact, Value: "/z", Rule: 1}}, ""},
		{"TRUE", "use_backend b if TRUE", []target.Match{{Kind: target.MatchPrefix, Value: "/", Rule: 1}}, ""},
		{"default and a rule", "use_backend b if { path /z }\n    default_backend b", []target.Match{{Kind: target.MatchExact, Value: "/z", Rule: 1}, {Kind: target.MatchPrefix, Value: "/", Rule: 2}}, "takes the requests no use_backend rule before it takes"},
		{"default after a rule not read", "use_backend b unless { path /z }\n    default_backend b", nil, "after a use_backend rule not read as matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frontend := tt.frontend
			if strings.Contains(frontend, "{{file}}") {
				f := filepath.Join(t.TempDir(), "paths.lst")
				require.NoError(t, os.WriteFile(f, []byte("/a\n"), 0o644))
				frontend = strings.ReplaceAll(frontend, "{{file}}", f)
			}
			conf := "defaults\n    mode http\n    timeout client 1s\n    timeout connect 1s\n    timeout server 1s\n\nfrontend f\n    bind 127.0.0.1:18080\n    " + frontend + "\n\nbackend b\n    server s1 127.0.0.1:8000\n"
			objs, err := haproxy.ReadConfig("haproxy.cfg", []byte(conf), nil)
			require.NoError(t, err)
			require.Len(t, objs, 1)
			assert.Equal(t, tt.want, objs[0].Matches)
			if tt.want != nil {
				assert.Equal(t, "frontend f", objs[0].Router, "one frontend's rules compete")
			}
			if tt.note != "" {
				assert.NotEmpty(t, targettest.LBNoteWith(objs[0], tt.note), "%q", objs[0].Notes)
			}
			out, err := haproxyAccepts(t, []byte(conf))
			require.NoError(t, err, out)
		})
	}
}

func TestReadHAProxyTime(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // milliseconds; -1 = refused
	}{
		{"5000", 5000}, // no unit: milliseconds
		{"5s", 5000},
		{"250ms", 250},
		{"100us", 1}, // rounded up to a millisecond
		{"1500us", 2},
		{"1m", 60_000},
		{"2h", 7_200_000},
		{"24d", 2_073_600_000},
		{"0", 0},
		{"2147483647", 2147483647},
		{"2147483648", -1}, // timer overflow
		{"25d", -1},
		{"99999999999999999999", -1},
		{"1m30s", -1}, // one unit only (2.6 reads 1m and warns)
		{"5S", -1},
		{"1.5s", -1},
		{"-1", -1},
		{"s", -1},
		{"", -1},
		{"5 s", -1},
	}
	for _, tt := range tests {
		got, err := haproxy.ParseTime(tt.in)
		if tt.want < 0 {
			assert.Error(t, err, "%q", tt.in)
			continue
		}
		if assert.NoError(t, err, "%q", tt.in) {
			assert.Equal(t, tt.want, got, "%q", tt.in)
		}
	}
	_, err := haproxy.ParseTime("1m30s")
	assert.ErrorContains(t, err, `HAProxy 2.6 reads "1m" and warns`)
}

func TestReadHAProxyWords(t *testing.T) {
	tests := []struct {
		line string
		want []string
		err  string
	}{
		{`  timeout  server   5s  # a comment`, []string{"timeout", "server", "5s"}, ""},
		{`global#comment`, []string{"global"}, ""},
		{`log-format %{+Q}o\ %t\ %s`, []string{"log-format", "%{+Q}o %t %s"}, ""},
		{`log-format "%{+Q}o %t"' %s'\ x`, []string{"log-format", "%{+Q}o %t %s x"}, ""},
		{`acl a path_reg '^/a\d+$'`, []string{"acl", "a", "path_reg", `^/a\d+$`}, ""},
		{`acl a path_reg ^/a\d+$`, []string{"acl", "a", "path_reg", `^/a\d+$`}, ""}, // \d is no escape
		{`x "a#b" \#c 'it''s'`, []string{"x", "a#b", "#c", "its"}, ""},
		{`x "\"q\"" \x41 "a\$b" a\$b`, []string{"x", `"q"`, "A", "a$b", `a\$b`}, ""},
		{`x "" y`, []string{"x", "", "y"}, ""},
		{`x "unterminated`, nil, "unmatched quote"},
		{`x \xZZ`, nil, "invalid hexadecimal"},
		{`x "${BRACE"`, nil, "unmatched brace"},
		{`x "$1"`, nil, "invalid variable name"},
	}
	for _, tt := range tests {
		ws, err := haproxy.Words(tt.line)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, tt.line)
			continue
		}
		require.NoError(t, err, tt.line)
		assert.Equal(t, tt.want, haproxy.Values(ws), tt.line)
	}
	ws, err := haproxy.Words(`timeout server "${T-5s}"`)
	require.NoError(t, err)
	assert.True(t, ws[2].Env)
}

// TestReadHAProxyRefuses: bad values, refused with file:line; haproxy -c
// refuses them too, at the same line, but for "retries 3x" and "maxconn
// x", which HAProxy reads as 3 and 0 (atol).
func TestReadHAProxyRefuses(t *testing.T) {
	tests := []struct {
		name, line, want string
		haproxyToo       bool
	}{
		{"not a time", "timeout server 6x", `haproxy.cfg:6: timeout server "6x": not an HAProxy time`, true},
		{"fraction", "timeout server 1.5s", `haproxy.cfg:6: timeout server "1.5s": not an HAProxy time`, true},
		{"two units", "timeout server 1m30s", `haproxy.cfg:6: timeout server "1m30s": not an HAProxy time: one number and one unit`, false},
		{"overflow", "timeout connect 25d", `haproxy.cfg:6: timeout connect "25d": timer overflow`, true},
		{"extra value", "timeout server 3s 4s", `haproxy.cfg:6: timeout server: one value expected, got 2`, true},
		{"unknown timeout", "timeout serverx 3s", `haproxy.cfg:6: timeout "serverx": not a timeout HAProxy knows`, true},
		{"legacy", "srvtimeout 3s", `haproxy.cfg:6: the "srvtimeout" directive is not supported anymore since HAProxy 2.1: use 'timeout server'`, true},
		{"retry-on", "retry-on conn-failure 418", `haproxy.cfg:6: retry-on "418": not a retry-on keyword`, true},
		{"retries", "retries 3x", `haproxy.cfg:6: retries "3x": not a number of retries`, false},
		{"maxconn", "server s2 127.0.0.1:8001 maxconn x", `haproxy.cfg:6: server s2: maxconn "x": not a number`, false},
		{"quote", `timeout server "3s`, `haproxy.cfg:6: unmatched quote`, true},
		{"endif", ".endif", `haproxy.cfg:6: ".endif" without .if`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The bad line is line 6.
			conf := "frontend f\n    bind 127.0.0.1:18080\n    timeout client 1s\n    default_backend b\nbackend b\n    " + tt.line + "\n    timeout connect 1s\n    timeout server 1s\n    server s1 127.0.0.1:8000\n"
			_, err := haproxy.ReadConfig("haproxy.cfg", []byte(conf), nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			out, herr := haproxyAccepts(t, []byte(conf))
			if tt.haproxyToo {
				require.Error(t, herr, "haproxy -c accepts what the reader refuses:\n%s", out)
				assert.Contains(t, out, "haproxy.cfg:6]", "haproxy refuses it elsewhere")
			} else {
				// HAProxy takes a value it was not given: 1m of
				// "1m30s" (with a warning), 3 of "3x", 0 of "x".
				assert.NoError(t, herr, out)
			}
		})
	}
}

// TestReadHAProxyRoundTrip reads back the snippets the haproxy target
// writes, with the frontend they suggest, and finds the report's numbers.
func TestReadHAProxyRoundTrip(t *testing.T) {
	for _, fx := range targettest.Fixtures {
		if !fx.For(haproxy.Target) {
			continue
		}
		t.Run(fx.Name, func(t *testing.T) {
			r := targettest.LoadReport(t, fx.Report)
			body, err := haproxy.Target.Render(r, fx.Opts)
			require.NoError(t, err)
			// The frontend the snippet's comment suggests.
			fe := "frontend check\n    mode http\n    bind 127.0.0.1:18080\n    timeout client 10s\n"
			for _, m := range regexp.MustCompile(`(?m)^#   ((?:use|default)_backend .*)$`).FindAllSubmatch(body, -1) {
				fe += "    " + string(m[1]) + "\n"
			}
			cfg := append([]byte(fe+"\n"), body...)
			objs, err := haproxy.ReadConfig("haproxy.cfg", cfg, nil)
			require.NoError(t, err)
			p, err := target.NewPlan(r, fx.Opts)
			require.NoError(t, err)
			p.NoRetryAfter(&target.Doc{}, "") // as the writer: no 429
			routes := p.PathRoutes()
			require.Len(t, objs, len(routes))
			for i, rt := range routes {
				o := objs[i]
				tm := p.Timers(rt, 1)
				assert.Equal(t, tm.Connect.Seconds(), o.ConnectTimeout.Value, o.Name)
				assert.Equal(t, tm.Other.Seconds(), o.QueueTimeout.Value, o.Name)
				assert.False(t, o.QueueTimeout.Default, o.Name)
				assert.LessOrEqual(t, o.Timeout.Value, tm.PerTry.Seconds(), o.Name)
				assert.False(t, o.Attempts.Default, o.Name)
				assert.LessOrEqual(t, o.Attempts.Value, max(rt.Attempts, 1), o.Name)
				if len(routes) > 1 {
					// The frontend's rules in the order of the routes, each
					// with the group's method; the default last.
					var want []target.Match
					switch {
					case rt.Match.Exact != "":
						want = []target.Match{{Kind: target.MatchExact, Value: rt.Match.Exact, Rule: i + 1}}
					case rt.Match.Regex != "":
						want = []target.Match{{Kind: target.MatchRegex, Value: rt.Match.Regex, Rule: i + 1}}
					default:
						want = []target.Match{{Kind: target.MatchPrefix, Value: "/", Rule: i + 1}}
						assert.NotEmpty(t, targettest.LBNoteWith(o, "default_backend of frontend check"), o.Name)
					}
					if rt.Match.Method != "" {
						want = append(want, target.Match{Kind: target.MatchMethod, Value: rt.Match.Method, Rule: i + 1})
					}
					assert.Equal(t, want, o.Matches, o.Name)
					assert.Equal(t, "frontend check", o.Router, o.Name)
				}
				b := p.Bulkhead
				if rt.Bulkhead != nil {
					b = rt.Bulkhead
				}
				if b != nil {
					require.NotNil(t, o.MaxInFlight, o.Name)
					assert.Equal(t, *b, o.MaxInFlight.Value, o.Name)
				}
			}
		})
	}
	body, err := haproxy.Target.Render(targettest.LoadReport(t, "policy.json"), target.Options{Service: "shop-api"})
	require.NoError(t, err)
	objs, err := haproxy.ReadConfig("haproxy.cfg", body, nil)
	require.NoError(t, err)
	// The numbers themselves (no frontend: no matches).
	assert.Equal(t, []string{
		`backend "backend shop_api_post_api_orders" @44 timeout=0.8@haproxy.cfg:48(idle) connect=0.006@haproxy.cfg:47 queue=0.006@haproxy.cfg:46 attempts=3@haproxy.cfg:49 retryOn=conn-failure@haproxy.cfg:51 nonIdempotent=false@haproxy.cfg:51 maxInFlight=11@haproxy.cfg:44 jitter=none`,
		`backend "backend shop_api_get_api_users_id" @54 timeout=0.8@haproxy.cfg:58(idle) connect=0.006@haproxy.cfg:57 queue=0.006@haproxy.cfg:56 attempts=3@haproxy.cfg:59 retryOn=conn-failure@haproxy.cfg:61 nonIdempotent=false@haproxy.cfg:61 maxInFlight=18@haproxy.cfg:54 jitter=none`,
		`backend "backend shop_api_get_api_search" @64 timeout=0.351@haproxy.cfg:68(idle) connect=0.006@haproxy.cfg:67 queue=0.006@haproxy.cfg:66 attempts=7@haproxy.cfg:69 retryOn=conn-failure@haproxy.cfg:71 nonIdempotent=false@haproxy.cfg:71 maxInFlight=6@haproxy.cfg:64 jitter=none`,
		`backend "backend shop_api_catch_all" @74 timeout=0.351@haproxy.cfg:78(idle) connect=0.006@haproxy.cfg:77 queue=0.006@haproxy.cfg:76 attempts=7@haproxy.cfg:79 retryOn=conn-failure@haproxy.cfg:81 nonIdempotent=false@haproxy.cfg:81 maxInFlight=6@haproxy.cfg:74 jitter=none`,
	}, targettest.LBSummaries(objs))
}

func TestReadHAProxyDetect(t *testing.T) {
	tests := []struct {
		file, data string
		want       bool
	}{
		{"haproxy.cfg", "", true},
		{"/etc/haproxy/conf.d/10-app.cfg", "", true},
		{"lb.conf", "global\n    daemon\n", true},
		{"lb", "# comment\ndefaults\n    mode http\nbackend app\n    server s 127.0.0.1:80\n", true},
		{"lb", "    backend app\n", false}, // indented: not a section start
		{"nginx.conf", "http {\n    server {\n        listen 80;\n    }\n}\n", false},
		{"site", "upstream backend {\n    server 127.0.0.1;\n}\n", false},
		{"x", "backend app;\n", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, haproxy.Detect(tt.file, []byte(tt.data)), "%s %q", tt.file, tt.data)
	}
}

// FuzzReadHAProxy: any bytes are read or refused with an error of one
// line, never a panic, and every position is a line of the input.
func FuzzReadHAProxy(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(haproxyFixtures, "*.cfg"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(haproxyDefaults))
	f.Add([]byte("defaults d\n timeout server \"${X-1s}\"\nbackend b from d\n.if 1\n server-template s 1-3 a:80 maxconn 2\n.else\n.endif\nfrontend f\n use_backend b if { path_beg /a } || METH_GET !x\n"))
	// Issue 30: one backend name many times.
	f.Add([]byte(strings.Repeat("backend b\n timeout server 1s\n server s a:80\n", 200)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		objs, err := haproxy.ReadConfig("fuzz.cfg", data, nil)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		targettest.LBCheckLines(t, "fuzz.cfg", data, objs)
	})
}
