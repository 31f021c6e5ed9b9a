package nginx_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
	"github.com/tunetimeout/tunetimeout/target/haproxy"
	"github.com/tunetimeout/tunetimeout/target/nginx"
)

var nginxFixtures = configFixtureDir("nginx")

// nginxInstall are the rewrites (which keep every line where it was) that let nginx -t check a config written
// for /etc/nginx in a temporary folder: paths under /etc/nginx,
// /var/log/nginx and /var/cache/nginx go there; "user" goes (as root,
// nginx -t would look the user up); the host names of upstream servers
// become 127.0.0.1, as nginx resolves them when it checks.
func nginxInstall(dir string, conf []byte) []byte {
	for _, p := range []string{"/etc/nginx/", "/var/log/nginx/", "/var/cache/nginx/", "/var/run/"} {
		conf = bytes.ReplaceAll(conf, []byte(p), []byte(dir+"/"))
	}
	conf = regexp.MustCompile(`(?m)^\s*user\s[^;]*;`).ReplaceAll(conf, nil)
	conf = regexp.MustCompile(`(?m)^(\s*server\s+)[A-Za-z<][^\s:;{]*`).ReplaceAll(conf, []byte("${1}127.0.0.1"))
	temp := fmt.Sprintf("http { client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fastcgi; uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;", dir)
	return regexp.MustCompile(`(?m)^http\s*\{`).ReplaceAll(conf, []byte(temp))
}

// nginxAccepts runs the real nginx -t on a copy of the folder dir,
// installed by nginxInstall. main is the file nginx starts with; "" when
// the folder is a fragment of the http context, which a main file then
// includes inside http {} (every *.conf of it), as validateNginx does.
func nginxAccepts(t *testing.T, dir, main string) error {
	t.Helper()
	nginx := requireTool(t, "nginx", "apt-get install -y nginx haproxy")
	tmp := t.TempDir()
	into := tmp
	if main == "" {
		into = filepath.Join(tmp, "conf.d")
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(into, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, nginxInstall(tmp, data), 0o644)
	})
	if err != nil {
		return err
	}
	if main == "" {
		main = "nginx.conf"
		conf := "events {}\nhttp {\n    access_log off;\n    include /etc/nginx/conf.d/*.conf;\n}\n"
		if err := os.WriteFile(filepath.Join(tmp, main), nginxInstall(tmp, []byte(conf)), 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(tmp, "logs"), 0o755); err != nil {
		return err
	}
	return runTool(tmp, nginx, "-t", "-q", "-p", tmp, "-e", filepath.Join(tmp, "error.log"), "-c", filepath.Join(tmp, main))
}

// nginxAcceptsText runs nginx -t on one main config.
func nginxAcceptsText(t *testing.T, conf string) error {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644))
	return nginxAccepts(t, dir, "nginx.conf")
}

