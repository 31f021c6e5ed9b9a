package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzEnvoy runs the Envoy text decoder over arbitrary input in both
// latency modes: no panic, no loop, only *ParseError per line, samples
// within bounds (see jsonlCheckDecoder).
func FuzzEnvoy(f *testing.F) {
	seeds := []string{
		`[2019-04-06T06:20:05.972Z] "- - -" 0 UF,URX 0 0 0 - "-" "-" "-" "-" "127.0.0.1:9200"`,
		`[2019-02-12T18:37:42.921Z] "GET /httpbin/ip HTTP/1.1" 200 - 0 43 217 216 "172.17.0.5" "curl/7.59.0" "c62ec130-6dee-4f3b-a52b-4f0d1312d89d" "httpbin.org" "52.87.35.92:80"`,
		`[2020-11-25T21:26:18.409Z] "GET /status/418 HTTP/1.1" 418 - via_upstream - "-" 0 135 3 1 "-" "curl/7.73.0-DEV" "84961386-6d84-929d-98bd-c5aee93b5c88" "httpbin:8000" "127.0.0.1:80" inbound|8000|| 127.0.0.1:41854 10.44.1.27:80 10.44.1.23:37652 outbound_.8000_._.httpbin.foo.svc.cluster.local default`,
		`[2024-06-26T05:38:33.776Z] "GET /delay/5 HTTP/1.1" 504 UT response_timeout - "-" 0 24 3001 - "-" "curl/8.8.0" "6b6e7a5e" "httpbin.org" "44.195.190.188:80"`,
		`[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 - 0 0 12 11 "-" "a "quoted" agent" "id" "host" "1.2.3.4:80"`,
		`[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200 DC,UpstreamRequestTimeout 0 0 99999999999999999999 - "`,
		`[2016-04-15T20:17:00+01:00] "GET / HTTP/1.1" - - 0 0 - -` + "\r\n[1550000000] \"a b c\" 0 - 0 0 1 1",
		`[x`, `[]`, `[2016-04-15T20:17:00.310Z]`, `[2016-04-15T20:17:00.310Z] "`, "\n\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, upstream bool) {
		o := Options{By: []string{"route", "method", "status", "host", "upstream"}}
		if upstream {
			o.Latency = "upstream"
		}
		d, err := NewDecoder("envoy", bytes.NewReader(data), "fuzz.log", o)
		if err != nil {
			t.Fatalf("NewDecoder: %v", err)
		}
		jsonlCheckDecoder(t, d, data)
		_ = sniffEnvoy(data)
	})
}

// envoyFuzzFlags are the flag lists FuzzEnvoyLine writes.
var envoyFuzzFlags = []string{"-", "UT", "SI", "DT", "UMSDR", "DC", "DR", "UF", "UF,URX", "UO", "NR", "UH", "UC", "DI", "RFCF", "UT,URX", "UC,DC", "ZZ", "StreamIdleTimeout"}

// FuzzEnvoyLine writes a line of Envoy's default format from its parts and
// checks that the decoder reads the same parts back, and the flag rules.
func FuzzEnvoyLine(f *testing.F) {
	f.Add(int64(1550000000921), "GET", "/httpbin/ip", uint16(200), uint8(0), uint32(217), int32(216), "curl/7.59.0", "httpbin.org", "52.87.35.92:80", false)
	f.Add(int64(0), "-", "-", uint16(0), uint8(8), uint32(0), int32(-1), "-", "-", "127.0.0.1:9200", true)
	f.Add(int64(253402300799999), "POST", "/a?b=\"c\"", uint16(504), uint8(1), uint32(15000), int32(-1), `x "y" z`, "h", "-", false)
	f.Fuzz(func(t *testing.T, ms int64, method, path string, code uint16, flagIdx uint8, dur uint32, ust int32, ua, host, upstream string, istio bool) {
		if ms < 0 || ms > 253402300799999 { // years 1970-9999
			return
		}
		clean := func(s string, quoted bool) string {
			s = strings.Map(func(r rune) rune {
				if r == ' ' || r == '\n' || r == '\r' || r == '"' && quoted {
					return '_'
				}
				return r
			}, s)
			if s == "" {
				return "-"
			}
			return s
		}
		method, path, host, upstream = clean(method, false), clean(path, false), clean(host, true), clean(upstream, true)
		ua = strings.NewReplacer("\n", "_", "\r", "_", `" `, "_ ").Replace(ua)
		code %= 1000
		flags := envoyFuzzFlags[int(flagIdx)%len(envoyFuzzFlags)]
		start := time.UnixMilli(ms).UTC()
		ustText := "-"
		if ust >= 0 {
			ustText = fmt.Sprint(ust)
		}
		proto := "HTTP/1.1"
		tcp := method == "-" && path == "-"
		if tcp {
			proto = "-" // a TCP proxy entry, "- - -"
		}
		details := ""
		if istio {
			details = ` via_upstream - "-"`
		}
		line := fmt.Sprintf(`[%s] "%s %s %s" %d %s%s 0 43 %d %s "-" "%s" "id" "%s" "%s"`,
			start.Format("2006-01-02T15:04:05.000Z"), method, path, proto, code, flags, details, dur, ustText, ua, host, upstream)
		if istio {
			line += " outbound|80||x - - - default"
		}

		for _, latency := range []string{"request", "upstream"} {
			r := parseEnvoy(t, latency, line)
			if r.err != nil {
				t.Fatalf("%s: %v", line, r.err)
			}
			dash := func(s string) string {
				if s == "-" {
					return ""
				}
				return s
			}
			got := [4]string{string(r.f.Method), string(r.f.Path), string(r.f.Host), string(r.f.Upstream)}
			if want := [4]string{dash(method), dash(path), dash(host), dash(upstream)}; got != want {
				t.Fatalf("%s: fields %q, want %q", line, got, want)
			}
			if !r.s.Time.Equal(start) || r.s.Status != int(code) {
				t.Fatalf("%s: time %v status %d", line, r.s.Time, r.s.Status)
			}
			class, _ := classifyEnvoyFlags([]byte(flags))
			timeout, gone, failure := class&envoyClassTimeout != 0, class&envoyClassGone != 0, class&envoyClassFailure != 0
			switch {
			case failure && !timeout:
				if r.s.Excluded != "envoy "+flags {
					t.Fatalf("%s: excluded %q", line, r.s.Excluded)
				}
			case tcp:
				if r.s.Excluded != ExcludedEnvoyTCP {
					t.Fatalf("%s: excluded %q", line, r.s.Excluded)
				}
			}
			want, censored := time.Duration(dur)*time.Millisecond, timeout || gone
			if latency == "upstream" {
				switch {
				case ust >= 0:
					want, censored = time.Duration(ust)*time.Millisecond, false
				case !censored && r.s.Excluded == "":
					t.Fatalf("%s: no upstream time, not excluded", line)
				}
			}
			if r.s.Latency != want || r.s.Excluded == "" && r.s.Censored != censored {
				t.Fatalf("%s (%s): latency %v censored %v, want %v %v", line, latency, r.s.Latency, r.s.Censored, want, censored)
			}
		}
	})
}
