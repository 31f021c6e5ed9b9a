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

// TestNginxConfReadAsNginx: --nginx-conf reads a config with nginx's
// grammar (internal/nginxconf), where its own tokenizer let through what
// nginx refuses and read some of what nginx accepts otherwise. Each case
// is what `nginx -t` (1.22) says of the config.
func TestNginxConfReadAsNginx(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	refused := []struct {
		name, conf, want string
	}{
		// Read as the format "$request_timex" before.
		{"a word right after a quoted one", "http { log_format a '$request_time'x; }\n", `nginx.conf:1: unexpected "x"`},
		// Read as if the brace were not there.
		{"a brace that closes nothing", "http { log_format a '$request_time'; }\n}\n", `nginx.conf:2: unexpected "}"`},
		{"an unclosed block", "http {\n log_format a '$request_time';\n", `nginx.conf:3: unexpected end of file, expecting "}"`},
		// Read as if it ended with ";" before.
		{"a directive without its ;", "log_format a '$request_time'", `nginx.conf:1: unexpected end of file, expecting ";" or "}"`},
		{"a ; alone", "log_format a $status;;", `nginx.conf:1: unexpected ";"`},
		// Unchanged: where the quote starts.
		{"an unclosed quote", "log_format a '$status;\n\n", `nginx.conf:1: the quoted string that starts here is not closed`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readNginxConf(write("nginx.conf", tt.conf), "a")
			assert.EqualError(t, err, filepath.Join(dir, tt.want))
		})
	}

	t.Run("a backslash before a newline: the line is counted", func(t *testing.T) {
		// The origin said line 2 before.
		nf, err := readNginxConf(write("nginx.conf", "log_format a $request_time\\\n$status;\nlog_format b '$status';\n"), "b")
		require.NoError(t, err)
		assert.Equal(t, `log_format "b" at `+filepath.Join(dir, "nginx.conf")+`:3`, nf.origin)
	})
	t.Run("${ keeps every brace that follows", func(t *testing.T) {
		// Before, the second brace opened a block: no log_format a.
		nf, err := readNginxConf(write("nginx.conf", "log_format a ${{x; log_format b x;"), "a")
		require.NoError(t, err)
		assert.Equal(t, "${{x", nf.text)
	})
	t.Run("a glob does not match hidden files", func(t *testing.T) {
		// Found before: Go's filepath.Glob matches a leading dot, glob(3) does not.
		write("conf.d/.old.conf", "log_format hidden $status;\n")
		write("conf.d/v.conf", "log_format visible $status;\n")
		_, err := readNginxConf(write("nginx.conf", "include conf.d/*.conf;\n"), "hidden")
		assert.EqualError(t, err, filepath.Join(dir, "nginx.conf")+` has no log_format "hidden": it defines "visible"`)
	})
	t.Run("globs sort by the whole path", func(t *testing.T) {
		// a-b/ before a/, as glob(3) sorts ('-' < '/'); by directory before.
		write("s/a/f.conf", "log_format first $status;\n")
		write("s/a-b/f.conf", "log_format first $request_time;\n")
		nf, err := readNginxConf(write("nginx.conf", "include s/*/f.conf;\n"), "first")
		require.NoError(t, err)
		assert.Equal(t, "$request_time", nf.text)
	})
	t.Run("at most 512 files", func(t *testing.T) {
		write("one.conf", "\n")
		_, err := readNginxConf(write("nginx.conf", strings.Repeat("include one.conf;\n", 600)), "a")
		assert.EqualError(t, err, filepath.Join(dir, "nginx.conf")+`:512: include "one.conf": more than 512 files in all`)
	})
	t.Run("--log-format may end without ;", func(t *testing.T) {
		nf, err := nginxFormatFlag("log_format x '$a' \"$b\"")
		require.NoError(t, err)
		assert.Equal(t, "$a$b", nf.text)
		_, err = nginxFormatFlag("log_format x '$a'b")
		assert.EqualError(t, err, `--log-format:1: unexpected "b"`)
		_, err = nginxFormatFlag("log_format x '$a")
		assert.EqualError(t, err, `--log-format:1: the quoted string that starts here is not closed`)
	})
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
	big := write("big.conf", strings.Repeat(comment, 16)+"#\n") // 16 MiB + 2 bytes
	nearly := write("nearly.conf", strings.Repeat(comment, 16)) // 16 MiB exactly
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
			"nginx.conf:3: include " + big + ": larger than 16 MiB, the cap of one config file"},
		{"at the cap", "include nearly.conf; include fmt.conf;\n", ""},
		{"over the total", "include fmt.conf;\n" + strings.Repeat("include nearly.conf;\n", 4),
			"nginx.conf:5: include " + nearly + ": the config and its includes: over the byte budget of one run, 64 MiB in all"},
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
		assert.EqualError(t, err, big+": larger than 16 MiB, the cap of one config file")
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