// TestReadNginxFixtures reads configs others wrote (ORIGIN.md says
// whose), each of which the real nginx -t accepts.
func TestReadNginxFixtures(t *testing.T) {
	requireConfigFixtures(t, nginxFixtures)
	tests := []struct {
		name, dir, main string // main "" = an http-context fragment
		file            string
		want            []string
		notes           map[string][]string // object name: parts of a note it has
	}{{
		// nginx's own conf/nginx.conf: locations that serve files, the
		// proxy_pass commented out: no object.
		name: "nginx source tree", dir: "nginx-src", main: "nginx.conf", file: "/etc/nginx/nginx.conf",
		want: []string{},
	}, {
		// Sentry self-hosted 23.8.0: the http block sets the retries and
		// timeouts every location inherits; each upstream has one server,
		// so proxy_next_upstream_tries 2 makes one try.
		name: "sentry self-hosted", dir: "sentry", main: "nginx.conf", file: "/etc/nginx/nginx.conf",
		want: []string{
			`location "server 80 location /api/store/" @72 up=relay prefix=/api/store/ timeout=30@nginx.conf:56(idle) connect=60=default attempts=1@nginx.conf:44 retryOn=error,timeout,invalid_header,http_502,http_503@nginx.conf:43 nonIdempotent=true@nginx.conf:43 jitter=none`,
			`location "server 80 location ~ ^/api/[1-9]\\d*/" @75 up=relay regex=^/api/[1-9]\d*/ timeout=30@nginx.conf:56(idle) connect=60=default attempts=1@nginx.conf:44 retryOn=error,timeout,invalid_header,http_502,http_503@nginx.conf:43 nonIdempotent=true@nginx.conf:43 jitter=none`,
			`location "server 80 location /" @78 up=sentry prefix=/ timeout=30@nginx.conf:56(idle) connect=60=default attempts=1@nginx.conf:44 retryOn=error,timeout,invalid_header,http_502,http_503@nginx.conf:43 nonIdempotent=true@nginx.conf:43 jitter=none`,
			`upstream "upstream relay" @59`,
			`upstream "upstream sentry" @64`,
		},
		notes: map[string][]string{
			"server 80 location /": {"proxy_next_upstream_tries 2, but upstream sentry has one server, web:9000", "1 try"},
			"upstream relay":       {"keepalive 2"},
		},
	}, {
		// NGINX's API gateway demo (step 5): conf.d/*.conf included from
		// /etc/nginx, and conf.d/my_apis/*.conf from there relative to
		// the conf prefix; nested locations in one; nginx's defaults.
		name: "api gateway", dir: "api-gateway", main: "nginx.conf", file: "/etc/nginx/nginx.conf",
		want: []string{
			`location "server 8080 location = /api/f1/seasons" @7 up=f1-admin exact=/api/f1/seasons prefix=/api/f1/ timeout=60=default(idle) connect=60=default attempts=1=default retryOn=error,timeout=default nonIdempotent=false=default jitter=none`,
			`location "server 8080 location ~ /api/f1/[12][0-9]+" @11 up=f1-data regex=/api/f1/[12][0-9]+ prefix=/api/f1/ timeout=60=default(idle) connect=60=default attempts=1=default retryOn=error,timeout=default nonIdempotent=false=default jitter=none`,
			`location "server 8080 location /api/f1/drivers" @15 up=f1-data prefix=/api/f1/drivers timeout=60=default(idle) connect=60=default attempts=1=default retryOn=error,timeout=default nonIdempotent=false=default jitter=none`,
			`upstream "upstream f1-admin" @1`,
			`upstream "upstream f1-data" @5`,
		},
	}, {
		// OpenTelemetry's collector gateway: an http-context fragment
		// with a gRPC and an HTTP location over three collectors each;
		// "grpc_connect_timeout 2" is 2 seconds.
		name: "otel collector gateway", dir: "otel-gateway", file: "/etc/nginx/conf.d/collectors.conf",
		want: []string{
			`location "server 4317 location /" @5 up=collector4317 prefix=/ timeout=60=default(idle) connect=2@collectors.conf:8 attempts=3=default retryOn=error,timeout,invalid_header,http_500@collectors.conf:7 nonIdempotent=false@collectors.conf:7 jitter=none`,
			`location "server 4318 location /" @19 up=collector4318 prefix=/ timeout=60=default(idle) connect=2@collectors.conf:23 attempts=3=default retryOn=error,timeout,invalid_header,http_500@collectors.conf:22 nonIdempotent=false@collectors.conf:22 jitter=none`,
			`upstream "upstream collector4317" @30`,
			`upstream "upstream collector4318" @36`,
		},
		notes: map[string][]string{
			"server 4317 location /": {"grpc_next_upstream_tries not set: one try per server, and upstream collector4317 has 3 servers"},
			"upstream collector4318": {"collector1:4318, collector2:4318, collector3:4318", "one peer per address"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(nginxFixtures, tt.dir)
			mount := "/etc/nginx"
			if tt.main == "" {
				mount = "/etc/nginx/conf.d"
			}
			open := lbMountOpener(map[string]string{mount: dir})
			data, err := open(tt.file)
			require.NoError(t, err)
			objs, err := nginx.ReadConfig(tt.file, data, open, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, lbSummaries(objs))
			for name, parts := range tt.notes {
				o := lbObjectNamed(t, objs, name)
				assert.NotEmpty(t, lbNoteWith(o, parts...), "%s: no note with %q in %q", name, parts, o.Notes)
			}
			require.NoError(t, nginxAccepts(t, dir, tt.main))
		})
	}
}

// nginxInheritance is a config of this test's own, which nginx -t
// accepts: http -> server -> location -> nested location, an "if" with
// a proxy_pass of its own, and grpc_* apart from proxy_*.
const nginxInheritance = `worker_processes 2;
events {}
http {
    proxy_read_timeout 10s;
    proxy_next_upstream error timeout http_503;
    upstream app {
        server 127.0.0.1:8001 max_conns=10;
        server 127.0.0.1:8002 max_conns=10;
        server 127.0.0.1:8003 max_conns=5 backup;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:8080;
        server_name api.example.com www.example.com;
        proxy_connect_timeout 1500ms;
        location /api/ {
            proxy_pass http://app;
            proxy_next_upstream_tries 2;
            location ~* \.json$ {
                proxy_pass http://app;
                proxy_read_timeout 1m30s;
                proxy_next_upstream off;
            }
        }
        location = /health {
            proxy_pass http://127.0.0.1:9000/healthz;
        }
        location ^~ /static/ {
            root /srv;
        }
        location /orders {
            proxy_pass http://app;
            proxy_next_upstream error timeout non_idempotent;
            proxy_next_upstream_timeout 2s;
            if ($request_method = POST) {
                proxy_pass http://127.0.0.1:9001;
            }
        }
    }
    server {
        listen 127.0.0.1:8081 http2;
        location /grpc.Service/ {
            grpc_pass grpc://app;
            grpc_read_timeout 5s;
            grpc_next_upstream_tries 9;
        }
    }
}
`

func TestReadNginxInheritance(t *testing.T) {
	objs, err := nginx.ReadConfig("nginx.conf", []byte(nginxInheritance), nil, nil)
	require.NoError(t, err)
	hosts := "host=api.example.com host=www.example.com"
	assert.Equal(t, []string{
		// The http block's read timeout and conditions, the server's
		// connect timeout; 2 tries of the 3 servers (the backup counts).
		`location "server api.example.com location /api/" @16 up=app ` + hosts + ` prefix=/api/ timeout=10@nginx.conf:4(idle) connect=1.5@nginx.conf:15 attempts=2@nginx.conf:18 retryOn=error,timeout,http_503@nginx.conf:5 nonIdempotent=false@nginx.conf:5 jitter=none`,
		// Nested: its own read timeout; "off" wins over the inherited
		// conditions; inside /api/, so the prefix holds too.
		`location "server api.example.com location ~* \\.json$" @19 up=app ` + hosts + ` regex(i)=\.json$ prefix=/api/ timeout=90@nginx.conf:21(idle) connect=1.5@nginx.conf:15 attempts=1@nginx.conf:22 retryOn=@nginx.conf:22 nonIdempotent=false@nginx.conf:22 jitter=none`,
		// proxy_pass to one address: one try.
		`location "server api.example.com location = /health" @25 up=127.0.0.1:9000 ` + hosts + ` exact=/health timeout=10@nginx.conf:4(idle) connect=1.5@nginx.conf:15 attempts=1=default retryOn=error,timeout,http_503@nginx.conf:5 nonIdempotent=false@nginx.conf:5 jitter=none`,
		`location "server api.example.com location /orders" @31 up=app ` + hosts + ` prefix=/orders timeout=10@nginx.conf:4(idle) connect=1.5@nginx.conf:15 attempts=3=default retryOn=error,timeout@nginx.conf:33 nonIdempotent=true@nginx.conf:33 jitter=none`,
		// The if block: its own upstream, the location's settings.
		`location "server api.example.com location /orders if ($request_method = POST)" @35 up=127.0.0.1:9001 ` + hosts + ` prefix=/orders timeout=10@nginx.conf:4(idle) connect=1.5@nginx.conf:15 attempts=1=default retryOn=error,timeout@nginx.conf:33 nonIdempotent=true@nginx.conf:33 jitter=none`,
		// grpc_*: the proxy_* of the http block and server do not apply;
		// 9 tries of 3 servers are 3.
		`location "server 127.0.0.1:8081 location /grpc.Service/" @42 up=app prefix=/grpc.Service/ timeout=5@nginx.conf:44(idle) connect=60=default attempts=3@nginx.conf:45 retryOn=error,timeout=default nonIdempotent=false=default jitter=none`,
		// max_conns over all servers, per worker without a zone: 2 x 25.
		`upstream "upstream app" @6 maxInFlight=50@nginx.conf:6`,
	}, lbSummaries(objs))
	assert.NotEmpty(t, lbNoteWith(lbObjectNamed(t, objs, "server api.example.com location /orders"), "proxy_next_upstream_timeout 2s (nginx.conf:34)", "no try starts after 2s"))
	assert.NotEmpty(t, lbNoteWith(lbObjectNamed(t, objs, "server api.example.com location /api/"), "nested locations", "~* \\.json$ (nginx.conf:19)"))
	assert.NotEmpty(t, lbNoteWith(lbObjectNamed(t, objs, "server 127.0.0.1:8081 location /grpc.Service/"), "grpc_next_upstream_tries 9, but upstream app has 3 servers: 3 tries"))
	up := lbObjectNamed(t, objs, "upstream app")
	assert.Equal(t, "max_conns=10+10+5", up.MaxInFlight.Raw)
	assert.NotEmpty(t, lbNoteWith(up, "no zone", "2 workers"))
	assert.NotEmpty(t, lbNoteWith(up, "1 backup"))
	require.NoError(t, nginxAcceptsText(t, nginxInheritance))
}

func TestReadNginxTime(t *testing.T) {
	tests := []struct {
		in    string
		isSec bool
		want  int64 // milliseconds, seconds with isSec; -1 = refused
	}{
		{"60", false, 60_000}, // a bare number is seconds
		{"500ms", false, 500},
		{"1m30s", false, 90_000},
		{"1m30", false, 90_000}, // a trailing bare number is seconds
		{"1h 30m", false, 5_400_000},
		{"1m ", false, 60_000},
		{"30 5", false, 35_000},
		{"1s500ms", false, 1500},
		{"2w", false, 1_209_600_000},
		{"1d1h", false, 90_000_000},
		{"0", false, 0},
		{"9223372036854775807ms", false, 9223372036854775807},
		{"9223372036854775s", false, 9223372036854775000},
		{"9223372036854776s", false, -1}, // overflows int64 ms
		{"1M", false, -1},                // months only in seconds
		{"1y", false, -1},                // years only in seconds
		{"1.5s", false, -1},              // no fractions
		{"-1", false, -1},                // no sign
		{"1ms1s", false, -1},             // larger units first
		{"1s1s", false, -1},              // each unit once
		{"6x", false, -1},                // no such unit
		{"s", false, -1},                 // no number
		{"", false, -1},
		{"1S", false, -1},          // units are case-sensitive
		{"1y2M", true, 36_720_000}, // fail_timeout style: seconds
		{"10ms", true, -1},         // no ms in seconds
		{"10", true, 10},
	}
	for _, tt := range tests {
		got, err := nginx.ParseTime(tt.in, tt.isSec)
		if tt.want < 0 {
			assert.Error(t, err, "%q", tt.in)
			continue
		}
		if assert.NoError(t, err, "%q", tt.in) {
			assert.Equal(t, tt.want, got, "%q", tt.in)
		}
	}
}

// TestReadNginxRefuses: what nginx -t refuses, the reader refuses too,
// saying where.
func TestReadNginxRefuses(t *testing.T) {
	tests := []struct{ name, conf, want string }{
		{"not a time", `proxy_read_timeout 6x;`, `nginx.conf:4: proxy_read_timeout "6x": not an nginx time`},
		{"months", `proxy_connect_timeout 1M;`, `nginx.conf:4: proxy_connect_timeout "1M": not an nginx time: months (M) and years (y) are not allowed in a timeout`},
		{"duplicate", "proxy_read_timeout 1s;\nproxy_read_timeout 2s;", `nginx.conf:5: "proxy_read_timeout" directive is duplicate`},
		{"bad condition", `proxy_next_upstream error http_418;`, `nginx.conf:4: proxy_next_upstream "http_418": not a condition nginx knows`},
		{"grpc updating", `grpc_next_upstream updating;`, `nginx.conf:4: grpc_next_upstream "updating": not a condition`},
		{"bad tries", `proxy_next_upstream_tries -1;`, `nginx.conf:4: proxy_next_upstream_tries "-1": not a number of tries`},
		{"two values", `proxy_read_timeout 1s 2s;`, `nginx.conf:4: invalid number of arguments in "proxy_read_timeout" directive`},
		{"stray brace", `}`, `nginx.conf:5: unexpected "}"`},
		{"text after a quote", `proxy_read_timeout "1s"x;`, `nginx.conf:4: unexpected "x"`},
		{"URL prefix", `server { location / { proxy_pass ftp://127.0.0.1; } }`, `nginx.conf:4: proxy_pass "ftp://127.0.0.1": invalid URL prefix`},
		{"upstream port", "upstream app { server 127.0.0.1:1; }\nserver { location / { proxy_pass http://app:8080; } }", `nginx.conf:5: upstream "app" may not have port 8080`},
		{"timeout in if", `server { location / { proxy_pass http://127.0.0.1; if ($http_x) { proxy_read_timeout 1s; } } }`, `nginx.conf:4: "proxy_read_timeout" directive is not allowed here`},
		{"max_conns", `upstream app { server 127.0.0.1:1 max_conns=x; }`, `nginx.conf:4: server 127.0.0.1:1: "max_conns=x": max_conns is not a number`},
		{"location modifier", `server { location ! /x { } }`, `nginx.conf:4: invalid location modifier "!"`},
		{"empty upstream", `upstream app { keepalive 2; }`, `nginx.conf:4: no servers are inside upstream "app"`},
		{"proxy_pass in server", `server { proxy_pass http://127.0.0.1; }`, `nginx.conf:4: "proxy_pass" directive is not allowed here`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := "events {}\nhttp {\n    access_log off;\n" + tt.conf + "\n}\n"
			_, err := nginx.ReadConfig("nginx.conf", []byte(conf), nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			var re *target.ReadError
			assert.True(t, errors.As(err, &re), "a ReadError: %v", err)
			// nginx refuses it too, at the same line.
			nerr := nginxAcceptsText(t, conf)
			require.Error(t, nerr, "nginx -t accepts what the reader refuses")
			assert.Contains(t, nerr.Error(), fmt.Sprintf("nginx.conf:%d", re.Pos.Line), "nginx refuses it elsewhere")
		})
	}
	// The end of a file in a block, or in a directive.
	for conf, want := range map[string]string{
		"http {\n  server {\n":             `nginx.conf:3: unexpected end of file, expecting "}"`,
		"events {}\nhttp { access_log off": `nginx.conf:2: unexpected end of file, expecting ";" or "}"`,
	} {
		_, err := nginx.ReadConfig("nginx.conf", []byte(conf), nil, nil)
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), want)
		}
	}
}

