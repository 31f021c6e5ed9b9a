package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonlRef decodes data as encoding/json does, numbers kept as json.Number.
func jsonlRef(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonlCheckScanned compares what the scanner extracted for one path with
// encoding/json's value ref (present: whether the path exists there).
func jsonlCheckScanned(t *testing.T, sc *jsonlScanner, v jsonlValue, path string, ref any, present bool) {
	t.Helper()
	if !present {
		if v.kind != jsonlAbsent {
			t.Fatalf("%s: scanner found %q, encoding/json nothing", path, v.raw)
		}
		return
	}
	switch r := ref.(type) {
	case nil:
		if v.kind != jsonlNull {
			t.Fatalf("%s: kind %d, want null", path, v.kind)
		}
	case bool:
		if v.kind != jsonlBool || string(v.raw) != fmt.Sprint(r) {
			t.Fatalf("%s: %q, want %v", path, v.raw, r)
		}
	case json.Number:
		if v.kind != jsonlNumber || string(v.raw) != string(r) {
			t.Fatalf("%s: %q, want number %s", path, v.raw, r)
		}
	case string:
		// encoding/json turns each invalid UTF-8 byte into U+FFFD, as a
		// conversion to []rune does; the scanner keeps the bytes.
		if got := string([]rune(string(sc.str(&v)))); v.kind != jsonlString || got != r {
			t.Fatalf("%s: %q (kind %d), want string %q", path, got, v.kind, r)
		}
	case map[string]any, []any:
		want := jsonlObject
		if _, ok := r.([]any); ok {
			want = jsonlArray
		}
		got, err := jsonlRef(v.raw)
		if v.kind != want || err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("%s: %q (kind %d, %v), want %v", path, v.raw, v.kind, err, r)
		}
	default:
		t.Fatalf("%s: unexpected %T", path, ref)
	}
}

// jsonlScanPaths scans data for paths, jsonlMaxPaths at a time, and calls check
// with the index of each path and its value.
func jsonlScanPaths(t *testing.T, data []byte, paths []string, check func(sc *jsonlScanner, i int, v jsonlValue)) {
	t.Helper()
	for base := 0; base < len(paths); base += jsonlMaxPaths {
		sc := newJSONLScanner(paths[base:min(base+jsonlMaxPaths, len(paths))]...)
		if err := sc.scan(data); err != nil {
			t.Fatalf("scanner rejects %q: %v", data, err)
		}
		for i, v := range sc.vals {
			check(sc, base+i, v)
		}
	}
}

// jsonlFuzzValue builds a value for encoding/json.Marshal from the bytes of
// b, consuming them.
func jsonlFuzzValue(b *[]byte, depth int) any {
	next := func() byte {
		if len(*b) == 0 {
			return 0
		}
		c := (*b)[0]
		*b = (*b)[1:]
		return c
	}
	str := func() string {
		n := min(int(next()%24), len(*b))
		s := string((*b)[:n])
		*b = (*b)[n:]
		return s
	}
	switch k := next() % 8; {
	case k == 0:
		return str()
	case k == 1:
		var u [8]byte
		for i := range u {
			u[i] = next()
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(u[:]))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0.0
		}
		return f
	case k == 2:
		return int64(binary.LittleEndian.Uint32([]byte{next(), next(), next(), next()})) - 1<<31
	case k == 3:
		return next()%2 == 0
	case k == 4:
		return nil
	case k == 5 && depth < 4:
		a := []any{}
		for n := next() % 4; n > 0; n-- {
			a = append(a, jsonlFuzzValue(b, depth+1))
		}
		return a
	case depth < 4:
		m := map[string]any{}
		for n := next() % 6; n > 0; n-- {
			m[strings.ReplaceAll(str(), ".", "_")] = jsonlFuzzValue(b, depth+1)
		}
		return m
	}
	return str()
}

