package ingest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// fuzzNginxFormat is the fixed format FuzzNginx reads lines with: every kind
// of value the decoder uses, quoted, bracketed and listed.
const fuzzNginxFormat = nginxCombined + ` $request_time $upstream_connect_time $upstream_header_time $upstream_response_time $host $upstream_addr $msec`

// checkAccessLogDecoder reads d to the end and checks what every access-log decoder
// promises: errors are *ParseError with increasing lines, or io.EOF; no
// sample has a negative latency or connect time or a status beyond 999.
func checkAccessLogDecoder(t *testing.T, d Decoder, data []byte) []Sample {
	var samples []Sample
	last := 0
	for n := 0; ; n++ {
		if n > len(data)+2 {
			t.Fatalf("Next called %d times on %d bytes without io.EOF", n, len(data))
		}
		s, err := d.Next()
		if err == io.EOF {
			return samples
		}
		var pe *ParseError
		if errors.As(err, &pe) {
			if pe.Line < 1 || pe.Line < last {
				t.Fatalf("error at line %d after line %d: %v", pe.Line, last, pe)
			}
			last = pe.Line
			if len(pe.Value) > maxValueLen+len("...") {
				t.Fatalf("value of %d bytes not cut: %v", len(pe.Value), pe)
			}
			continue
		}
		if err != nil {
			t.Fatalf("fatal error from Next on an in-memory input: %v", err)
		}
		if s.Latency < 0 || s.Connect < 0 || s.Status < 0 || s.Status > 999 {
			t.Fatalf("bad sample %+v", s)
		}
		if s.Excluded != "" && s.Excluded != ExcludedNoUpstream {
			t.Fatalf("excluded for %q", s.Excluded)
		}
		samples = append(samples, s)
	}
}

// addSeedLines adds each line of a file to the corpus.
func addSeedLines(f *testing.F, path string, add func(line string)) {
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		add(l)
	}
}

// FuzzNginx decodes random lines with a fixed format: the decoder never
// panics, its errors are *ParseError, and a line parses the same with the
// time caches warm (after the previous line) as with them cold.
func FuzzNginx(f *testing.F) {
	const c = `10.0.0.1 - - [07/Feb/2020:11:48:51 +0000] "GET /a/1?x HTTP/1.1" 200 5 "-" "curl \x22x\x22 (y)"`
	for _, s := range []string{
		c + ` 0.120 0.001 0.050 0.100 a.example 10.0.0.1:80 1580000000.123`,
		c + ` 0.120 0.001, 0.002 : 0.003 0.010, - : 0.005 0.100, - : 0.050 - [::1]:80, unix:/x 1580000000.123`,
		c + ` 0.120 - - - - - 1580000000`,
		c + ` abc 0.001 0.001 0.100 a 10.0.0.1:80 1.5`,
		c + ` 0.120`,
		`[07/Feb/2020:11:48:51 +0000]`,
		"",
	} {
		f.Add([]byte(s+"\n"+s+"\r\n"), uint8(0))
	}
	addSeedLines(f, ingressConformance, func(l string) { f.Add([]byte(l), uint8(1)) })
	f.Fuzz(func(t *testing.T, data []byte, opt uint8) {
		measure := nginxMeasures[int(opt)%len(nginxMeasures)].name
		o := Options{LogFormat: fuzzNginxFormat, Latency: measure, By: []string{"route", "method", "status_class", "host", "upstream"}}
		d, err := NewNginx(bytes.NewReader(data), "fuzz.log", o)
		if err != nil {
			t.Fatalf("NewNginx: %v", err)
		}
		checkAccessLogDecoder(t, d, data)

		// warm and cold caches agree
		warm, err := compileNginx(nginxFormat{text: fuzzNginxFormat, origin: "fuzz"}, measure)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			cold, _ := compileNginx(nginxFormat{text: fuzzNginxFormat, origin: "fuzz"}, measure)
			var s1, s2 Sample
			var f1, f2 Fields
			e1 := warm.Parse(line, &s1, &f1)
			e2 := cold.Parse(line, &s2, &f2)
			if (e1 == nil) != (e2 == nil) || s1 != s2 {
				t.Fatalf("%q: warm %+v %v, cold %+v %v", line, s1, e1, s2, e2)
			}
			var fe *FieldError
			if e1 != nil && !errors.As(e1, &fe) {
				t.Fatalf("%q: error %v is not a *FieldError", line, e1)
			}
		}
	})
}