// TestReadNginxTokens: quotes, escapes, variables and comments as
// nginx's tokenizer reads them.
func TestReadNginxTokens(t *testing.T) {
	conf := `events {}
http {
    access_log off;
    map $http_x $v { default "a;b}"; }  # "{" in a comment
    server {
        listen 127.0.0.1:8080;
        server_name "quoted.example.com" 'single.example.com';
        location "/a b" {
            set $x "${http_x}y";
            proxy_pass http://127.0.0.1:1;
            proxy_read_timeout "1h 30m";
        }
        location ~ ^/x\{2\}$ {
            proxy_pass http://127.0.0.1:1;
            proxy_connect_timeout '250ms';
        }
        location /a#b {
            proxy_pass http://127.0.0.1:1;
        }
    }
}
`
	objs, err := nginx.ReadConfig("t.conf", []byte(conf), nil, nil)
	require.NoError(t, err)
	require.Len(t, objs, 3)
	assert.Equal(t, "server quoted.example.com location /a b", objs[0].Name)
	assert.Equal(t, []target.Match{{Kind: target.MatchHost, Value: "quoted.example.com"}, {Kind: target.MatchHost, Value: "single.example.com"}, {Kind: target.MatchPrefix, Value: "/a b"}}, objs[0].Matches)
	assert.Equal(t, 5400.0, objs[0].Timeout.Value)
	assert.Equal(t, "1h 30m", objs[0].Timeout.Raw)
	assert.Equal(t, 11, objs[0].Timeout.Pos.Line)
	assert.Equal(t, target.Match{Kind: target.MatchRegex, Value: `^/x\{2\}$`}, objs[1].Matches[2])
	assert.Equal(t, 0.25, objs[1].ConnectTimeout.Value)
	assert.Equal(t, target.Match{Kind: target.MatchPrefix, Value: "/a#b"}, objs[2].Matches[2], "# inside a word is not a comment")
	require.NoError(t, nginxAcceptsText(t, conf))
}

