package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func kvs(pairs ...any) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for i := 0; i < len(pairs); i += 2 {
		kv := &commonpb.KeyValue{Key: pairs[i].(string)}
		switch v := pairs[i+1].(type) {
		case string:
			kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
		case int:
			kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(v)}}
		}
		out = append(out, kv)
	}
	return out
}

// metricsLine is one OTLP/JSON line of the metrics, from service svc.
func metricsLine(t *testing.T, svc string, ms ...*metricspb.Metric) string {
	t.Helper()
	req := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource:     &resourcepb.Resource{Attributes: kvs("service.name", svc, "k8s.namespace.name", "shop")},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "test"}, Metrics: ms}},
	}}}
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	require.NoError(t, err)
	return string(b)
}

func explicitMetric(name, unit string, temp metricspb.AggregationTemporality, pts ...*metricspb.HistogramDataPoint) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Unit: unit, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
		AggregationTemporality: temp, DataPoints: pts}}}
}

func f64(v float64) *float64 { return &v }

type readResult struct {
	points []MetricPoint
	bad    []string
	st     OTLPMetricsStats
}

func readMetrics(t *testing.T, input string, o Options) readResult {
	t.Helper()
	var r readResult
	err := ReadOTLPMetrics(strings.NewReader(input), "m.jsonl", o, &r.st, func(p *MetricPoint) error {
		c := *p
		c.Bounds, c.Counts = append([]float64{}, p.Bounds...), append([]uint64{}, p.Counts...)
		r.points = append(r.points, c)
		return nil
	}, func(err error) error {
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "%v", err)
		r.bad = append(r.bad, err.Error())
		return nil
	})
	require.NoError(t, err)
	return r
}

const sec = uint64(time.Second)

func TestOTLPMetricsExplicit(t *testing.T) {
	cum := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	line := metricsLine(t, "frontend", explicitMetric("http.client.request.duration", "s", cum,
		&metricspb.HistogramDataPoint{Attributes: kvs("server.address", "cart", "server.port", 8080, "http.response.status_code", 200),
			StartTimeUnixNano: 1_700_000_000 * sec, TimeUnixNano: 1_700_000_060 * sec, Count: 6, Sum: f64(0.9), Max: f64(0.4),
			ExplicitBounds: []float64{0.1, 0.25, 0.5}, BucketCounts: []uint64{3, 2, 1, 0}},
		&metricspb.HistogramDataPoint{Attributes: kvs("server.address", "cart", "server.port", 8080, "http.response.status_code", 503),
			StartTimeUnixNano: 1_700_000_000 * sec, TimeUnixNano: 1_700_000_060 * sec, Count: 1,
			ExplicitBounds: []float64{0.1, 0.25, 0.5}, BucketCounts: []uint64{1, 0, 0, 0}},
	))
	r := readMetrics(t, line+"\n", Options{})
	require.Empty(t, r.bad)
	require.Len(t, r.points, 2)
	p := r.points[0]
	assert.Equal(t, "http.client.request.duration", p.Metric)
	assert.Equal(t, time.Second, p.Unit)
	assert.Equal(t, `the metric's unit "s"`, p.UnitFrom)
	assert.True(t, p.Cumulative)
	assert.False(t, p.Exponential)
	assert.Equal(t, "frontend cart:8080", p.Group, "caller and callee, as spans")
	assert.Equal(t, []float64{0.1, 0.25, 0.5}, p.Bounds)
	assert.Equal(t, []uint64{3, 2, 1, 0}, p.Counts)
	assert.Equal(t, 0.9, p.Sum)
	assert.Equal(t, 0.4, p.Max)
	assert.True(t, math.IsNaN(p.Min), "no min: NaN")
	assert.Equal(t, 200, p.Status)
	assert.Equal(t, time.Unix(1_700_000_060, 0), p.Time)
	assert.Equal(t, 503, r.points[1].Status)
	assert.NotEqual(t, p.Series, r.points[1].Series, "the status attribute makes another series")

	// Group by an attribute of the point and one of the resource.
	r = readMetrics(t, line, Options{By: []string{"attr:k8s.namespace.name", "attr:server.port", "status"}})
	assert.Equal(t, "shop 8080 200", r.points[0].Group)
}

