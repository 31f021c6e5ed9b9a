package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonlScanned is one extracted value as a test states it: its kind and, for
// strings, the decoded text, else the raw literal.
type jsonlScanned struct {
	kind jsonlKind
	text string
}

func jsonlScanValues(t testing.TB, line string, paths ...string) ([]jsonlScanned, error) {
	t.Helper()
	sc := newJSONLScanner(paths...)
	if err := sc.scan([]byte(line)); err != nil {
		return nil, err
	}
	out := make([]jsonlScanned, len(paths))
	for i, v := range sc.vals {
		out[i] = jsonlScanned{v.kind, string(sc.str(&v))}
	}
	return out, nil
}

func TestJSONLScannerValues(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		paths []string
		want  []jsonlScanned
	}{
		{"flat", `{"a": 1, "b": "x", "c": true, "d": null}`, []string{"a", "b", "c", "d", "e"},
			[]jsonlScanned{{jsonlNumber, "1"}, {jsonlString, "x"}, {jsonlBool, "true"}, {jsonlNull, "null"}, {jsonlAbsent, ""}}},
		{"nested path", `{"request":{"method":"GET","uri":"/x","headers":{"A":["b"]}},"duration":0.5}`,
			[]string{"request.method", "request.uri", "duration", "request.headers.A", "request.nope"},
			[]jsonlScanned{{jsonlString, "GET"}, {jsonlString, "/x"}, {jsonlNumber, "0.5"}, {jsonlArray, `["b"]`}, {jsonlAbsent, ""}}},
		{"an object as a value", `{"a": {"b": [1, {"c": 2}]} }`, []string{"a"},
			[]jsonlScanned{{jsonlObject, `{"b": [1, {"c": 2}]}`}}},
		{"a dotted member name", `{"request.method": "GET"}`, []string{"request.method"},
			[]jsonlScanned{{jsonlString, "GET"}}},
		{"a path through a non-object", `{"request": "GET"}`, []string{"request.method"},
			[]jsonlScanned{{jsonlAbsent, ""}}},
		{"the last repeat wins", `{"a": 1, "a": 2}`, []string{"a"}, []jsonlScanned{{jsonlNumber, "2"}}},
		{"a repeated parent replaces the child", `{"a": {"b": 1}, "a": {"c": 2}}`, []string{"a.b", "a.c"},
			[]jsonlScanned{{jsonlAbsent, ""}, {jsonlNumber, "2"}}},
		{"escapes", `{"s": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x"}`, []string{"s"},
			[]jsonlScanned{{jsonlString, "a\"b\\c/d\b\f\n\r\t\u00e9\U0001F600\uFFFDx"}}},
		{"an escaped member name", `{"dur\u0061tion": 5}`, []string{"duration"}, []jsonlScanned{{jsonlNumber, "5"}}},
		{"numbers", `{"a": -0.5e+10, "b": 0, "c": 1E3}`, []string{"a", "b", "c"},
			[]jsonlScanned{{jsonlNumber, "-0.5e+10"}, {jsonlNumber, "0"}, {jsonlNumber, "1E3"}}},
		{"white space everywhere", " \t{ \"a\" :\n[ ] , \"b\" : { } }\r ", []string{"a", "b"},
			[]jsonlScanned{{jsonlArray, "[ ]"}, {jsonlObject, "{ }"}}},
		{"empty object", `{}`, []string{"a"}, []jsonlScanned{{jsonlAbsent, ""}}},
		{"case matters", `{"Duration": 1}`, []string{"duration"}, []jsonlScanned{{jsonlAbsent, ""}}},
		{"two paths on one member", `{"a": 1}`, []string{"a", "a"}, []jsonlScanned{{jsonlNumber, "1"}, {jsonlNumber, "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonlScanValues(t, tt.line, tt.paths...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestJSONLScannerErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{``, "is not a JSON object"},
		{`[1, 2]`, "is not a JSON object"},
		{`"duration"`, "is not a JSON object"},
		{`latency_ms,route`, "is not a JSON object"},
		{`{`, "invalid JSON at byte 2: unexpected end of line, want a member name"},
		{`{"a" 1}`, `invalid JSON at byte 6: unexpected '1', want ':'`},
		{`{"a": 1,}`, `invalid JSON at byte 9: unexpected '}', want a member name`},
		{`{"a": 1} x`, `invalid JSON at byte 10: unexpected 'x' after the object`},
		{`{"a": 1}{"b": 2}`, `invalid JSON at byte 9: unexpected '{' after the object`},
		{`{"a": [1 2]}`, `invalid JSON at byte 10: unexpected '2', want ',' or ']'`},
		{`{"a": {"b": 1 "c": 2}}`, `invalid JSON at byte 15: unexpected '"', want ',' or '}'`},
		{`{"a": 01}`, `invalid JSON at byte 8: unexpected '1', want ',' or '}'`},
		{`{"a": 1.}`, `invalid JSON at byte 9: unexpected '}', want a digit after '.'`},
		{`{"a": -}`, `invalid JSON at byte 8: unexpected '}', want a digit`},
		{`{"a": 1e}`, `invalid JSON at byte 9: unexpected '}', want a digit in the exponent`},
		{`{"a": tru}`, `invalid JSON at byte 10: unexpected '}', want "true"`},
		{`{"a": nul`, `invalid JSON at byte 10: unexpected end of line, want "null"`},
		{`{"a": "x\q"}`, `invalid JSON at byte 10: invalid escape \q in a string`},
		{`{"a": "x\u12g4"}`, `invalid JSON at byte 13: unexpected 'g', want 4 hex digits after \u`},
		{"{\"a\": \"x\ty\"}", `invalid JSON at byte 9: control character 0x09 in a string`},
		{`{"a": "x`, `invalid JSON at byte 9: unexpected end of line in a string`},
		{`{"a": 'x'}`, `invalid JSON at byte 7: unexpected '\'', want a value`},
		{`{"duration": NaN}`, `invalid JSON at byte 14: unexpected 'N', want a value`},
		{`{"a": [}`, `invalid JSON at byte 8: unexpected '}', want a value`},
		{`{"a": {"b": }}`, `invalid JSON at byte 13: unexpected '}', want a value`},
		{`{"a": {"b": 1}`, `invalid JSON at byte 15: unexpected end of line, want ',' or '}'`},
		{`{"a": [{"b": 1]}`, `invalid JSON at byte 15: unexpected ']', want ',' or '}'`},
		{"\xef\xbb\xbf{}", "is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			for _, paths := range [][]string{nil, {"a"}, {"a.b"}} {
				_, err := jsonlScanValues(t, tt.line, paths...)
				require.Error(t, err, "paths %q", paths)
				assert.Equal(t, tt.want, err.Error(), "paths %q", paths)
			}
		})
	}
}