// lbMapOpener opens the files of a map; a folder (any prefix of a path)
// is answered with its names, one a line.
func lbMapOpener(files map[string]string) target.Opener {
	return func(p string) ([]byte, error) {
		p = filepath.ToSlash(filepath.Clean(p))
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		seen := map[string]bool{}
		var names []string
		for f := range files {
			if rest, ok := strings.CutPrefix(f, p+"/"); ok {
				n, _, _ := strings.Cut(rest, "/")
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("open %s: %w", p, fs.ErrNotExist)
		}
		return []byte(strings.Join(names, "\n")), nil
	}
}

func TestReadNginxIncludes(t *testing.T) {
	files := map[string]string{
		"/etc/nginx/nginx.conf": "events {}\nhttp {\n    include conf.d/*.conf;\n    include /etc/nginx/missing/*.conf;\n}\n",
		// Sorted: a.conf before b.conf; the hidden file and the .txt not.
		"/etc/nginx/conf.d/b.conf":       "server {\n    server_name b;\n    location / { proxy_pass http://127.0.0.1:2; }\n}\n",
		"/etc/nginx/conf.d/a.conf":       "server {\n    server_name a;\n    include snippets/timeouts.conf;\n    location / { proxy_pass http://127.0.0.1:1; }\n}\n",
		"/etc/nginx/conf.d/.hidden.conf": "this would not parse",
		"/etc/nginx/conf.d/notes.txt":    "nor would this",
		// Relative to the conf prefix (/etc/nginx), not to conf.d.
		"/etc/nginx/snippets/timeouts.conf":        "proxy_read_timeout 7s;\n",
		"/etc/nginx/conf.d/snippets/timeouts.conf": "proxy_read_timeout 999s;\n",
	}
	objs, err := nginx.ReadConfig("/etc/nginx/nginx.conf", []byte(files["/etc/nginx/nginx.conf"]), lbMapOpener(files), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"server a location /", "server b location /"}, []string{objs[0].Name, objs[1].Name})
	assert.Equal(t, target.Pos{File: "/etc/nginx/conf.d/a.conf", Line: 4}, objs[0].Pos)
	assert.Equal(t, 7.0, objs[0].Timeout.Value)
	assert.Equal(t, target.Pos{File: "/etc/nginx/snippets/timeouts.conf", Line: 1}, objs[0].Timeout.Pos)
	assert.True(t, objs[1].Timeout.Default)

	refuse := func(name string, files map[string]string, open target.Opener, want string) {
		t.Helper()
		if open == nil {
			open = lbMapOpener(files)
		}
		_, err := nginx.ReadConfig("/etc/nginx/nginx.conf", []byte(files["/etc/nginx/nginx.conf"]), open, nil)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), want, name)
		}
	}
	refuse("a loop", map[string]string{
		"/etc/nginx/nginx.conf": "include loop.conf;\n",
		"/etc/nginx/loop.conf":  "# again\ninclude loop.conf;\n",
	}, nil, `/etc/nginx/loop.conf:2: include "loop.conf": includes nested more than 16 deep (an include loop?)`)
	refuse("a missing file", map[string]string{"/etc/nginx/nginx.conf": "http {\n    include proxy.conf;\n}\n"}, nil,
		`/etc/nginx/nginx.conf:2: include "proxy.conf": open /etc/nginx/proxy.conf: file does not exist`)
	refuse("an opener that cannot list", map[string]string{"/etc/nginx/nginx.conf": "http { include conf.d/*; }\n"},
		func(p string) ([]byte, error) { return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EISDIR} },
		`/etc/nginx/nginx.conf:1: include "conf.d/*": cannot list /etc/nginx/conf.d/`)
	refuse("no opener", map[string]string{"/etc/nginx/nginx.conf": "http { include x.conf; }\n"},
		func(string) ([]byte, error) { return nil, errors.New("no files here") }, `include "x.conf": no files here`)
	refuse("a block closed in an included file", map[string]string{
		"/etc/nginx/nginx.conf": "http {\n    include close.conf;\n",
		"/etc/nginx/close.conf": "}\n",
	}, nil, `/etc/nginx/close.conf:1: unexpected "}"`)
	_, err = nginx.ReadConfig("nginx.conf", []byte("http { include x.conf; }"), nil, nil)
	assert.ErrorContains(t, err, `nginx.conf:1: include "x.conf": no way to open included files`)
}

