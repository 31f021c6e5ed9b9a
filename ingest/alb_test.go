package ingest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// albSample is an ALB line of the documented layout (the user guide's
// example, with a user agent holding spaces and quotes, and newer fields).
const albSample = `https 2026-11-29T10:00:01.012345Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/users/42?x=1 HTTP/1.1" "curl/7.46.0 (x86_64; "quoted")" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2026-11-29T10:00:00.840000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_123456 "-" "-" "-"`

// albWith returns albSample with the three times, the status and the
// actions replaced.
func albWith(times, status, actions string) string {
	s := strings.Replace(albSample, "0.086 0.048 0.037 200 200", times+" "+status+" -", 1)
	return strings.Replace(s, `"authenticate,forward"`, `"`+actions+`"`, 1)
}

func albParser0(upstream bool) *albParser { return &albParser{target: upstream} }

func TestALBLine(t *testing.T) {
	ms := time.Millisecond
	created := time.Date(2026, 11, 29, 10, 0, 0, 840e6, time.UTC)
	held := time.Date(2026, 11, 29, 10, 0, 1, 12345e3, time.UTC).Sub(created) // 172.345 ms
	tests := []struct {
		name                             string
		line                             string
		upstream                         bool
		want                             Sample
		method, path, host, upstreamName string
	}{
		{
			name:   "the three times",
			line:   albSample,
			want:   Sample{Latency: 171 * ms, Time: created, Status: 200},
			method: "GET", path: "https://www.example.com:443/users/42?x=1", host: "www.example.com", upstreamName: "my-targets",
		},
		{
			name: "target_processing_time with --latency upstream",
			line: albSample, upstream: true,
			want: Sample{Latency: 48 * ms, Time: created, Status: 200},
		},
		{
			name: "504, no target answered: censored at time - request_creation_time",
			line: albWith("-1 -1 -1", "504", "forward"),
			want: Sample{Latency: held, Time: created, Status: 504, Censored: true},
		},
		{
			name: "504 with --latency upstream",
			line: albWith("0.001 -1 -1", "504", "forward"), upstream: true,
			want: Sample{Latency: held, Time: created, Status: 504, Censored: true},
		},
		{
			name: "460, the client closed: censored",
			line: albWith("-1 -1 -1", "460", "forward"),
			want: Sample{Latency: held, Time: created, Status: 460, Censored: true},
		},
		{
			name: "target answered before a 460 with --latency upstream: measured",
			line: albWith("0.001 0.250 -1", "460", "forward"), upstream: true,
			want: Sample{Latency: 250 * ms, Time: created, Status: 460},
		},
		{
			name: "502 from a target that closed the connection: no target response",
			line: albWith("-1 -1 -1", "502", "forward"),
			want: Sample{Time: created, Status: 502, Excluded: "alb no target response"},
		},
		{
			name: "redirect rule",
			line: albWith("-1 -1 -1", "301", "redirect"),
			want: Sample{Time: created, Status: 301, Excluded: "alb redirect"},
		},
		{
			name: "fixed-response rule",
			line: albWith("-1 -1 -1", "200", "waf,fixed-response"),
			want: Sample{Time: created, Status: 200, Excluded: "alb fixed-response"},
		},
		{
			name: "status -",
			line: albWith("0.000 0.001 0.000", "-", "forward"),
			want: Sample{Latency: 1 * ms, Time: created},
		},
		{
			name:   "an old line without the fields after the request: time is the time",
			line:   `http 2016-08-10T22:08:42.945958Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1"`,
			want:   Sample{Latency: 1 * ms, Time: time.Date(2016, 8, 10, 22, 8, 42, 945958e3, time.UTC), Status: 200},
			method: "GET", host: "www.example.com", upstreamName: "none",
		},
		{
			name: "an old 504 cannot say how long it waited",
			line: `http 2016-08-10T22:08:42.945958Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 - -1 -1 -1 504 0 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl" - -`,
			want: Sample{Time: time.Date(2016, 8, 10, 22, 8, 42, 945958e3, time.UTC), Status: 504, Excluded: "alb no duration"},
		},
		{
			name: "malformed request, no target group, host from domain_name",
			line: strings.NewReplacer(`"GET https://www.example.com:443/users/42?x=1 HTTP/1.1"`, `"- - - "`,
				"arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067", "-").Replace(albWith("-1 -1 -1", "400", "-")),
			want:   Sample{Time: created, Status: 400, Excluded: "alb no target response"},
			method: "none", path: "none", host: "www.example.com", upstreamName: "none",
		},
		{
			name: "IPv6 host and a time zone offset",
			line: strings.NewReplacer("https://www.example.com:443/", "http://[2001:db8::1]:80/", "2026-11-29T10:00:00.840000Z", "2026-11-29T11:00:00.840+01:00").Replace(albSample),
			want: Sample{Latency: 171 * ms, Time: created, Status: 200},
			host: "[2001:db8::1]",
		},
		{
			name:         "a user agent with spaces and quotes, fields appended by newer versions",
			line:         albSample + ` "new" field "x y"`,
			want:         Sample{Latency: 171 * ms, Time: created, Status: 200},
			upstreamName: "my-targets",
		},
		{
			name: "websockets",
			line: strings.Replace(albSample, "https 2026", "wss 2026", 1),
			want: Sample{Latency: 171 * ms, Time: created, Status: 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWith(t, albParser0(tt.upstream), tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.s)
			for _, c := range []struct{ name, want, got string }{
				{"method", tt.method, got.method}, {"path", tt.path, got.path},
				{"host", tt.host, got.host}, {"upstream", tt.upstreamName, got.upstream},
			} {
				switch c.want {
				case "":
				case "none":
					assert.Empty(t, c.got, c.name)
				default:
					assert.Equal(t, c.want, c.got, c.name)
				}
			}
		})
	}
}