// FuzzNginxFormat compiles random format strings (as --log-format values,
// directives included) and parses a random line with each one that
// compiles: nothing panics, and line errors are *FieldError.
func FuzzNginxFormat(f *testing.F) {
	for _, s := range []string{
		nginxCombinedTimedUpstream, ingressUpstreamInfo, `$request_time`, `${request_time}ms $status`,
		`log_format main escape=json '{"t":$request_time,' '"s":"$status"}';`, `'$request_time' "$status"`,
		`$request_time$status`, `$`, `${x`, `$request_time $upstream_response_time`, `[$time_local] $request_time`,
		`$time_iso8601 $msec $request_time $uri $request_uri $request_method $host $http_host $server_name`,
	} {
		f.Add(s, `0.1 200`, uint8(0))
	}
	f.Fuzz(func(t *testing.T, format, line string, opt uint8) {
		nf, err := nginxFormatFlag(format)
		if err != nil {
			return
		}
		p, err := compileNginx(nf, nginxMeasures[int(opt)%len(nginxMeasures)].name)
		if err != nil {
			return
		}
		var s Sample
		var fs Fields
		if err := p.Parse([]byte(line), &s, &fs); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			return
		}
		if s.Latency < 0 || s.Connect < 0 {
			t.Fatalf("negative duration %+v", s)
		}
	})
}

// FuzzNginxConf reads random --log-format directives: no panic, and an
// error names --log-format (internal/nginxconf fuzzes the grammar itself).
func FuzzNginxConf(f *testing.F) {
	for _, path := range []string{"testdata/nginx/nginx.conf", "testdata/nginx/conf.d/10-upstream.conf", "testdata/nginx/broken.conf"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("x '$request_time' \"$status\""))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := nginxFormatFlag("log_format " + string(data))
		if err != nil && !strings.HasPrefix(err.Error(), "--log-format") {
			t.Fatalf("error that does not name --log-format: %v", err)
		}
	})
}

// FuzzApache decodes random lines with Apache's combined + %D, and compiles
// random LogFormat strings and parses the line with them: nothing panics,
// errors are *ParseError or *FieldError.
func FuzzApache(f *testing.F) {
	const c = `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a\"b HTTP/1.0" 200 2326 "-" "Mozilla \\"`
	for _, s := range []string{c + " 1234", c + " -", c + " 1.5", c, `%h`, ""} {
		f.Add(s, apacheCombinedD)
		f.Add(s, `%h %{ms}T %{sec}t %>s %400,501{User-agent}i %{%d/%b/%Y:%H:%M:%S %z}t %%`)
	}
	f.Add(`a 1`, `%{X}^ti %D`)
	f.Fuzz(func(t *testing.T, line, format string) {
		d, err := NewApache(strings.NewReader(line), "fuzz.log", Options{LogFormat: apacheCombinedD, By: []string{"route", "host"}})
		if err != nil {
			t.Fatalf("NewApache: %v", err)
		}
		checkAccessLogDecoder(t, d, []byte(line))

		p, err := compileApache(apacheFormatFlag(format), "fuzz", "")
		if err != nil {
			return
		}
		var s Sample
		var fs Fields
		if err := p.Parse([]byte(line), &s, &fs); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			return
		}
		if s.Latency < 0 {
			t.Fatalf("negative latency %+v", s)
		}
	})
}