// TestReadNginxRoundTrip reads back the snippets the nginx target writes
// and finds the report's numbers in them.
func TestReadNginxRoundTrip(t *testing.T) {
	for _, fx := range fixtures {
		if fx.only != "" && fx.only != "nginx" {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			r := loadReport(t, fx.report)
			body, err := Render("nginx", r, fx.opts)
			require.NoError(t, err)
			objs, err := nginx.ReadConfig("nginx.conf", body, nil, nil)
			require.NoError(t, err)
			p, err := target.NewPlan(r, fx.opts)
			require.NoError(t, err)
			p.NoRetryAfter(&target.Doc{}, "") // as the writer: no 429
			routes := p.PathRoutes()
			require.Len(t, objs, len(routes)+1, "a location per route and the upstream: %q", lbSummaries(objs))
			tries := 1
			for _, rt := range routes {
				tries = max(tries, rt.Attempts)
			}
			up := target.Identifier(p.Service, false)
			for i, rt := range routes {
				o := objs[i]
				tm := p.Timers(rt, 0)
				assert.Equal(t, up, o.Upstream, o.Name)
				assert.Equal(t, target.CeilMs(tm.PerTry.Seconds()).Seconds(), o.Timeout.Value, o.Name)
				assert.Equal(t, tm.Connect.Seconds(), o.ConnectTimeout.Value, o.Name)
				assert.True(t, o.TimeoutIdle)
				var want target.Match
				switch {
				case rt.Match.Exact != "":
					want = target.Match{Kind: target.MatchExact, Value: rt.Match.Exact}
				case rt.Match.Regex != "":
					want = target.Match{Kind: target.MatchRegex, Value: rt.Match.Regex}
				default:
					want = target.Match{Kind: target.MatchPrefix, Value: "/"}
				}
				assert.Equal(t, []target.Match{want}, o.Matches, o.Name)
				if o.Attempts.Value == 1 {
					assert.Equal(t, "off", o.Attempts.Raw, o.Name)
					assert.Empty(t, o.RetryOn.Value, o.Name)
					continue
				}
				assert.Equal(t, min(rt.Attempts, tries), o.Attempts.Value, o.Name)
				conds, _ := nginx.Conditions(rt)
				var wantOn []string
				for _, c := range conds {
					if c != "non_idempotent" {
						wantOn = append(wantOn, c)
					}
				}
				assert.Equal(t, wantOn, o.RetryOn.Value, o.Name)
				assert.Equal(t, nginx.NonIdempotent(rt), o.RetryNonIdempotent.Value, o.Name)
				assert.NotEmpty(t, lbNoteWith(o, "proxy_next_upstream_timeout"), o.Name)
			}
			u := objs[len(objs)-1]
			assert.Equal(t, "upstream "+up, u.Name)
			if b := p.Bulkhead; b != nil {
				require.NotNil(t, u.MaxInFlight)
				assert.Equal(t, max(1, (*b+tries-1)/tries)*tries, u.MaxInFlight.Value, "the entries hold the whole bulkhead")
				assert.GreaterOrEqual(t, u.MaxInFlight.Value, *b)
			}
		})
	}
	// The numbers themselves, for the call-policy report: 800ms per try
	// and 3 tries for the orders, 7 tries for the search.
	objs, err := func() ([]target.Object, error) {
		body, err := Render("nginx", loadReport(t, "policy.json"), target.Options{Service: "shop-api"})
		require.NoError(t, err)
		return nginx.ReadConfig("nginx.conf", body, nil, nil)
	}()
	require.NoError(t, err)
	assert.Equal(t, []string{
		`location "server 80 location = /api/orders" @55 up=shop_api exact=/api/orders timeout=0.8@nginx.conf:59(idle) connect=0.006@nginx.conf:57 attempts=3@nginx.conf:61 retryOn=error,timeout@nginx.conf:60 nonIdempotent=false@nginx.conf:60 jitter=none`,
		`location "server 80 location ~ ^/api/users/[^/]+$" @65 up=shop_api regex=^/api/users/[^/]+$ timeout=0.8@nginx.conf:69(idle) connect=0.006@nginx.conf:67 attempts=3@nginx.conf:71 retryOn=error,timeout,http_502,http_503,http_504@nginx.conf:70 nonIdempotent=false@nginx.conf:70 jitter=none`,
		`location "server 80 location ~ ^/api/search/.*$" @75 up=shop_api regex=^/api/search/.*$ timeout=0.351@nginx.conf:79(idle) connect=0.006@nginx.conf:77 attempts=7@nginx.conf:81 retryOn=error,timeout,http_503@nginx.conf:80 nonIdempotent=false@nginx.conf:80 jitter=none`,
		`location "server 80 location /" @85 up=shop_api prefix=/ timeout=0.351@nginx.conf:89(idle) connect=0.006@nginx.conf:87 attempts=7@nginx.conf:91 retryOn=error,timeout@nginx.conf:90 nonIdempotent=false@nginx.conf:90 jitter=none`,
		`upstream "upstream shop_api" @41 maxInFlight=28@nginx.conf:41`,
	}, lbSummaries(objs))
}