// FuzzJSONScanner checks the scanner against encoding/json: it never
// panics; it accepts exactly the inputs json.Valid accepts that are objects;
// what it extracts equals what encoding/json decodes, both for arbitrary
// input and for objects written by json.Marshal from random maps.
func FuzzJSONScanner(f *testing.F) {
	for _, s := range []string{
		`{"a": 1, "b": "x", "c": true, "d": null}`,
		`{"a": {"b": [1, {"c": 2}], "b": 3}, "a.b": 4}`,
		`{"s": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00"}`,
		`{"a": -0.5e+10, "b": 0, "c": 1E3, "d": -0}`,
		" \t{ \"a\" :\n[ ] , \"b\" : { } }\r ",
		`{"a": 01}`, `{"a": 1.}`, `{"a":"x`, `{"a": [}`, `[1]`, `{}`, ``, `{"a":1}x`,
		"{\"a\": \"\xff\xfe\"}", "{\"\xff\": 1}",
		`{"level":"info","ts":1646861401.5241024,"logger":"http.log.access","request":{"method":"GET","uri":"/"},"duration":0.0009,"status":200}`,
	} {
		f.Add([]byte(s), []byte(nil))
	}
	f.Add([]byte(nil), []byte("\x06\x03\x01a\x00\x01b\x02\x01c\x03\x01d\x05\x02\x00\x02hi\x03"))
	f.Fuzz(func(t *testing.T, data, gen []byte) {
		// Arbitrary input.
		paths := []string{"a", "b", "c", "s", "duration", "a.b", "request.uri", ""}
		sc := newJSONLScanner(paths...)
		err := sc.scan(data)
		i := jsonlSpace(data, 0)
		wantOK := json.Valid(data) && i < len(data) && data[i] == '{'
		if (err == nil) != wantOK {
			t.Fatalf("scanner error %v, json.Valid %v, for %q", err, json.Valid(data), data)
		}
		if err != nil {
			var se *jsonlSyntaxError
			if !errors.Is(err, errNotJSONObject) && (!errors.As(err, &se) || se.off < 0 || se.off > len(data)) {
				t.Fatalf("bad error %v for %q", err, data)
			}
		} else {
			ref, rerr := jsonlRef(data)
			if rerr != nil {
				t.Fatalf("encoding/json rejects what json.Valid accepts: %v", rerr)
			}
			m := ref.(map[string]any)
			dotted := false
			for k := range m {
				dotted = dotted || strings.Contains(k, ".")
			}
			for i, p := range paths {
				if strings.Contains(p, ".") {
					if dotted {
						continue // a member "a.b" and a path a.b into "a" are both right
					}
					top, rest, _ := strings.Cut(p, ".")
					sub, ok := m[top].(map[string]any)
					v, present := sub[rest]
					jsonlCheckScanned(t, sc, sc.vals[i], p, v, ok && present)
					continue
				}
				v, present := m[p]
				jsonlCheckScanned(t, sc, sc.vals[i], p, v, present)
			}
		}

		// An object written by encoding/json from a random map.
		m, ok := jsonlFuzzValue(&gen, 1).(map[string]any)
		if !ok {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		ref, err := jsonlRef(out)
		if err != nil {
			t.Fatalf("encoding/json rejects its own output %q: %v", out, err)
		}
		rm := ref.(map[string]any)
		type want struct {
			v       any
			present bool
		}
		var ps []string
		var wants []want
		for k, v := range rm {
			if strings.Contains(k, ".") {
				continue
			}
			ps, wants = append(ps, k), append(wants, want{v, true})
			if sub, ok := v.(map[string]any); ok {
				for k2, v2 := range sub {
					if !strings.Contains(k2, ".") {
						ps, wants = append(ps, k+"."+k2), append(wants, want{v2, true})
					}
				}
				ps, wants = append(ps, k+".missing\x00"), append(wants, want{nil, false})
			}
		}
		ps, wants = append(ps, "missing\x00"), append(wants, want{nil, false})
		jsonlScanPaths(t, out, ps, func(sc *jsonlScanner, i int, v jsonlValue) {
			jsonlCheckScanned(t, sc, v, ps[i], wants[i].v, wants[i].present)
		})
	})
}

// jsonlFuzzOptions picks a format and options for FuzzJSONL.
func jsonlFuzzOptions(opt uint8) (string, Options) {
	by := []string{"route", "method", "status", "host", "upstream"}
	switch opt % 8 {
	case 0:
		return "envoy-json", Options{By: by}
	case 1:
		return "envoy-json", Options{Latency: "upstream", By: by}
	case 2:
		return "traefik", Options{By: by}
	case 3:
		return "traefik", Options{Latency: "upstream"}
	case 4:
		return "caddy", Options{By: by}
	case 5:
		return "jsonl", Options{Field: "d", Unit: time.Millisecond, TimeField: "t", StatusField: "s", PathField: "p", MethodField: "m", By: by}
	case 6:
		return "jsonl", Options{Field: "a.d", TimeField: "a.t"}
	}
	return "jsonl", Options{Field: "d", Unit: 100 * time.Microsecond, StatusField: "d"}
}

// FuzzJSONL runs the JSON formats over arbitrary input: no panic, no loop,
// only *ParseError per line (fatal errors only from NewDecoder), and
// samples within bounds: latency not negative, status 0-999, an excluded
// sample never censored.
func FuzzJSONL(f *testing.F) {
	seeds := []string{
		`{"start_time":"2020-11-25T21:26:18.409Z","method":"GET","path":"/status/418","response_code":"418","response_flags":"-","duration":"3","upstream_service_time":"1","authority":"a","upstream_host":"b"}`,
		`{"method":null,"path":null,"response_code":0,"response_flags":"UF,URX","duration":0,"upstream_service_time":null}`,
		`{"response_flags":"UT","response_code":504,"duration":15000}` + "\n" + `{"response_flags":"U T","duration":1}`,
		`{"Duration":66095,"OriginDuration":60000,"RequestPath":"/favicon.ico","RequestMethod":"GET","DownstreamStatus":404,"StartUTC":"2024-10-26T08:48:42.285915864Z","ServiceName":"x@docker"}`,
		`{"ts":1646861401.5241024,"logger":"http.log.access","request":{"method":"GET","host":"h","uri":"/"},"duration":0.0009,"status":200}`,
		`{"d": 12.5, "t": "2024-01-02T03:04:05Z", "s": 200, "p": "/a/1", "m": "GET", "a": {"d": "1.5ms", "t": 1700000000123}}`,
		`{"d": "abc"}` + "\n" + `{"d": -1}` + "\n" + `{"d": 1e400}` + "\n" + `not json` + "\n\n" + `{"d": null}`,
		"\xef\xbb\xbf{\"d\": \"9223372036854775807ns\"}\r\n{\"d\": \"2562047h48m\"}",
	}
	for _, s := range seeds {
		for opt := range uint8(8) {
			f.Add([]byte(s), opt)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, opt uint8) {
		format, o := jsonlFuzzOptions(opt)
		d, err := NewDecoder(format, bytes.NewReader(data), "fuzz.log", o)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz.log: ") {
				t.Fatalf("NewDecoder: %v", err)
			}
			return
		}
		jsonlCheckDecoder(t, d, data)
	})
}

