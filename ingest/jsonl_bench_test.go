package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// jsonlBenchInput is 10,000 JSON lines: a flat log with the latency in
// milliseconds under duration_ms.
func jsonlBenchInput() []byte {
	r := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range envoyBenchLines {
		method, path, lat := envoyBenchRequest(r)
		fmt.Fprintf(&b, `{"time":"%s","level":"info","msg":"request","method":"%s","path":"%s","status":%d,"duration_ms":%.3f,"bytes":%d,"remote":"10.0.%d.%d","user_agent":"Mozilla/5.0 (X11; Linux x86_64)","request_id":"%08x"}`+"\n",
			start.Add(time.Duration(i)*37*time.Millisecond).Format(time.RFC3339Nano), method, path, 200+r.IntN(2)*4,
			float64(lat)/float64(time.Millisecond), r.IntN(5000), r.IntN(256), r.IntN(256), r.Uint32())
	}
	return b.Bytes()
}

// caddyBenchInput is 10,000 lines of Caddy's access log: nested request
// object with headers, the duration in seconds.
func caddyBenchInput() []byte {
	r := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	start := 1714557600.0
	for i := range envoyBenchLines {
		method, path, lat := envoyBenchRequest(r)
		fmt.Fprintf(&b, `{"level":"info","ts":%.7f,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"10.0.%d.%d","remote_port":"41342","proto":"HTTP/2.0","method":"%s","host":"api.example.com","uri":"%s","headers":{"User-Agent":["curl/8.5.0"],"Accept":["*/*"],"Accept-Encoding":["gzip, deflate, br"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"api.example.com"}},"bytes_read":0,"user_id":"","duration":%.9f,"size":%d,"status":200,"resp_headers":{"Server":["Caddy"],"Content-Type":["application/json"]}}`+"\n",
			start+float64(i)*0.037, r.IntN(256), r.IntN(256), method, path, lat.Seconds(), r.IntN(5000))
	}
	return b.Bytes()
}

func BenchmarkJSONLDecode(b *testing.B) {
	envoyBenchDecode(b, "jsonl", jsonlBenchInput(), Options{
		Field: "duration_ms", Unit: time.Millisecond, TimeField: "time", StatusField: "status", PathField: "path", MethodField: "method",
	})
}

func BenchmarkJSONLParse(b *testing.B) {
	p, err := newJSONLParser(jsonlGenericLayout, Options{
		Field: "duration_ms", Unit: time.Millisecond, TimeField: "time", StatusField: "status", PathField: "path", MethodField: "method",
	})
	if err != nil {
		b.Fatal(err)
	}
	envoyBenchParse(b, p, jsonlBenchInput())
}

func BenchmarkCaddyDecode(b *testing.B) {
	envoyBenchDecode(b, "caddy", caddyBenchInput(), Options{})
}