func TestJSONLScannerDepth(t *testing.T) {
	nested := func(n int) string {
		return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
	}
	_, err := jsonlScanValues(t, nested(jsonlMaxDepth), "a")
	assert.NoError(t, err)
	_, err = jsonlScanValues(t, nested(jsonlMaxDepth+1), "a")
	assert.EqualError(t, err, `invalid JSON at byte 10005: nested too deep`)
	deepObj := strings.Repeat(`{"a":`, jsonlMaxDepth+1) + "1" + strings.Repeat("}", jsonlMaxDepth+1)
	_, err = jsonlScanValues(t, deepObj, strings.TrimSuffix(strings.Repeat("a.", 40), "."))
	assert.ErrorContains(t, err, "nested too deep")
}

// TestJSONLScannerAllocs checks that scanning allocates nothing once the
// scanner's buffers have grown.
func TestJSONLScannerAllocs(t *testing.T) {
	line := []byte(`{"level":"info","ts":1646861401.5241024,"logger":"http.log.access","request":{"method":"GET","host":"localhost","uri":"/x\u0031","headers":{"User-Agent":["curl/7.82.0"]}},"duration":0.000929675,"status":200}`)
	sc := newJSONLScanner("duration", "status", "request.uri", "request.method", "ts")
	require.NoError(t, sc.scan(line))
	allocs := testing.AllocsPerRun(100, func() {
		_ = sc.scan(line)
		_ = sc.str(&sc.vals[2])
	})
	assert.Zero(t, allocs)
	assert.Equal(t, "/x1", string(sc.str(&sc.vals[2])))
}

