package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/nginx/nginx.conf is accepted by `nginx -t` (nginx 1.22): the
// formats below are what nginx itself reads from it.
func TestReadNginxConf(t *testing.T) {
	conf := filepath.Join("testdata", "nginx", "nginx.conf")
	tests := []struct {
		name   string
		format string
		escape string
		origin string
	}{
		{"timing",
			`$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" ` +
				`rt=$request_time uct="$upstream_connect_time" urt="$upstream_response_time" uht=${upstream_header_time}`,
			"default", `log_format "timing" at ` + conf + `:17`},
		{"json",
			`{"time":"$time_iso8601","uri":"$request_uri","status":$status,"request_time":$request_time,"ua":"$http_user_agent"}`,
			"json", `log_format "json" at ` + conf + `:23`},
		{"upstream", // from conf.d/10-upstream.conf, through a glob
			`$msec $host "$request" $status $upstream_addr $upstream_response_time $upstream_connect_time`,
			"default", `log_format "upstream" at ` + filepath.Join("testdata", "nginx", "conf.d", "10-upstream.conf") + `:2`},
		{"upstreaminfo", // an include of an include
			ingressUpstreamInfo,
			"default", `log_format "upstreaminfo" at ` + filepath.Join("testdata", "nginx", "snippets", "ingress.conf") + `:2`},
		{"combined", nginxCombined, "default", "nginx's combined format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nf, err := readNginxConf(conf, tt.name)
			require.NoError(t, err)
			assert.Equal(t, nginxFormat{text: tt.format, escape: tt.escape, origin: tt.origin}, nf)
		})
	}

	t.Run("decode with the format from the config", func(t *testing.T) {
		line := `10.0.0.1 - - [07/Feb/2020:11:48:51 +0000] "GET /a/1 HTTP/1.1" 200 5 "-" "curl/8" rt=0.250 uct="0.001, 0.002" urt="0.100, 0.140" uht=0.090`
		o := Options{NginxConf: conf, LogFormatName: "timing", By: []string{"route"}}
		for _, tc := range []struct {
			latency string
			want    []float64
		}{{"", []float64{250}}, {"upstream", []float64{240}}, {"upstream-last", []float64{140}}, {"upstream-header", []float64{90}}} {
			o.Latency = tc.latency
			samples, errs := decodeNginxLines(t, o, line)
			require.Empty(t, errs)
			require.Len(t, samples, 1)
			assert.Equal(t, millis(tc.want[0]), samples[0].Latency, tc.latency)
			assert.Equal(t, millis(3), samples[0].Connect)
			assert.True(t, samples[0].ConnectKnown)
			assert.Equal(t, "/a/{id}", samples[0].Group)
		}
	})

	t.Run("errors", func(t *testing.T) {
		dir := filepath.Join("testdata", "nginx")
		tests := []struct {
			file, name string
			want       string
		}{
			{"nginx.conf", "main", `testdata/nginx/nginx.conf has no log_format "main": it defines "timing", "json", "upstream", "upstreaminfo"`},
			{"nginx.conf", "", `testdata/nginx/nginx.conf defines several log formats ("timing", "json", "upstream", "upstreaminfo"): choose one with --log-format-name`},
			{"loop.conf", "x", `testdata/nginx/loop.conf: includes nested deeper than 16 (does a file include itself?)`},
			{"broken.conf", "broken", `testdata/nginx/broken.conf:2: the quoted string that starts here is not closed`},
			{"missing-include.conf", "main", `testdata/nginx/missing-include.conf has no log_format "main": it defines "only" (these includes could not be read: testdata/nginx/does-not-exist.conf)`},
			{"absent.conf", "main", `open testdata/nginx/absent.conf: no such file or directory`},
		}
		for _, tt := range tests {
			_, err := readNginxConf(filepath.Join(dir, tt.file), tt.name)
			assert.EqualError(t, err, tt.want, tt.file)
		}
	})

	t.Run("the only format needs no name", func(t *testing.T) {
		nf, err := readNginxConf(filepath.Join("testdata", "nginx", "missing-include.conf"), "")
		require.NoError(t, err)
		assert.Equal(t, "$request_time $status", nf.text)
	})

	t.Run("absolute include", func(t *testing.T) {
		dir := t.TempDir()
		abs, err := filepath.Abs(filepath.Join("testdata", "nginx", "snippets", "ingress.conf"))
		require.NoError(t, err)
		main := filepath.Join(dir, "nginx.conf")
		require.NoError(t, os.WriteFile(main, []byte("http { include "+abs+"; }\n"), 0o644))
		nf, err := readNginxConf(main, "upstreaminfo")
		require.NoError(t, err)
		assert.Equal(t, ingressUpstreamInfo, nf.text)
	})
}