// jsonlCheckDecoder reads d to the end and checks what every decoder promises.
func jsonlCheckDecoder(t *testing.T, d Decoder, data []byte) {
	t.Helper()
	lastLine := 0
	for n := 0; ; n++ {
		if n > len(data)+2 {
			t.Fatalf("Next called %d times on %d bytes without io.EOF", n, len(data))
		}
		s, err := d.Next()
		if err == io.EOF {
			return
		}
		var pe *ParseError
		if errors.As(err, &pe) {
			if pe.Line < 1 || pe.Line <= lastLine {
				t.Fatalf("error at line %d after line %d: %v", pe.Line, lastLine, pe)
			}
			lastLine = pe.Line
			if len(pe.Value) > maxValueLen+len("...") {
				t.Fatalf("value of %d bytes not cut: %v", len(pe.Value), pe)
			}
			if !strings.HasPrefix(pe.Error(), fmt.Sprintf("fuzz.log:%d: ", pe.Line)) {
				t.Fatalf("bad error text: %v", pe)
			}
			continue
		}
		if err != nil {
			t.Fatalf("fatal error from Next on an in-memory input: %v", err)
		}
		if s.Latency < 0 {
			t.Fatalf("negative latency %v", s.Latency)
		}
		if s.Status < 0 || s.Status > 999 {
			t.Fatalf("status %d", s.Status)
		}
		if s.Excluded != "" && s.Censored {
			t.Fatalf("excluded (%s) and censored", s.Excluded)
		}
	}
}

// jsonlSpecial8 flags the first byte of eight that jsonlPlain does not hold
// plain, for bytes of every value in every position.
func TestJSONLSpecial8(t *testing.T) {
	first := func(b []byte) int {
		for i, c := range b {
			if !jsonlPlain[c] {
				return i
			}
		}
		return 8
	}
	check := func(b []byte) {
		m := jsonlSpecial8(binary.LittleEndian.Uint64(b))
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if want := first(b); got != want {
			t.Fatalf("% x: first special byte %d, want %d", b, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			check(b)
			for k := pos + 1; k < 8; k++ { // a borrow from a special byte must not hide it
				b[k] = 0x01
			}
			check(b)
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	for range 100000 {
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		check(b)
	}
}