// decodeJSONL runs format over input named "access.log".
func decodeJSONL(t *testing.T, format, input string, o Options) ([]Sample, []*ParseError) {
	t.Helper()
	d, err := NewDecoder(format, strings.NewReader(input), "access.log", o)
	require.NoError(t, err)
	return decodeAll(t, d)
}

func TestEnvoyJSON(t *testing.T) {
	ms := time.Millisecond
	// Istio's JSON log with json_format (every value a string) and with
	// typed_json_format (numbers, null for unset); lines from Istio's
	// documentation and write-ups.
	input := strings.Join([]string{
		`{"authority":"httpbin:8000","bytes_received":"0","bytes_sent":"135","connection_termination_details":"-","downstream_local_address":"10.44.1.27:80","duration":"3","method":"GET","path":"/status/418","protocol":"HTTP/1.1","response_code":"418","response_code_details":"via_upstream","response_flags":"-","route_name":"default","start_time":"2020-11-25T21:26:18.409Z","upstream_cluster":"inbound|8000||","upstream_host":"127.0.0.1:80","upstream_service_time":"1","x_forwarded_for":"-"}`,
		`{"duration":0,"start_time":"2022-12-15T01:03:02.725Z","bytes_received":0,"authority":"envoydummy.chapter11","upstream_transport_failure_reason":null,"response_code_details":"via_upstream","upstream_host":"172.17.0.9:10000","response_code":200,"method":"GET","upstream_service_time":"0","protocol":"HTTP/1.1","path":"/","bytes_sent":48,"response_flags":"-"}`,
		`{"authority":"nope.audit.lab","path":"/","method":"GET","response_code":404,"response_flags":"NR","response_code_details":"route_not_found","upstream_host":null,"duration":0,"upstream_service_time":null,"start_time":"2023-03-23T04:09:46.421Z"}`,
		`{"authority":"catalog","path":"/items","method":"GET","response_code":504,"response_flags":"UT","duration":501,"upstream_service_time":null,"start_time":"2023-03-23T04:09:46.421Z"}`,
		`{"method":null,"path":null,"protocol":null,"response_code":0,"response_flags":"UF,URX","duration":0,"upstream_service_time":null,"upstream_host":"127.0.0.1:9200","start_time":"2019-04-06T06:20:05.972Z"}`,
		`{"method":"-","path":"-","response_code":"0","response_flags":"-","duration":"60000","upstream_host":"127.0.0.1:9200"}`,
		`{"duration":"abc","response_code":200}`,
		`{"duration":"12","response_code":"OK"}`,
		`{"duration":12,"response_code":200,"start_time":"yesterday"}`,
		`{"duration":12,"response_code":200,"response_flags":"U T"}`,
		`{"duration":12,"response_code":200,"response_flags":5}`,
		`{"duration":12.5,"response_code":200}`,
		`{"response_code":200}`,
		`not json`,
	}, "\n")
	type want struct {
		latency  time.Duration
		status   int
		censored bool
		excluded string
		group    string
	}
	samples, errs := decodeJSONL(t, "envoy-json", input, Options{By: []string{"method", "route", "host", "upstream"}})
	got := make([]want, len(samples))
	for i, s := range samples {
		got[i] = want{s.Latency, s.Status, s.Censored, s.Excluded, s.Group}
	}
	assert.Equal(t, []want{
		{3 * ms, 418, false, "", "GET /status/{id} httpbin:8000 127.0.0.1:80"},
		{0, 200, false, "", "GET / envoydummy.chapter11 172.17.0.9:10000"},
		{0, 404, false, "envoy NR", "GET / nope.audit.lab -"},
		{501 * ms, 504, true, "", "GET /items catalog -"},
		{0, 0, false, "envoy UF,URX", "- / - 127.0.0.1:9200"},
		{60 * time.Second, 0, false, ExcludedEnvoyTCP, "- / - 127.0.0.1:9200"},
		{12500 * time.Microsecond, 200, false, "", "- / - -"},
		{0, 200, false, ExcludedNoDuration, "- / - -"},
	}, got)
	assert.Equal(t, time.Date(2020, 11, 25, 21, 26, 18, 409e6, time.UTC), samples[0].Time)
	assert.Equal(t, []string{
		`access.log:7: field "duration": "abc" is not a number`,
		`access.log:8: field "response_code": "OK" is not a status code`,
		`access.log:9: field "start_time": "yesterday" ` + reasonTime,
		`access.log:10: field "response_flags": "U T" is not a list of response flags`,
		`access.log:11: field "response_flags": "5" is not a list of response flags`,
		`access.log:14: is not a JSON object`,
	}, errorStrings(errs))

	// --latency upstream reads upstream_service_time; a timeout without it is
	// censored at the duration, a success without it excluded.
	samples, errs = decodeJSONL(t, "envoy-json", input, Options{Latency: "upstream"})
	require.Len(t, errs, 6)
	got = got[:0]
	for _, s := range samples {
		got = append(got, want{s.Latency, s.Status, s.Censored, s.Excluded, ""})
	}
	assert.Equal(t, []want{
		{1 * ms, 418, false, "", ""},
		{0, 200, false, "", ""},
		{0, 404, false, "envoy NR", ""},
		{501 * ms, 504, true, "", ""},
		{0, 0, false, "envoy UF,URX", ""},
		{60 * time.Second, 0, false, ExcludedEnvoyTCP, ""},
		{12500 * time.Microsecond, 200, false, ExcludedNoUpstream, ""},
		{0, 200, false, ExcludedNoUpstream, ""},
	}, got)

	// Field names of one's own.
	samples, errs = decodeJSONL(t, "envoy-json", `{"dur_ms": 7, "code": 503, "response_flags": "UH"}`,
		Options{Field: "dur_ms", StatusField: "code"})
	require.Empty(t, errs)
	require.Len(t, samples, 1)
	assert.Equal(t, Sample{Latency: 7 * ms, Status: 503, Excluded: "envoy UH"}, samples[0])
}

