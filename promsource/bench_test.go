package promsource

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// benchMatrix is a range query's answer as Prometheus writes it: 600 series
// (20 routes x 30 buckets) of 2,000 points each, about 30 MB.
func benchMatrix() []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for s := range 600 {
		if s > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"le":"%g","method":"GET","route":"/api/v1/items/%d"},"values":[`, 0.005*float64(s%30+1), s/30)
		for p := range 2000 {
			if p > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`[`)
			b.WriteString(strconv.Itoa(1_764_590_400 + 15*p))
			b.WriteString(`,"`)
			b.WriteString(strconv.FormatFloat(float64(s*2000+p)*0.37, 'f', -1, 64))
			b.WriteString(`"]`)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

func benchServer(b *testing.B, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	b.Cleanup(srv.Close)
	return srv
}

var benchRange = v1.Range{Start: time.Unix(1_764_590_400, 0), End: time.Unix(1_764_590_400+15*1999, 0), Step: 15 * time.Second}

// BenchmarkDecodeMatrix compares client_golang's v1 (the whole body read,
// then decoded) with the streaming decoder on the same answer over HTTP:
// collecting every series into a model.Matrix, and streaming them (what the
// session does: each chunk used, then dropped).
func BenchmarkDecodeMatrix(b *testing.B) {
	body := benchMatrix()
	srv := benchServer(b, body)
	ctx := context.Background()
	const points = 600 * 2000
	check := func(b *testing.B, n int) {
		if n != points {
			b.Fatalf("%d points, want %d", n, points)
		}
	}
	b.Run("client_golang", func(b *testing.B) {
		ac, err := api.NewClient(api.Config{Address: srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		a := v1.NewAPI(ac)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			v, _, _, err := a.QueryRange(ctx, "q", benchRange)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, ss := range v.(model.Matrix) {
				n += len(ss.Values)
			}
			check(b, n)
		}
	})
	c, err := connect(Connection{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("stream/collect", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var m model.Matrix
			_, _, err := c.queryRange(ctx, "q", benchRange, allLabels, func(ss *model.SampleStream) error {
				if n := len(m); n > 0 && sameMap(m[n-1].Metric, ss.Metric) {
					m[n-1].Values = append(m[n-1].Values, ss.Values...)
					return nil
				}
				m = append(m, &model.SampleStream{Metric: ss.Metric, Values: append([]model.SamplePair(nil), ss.Values...)})
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, ss := range m {
				n += len(ss.Values)
			}
			check(b, n)
		}
	})
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			_, _, err := c.queryRange(ctx, "q", benchRange, onlyLabels("le", "route"), func(ss *model.SampleStream) error {
				n += len(ss.Values)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			check(b, n)
		}
	})
}