func TestOTLPMetricsBadPoints(t *testing.T) {
	cum := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	pt := func(mod func(*metricspb.HistogramDataPoint)) *metricspb.HistogramDataPoint {
		p := &metricspb.HistogramDataPoint{TimeUnixNano: 1_700_000_060 * sec, Count: 3, ExplicitBounds: []float64{1, 2}, BucketCounts: []uint64{1, 1, 1}}
		mod(p)
		return p
	}
	cases := []struct {
		name string
		mod  func(*metricspb.HistogramDataPoint)
		want string
	}{
		{"count", func(p *metricspb.HistogramDataPoint) { p.Count = 4 }, `field "count": "4" is not the sum of the bucket counts, 3`},
		{"buckets", func(p *metricspb.HistogramDataPoint) { p.BucketCounts = []uint64{1, 2} }, `counts 2 buckets for 2 explicitBounds`},
		{"order", func(p *metricspb.HistogramDataPoint) { p.ExplicitBounds = []float64{2, 1} }, `"1" does not increase`},
		{"inf", func(p *metricspb.HistogramDataPoint) { p.ExplicitBounds = []float64{1, math.Inf(1)} }, `"+Inf" is not a finite bound`},
		{"time", func(p *metricspb.HistogramDataPoint) { p.TimeUnixNano = 0 }, `"timeUnixNano": "0" is not set`},
		{"start", func(p *metricspb.HistogramDataPoint) { p.StartTimeUnixNano = p.TimeUnixNano + 1 }, `is after the point's time`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := metricsLine(t, "a", explicitMetric("d", "ms", cum, pt(func(*metricspb.HistogramDataPoint) {}))) + "\n" +
				metricsLine(t, "a", explicitMetric("d", "ms", cum, pt(c.mod))) + "\n"
			r := readMetrics(t, in, Options{})
			assert.Len(t, r.points, 1, "the good point is read")
			require.Len(t, r.bad, 1)
			assert.Contains(t, r.bad[0], "m.jsonl:2: ")
			assert.Contains(t, r.bad[0], c.want)
		})
	}
	r := readMetrics(t, "{not json\n", Options{})
	require.Len(t, r.bad, 1)
	assert.Contains(t, r.bad[0], "m.jsonl:1: is not an OTLP/JSON ExportMetricsServiceRequest")

	// Unspecified temporality.
	r = readMetrics(t, metricsLine(t, "a", explicitMetric("d", "ms", 0, pt(func(*metricspb.HistogramDataPoint) {}))), Options{})
	require.Len(t, r.bad, 1)
	assert.Contains(t, r.bad[0], "is unspecified: neither delta nor cumulative")
}

func TestOTLPMetricsPassedOver(t *testing.T) {
	cum := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	good := &metricspb.HistogramDataPoint{TimeUnixNano: 1_700_000_060 * sec, Count: 1, ExplicitBounds: []float64{1}, BucketCounts: []uint64{1, 0}}
	stale := &metricspb.HistogramDataPoint{TimeUnixNano: 1_700_000_060 * sec, Flags: 1}
	line := metricsLine(t, "a",
		explicitMetric("rpc.client.duration", "ms", cum, good, stale),
		explicitMetric("http.client.request.body.size", "By", cum, good),
		explicitMetric("unitless", "", cum, good),
		explicitMetric("legacy_latency_seconds", "", cum, good),
		&metricspb.Metric{Name: "q", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{}}},
		&metricspb.Metric{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}},
	)
	r := readMetrics(t, line, Options{})
	require.Len(t, r.points, 2)
	assert.Equal(t, "rpc.client.duration", r.points[0].Metric)
	assert.Equal(t, time.Millisecond, r.points[0].Unit)
	assert.Equal(t, "legacy_latency_seconds", r.points[1].Metric)
	assert.Equal(t, "the name's suffix _seconds", r.points[1].UnitFrom)
	assert.Equal(t, int64(1), r.st.NoValue)
	assert.Equal(t, map[string]int64{"http.client.request.body.size": 1, "unitless": 1}, r.st.NotTimes)
	assert.Equal(t, map[string]int64{"summary": 1, "gauge": 1}, r.st.NotHistograms)
	assert.Equal(t, []string{"q"}, r.st.Summaries)

	// --unit gives a unitless histogram its unit; --metric picks one.
	r = readMetrics(t, line, Options{Unit: time.Microsecond, Metric: "unitless"})
	require.Len(t, r.points, 1)
	assert.Equal(t, time.Microsecond, r.points[0].Unit)
	assert.Equal(t, "--unit", r.points[0].UnitFrom)
	assert.Equal(t, int64(2), r.st.OtherMetric["rpc.client.duration"])
}