func TestTraefik(t *testing.T) {
	// Lines as Traefik writes them (pkg/middlewares/accesslog), from public
	// write-ups; the second is a 404 Traefik answered itself.
	input := `{"ClientAddr":"172.19.0.1:56732","ClientHost":"172.19.0.1","ClientPort":"56732","ClientUsername":"-","DownstreamContentSize":0,"DownstreamStatus":304,"Duration":14729375,"OriginContentSize":0,"OriginDuration":14051833,"OriginStatus":304,"Overhead":677542,"RequestAddr":"s222-umami-c381af.traefik.me","RequestContentSize":0,"RequestCount":122,"RequestHost":"s222-umami-c381af.traefik.me","RequestMethod":"GET","RequestPath":"/dashboard?_rsc=1rugv","RequestPort":"-","RequestProtocol":"HTTP/1.1","RequestScheme":"http","RetryAttempts":0,"RouterName":"s222-umami-60e104-47-web@docker","ServiceAddr":"10.0.1.15:3000","ServiceName":"s222-umami-60e104-47-web@docker","ServiceURL":{"Scheme":"http","Opaque":"","User":null,"Host":"10.0.1.15:3000","Path":"","RawPath":"","ForceQuery":false,"RawQuery":"","Fragment":"","RawFragment":""},"StartLocal":"2024-08-25T04:34:37.306691884Z","StartUTC":"2024-08-25T04:34:37.306691884Z","entryPointName":"web","level":"info","msg":"","time":"2024-08-25T04:34:37Z"}
{"ClientAddr":"10.10.10.1:36530","ClientHost":"10.10.10.1","ClientPort":"36530","ClientUsername":"-","DownstreamContentSize":19,"DownstreamStatus":404,"Duration":66095,"GzipRatio":0,"OriginContentSize":0,"OriginDuration":0,"OriginStatus":0,"Overhead":66095,"RequestAddr":"localhost","RequestContentSize":0,"RequestCount":3,"RequestHost":"localhost","RequestMethod":"GET","RequestPath":"/favicon.ico","RequestPort":"-","RequestProtocol":"HTTP/1.1","RequestScheme":"http","RetryAttempts":0,"StartLocal":"2024-10-26T08:48:42.285915864Z","StartUTC":"2024-10-26T08:48:42.285915864Z","entryPointName":"web","level":"info","msg":"","time":"2024-10-26T08:48:42Z"}
`
	samples, errs := decodeJSONL(t, "auto", input, Options{By: []string{"method", "route", "host", "upstream", "status"}})
	require.Empty(t, errs)
	require.Len(t, samples, 2)
	assert.Equal(t, Sample{
		Latency: 14729375, Status: 304, Time: time.Date(2024, 8, 25, 4, 34, 37, 306691884, time.UTC),
		Group: "GET /dashboard s222-umami-c381af.traefik.me s222-umami-60e104-47-web@docker 304", Method: "GET",
	}, samples[0])
	assert.Equal(t, time.Duration(66095), samples[1].Latency)
	assert.Equal(t, "GET /favicon.ico localhost - 404", samples[1].Group)

	// The 404 had no origin: its OriginDuration of 0 is no upstream time.
	samples, errs = decodeJSONL(t, "traefik", input, Options{Latency: "upstream"})
	require.Empty(t, errs)
	require.Len(t, samples, 2)
	assert.Equal(t, time.Duration(14051833), samples[0].Latency)
	assert.Empty(t, samples[0].Excluded)
	assert.Equal(t, ExcludedNoUpstream, samples[1].Excluded)
}

