package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// envoyBenchLines is how many lines the benchmarks' inputs hold.
const envoyBenchLines = 10_000

// envoyBenchRoutes are the request paths of the generated inputs: a few dozen
// routes once their ids are normalized.
var envoyBenchRoutes = []string{
	"/api/v1/users/%d", "/api/v1/users/%d/orders", "/api/v1/orders/%d/items/%d", "/api/v1/search?q=%d",
	"/healthz", "/api/v2/catalog/%d", "/static/app.js?v=%d", "/api/v1/carts/%d/checkout",
}

// envoyBenchRequest returns the method, path and latency of a generated request.
func envoyBenchRequest(r *rand.Rand) (method, path string, lat time.Duration) {
	method = "GET"
	if r.IntN(5) == 0 {
		method = "POST"
	}
	route := envoyBenchRoutes[r.IntN(len(envoyBenchRoutes))]
	ids := []any{r.IntN(100000), r.IntN(100)}
	path = fmt.Sprintf(route, ids[:strings.Count(route, "%d")]...)
	lat = time.Duration(5+r.ExpFloat64()*20) * time.Millisecond
	return method, path, lat
}

// envoyBenchInput is 10,000 lines of Envoy's default format, 1 % of them
// failures and 0.5 % timeouts.
func envoyBenchInput() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range envoyBenchLines {
		method, path, lat := envoyBenchRequest(r)
		code, flags, ust := 200, "-", fmt.Sprint(lat.Milliseconds()-1)
		switch n := r.IntN(200); {
		case n < 2:
			code, flags, ust = 503, "UF,URX", "-"
		case n < 3:
			code, flags, ust = 504, "UT", "-"
		}
		fmt.Fprintf(&b, "[%s] \"%s %s HTTP/1.1\" %d %s 0 %d %d %s \"10.0.%d.%d\" \"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36\" \"%08x-6dee-4f3b-a52b-4f0d1312d89d\" \"api.example.com\" \"10.1.0.%d:8080\"\n",
			start.Add(time.Duration(i)*37*time.Millisecond).Format("2006-01-02T15:04:05.000Z"),
			method, path, code, flags, 100+r.IntN(5000), lat.Milliseconds(), ust, r.IntN(256), r.IntN(256), r.Uint32(), r.IntN(8))
	}
	return b.Bytes()
}

// envoyBenchDecode decodes data with format once per iteration, grouped by
// route, and reports ns/line and allocs/line (of the whole decoder,
// its 64 KiB buffer included) besides MB/s.
func envoyBenchDecode(b *testing.B, format string, data []byte, o Options) {
	o.By = []string{"route"}
	benchDecode(b, len(data), envoyBenchLines, func() (Decoder, error) {
		return NewDecoder(format, bytes.NewReader(data), "bench.log", o)
	})
}

// envoyBenchParse runs p and a route Grouper over the lines of data, without the
// reader: the steady state of one line.
func envoyBenchParse(b *testing.B, p LineParser, data []byte) {
	g, err := NewGrouper([]string{"route"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	b.ReportAllocs()
	b.SetBytes(int64(len(data)) / int64(len(lines)))
	var s Sample
	var f Fields
	i := 0
	for b.Loop() {
		s, f = Sample{}, Fields{}
		if err := p.Parse(lines[i], &s, &f); err != nil {
			b.Fatal(err)
		}
		s.Group = g.Key(&s, &f)
		if i++; i == len(lines) {
			i = 0
		}
	}
}

func BenchmarkEnvoyDecode(b *testing.B) {
	envoyBenchDecode(b, "envoy", envoyBenchInput(), Options{})
}

func BenchmarkEnvoyParse(b *testing.B) {
	p, err := newEnvoyParser(Options{})
	if err != nil {
		b.Fatal(err)
	}
	envoyBenchParse(b, p, envoyBenchInput())
}
