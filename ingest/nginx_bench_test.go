package ingest

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// accessLogBenchLines generates n access-log lines in nginx's combined format +
// " $request_time $upstream_response_time": a dozen routes with ids, user
// agents with spaces, a few retried upstreams and requests that reached
// none, the time advancing a few ms a line.
func accessLogBenchLines(n int, apache bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	routes := []string{"/api/v1/users/%d", "/api/v1/users/%d/orders", "/api/v1/orders/%d/items?expand=1", "/health",
		"/static/app.%x.js", "/api/v2/search?q=x%d", "/login", "/api/v1/carts/%d", "/favicon.ico", "/api/v1/products/%d/reviews"}
	agents := []string{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
		"curl/8.5.0", "Go-http-client/1.1", "python-requests/2.31.0"}
	methods := []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	t := time.Date(2024, 10, 27, 3, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	for i := range n {
		t = t.Add(time.Duration(r.IntN(5)) * time.Millisecond)
		route := routes[r.IntN(len(routes))]
		if bytes.Contains([]byte(route), []byte("%")) {
			route = fmt.Sprintf(route, r.IntN(100000))
		}
		status := 200
		switch x := r.IntN(100); {
		case x < 3:
			status = 500
		case x < 5:
			status = 404
		}
		rt := 0.002 + r.ExpFloat64()*0.03
		fmt.Fprintf(&b, `10.0.%d.%d - - [%s] "%s %s HTTP/1.1" %d %d "-" "%s" `,
			i%256, r.IntN(256), t.Format("02/Jan/2006:15:04:05 -0700"), methods[r.IntN(len(methods))], route, status,
			r.IntN(10000), agents[r.IntN(len(agents))])
		if apache {
			fmt.Fprintf(&b, "%d\n", int(rt*1e6))
			continue
		}
		switch x := r.IntN(100); {
		case x < 2:
			fmt.Fprintf(&b, "%.3f -\n", rt)
		case x < 5:
			fmt.Fprintf(&b, "%.3f %.3f, %.3f\n", rt, rt/3, rt/2)
		default:
			fmt.Fprintf(&b, "%.3f %.3f\n", rt, rt*0.9)
		}
	}
	return b.Bytes()
}

// accessLogBenchDecode decodes data again and again with p, grouped by route, and
// reports ns, allocations and bytes per line.
func accessLogBenchDecode(b *testing.B, data []byte, lines int, p LineParser) {
	g, err := NewGrouper([]string{"route"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchDecode(b, len(data), lines, func() (Decoder, error) {
		return NewLineDecoder(bytes.NewReader(data), "bench.log", p, g), nil
	})
}

// BenchmarkNginx decodes 10,000 lines of combined + " $request_time
// $upstream_response_time" grouped by route. The steady state allocates
// nothing per line: the allocations per op are the decoder's own.
func BenchmarkNginx(b *testing.B) {
	const lines = 10_000
	data := accessLogBenchLines(lines, false)
	p, err := compileNginx(nginxFormat{text: nginxCombinedTimedUpstream, origin: "bench"}, "request")
	if err != nil {
		b.Fatal(err)
	}
	accessLogBenchDecode(b, data, lines, p)
}

// BenchmarkNginxUpstream is BenchmarkNginx summing the upstream lists.
func BenchmarkNginxUpstream(b *testing.B) {
	const lines = 10_000
	data := accessLogBenchLines(lines, false)
	p, err := compileNginx(nginxFormat{text: nginxCombinedTimedUpstream, origin: "bench"}, "upstream")
	if err != nil {
		b.Fatal(err)
	}
	accessLogBenchDecode(b, data, lines, p)
}

// BenchmarkApache decodes 10,000 lines of combined + " %D" grouped by route.
func BenchmarkApache(b *testing.B) {
	const lines = 10_000
	data := accessLogBenchLines(lines, true)
	p, err := compileApache(apacheCombinedD, "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	accessLogBenchDecode(b, data, lines, p)
}

// splitLines returns the lines of data without their "\n".
func splitLines(data []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// BenchmarkNginxParse is BenchmarkNginx without the line decoder: the
// parser and the grouper alone, over lines already split.
func BenchmarkNginxParse(b *testing.B) {
	const lines = 10_000
	data := accessLogBenchLines(lines, false)
	split := splitLines(data)
	p, err := compileNginx(nginxFormat{text: nginxCombinedTimedUpstream, origin: "bench"}, "request")
	if err != nil {
		b.Fatal(err)
	}
	g, err := NewGrouper([]string{"route"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var s Sample
	var f Fields
	for b.Loop() {
		for _, line := range split {
			s, f = Sample{}, Fields{}
			if err := p.Parse(line, &s, &f); err != nil {
				b.Fatal(err)
			}
			s.Group = g.Key(&s, &f)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/line")
}

// TestNginxNoAllocsPerLine pins the steady state of the nginx parser and
// the grouper: once the group table holds the routes, a line costs no
// allocation; through the line decoder, only the decoder itself allocates.
func TestNginxNoAllocsPerLine(t *testing.T) {
	split := splitLines(accessLogBenchLines(2_000, false))
	for _, latency := range []string{"request", "upstream"} {
		p, err := compileNginx(nginxFormat{text: nginxCombinedTimedUpstream, origin: "test"}, latency)
		if err != nil {
			t.Fatal(err)
		}
		g, err := NewGrouper([]string{"route", "method", "status_class"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var s Sample
		var f Fields
		parse := func() {
			for _, line := range split {
				s, f = Sample{}, Fields{}
				if err := p.Parse(line, &s, &f); err != nil {
					t.Fatal(err)
				}
				s.Group = g.Key(&s, &f)
			}
		}
		parse()
		if allocs := testing.AllocsPerRun(5, parse); allocs != 0 {
			t.Fatalf("--latency %s: %v allocations to parse %d lines", latency, allocs, len(split))
		}
		data := bytes.Join(split, []byte("\n"))
		decode := func() {
			d := NewLineDecoder(bytes.NewReader(data), "test.log", p, g)
			for {
				if _, err := d.Next(); err == io.EOF {
					return
				} else if err != nil {
					t.Fatal(err)
				}
			}
		}
		if allocs := testing.AllocsPerRun(5, decode); allocs > 10 {
			t.Fatalf("--latency %s: %v allocations to decode %d lines", latency, allocs, len(split))
		}
	}
}