func TestCaddy(t *testing.T) {
	input := `{"level":"info","ts":1646861401.5241024,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"127.0.0.1","remote_port":"41342","client_ip":"127.0.0.1","proto":"HTTP/2.0","method":"GET","host":"localhost","uri":"/","headers":{"User-Agent":["curl/7.82.0"],"Accept":["*/*"],"Accept-Encoding":["gzip, deflate, br"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"example.com"}},"bytes_read": 0,"user_id":"","duration":0.000929675,"size":10900,"status":200,"resp_headers":{"Server":["Caddy"],"Content-Encoding":["gzip"],"Content-Type":["text/html; charset=utf-8"],"Vary":["Accept-Encoding"]}}
{"level":"info","ts":1786054486.193625,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"98.113.67.178","remote_port":"55392","client_ip":"98.113.67.178","proto":"HTTP/1.1","method":"GET","host":"api.whitepapergrey.com","uri":"/__logcheck-20260806T221446Z","headers":{"User-Agent":["curl/8.17.0"],"Accept":["*/*"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"http/1.1","server_name":"api.whitepapergrey.com","ech":false}},"bytes_read":0,"user_id":"","duration":0.001543878,"size":99,"status":404}
{"level":"info","ts":"2026-03-22T14:50:51.525Z","logger":"http.log.access","msg":"handled request","request":{"method":"POST","host":"h","uri":"/users/1234"},"duration":"1.5ms","status":201}
`
	samples, errs := decodeJSONL(t, "auto", input, Options{By: []string{"method", "route", "host"}})
	require.Empty(t, errs)
	require.Len(t, samples, 3)
	assert.Equal(t, Sample{
		Latency: 929675, Status: 200, Time: time.Unix(1646861401, 524102400).UTC(), Group: "GET / localhost", Method: "GET",
	}, samples[0])
	assert.Equal(t, time.Duration(1543878), samples[1].Latency)
	assert.Equal(t, 404, samples[1].Status)
	assert.Equal(t, Sample{
		Latency: 1500 * time.Microsecond, Status: 201, Time: time.Date(2026, 3, 22, 14, 50, 51, 525e6, time.UTC), Group: "POST /users/{id} h", Method: "POST",
	}, samples[2])

	_, err := NewDecoder("caddy", strings.NewReader(input), "access.log", Options{Latency: "upstream"})
	assert.EqualError(t, err, "access.log: caddy logs have no upstream time: use --latency request, or name a field with --field")
}