func TestOTLPMetricsExponential(t *testing.T) {
	delta := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	m := &metricspb.Metric{Name: "d", Unit: "s", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
		AggregationTemporality: delta, DataPoints: []*metricspb.ExponentialHistogramDataPoint{
			{TimeUnixNano: 1_700_000_060 * sec, StartTimeUnixNano: 1_700_000_000 * sec, Count: 7, Scale: 3, ZeroCount: 1, ZeroThreshold: 1e-9,
				Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -30, BucketCounts: []uint64{2, 0, 3}},
				Negative: &metricspb.ExponentialHistogramDataPoint_Buckets{BucketCounts: []uint64{1}}},
			{TimeUnixNano: 1_700_000_060 * sec, Count: 1, Scale: 21, Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{BucketCounts: []uint64{1}}},
			{TimeUnixNano: 1_700_000_060 * sec, Count: 2, Scale: 0, Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{BucketCounts: []uint64{1}}},
		}}}}
	r := readMetrics(t, metricsLine(t, "a", m), Options{})
	require.Len(t, r.points, 1)
	p := r.points[0]
	assert.True(t, p.Exponential)
	assert.False(t, p.Cumulative)
	assert.Equal(t, int32(3), p.Scale)
	assert.Equal(t, int32(-30), p.Offset)
	assert.Equal(t, []uint64{2, 0, 3}, p.Counts)
	assert.Equal(t, uint64(1), p.ZeroCount)
	assert.Equal(t, uint64(1), p.Negative)
	require.Len(t, r.bad, 2)
	assert.Contains(t, r.bad[0], `field "scale": "21" lies outside -10 to 20`)
	assert.Contains(t, r.bad[1], `field "count": "2" is not the sum of the zero count and the bucket counts, 1`)
}

// ExponentialBound is exact at powers of two and base^index between them.
func TestExponentialBound(t *testing.T) {
	for _, c := range []struct {
		scale int32
		index int64
		want  float64
	}{
		{0, 0, 1}, {0, 3, 8}, {0, -2, 0.25}, {-2, 1, 16}, {-10, -1, math.Ldexp(1, -1024)},
		{3, 8, 2}, {3, -8, 0.5}, {3, -9, 0.5 / math.Pow(2, 1.0/8)}, {20, 1 << 20, 2},
	} {
		got := ExponentialBound(c.scale, c.index)
		assert.InEpsilon(t, c.want, got, 1e-15, "scale %d index %d", c.scale, c.index)
		if c.index%(int64(1)<<max(c.scale, 0)) == 0 {
			assert.Equal(t, c.want, got, "a power of two is exact: scale %d index %d", c.scale, c.index)
		}
	}
	// Every bound at scale s is one of scale s+1: the buckets nest.
	for i := int64(-50); i < 50; i++ {
		assert.Equal(t, ExponentialBound(4, 2*i), ExponentialBound(3, i))
	}
}