func TestALBErrors(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"target time not a number", strings.Replace(albSample, "0.048", "abc", 1), `x.log:1: field "target_processing_time": "abc" is not a number`},
		{"negative time", strings.Replace(albSample, "0.086", "-0.5", 1), `x.log:1: field "request_processing_time": "-0.5" is negative`},
		{"time", strings.Replace(albSample, "2026-11-29T10:00:01.012345Z", "yesterday", 1), `x.log:1: field "time": "yesterday" is not a timestamp (RFC 3339, Unix seconds or milliseconds)`},
		{"30 February", strings.Replace(albSample, "2026-11-29T10:00:01", "2026-02-30T10:00:01", 1), `x.log:1: field "time": "2026-02-30T10:00:01.012345Z" is not a timestamp (RFC 3339, Unix seconds or milliseconds)`},
		{"request_creation_time", strings.Replace(albSample, "2026-11-29T10:00:00.840000Z", "2026-11-29T10:00:00.Z", 1), `x.log:1: field "request_creation_time": "2026-11-29T10:00:00.Z" is not a timestamp (RFC 3339, Unix seconds or milliseconds)`},
		{"status", strings.Replace(albSample, "0.037 200", "0.037 20x", 1), `x.log:1: field "elb_status_code": "20x" is not a status code`},
		{"short", `http 2016-08-10T22:08:42.945958Z app/x/1 1.2.3.4:5 - -1 -1 -1 504`, `x.log:1: has 9 fields, want at least 13 (type time elb client target three times statuses bytes "request")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDecoder("alb", strings.NewReader(tt.line+"\n"+albSample+"\n"), "x.log", Options{})
			require.NoError(t, err)
			_, err = d.Next()
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.want, err.Error())
			s, err := d.Next()
			require.NoError(t, err)
			assert.Equal(t, 171*time.Millisecond, s.Latency)
		})
	}
	_, err := NewDecoder("alb", strings.NewReader(albSample), "x.log", Options{Latency: "upstream-last"})
	require.EqualError(t, err, `unknown latency measure "upstream-last" for alb logs: want request, upstream, upstream-header`)
}

const albConformance = "testdata/conformance/aws-alb.log"

func TestALBConformance(t *testing.T) {
	data, err := os.ReadFile(albConformance)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 10)

	// How long each line's call was held, from its own two timestamps.
	heldFor := func(line string) time.Duration {
		f := strings.Fields(line)
		end, err := time.Parse(time.RFC3339Nano, f[1])
		require.NoError(t, err)
		var begin time.Time
		for _, v := range f {
			if strings.HasPrefix(v, "2019-") && v != f[1] {
				begin, err = time.Parse(time.RFC3339Nano, v)
				require.NoError(t, err)
			}
		}
		require.False(t, begin.IsZero())
		return end.Sub(begin)
	}

	for _, latency := range []string{"request", "upstream"} {
		t.Run(latency, func(t *testing.T) {
			d, err := NewDecoder("alb", bytes.NewReader(data), albConformance, Options{Latency: latency, By: []string{"route", "host", "upstream"}})
			require.NoError(t, err)
			var completed, timeouts, closed []time.Duration
			for i := 0; ; i++ {
				s, err := d.Next()
				if err == io.EOF {
					require.Equal(t, 10, i)
					break
				}
				require.NoError(t, err)
				assert.Empty(t, s.Excluded)
				assert.Equal(t, "/ filebeat-aws-elb-test-12030537.eu-central-1.elb.amazonaws.com test-lb-instances", s.Group)
				switch s.Status {
				case 200:
					assert.False(t, s.Censored)
					completed = append(completed, s.Latency)
				case 504:
					assert.True(t, s.Censored)
					assert.Equal(t, heldFor(lines[i]), s.Latency)
					assert.Equal(t, 10001*time.Millisecond, s.Latency.Round(time.Millisecond), "line %d", i+1)
					timeouts = append(timeouts, s.Latency)
				case 460:
					assert.True(t, s.Censored)
					assert.Equal(t, heldFor(lines[i]), s.Latency)
					assert.Equal(t, 5720*time.Millisecond, s.Latency.Round(10*time.Millisecond))
					closed = append(closed, s.Latency)
				default:
					t.Fatalf("line %d: status %d", i+1, s.Status)
				}
			}
			ms := time.Millisecond
			if latency == "request" {
				assert.Equal(t, []time.Duration{1 * ms, 2 * ms, 1 * ms}, completed)
			} else {
				assert.Equal(t, []time.Duration{0, 1 * ms, 1 * ms}, completed, "target_processing_time")
			}
			assert.Len(t, timeouts, 6)
			assert.Len(t, closed, 1)
		})
	}

	d, err := NewDecoder("auto", bytes.NewReader(data), albConformance, Options{})
	require.NoError(t, err)
	_, ok := d.(*lineDecoder).p.(*albParser)
	assert.True(t, ok, "auto chose %T", d.(*lineDecoder).p)
}

func TestSniffALB(t *testing.T) {
	assert.True(t, sniffALB([]byte(albSample)))
	assert.True(t, sniffALB([]byte(albWith("-1 -1 -1", "504", "forward"))))
	for _, line := range []string{
		hapLine,
		`2014-10-08T00:20:22.123456Z my-elb 1.2.3.4:24586 10.0.0.1:80 0.000 0.001 0.000 200 200 0 922 "GET http://a:80/ HTTP/1.1" "curl" - -`,
		`http 2019-10-11T15:01:12.376735Z app/x/1 1.2.3.4:5 - -1 -1 -1`,
		`timestamp,latency_ms`,
	} {
		assert.False(t, sniffALB([]byte(line)), line)
	}
}

func TestALBParseAllocs(t *testing.T) {
	p := albParser0(false)
	g, err := NewGrouper([]string{"route", "upstream", "host"}, nil)
	require.NoError(t, err)
	lines := [][]byte{[]byte(albSample), []byte(albWith("-1 -1 -1", "504", "forward")), []byte(albWith("-1 -1 -1", "301", "redirect"))}
	var s Sample
	var f Fields
	run := func() {
		for _, l := range lines {
			s, f = Sample{}, Fields{}
			if err := p.Parse(l, &s, &f); err != nil {
				panic(err)
			}
			s.Group = g.Key(&s, &f)
		}
	}
	run()
	assert.Zero(t, testing.AllocsPerRun(100, run))
}

func TestALBParseTime(t *testing.T) {
	for _, v := range []string{
		"2019-10-11T15:01:12.376735Z", "2019-10-11T15:01:12Z", "2019-10-11 15:01:12.1+02:00",
		"2019-10-11T15:01:12.123456789123-07:30", "2024-02-29T23:59:59.999Z",
	} {
		got, ok := albParseTime([]byte(v))
		require.True(t, ok, v)
		want, err := time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "T", 1))
		if err != nil { // more than 9 fraction digits
			want, err = time.Parse(time.RFC3339Nano, strings.Replace(v, "123456789123", "123456789", 1))
		}
		require.NoError(t, err)
		assert.True(t, want.Equal(got), "%s: %v, want %v", v, got, want)
	}
	for _, v := range []string{"2019-13-11T15:01:12Z", "2019-10-11T24:00:00Z", "2019-10-11T15:01:12", "2019-10-11T15:01:12+0200", "2019-10-11T15:01:60Z"} {
		_, ok := albParseTime([]byte(v))
		assert.False(t, ok, v)
	}
}

// albGenerate returns n ALB lines over 40 routes with a few 504s and 502s.
func albGenerate(n int) []byte {
	var b bytes.Buffer
	routes := []string{"/api/users/%d", "/api/orders/%d/items", "/static/app.%x.js", "/health", "/api/search?q=%d"}
	for i := range n {
		created := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * 37 * time.Millisecond)
		target := time.Duration(5+(i*7919)%300) * time.Millisecond
		times := fmt.Sprintf("0.001 %.3f 0.000", target.Seconds())
		status := "200 200"
		switch {
		case i%97 == 0:
			times, status, target = "-1 -1 -1", "504 -", 10*time.Second
		case i%211 == 0:
			times, status = "-1 -1 -1", "502 -"
		}
		path := fmt.Sprintf(routes[i%len(routes)], i%8+i%3*1000)
		fmt.Fprintf(&b, "https %s app/lb/50dc6c495c0c9188 192.168.%d.%d:%d 10.0.0.%d:80 %s %s 34 366 \"GET https://shop.example.com:443%s HTTP/1.1\" \"Mozilla/5.0 (X11; Linux x86_64)\" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:eu-central-1:123456789012:targetgroup/tg-%d/8f04c4fe71f5f794 \"Root=1-5da09932-2c342a443bfb96249aa50ed7\" \"shop.example.com\" \"-\" 0 %s \"forward\" \"-\" \"-\" \"10.0.0.1:80\" \"200\" \"-\" \"-\"\n",
			created.Add(target+time.Millisecond).Format("2006-01-02T15:04:05.000000Z"), i%256, i%200, 1024+i%60000, i%4, times, status, path, i%3,
			created.Format("2006-01-02T15:04:05.000000Z"))
	}
	return b.Bytes()
}

func BenchmarkALB(b *testing.B) {
	const n = 10_000
	benchLines(b, "alb", albGenerate(n), n)
}

// FuzzALB checks the ALB decoder like FuzzHAProxy: no panic, no loop,
// *ParseError only, sane samples, reasons of the ALB set.
func FuzzALB(f *testing.F) {
	data, err := os.ReadFile(albConformance)
	require.NoError(f, err)
	seeds := append(strings.Split(strings.TrimSpace(string(data)), "\n"),
		albSample,
		albWith("-1 -1 -1", "504", "forward"),
		albWith("-1 -1 -1", "301", "redirect"),
		albWith("0.1 -1 0.2", "460", "forward"),
		strings.Replace(albSample, "2026-11-29T10:00:00.840000Z", "2026-11-29T10:00:02Z", 1), // created after time
		`http 2016-08-10T22:08:42.945958Z app/x/1 1.2.3.4:5 - -1 -1 -1 504 0 34 366 "GET http://www.example.com:80/ HTTP/1.1`,
		`h2 1 2 3 4 1e3 NaN 99999999999 200 - 1 2 "" "`,
		string(albGenerate(3)),
	)
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	reasons := map[string]bool{"": true, albNoTarget: true, albRedirect: true, albFixedResponse: true, albNoDuration: true}
	f.Fuzz(func(t *testing.T, data []byte, upstream bool) {
		o := Options{By: []string{"route", "upstream", "host"}}
		if upstream {
			o.Latency = "upstream"
		}
		fuzzLineFormat(t, "alb", data, o, func(s Sample) {
			if !reasons[s.Excluded] {
				t.Fatalf("reason %q", s.Excluded)
			}
		})
	})
}