func TestReadNginxDetect(t *testing.T) {
	requireConfigFixtures(t, nginxFixtures)
	haproxyCfg := []byte("global\n    daemon\n\ndefaults\n    mode http\n\nbackend app\n    server s1 127.0.0.1:80\n")
	tests := []struct {
		file string
		data string
		want bool
	}{
		{"nginx.conf", "events {}", true},
		{"/etc/nginx/sites-enabled/default.conf", "", true},
		{"site", "server {\n    location / { proxy_pass http://app; }\n}\n", true},
		{"site", "location /api/ {\n    grpc_pass grpc://app;\n}\n", true},
		{"site", "server {\n    root /srv;\n}\n", false}, // no proxying
		{"haproxy.conf", string(haproxyCfg), false},      // HAProxy's sections
		{"haproxy.cfg", string(haproxyCfg), false},
		{"envoy.yaml", "static_resources:\n  listeners: []\n", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, nginx.Detect(tt.file, []byte(tt.data)), "%s %q", tt.file, tt.data)
	}
	for _, f := range []string{"nginx-src/nginx.conf", "sentry/nginx.conf", "otel-gateway/collectors.conf"} {
		data, err := os.ReadFile(filepath.Join(nginxFixtures, f))
		require.NoError(t, err)
		assert.True(t, nginx.Detect("config", data), "by its contents: %s", f)
		assert.False(t, haproxy.Detect("config", data), "HAProxy claims %s", f)
	}
}