func TestTokenizeNginxConf(t *testing.T) {
	tests := []struct {
		name, in string
		want     []nginxStmt
	}{
		{"words, blocks and comments",
			"a b; # c d;\nblock x {\n  e 'f g' \"h;i\";\n}\n",
			[]nginxStmt{{words: []string{"a", "b"}, line: 1}, {words: []string{"block", "x"}, block: true, line: 2}, {words: []string{"e", "f g", "h;i"}, line: 3}}},
		{"escapes in quoted and bare words", // nginx keeps the backslash of \q and \; but \; does not end the word
			`a '\'x\' \"y\" \\ \t \q' b\;c;`,
			[]nginxStmt{{words: []string{"a", "'x' \"y\" \\ \t \\q", `b\;c`}, line: 1}}},
		{"${var} is no block",
			"log_format x ${request_time}ms;",
			[]nginxStmt{{words: []string{"log_format", "x", "${request_time}ms"}, line: 1}}},
		{"# inside a word is no comment",
			"a b#c;",
			[]nginxStmt{{words: []string{"a", "b#c"}, line: 1}}},
		{"a quoted string over lines",
			"a 'b\nc'\n d;",
			[]nginxStmt{{words: []string{"a", "b\nc", "d"}, line: 1}}},
		{"no final semicolon",
			"log_format x '$a'",
			[]nginxStmt{{words: []string{"log_format", "x", "$a"}, line: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tokenizeNginxConf([]byte(tt.in), "test.conf")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := tokenizeNginxConf([]byte("a;\nb 'c;\n"), "test.conf")
	assert.EqualError(t, err, "test.conf:2: the quoted string that starts here is not closed")
}

func TestNginxConfIntoDecoder(t *testing.T) {
	// --nginx-conf with a json format: the value of "ua" holds \" escapes.
	o := Options{NginxConf: filepath.Join("testdata", "nginx", "nginx.conf"), LogFormatName: "json", By: []string{"route"}}
	d, err := NewDecoder("nginx", strings.NewReader(
		`{"time":"2020-02-07T11:48:51+00:00","uri":"/x/123","status":200,"request_time":0.012,"ua":"a \"b\", c"}`+"\n"), "json.log", o)
	require.NoError(t, err)
	samples, errs := decodeAll(t, d)
	require.Empty(t, errs)
	require.Len(t, samples, 1)
	assert.Equal(t, millis(12), samples[0].Latency)
	assert.Equal(t, "/x/{id}", samples[0].Group)
	assert.Equal(t, 2020, samples[0].Time.Year())
}

// TestNginxConfCaps: the include follower reads regular files only, each up
// to 4 MiB and 64 MiB with all its includes; the error names the including
// line and the cap.
func TestNginxConfCaps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	// Comments: a file near the cap that the tokenizer reads fast.
	comment := strings.Repeat("# "+strings.Repeat("x", 1021)+"\n", 1024)
	require.Len(t, comment, 1<<20)
	big := write("big.conf", strings.Repeat(comment, 4)+"#\n") // 4 MiB + 2 bytes
	nearly := write("nearly.conf", strings.Repeat(comment, 4)) // 4 MiB exactly
	write("fmt.conf", "log_format main '$request_time';\n")
	write("words.conf", strings.Repeat("a b;\n", 100_000))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "conf.d"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.conf"), 0o644)) // opening it would wait for a writer

	tests := []struct {
		name, conf string
		want       string // "" = reads the format
	}{
		{"device", "http {\n  include /dev/zero;\n}\n",
			"nginx.conf:2: include /dev/zero: not a regular file (a device); an include is read only from a regular file"},
		{"named pipe", "include pipe.conf;\n",
			"nginx.conf:1: include " + filepath.Join(dir, "pipe.conf") + ": not a regular file (a named pipe); an include is read only from a regular file"},
		{"directory", "include conf.d;\n",
			"nginx.conf:1: include " + filepath.Join(dir, "conf.d") + ": is a directory, not a config file"},
		{"over the cap", "include fmt.conf;\n\ninclude big.conf;\n",
			"nginx.conf:3: include " + big + ": larger than 4 MiB, the cap of one config file"},
		{"at the cap", "include nearly.conf; include fmt.conf;\n", ""},
		{"over the total", "include fmt.conf;\n" + strings.Repeat("include nearly.conf;\n", 16),
			"nginx.conf:17: include " + nearly + ": the config and its includes: over the byte budget of one run, 64 MiB in all"},
		// One file of 200,000 words, included six times: each file is
		// small, their words are not (internal/budget). 14 words in
		// nginx.conf, 3 in fmt.conf and five files of words leave 48,559,
		// which end on line 24,280 of the sixth.
		{"over the words", "include fmt.conf;\n" + strings.Repeat("include words.conf;\n", 6),
			"words.conf:24280: nginx words (every file and include of the config): over the node budget of one run, 1,048,576 nodes in all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			main := write("nginx.conf", tt.conf)
			_, err := readNginxConf(main, "main")
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, filepath.Join(dir, tt.want), err.Error())
		})
	}
	t.Run("the main config may be a pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		go func() {
			_, _ = w.WriteString("log_format main '$request_time $status';\n")
			w.Close()
		}()
		defer r.Close()
		nf, err := readNginxConf(fmt.Sprintf("/dev/fd/%d", r.Fd()), "main")
		require.NoError(t, err)
		assert.Equal(t, "$request_time $status", nf.text)
	})
	t.Run("a main config over the cap", func(t *testing.T) {
		_, err := readNginxConf(big, "main")
		assert.EqualError(t, err, big+": larger than 4 MiB, the cap of one config file")
	})
}

// FuzzNginxConfIncludes reads a config that includes files of random
// content, itself among them: it ends (the depth cap), never panics, and an
// error is one line that names a file.
func FuzzNginxConfIncludes(f *testing.F) {
	f.Add([]byte("include a.conf;\nlog_format main '$request_time';"), []byte("include b/*.conf;"), []byte("log_format main x;"))
	f.Add([]byte("include nginx.conf;"), []byte(""), []byte(""))
	f.Add([]byte("include /dev/null; include b; include a.conf"), []byte("include a.conf;"), []byte("'"))
	f.Fuzz(func(t *testing.T, main, a, b []byte) {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, "b"), 0o755))
		for name, data := range map[string][]byte{"nginx.conf": main, "a.conf": a, "b/c.conf": b} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		}
		_, err := readNginxConf(filepath.Join(dir, "nginx.conf"), "main")
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of more than one line: %q", err)
		}
		if !strings.Contains(err.Error(), dir) && !strings.Contains(err.Error(), "/dev/") && !strings.Contains(err.Error(), "include") {
			t.Fatalf("error names no file: %v", err)
		}
	})
}
