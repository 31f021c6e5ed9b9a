package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// jsonlRefPathSets are the path sets the scanner is held to the reference
// with: none, the layouts' own, dotted ones, names of 8 bytes and more
// (the fast path compares them by words), of 64 and more (past sc.top),
// the empty name, a repeated path, and 16 paths.
var jsonlRefPathSets = [][]string{
	nil,
	{"a"},
	{"a.b"},
	{"a", "b", "c", "d", "e"},
	{"a", "b", "c", "s", "duration", "a.b", "request.uri", ""},
	{"duration_ms", "time", "status", "path", "method"},
	{"latency_ms", "time", "status", "path", "method"},
	{"duration", "ts", "status", "request.uri", "request.method", "request.host", "logger"},
	{"duration", "upstream_service_time", "start_time", "response_code", "path", "method", "authority", "upstream_host", "response_flags"},
	{"Duration", "StartUTC", "DownstreamStatus", "RequestPath", "RequestMethod", "RequestHost", "ServiceName", "OriginStatus"},
	{"request.headers.A", "request.nope", "request.method", "a.b.c", "a.b", "a"},
	{"abcdefgh", "abcdefghi", "abcdefg", "abcdefgh.i", "abcdefghijklmnop", "abcdefghijklmnop.q"},
	{strings.Repeat("k", 63), strings.Repeat("k", 64), strings.Repeat("k", 65), strings.Repeat("k", 64) + ".x", strings.Repeat("k", 63) + ".x"},
	{"a", "a", "a.b", "a.b"},
	{"", "x.", ".x"},
	{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13", "k14", "k15"},
	{"level", "msg", "user_agent", "request_id", "remote", "bytes"},
}

// jsonlRefLines are the inputs of the scanner's tests and fuzz targets, and
// of the benchmarks: the seeds of TestJSONLScannerRef's mutations.
func jsonlRefLines() []string {
	lines := []string{
		`{"a": 1, "b": "x", "c": true, "d": null}`,
		`{"request":{"method":"GET","uri":"/x","headers":{"A":["b"]}},"duration":0.5}`,
		`{"a": {"b": [1, {"c": 2}]} }`,
		`{"request.method": "GET"}`,
		`{"request": "GET"}`,
		`{"a": 1, "a": 2}`,
		`{"a": {"b": 1}, "a": {"c": 2}}`,
		`{"a": {"b": 1}, "a": 2}`,
		`{"s": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x"}`,
		`{"dur\u0061tion": 5}`,
		`{"a": -0.5e+10, "b": 0, "c": 1E3}`,
		" \t{ \"a\" :\n[ ] , \"b\" : { } }\r ",
		`{}`, `{ }`, `{"Duration": 1}`,
		`{"a": {"b": [1, {"c": 2}], "b": 3}, "a.b": 4}`,
		`{"a": -0.5e+10, "b": 0, "c": 1E3, "d": -0}`,
		`{"a": 01}`, `{"a": 1.}`, `{"a":"x`, `{"a": [}`, `[1]`, ``, `{"a":1}x`,
		"{\"a\": \"\xff\xfe\"}", "{\"\xff\": 1}",
		`{"level":"info","ts":1646861401.5241024,"logger":"http.log.access","request":{"method":"GET","uri":"/"},"duration":0.0009,"status":200}`,
		`{"level":"info","ts":1646861401.5241024,"logger":"http.log.access","request":{"method":"GET","host":"localhost","uri":"/x\u0031","headers":{"User-Agent":["curl/7.82.0"]}},"duration":0.000929675,"status":200}`,
		`{"start_time":"2020-11-25T21:26:18.409Z","method":"GET","path":"/status/418","response_code":"418","response_flags":"-","duration":"3","upstream_service_time":"1","authority":"a","upstream_host":"b"}`,
		`{"method":null,"path":null,"response_code":0,"response_flags":"UF,URX","duration":0,"upstream_service_time":null}`,
		`{"Duration":66095,"OriginDuration":60000,"RequestPath":"/favicon.ico","RequestMethod":"GET","DownstreamStatus":404,"StartUTC":"2024-10-26T08:48:42.285915864Z","ServiceName":"x@docker"}`,
		`{"d": 12.5, "t": "2024-01-02T03:04:05Z", "s": 200, "p": "/a/1", "m": "GET", "a": {"d": "1.5ms", "t": 1700000000123}}`,
		`{"time":"2026-11-02T10:00:00.005Z","level":"info","method":"GET","path":"/api/orders/0","status":200,"latency_ms":31.466}`,
		`{"abcdefgh": 1, "abcdefghi": 2, "abcdefg": 3, "abcdefgh": {"i": 4}, "abcdefghijklmnop": {"q": [5]}}`,
		`{"` + strings.Repeat("k", 64) + `": {"x": 1}, "` + strings.Repeat("k", 63) + `": {"x": 2}, "` + strings.Repeat("k", 65) + `": 3}`,
		`{"": 1, "x": {"": 2}, ".x": 3}`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15}`,
		`{"a":[[[[{"b":[{}]}]]]],"b":{"c":{"d":[true,false,null,-1.5e-3,"x\"y"]}}}`,
		`{"a" : { "b" : [ 1 , 2 ] , "c" : { } } , "d" : "e" }`,
		"{\"a\":\"x\ty\"}", `{"a": "x\q"}`, `{"a": "x\u12g4"}`, `{"a": tru}`, `{"a": nul`, `{"a": fals}`,
		`{"a": -}`, `{"a": 1e}`, `{"a": 1e+}`, `{"a": -01}`, `{"a": 'x'}`, `{"duration": NaN}`,
		`{"a": {"b": }}`, `{"a": {"b": 1}`, `{"a": [{"b": 1]}`, "\xef\xbb\xbf{}", `{"a":1,}`, `{,}`, `{"a"}`,
		`{"a":1 "b":2}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":{"b":1,}}`, `{"a":"\u00"}`, `{"a":"\`, `{"a":"\u`,
		`{"a":{"b":{"c":1}}}` + " \n", `{"a":{"b":{"c":1}}} }`,
	}
	nested := func(n int) string {
		return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
	}
	lines = append(lines, nested(63), nested(64), nested(65), nested(66), nested(jsonlMaxDepth), nested(jsonlMaxDepth+1))
	for _, n := range []int{63, 64, 65, 130, jsonlMaxDepth, jsonlMaxDepth + 1} {
		lines = append(lines, strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	}
	for _, in := range [][]byte{jsonlBenchInput(), caddyBenchInput()} {
		for _, l := range bytes.SplitN(in, []byte("\n"), 4)[:3] {
			lines = append(lines, string(l))
		}
	}
	return lines
}

// jsonlCheckRef scans data for paths with the scanner, with its slow path
// alone and with the reference (jsonl_ref_test.go) and fails unless all
// three agree: on accepting data, on the error's text, on every value (its
// kind, raw bytes, plainness and decoded text), and with json.Valid.
func jsonlCheckRef(t *testing.T, data []byte, paths []string) {
	t.Helper()
	sc := newJSONLScanner(paths...)
	ref := newJSONLRefScanner(paths...)
	for round := range 2 { // the second time with the buffers grown and vals set
		err := sc.scan(data)
		rerr := ref.scan(data)
		if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
			t.Fatalf("paths %q, %q: scan error %v, reference %v", paths, data, err, rerr)
		}
		if errors.Is(err, errNotJSONObject) != errors.Is(rerr, errRefNotJSONObject) {
			t.Fatalf("paths %q, %q: scan error %v, reference %v", paths, data, err, rerr)
		}
		i := jsonlSpace(data, 0)
		if valid := json.Valid(data) && i < len(data) && data[i] == '{'; valid != (err == nil) {
			t.Fatalf("paths %q, %q: scan error %v, json.Valid %v", paths, data, err, json.Valid(data))
		}
		jsonlSameValues(t, sc, ref, data, paths, "scan")
		if round == 0 {
			for _, mode := range []string{"fast", "slow"} {
				ok, merr := jsonlScanMode(sc, data, mode)
				if !ok {
					continue // gave up
				}
				if (merr == nil) != (rerr == nil) || merr != nil && merr.Error() != rerr.Error() {
					t.Fatalf("paths %q, %q: %s path: error %v, reference %v", paths, data, mode, merr, rerr)
				}
				jsonlSameValues(t, sc, ref, data, paths, mode)
			}
		}
	}
}

// jsonlScanMode scans data as scan does, but on one path alone: "fast"
// (jsonl_fast.go) or "slow";
// ok is false when that path gave up or does not apply.
func jsonlScanMode(sc *jsonlScanner, data []byte, mode string) (ok bool, err error) {
	i, err := sc.begin(data)
	if err != nil {
		return true, err
	}
	if mode == "fast" {
		return sc.fastScan(data, i), nil
	}
	return true, sc.slowScan(data)
}

func jsonlSameValues(t *testing.T, sc *jsonlScanner, ref *jsonlRefScanner, data []byte, paths []string, what string) {
	t.Helper()
	for p := range paths {
		v, r := sc.vals[p], ref.vals[p]
		if v.kind != r.kind || !bytes.Equal(v.raw, r.raw) || (v.raw == nil) != (r.raw == nil) || v.plain != r.plain ||
			!bytes.Equal(sc.str(&v), ref.str(r)) {
			t.Fatalf("paths %q, %q: %s: %s is %d %q (plain %v, %q), reference %d %q (plain %v, %q)", paths, data, what, paths[p],
				v.kind, v.raw, v.plain, sc.str(&v), r.kind, r.raw, r.plain, ref.str(r))
		}
		if len(v.raw) > 0 && &v.raw[0] != &r.raw[0] { // both in data, at the same place
			t.Fatalf("paths %q, %q: %s: %s is not where the reference has it", paths, data, what, paths[p])
		}
	}
}

// jsonlMutate returns a copy of b with a few random edits: bytes flipped,
// inserted (JSON's own bytes more often than not), deleted or cut.
func jsonlMutate(r *rand.Rand, b []byte) []byte {
	const special = "{}[]\",:\\ \t\n\r0123456789-+.eEtrufalsn\x00\x1f\x7f\xff/u"
	out := append([]byte(nil), b...)
	for n := 1 + r.IntN(3); n > 0; n-- {
		pos := 0
		if len(out) > 0 {
			pos = r.IntN(len(out) + 1)
		}
		c := special[r.IntN(len(special))]
		if r.IntN(4) == 0 {
			c = byte(r.IntN(256))
		}
		switch k := r.IntN(5); {
		case k == 0 && pos < len(out):
			out[pos] = c
		case k == 1 && pos < len(out):
			out = append(out[:pos], out[pos+1:]...)
		case k == 2:
			out = out[:pos]
		default:
			out = append(out[:pos], append([]byte{c}, out[pos:]...)...)
		}
	}
	return out
}

// TestJSONLScannerRef holds the scanner (fast and slow path) to the
// reference on the test inputs, and on mutations of them.
func TestJSONLScannerRef(t *testing.T) {
	lines := jsonlRefLines()
	for _, l := range lines {
		for _, paths := range jsonlRefPathSets {
			jsonlCheckRef(t, []byte(l), paths)
		}
	}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range n {
		l := []byte(lines[r.IntN(len(lines))])
		if len(l) > 4096 {
			continue
		}
		data := jsonlMutate(r, l)
		jsonlCheckRef(t, data, jsonlRefPathSets[r.IntN(len(jsonlRefPathSets))])
	}
}

// TestJSONLFastPath checks that the fast path reads the layouts' usual lines
// itself, without giving up.
func TestJSONLFastPath(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		line  string
	}{
		{jsonlRefPathSets[5], strings.SplitN(string(jsonlBenchInput()), "\n", 2)[0]},
		{jsonlRefPathSets[6], `{"time":"2026-11-02T10:00:00.005Z","level":"info","method":"GET","path":"/api/orders/0","status":200,"latency_ms":31.466}`},
		{jsonlRefPathSets[7], strings.SplitN(string(caddyBenchInput()), "\n", 2)[0]},
		{jsonlRefPathSets[4], `{"a" : { "b" : [ 1 , 2 ] , "c" : { } } , "d" : "e" , "s" : [ true , false , null , {"x": -1.5e+3} ] }`},
	} {
		sc := newJSONLScanner(tc.paths...)
		for _, mode := range []string{"fast"} {
			if ok, err := jsonlScanMode(sc, []byte(tc.line), mode); !ok || err != nil {
				t.Errorf("%s path gives up on %s (%v)", mode, tc.line, err)
			}
		}
	}
}

// jsonlFuzzPaths turns spec into up to jsonlMaxPaths paths: split at '|'.
func jsonlFuzzPaths(spec string) []string {
	paths := strings.Split(spec, "|")
	if len(paths) > jsonlMaxPaths {
		paths = paths[:jsonlMaxPaths]
	}
	for i, p := range paths {
		if len(p) > jsonlMaxPathLen {
			paths[i] = p[:jsonlMaxPathLen]
		}
	}
	return paths
}

// FuzzJSONLScannerRef holds the scanner to the reference (and json.Valid)
// on arbitrary lines, with the fixed path sets and with paths the fuzzer
// picks (split at '|').
func FuzzJSONLScannerRef(f *testing.F) {
	for _, l := range jsonlRefLines() {
		if len(l) > 2000 {
			continue
		}
		f.Add([]byte(l), "a|a.b|request.uri|duration_ms")
	}
	f.Add([]byte(`{"x":{"y":{"z":1}},"x.y":2}`), "x.y.z|x.y|x")
	f.Add([]byte(`{"abcdefghij":{"k":1}}`), "abcdefghij.k|abcdefghij|abcdefgh")
	f.Fuzz(func(t *testing.T, data []byte, spec string) {
		for _, paths := range jsonlRefPathSets {
			jsonlCheckRef(t, data, paths)
		}
		jsonlCheckRef(t, data, jsonlFuzzPaths(spec))
	})
}

// BenchmarkJSONLScan compares the scanner with the reference, line by
// line, on the layouts' lines: sub-benchmarks new and ref.
func BenchmarkJSONLScan(b *testing.B) {
	for _, in := range []struct {
		name  string
		data  []byte
		paths []string
	}{
		{"generic", jsonlBenchInput(), []string{"duration_ms", "time", "status", "path", "method"}},
		{"gen", jsonlGenInput(), []string{"latency_ms", "time", "status", "path", "method"}},
		{"caddy", caddyBenchInput(), []string{"duration", "ts", "status", "request.uri", "request.method", "request.host", "logger"}},
	} {
		lines := bytes.Split(bytes.TrimSuffix(in.data, []byte("\n")), []byte("\n"))
		size := int64(len(in.data)) / int64(len(lines))
		b.Run(in.name+"/new", func(b *testing.B) {
			sc := newJSONLScanner(in.paths...)
			b.SetBytes(size)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := sc.scan(lines[i]); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(lines) {
					i = 0
				}
			}
		})
		b.Run(in.name+"/ref", func(b *testing.B) {
			sc := newJSONLRefScanner(in.paths...)
			b.SetBytes(size)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := sc.scan(lines[i]); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(lines) {
					i = 0
				}
			}
		})
	}
}

// jsonlGenInput is 10,000 lines shaped as testdata/gen -format json writes
// them (bench/compare.sh's JSON lines).
func jsonlGenInput() []byte {
	r := rand.New(rand.NewPCG(7, 8))
	var b bytes.Buffer
	routes := []string{"/api/orders/", "/api/users/", "/api/search/", "/api/items/", "/healthz"}
	ms := 0
	for i := range envoyBenchLines {
		ms += r.IntN(8)
		status := 200
		if r.IntN(50) == 0 {
			status = 500
		}
		fmt.Fprintf(&b, `{"time":"2026-11-02T10:%02d:%02d.%03dZ","level":"info","method":"%s","path":"%s%d","status":%d,"latency_ms":%.3f}`+"\n",
			ms/60000%60, ms/1000%60, ms%1000, []string{"GET", "POST"}[r.IntN(2)], routes[r.IntN(len(routes))], i*7919%40000,
			status, r.Float64()*100)
	}
	return b.Bytes()
}

// TestJSONLNonDigit8 checks jsonlNonDigit8 for bytes of every value in
// every position, and on random words.
func TestJSONLNonDigit8(t *testing.T) {
	check := func(b []byte) {
		m := jsonlNonDigit8(binary.LittleEndian.Uint64(b))
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		want := 8
		for i, c := range b {
			if c < '0' || c > '9' {
				want = i
				break
			}
		}
		if got != want {
			t.Fatalf("% x: first non-digit %d, want %d", b, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			for _, fill := range []byte{'0', '9', '5'} {
				b := bytes.Repeat([]byte{fill}, 8)
				b[pos] = byte(c)
				check(b)
				for k := pos + 1; k < 8; k++ {
					b[k] = byte(k * 37)
				}
				check(b)
			}
		}
	}
	r := rand.New(rand.NewPCG(13, 14))
	for range 200000 {
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(2) == 0 {
				b[i] = '0' + byte(r.IntN(10))
			}
		}
		check(b)
	}
}