// FuzzReadNginx: any bytes are read or refused with an error of one
// line, never a panic, and every position is a line of the input. Every
// include opens the input itself, so that includes nest and repeat until
// the depth cap or the run's budget ends them, within 2 s.
func FuzzReadNginx(f *testing.F) {
	for _, p := range []string{"sentry/nginx.conf", "nginx-src/nginx.conf", "otel-gateway/collectors.conf", "api-gateway/conf.d/my_apis/f1.conf"} {
		if data, err := os.ReadFile(filepath.Join(nginxFixtures, p)); err == nil { // when the conformance configs are here
			f.Add(data)
		}
	}
	f.Add([]byte(nginxInheritance))
	f.Add([]byte("location ~ \"a\\\"b\" { proxy_pass http://$x; proxy_read_timeout '1m 30s'; }"))
	f.Add([]byte("http { upstream u { server a max_conns=3; } server { location @x { if ($a) { proxy_pass http://u; } } } }"))
	// Issue 30: a file that includes itself, each time twice, and names a
	// location again at each level.
	f.Add([]byte("location /a { proxy_pass http://u; }\ninclude self.conf;\ninclude self.conf;\n" + strings.Repeat("add_header X y;\n", 200)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		deadline := time.Now().Add(2 * time.Second)
		self := func(string) ([]byte, error) { return data, nil }
		objs, err := nginx.ReadConfig("fuzz.conf", data, self, nil)
		if time.Now().After(deadline) {
			t.Fatalf("took more than 2s on %d bytes", len(data))
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		lbCheckLines(t, "", data, objs) // an include is the input too, under its name
	})
}
