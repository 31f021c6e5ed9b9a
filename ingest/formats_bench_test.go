package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The formats the other benchmark files leave out, decoded through
// NewDecoder as analyze reads them: 10,000 lines each, grouped by route,
// with ns/line and allocs/line (the decoder's own, its 64 KiB buffer
// included: nothing per line).

// ingressBenchInput is 10,000 lines of ingress-nginx's upstreaminfo format.
func ingressBenchInput() []byte {
	r := rand.New(rand.NewPCG(7, 8))
	var b bytes.Buffer
	t := time.Date(2020, 2, 7, 11, 48, 51, 0, time.UTC)
	for i := range envoyBenchLines {
		method, path, lat := envoyBenchRequest(r)
		t = t.Add(time.Duration(r.IntN(40)) * time.Millisecond)
		up := lat - time.Duration(r.IntN(1000))*time.Microsecond
		fmt.Fprintf(&b, `192.168.%d.%d - - [%s] "%s %s HTTP/1.1" 200 %d "-" "curl/8.5.0" %d %.3f [default-web-8080] [] 172.17.0.%d:8080 %d %.3f 200 %032x`+"\n",
			i%256, r.IntN(256), t.Format("02/Jan/2006:15:04:05 -0700"), method, path, r.IntN(5000), 80+r.IntN(40),
			lat.Seconds(), r.IntN(8), r.IntN(5000), max(up, 0).Seconds(), r.Uint64())
	}
	return b.Bytes()
}

// envoyJSONBenchInput is 10,000 lines of Envoy's JSON access log with
// Istio's field names.
func envoyJSONBenchInput() []byte {
	r := rand.New(rand.NewPCG(9, 10))
	var b bytes.Buffer
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range envoyBenchLines {
		method, path, lat := envoyBenchRequest(r)
		fmt.Fprintf(&b, `{"start_time":"%s","method":"%s","path":"%s","protocol":"HTTP/1.1","response_code":200,"response_flags":"-","bytes_received":0,"bytes_sent":%d,"duration":%d,"upstream_service_time":"%d","x_forwarded_for":"-","user_agent":"curl/8.5.0","request_id":"%08x","authority":"api.example.com","upstream_host":"10.0.0.%d:8080","upstream_cluster":"outbound|8080||api.default.svc.cluster.local"}`+"\n",
			start.Add(time.Duration(i)*37*time.Millisecond).Format("2006-01-02T15:04:05.000Z"), method, path, r.IntN(5000),
			lat.Milliseconds(), max(lat.Milliseconds()-1, 0), r.Uint32(), r.IntN(8))
	}
	return b.Bytes()
}

// traefikBenchInput is 10,000 lines of Traefik's JSON access log.
func traefikBenchInput() []byte {
	r := rand.New(rand.NewPCG(11, 12))
	var b bytes.Buffer
	start := time.Date(2024, 8, 25, 4, 34, 37, 0, time.UTC)
	for i := range envoyBenchLines {
		method, path, lat := envoyBenchRequest(r)
		ts := start.Add(time.Duration(i) * 37 * time.Millisecond).Format(time.RFC3339Nano)
		fmt.Fprintf(&b, `{"ClientAddr":"172.19.0.1:%d","ClientHost":"172.19.0.1","DownstreamContentSize":%d,"DownstreamStatus":200,"Duration":%d,"OriginContentSize":%d,"OriginDuration":%d,"OriginStatus":200,"Overhead":%d,"RequestAddr":"api.example.com","RequestHost":"api.example.com","RequestMethod":"%s","RequestPath":"%s","RequestProtocol":"HTTP/1.1","RetryAttempts":0,"RouterName":"api@docker","ServiceName":"api@docker","StartUTC":"%s","entryPointName":"web","level":"info","msg":"","time":"%s"}`+"\n",
			40000+r.IntN(20000), r.IntN(5000), lat.Nanoseconds(), r.IntN(5000), lat.Nanoseconds()-600000, 600000, method, path, ts, ts[:19]+"Z")
	}
	return b.Bytes()
}

func BenchmarkIngressNginx(b *testing.B) {
	envoyBenchDecode(b, "ingress-nginx", ingressBenchInput(), Options{})
}

func BenchmarkEnvoyJSONDecode(b *testing.B) {
	envoyBenchDecode(b, "envoy-json", envoyJSONBenchInput(), Options{})
}

func BenchmarkTraefikDecode(b *testing.B) {
	envoyBenchDecode(b, "traefik", traefikBenchInput(), Options{})
}