func TestSniffOTLPMetrics(t *testing.T) {
	assert.True(t, sniffOTLPMetrics([]byte(`{"resourceMetrics":[{"resource":{}}]}`)))
	assert.True(t, sniffOTLPMetrics([]byte(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cut`)))
	assert.False(t, sniffOTLPMetrics([]byte(`{"resourceSpans":[]}`)))
	assert.False(t, sniffOTLP([]byte(`{"resourceMetrics":[]}`)))
	f, err := detectFormat(t, metricsLine(t, "a", explicitMetric("d", "ms", 1, &metricspb.HistogramDataPoint{TimeUnixNano: 1}))+"\n")
	require.NoError(t, err)
	assert.Equal(t, "otlp-metrics", f)
}

func detectFormat(t *testing.T, input string) (string, error) {
	t.Helper()
	f, _, err := Detect("auto", strings.NewReader(input), "m.jsonl", Options{})
	return f.Name, err
}

// FuzzOTLPMetrics checks that reading OTLP metrics never panics, that its
// errors are bad records (*ParseError) with a line, and that every point
// handed out is whole: its buckets add up to its count, its explicit
// bounds increase and number one fewer than its buckets, its scale is one
// the specification allows and its time is set.
func FuzzOTLPMetrics(f *testing.F) {
	cum := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	t := &testing.T{}
	f.Add(metricsLine(t, "a", explicitMetric("d", "ms", cum, &metricspb.HistogramDataPoint{
		Attributes: kvs("server.address", "b"), TimeUnixNano: 1_700_000_060 * sec, Count: 2, ExplicitBounds: []float64{1}, BucketCounts: []uint64{1, 1}})), uint8(0))
	f.Add(metricsLine(t, "a", &metricspb.Metric{Name: "e", Unit: "s", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
		AggregationTemporality: cum, DataPoints: []*metricspb.ExponentialHistogramDataPoint{{TimeUnixNano: 5, Count: 3, Scale: 4, ZeroCount: 1,
			Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -3, BucketCounts: []uint64{1, 1}}}}}}}), uint8(1))
	f.Add(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","unit":"s","histogram":{"aggregationTemporality":2,"dataPoints":[{"timeUnixNano":"1","count":"1","bucketCounts":["1"]}]}}]}]}]}`, uint8(2))
	f.Fuzz(func(t *testing.T, input string, opt uint8) {
		o := Options{}
		if opt%3 == 1 {
			o.By = []string{"attr:server.address", "status_class"}
		}
		if opt%3 == 2 {
			o.Unit = time.Millisecond
		}
		var st OTLPMetricsStats
		err := ReadOTLPMetrics(strings.NewReader(input), "f", o, &st, func(p *MetricPoint) error {
			var n uint64
			for _, c := range p.Counts {
				n += c
			}
			if p.Exponential {
				n += p.ZeroCount + p.Negative
				if p.Scale < MinExponentialScale || p.Scale > MaxExponentialScale {
					t.Fatalf("scale %d", p.Scale)
				}
			} else {
				if len(p.Counts) > 0 && len(p.Counts) != len(p.Bounds)+1 {
					t.Fatalf("%d counts for %d bounds", len(p.Counts), len(p.Bounds))
				}
				for i := 1; i < len(p.Bounds); i++ {
					if !(p.Bounds[i] > p.Bounds[i-1]) {
						t.Fatalf("bounds %v", p.Bounds)
					}
				}
			}
			if n != p.Count {
				t.Fatalf("buckets hold %d, count %d", n, p.Count)
			}
			if p.Time.IsZero() || p.Unit <= 0 || p.Group == "" {
				t.Fatalf("point %+v", p)
			}
			return nil
		}, func(err error) error {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("not a bad record: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("error %v", err)
		}
	})
}

// framed is reqs as the file exporter's format: proto writes them: each
// after its length, 4 bytes big-endian.
func framed(t *testing.T, reqs ...proto.Message) []byte {
	t.Helper()
	var out []byte
	for _, r := range reqs {
		b, err := proto.Marshal(r)
		require.NoError(t, err)
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// Protobuf files of metrics: the same points as the JSON of the same
// requests, and told apart from protobuf files of spans by detection.
func TestOTLPMetricsProto(t *testing.T) {
	cum := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	var reqs []proto.Message
	var lines []string
	for i := range 3 {
		m := explicitMetric("http.client.request.duration", "s", cum, &metricspb.HistogramDataPoint{
			Attributes:        kvs("server.address", "cart", "http.response.status_code", 200+i),
			StartTimeUnixNano: 1_700_000_000 * sec, TimeUnixNano: uint64(1_700_000_060+i) * sec, Count: uint64(3 + i),
			ExplicitBounds: []float64{0.1, 0.5}, BucketCounts: []uint64{1, 2, uint64(i)}})
		line := metricsLine(t, "frontend", m)
		var req colmetricspb.ExportMetricsServiceRequest
		require.NoError(t, protojson.Unmarshal([]byte(line), &req))
		reqs = append(reqs, &req)
		lines = append(lines, line)
	}
	data := framed(t, reqs...)
	f, _, err := Detect("auto", bytes.NewReader(data), "m.binpb", Options{})
	require.NoError(t, err)
	assert.Equal(t, "otlp-metrics", f.Name)
	fromProto := readMetrics(t, string(data), Options{})
	fromJSON := readMetrics(t, strings.Join(lines, "\n"), Options{})
	require.Empty(t, fromProto.bad)
	require.Len(t, fromProto.points, 3)
	for i := range fromProto.points {
		p, j := fromProto.points[i], fromJSON.points[i]
		assert.Equal(t, i+1, p.Record, "the message number")
		p.Record, j.Record = 0, 0
		assert.Equal(t, j.Group, p.Group)
		assert.Equal(t, j.Counts, p.Counts)
		assert.Equal(t, j.Time, p.Time)
		assert.Equal(t, 200+i, p.Status)
	}
	// A corrupt message is a bad record with its number; the others read.
	bad := append(append(framed(t, reqs[0]), 0, 0, 0, 3, 0xff, 0xff, 0xff), framed(t, reqs[2])...)
	r := readMetrics(t, string(bad), Options{})
	assert.Len(t, r.points, 2)
	require.Len(t, r.bad, 1)
	assert.Contains(t, r.bad[0], "m.jsonl:2: is not an OTLP protobuf ExportMetricsServiceRequest")
}

func TestOTLPProtoSignal(t *testing.T) {
	cum := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	var mreq colmetricspb.ExportMetricsServiceRequest
	require.NoError(t, protojson.Unmarshal([]byte(metricsLine(t, "frontend", explicitMetric("d", "ms", cum,
		&metricspb.HistogramDataPoint{TimeUnixNano: 5, Count: 1, ExplicitBounds: []float64{1}, BucketCounts: []uint64{1, 0}}))), &mreq))
	// A resource with many attributes puts the first metric far in.
	for i := range 500 {
		mreq.ResourceMetrics[0].Resource.Attributes = append(mreq.ResourceMetrics[0].Resource.Attributes, kvs(fmt.Sprint("k", i), "v")...)
	}
	treq := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: kvs("service.name", "web")},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{TraceId: make([]byte, 16), SpanId: make([]byte, 8), Name: "GET", StartTimeUnixNano: 1, EndTimeUnixNano: 2}}}}}}}
	assert.Equal(t, otlpSignalMetrics, otlpProtoSignal(framed(t, &mreq)))
	assert.Equal(t, otlpSignalTraces, otlpProtoSignal(framed(t, treq)))
	assert.True(t, sniffOTLPProto(framed(t, treq)))
	assert.False(t, sniffOTLPProto(framed(t, &mreq)), "metrics are not spans")
	assert.False(t, sniffOTLPMetricsProto(framed(t, treq)))
	assert.Equal(t, otlpSignalNone, otlpProtoSignal([]byte{0, 0, 0, 4, 0x12, 1, 2, 3}))
}

// The Collector's own marshaller (pdata) writes a message's fields last
// to first: a span's attributes (field 9, as a Metric's histogram) come
// before its times. Detection reads the fields in any order.
func TestOTLPProtoSignalFieldOrder(t *testing.T) {
	msg := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	fixed := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	kv := msg(field(2, field(1, []byte("cart"))), field(1, []byte("peer.service"))) // value before key
	span := msg(field(15, nil), field(9, kv), fixed(8, 2), fixed(7, 1), varint(6, 3), field(5, []byte("GET")), field(2, make([]byte, 8)), field(1, make([]byte, 16)))
	histogram := msg(varint(2, 2), field(1, msg(fixed(3, 5), fixed(4, 1))))
	metric := msg(field(9, histogram), field(3, []byte("ms")), field(1, []byte("d")))
	for _, c := range []struct {
		item []byte
		want otlpSignal
	}{{span, otlpSignalTraces}, {metric, otlpSignalMetrics}} {
		// request{resource_*{scope_*{item}, resource}}, the resource last.
		body := field(1, msg(field(2, field(2, c.item)), field(1, field(1, kv))))
		head := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		assert.Equal(t, c.want, otlpProtoSignal(append(head, body...)))
	}
}