func TestJSONLGeneric(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		input   string
		o       Options
		want    []Sample
		wantErr []string
	}{
		{"numbers in the given unit", `{"latency_ms": 12.5}` + "\n" + `{"latency_ms": "7"}`, Options{Field: "latency_ms", Unit: ms},
			[]Sample{{Latency: 12500 * time.Microsecond}, {Latency: 7 * ms}}, nil},
		{"nanoseconds", `{"Duration": 1500000000}`, Options{Field: "Duration", Unit: time.Nanosecond},
			[]Sample{{Latency: 1500 * ms}}, nil},
		{"Go durations need no unit", `{"took": "1.5ms"}` + "\n" + `{"took": "2s"}` + "\n" + `{"took": "250µs"}`, Options{Field: "took"},
			[]Sample{{Latency: 1500 * time.Microsecond}, {Latency: 2 * time.Second}, {Latency: 250 * time.Microsecond}}, nil},
		{"a dotted path, time, status, path and method",
			`{"http": {"req": {"m": "GET", "p": "/a/1"}, "code": 504}, "t": "2024-01-02T03:04:05Z", "timing": {"total_s": 0.25}}`,
			Options{Field: "timing.total_s", Unit: time.Second, TimeField: "t", StatusField: "http.code", PathField: "http.req.p", MethodField: "http.req.m", By: []string{"method", "route"}},
			[]Sample{{Latency: 250 * ms, Status: 504, Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Group: "GET /a/{id}", Method: "GET"}}, nil},
		{"Unix milliseconds", `{"d": 1, "t": 1700000000123}`, Options{Field: "d", Unit: ms, TimeField: "t"},
			[]Sample{{Latency: ms, Time: time.UnixMilli(1700000000123).UTC()}}, nil},
		{"unset latencies are excluded, naming the field", `{"d": null}` + "\n" + `{"d": "-"}` + "\n" + `{"e": 1}`, Options{Field: "d", Unit: ms},
			[]Sample{{Excluded: "no d"}, {Excluded: "no d"}, {Excluded: "no d"}}, nil},
		{"bad values", strings.Join([]string{
			`{"d": "abc"}`, `{"d": -1}`, `{"d": "-5ms"}`, `{"d": [1]}`, `{"d": 1e400}`, `{"d": 1, "s": 99999}`, `{"d": 1, "t": true}`,
		}, "\n"), Options{Field: "d", Unit: ms, StatusField: "s", TimeField: "t"}, nil, []string{
			`access.log:1: field "d": "abc" is not a number or a duration such as 1.5ms`,
			`access.log:2: field "d": "-1" is negative`,
			`access.log:3: field "d": "-5ms" is negative`,
			`access.log:4: field "d": "[1]" is not a number`,
			`access.log:5: field "d": "1e400" is out of range`,
			`access.log:6: field "s": "99999" is not a status code`,
			`access.log:7: field "t": "true" ` + reasonTime,
		}},
		{"a number after a first line of durations", `{"d": "1ms"}` + "\n" + `{"d": 5}`, Options{Field: "d"},
			[]Sample{{Latency: ms}}, []string{`access.log:2: field "d": "5" is a number but no unit was given (--unit ns, us, ms or s)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, errs := decodeJSONL(t, "jsonl", tt.input, tt.o)
			assert.Equal(t, tt.want, samples)
			assert.Equal(t, tt.wantErr, errorStrings(errs))
		})
	}
}

func TestJSONLOptionErrors(t *testing.T) {
	tests := []struct {
		format string
		input  string
		o      Options
		want   string
	}{
		{"jsonl", `{"d": 1}`, Options{}, "access.log: jsonl: name the latency field with --field (a dotted path, e.g. request.duration_ms) and the unit of its numbers with --unit"},
		{"jsonl", `{"d": 1}`, Options{Field: "d"}, `access.log: field "d" holds numbers (1 on the first line) but no unit was given: pass --unit ns, us, ms or s`},
		{"jsonl", "\n\n" + `{"x": {"d": "12"}}`, Options{Field: "x.d"}, `access.log: field "x.d" holds numbers (12 on the first line) but no unit was given: pass --unit ns, us, ms or s`},
		{"jsonl", `{"d": 1}`, Options{Field: "d", Unit: -1}, "access.log: unit -1ns is negative"},
		{"jsonl", `{"d": 1}`, Options{Field: "d..e", Unit: 1}, `access.log: jsonl: field "d..e" is not a dotted path (name.name...)`},
		{"jsonl", `{"d": 1}`, Options{Field: "d", Unit: 1, Latency: "upstream-header"}, `access.log: unknown latency measure "upstream-header" for jsonl logs: want request, upstream`},
		{"traefik", `{}`, Options{Latency: "upstream-last"}, `access.log: unknown latency measure "upstream-last" for traefik logs: want request, upstream`},
		{"envoy-json", `{}`, Options{Latency: "upstream-last"}, `access.log: unknown latency measure "upstream-last" for envoy-json logs: want request, upstream`},
		{"caddy", `{}`, Options{By: []string{"colour"}}, `access.log: cannot group by "colour": log formats group by route, method, status_class, status, upstream, host`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := NewDecoder(tt.format, strings.NewReader(tt.input), "access.log", tt.o)
			assert.EqualError(t, err, tt.want)
		})
	}
	// A --unit makes the numbers readable; a first line of durations needs none.
	for _, o := range []Options{{Field: "d", Unit: time.Millisecond}} {
		_, err := NewDecoder("jsonl", strings.NewReader(`{"d": 1}`), "access.log", o)
		assert.NoError(t, err)
	}
	_, err := NewDecoder("jsonl", strings.NewReader(`{"d": "1ms"}`), "access.log", Options{Field: "d"})
	assert.NoError(t, err)
}

func TestJSONLSniff(t *testing.T) {
	tests := []struct {
		line string
		want string // the format auto-detection picks; "" none of these
	}{
		{`{"start_time":"2020-11-25T21:26:18.409Z","method":"GET","response_code":"418","duration":"3"}`, "envoy-json"},
		{`{"Duration":66095,"RequestPath":"/favicon.ico","DownstreamStatus":404}`, "traefik"},
		{`{"level":"info","ts":1.5,"logger":"http.log.access","msg":"handled request","duration":0.1,"status":200}`, "caddy"},
		{`{"request":{"uri":"/"},"duration":0.1,"status":200}`, "caddy"},
		{`{"duration": 1}`, ""},
		{`{"Duration": 1, "RequestPath": "/x"`, ""}, // cut short
		{`{"request": "GET /", "duration": 1}`, ""},
		{`[2019-02-12T18:37:42.921Z] "GET / HTTP/1.1" 200 - 0 0 1 1 "-" "-" "-" "-" "-"`, ""},
	}
	sniffers := map[string]func([]byte) bool{}
	for _, f := range Formats() {
		if f.Name == "envoy-json" || f.Name == "traefik" || f.Name == "caddy" || f.Name == "jsonl" {
			sniffers[f.Name] = f.Sniff
		}
	}
	require.Len(t, sniffers, 4)
	assert.Nil(t, sniffers["jsonl"], "generic JSON lines cannot be detected without --field")
	for _, tt := range tests {
		var got []string
		for name, sniff := range sniffers {
			if sniff != nil && sniff([]byte(tt.line)) {
				got = append(got, name)
			}
		}
		if tt.want == "" {
			assert.Empty(t, got, tt.line)
		} else {
			assert.Equal(t, []string{tt.want}, got, tt.line)
		}
	}
}

// TestJSONLParseAllocs checks the steady state of each JSON format: no
// allocation per line.
func TestJSONLParseAllocs(t *testing.T) {
	tests := []struct {
		l    jsonlLayout
		o    Options
		line string
	}{
		{jsonlEnvoyLayout, Options{}, `{"start_time":"2020-11-25T21:26:18.409Z","method":"GET","path":"/status/418","response_code":"503","response_flags":"UF,URX","duration":"3","authority":"a","upstream_host":"b"}`},
		{jsonlEnvoyLayout, Options{Latency: "upstream"}, `{"start_time":"2020-11-25T21:26:18.409Z","method":"GET","path":"/x","response_code":200,"response_flags":"-","duration":3,"upstream_service_time":"2"}`},
		{jsonlTraefikLayout, Options{}, `{"Duration":66095,"RequestPath":"/favicon.ico","RequestMethod":"GET","DownstreamStatus":404,"StartUTC":"2024-10-26T08:48:42.285915864Z"}`},
		{jsonlCaddyLayout, Options{}, `{"ts":1646861401.5241024,"logger":"http.log.access","request":{"method":"GET","host":"localhost","uri":"/\u0061"},"duration":0.000929675,"status":200}`},
		{jsonlGenericLayout, Options{Field: "d"}, `{"d":"1.5ms"}`},
	}
	for _, tt := range tests {
		t.Run(tt.l.format, func(t *testing.T) {
			p, err := newJSONLParser(tt.l, tt.o)
			require.NoError(t, err)
			var s Sample
			var f Fields
			line := []byte(tt.line)
			require.NoError(t, p.Parse(line, &s, &f))
			assert.Zero(t, testing.AllocsPerRun(100, func() {
				s, f = Sample{}, Fields{}
				_ = p.Parse(line, &s, &f)
			}))
		})
	}
}

// TestJSONLGoDuration compares the duration reader with time.ParseDuration.
func TestJSONLGoDuration(t *testing.T) {
	for _, s := range []string{
		"0", "+0", "-0", "1ns", "1.5ms", "250us", "250µs", "250μs", "1m30s", "2h45m", ".5s", "5.s", "1h1m1s1ms1us1ns",
		"2562047h47m16.854775807s", "0.000000001s", "100ms",
	} {
		want, err := time.ParseDuration(s)
		require.NoError(t, err, s)
		got, reason := jsonlGoDuration([]byte(s))
		require.Empty(t, reason, s)
		assert.Equal(t, want, got, s)
	}
	for s, reason := range map[string]string{
		"": jsonlReasonNotDuration, "1": jsonlReasonNotDuration, "ms": jsonlReasonNotDuration, "1.5": jsonlReasonNotDuration, "1x": jsonlReasonNotDuration,
		"1.2.3s": jsonlReasonNotDuration, "1 ms": jsonlReasonNotDuration, "1ms-": jsonlReasonNotDuration, "--1s": jsonlReasonNotDuration, "1s+1s": jsonlReasonNotDuration,
		"-1ms": reasonNegative, "2562047h47m16.854775808s": reasonRange, "9999999999h": reasonRange,
	} {
		_, got := jsonlGoDuration([]byte(s))
		assert.Equal(t, reason, got, "%q", s)
	}
}
