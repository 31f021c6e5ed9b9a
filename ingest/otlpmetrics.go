package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/usage"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// OpenTelemetry metrics as the Collector's file exporter writes them:
// OTLP/JSON, one ExportMetricsServiceRequest per line, or protobuf, each
// request after its length (otlpframe.go), decoded by the protocol's own
// definition (go.opentelemetry.io/proto/otlp). Only histograms are read:
//
//   - explicit-bucket histograms: bucket i holds the values in
//     (explicit_bounds[i-1], explicit_bounds[i]], the last one those above
//     the largest bound, as Prometheus's le buckets do (metrics.proto,
//     HistogramDataPoint);
//   - exponential histograms: bucket index i holds the values in
//     (base^i, base^(i+1)] with base = 2^(2^-scale), the zero bucket those
//     in [-zero_threshold, zero_threshold] (ExponentialHistogramDataPoint).
//
// A point's unit is its metric's (UCUM: s, ms, us, ns, min, h), else
// --unit, else the suffix of a Prometheus-style name (_seconds,
// _milliseconds). Points flagged NO_RECORDED_VALUE hold nothing and are
// passed over; a point whose buckets disagree with its count, whose bounds
// do not increase, or whose scale lies outside what the specification
// allows is a bad record. Gauges, sums and summaries are passed over and
// counted (OTLPMetricsStats).
//
// Group keys (--by) are those of spans (SpanGroupKeys), read from the
// point's attributes (the caller from the resource's service.name), and
// attr:NAME for any point or resource attribute.

// MetricPoint is one histogram data point of an OTLP metric, as the file
// holds it. Values are in the metric's unit (Unit says what one lasts).
type MetricPoint struct {
	File   string
	Record int // the line
	Metric string
	Unit   time.Duration
	// UnitFrom says where Unit came from, for people ("the metric's unit
	// \"ms\"").
	UnitFrom string
	// Cumulative: the counts add up since Start (every point of a series
	// holds all before it); else each point holds (Start, Time] alone.
	Cumulative bool
	// Series identifies the point's time series: resource, scope and
	// point attributes. Group is its group name (--by).
	Series, Group string
	// Status, Excluded and Censored are what the point's attributes say of
	// its calls' status, as a span's say of its call (spanStatus), for the
	// status rule: the HTTP status (0 without one); a reason the calls
	// are left out for (a gRPC code other than OK); censored (gRPC's
	// CANCELLED and DEADLINE_EXCEEDED).
	Status      int
	Excluded    string
	Censored    bool
	Start, Time time.Time
	Count       uint64
	// Sum, Min and Max are NaN when the point has none.
	Sum, Min, Max float64

	// Exponential tells the kind: explicit buckets (Bounds, Counts) or
	// exponential ones (Scale, ZeroCount, ZeroThreshold, Offset,
	// Counts; Negative is the count of the negative buckets).
	Exponential   bool
	Bounds        []float64
	Counts        []uint64
	Scale         int32
	ZeroCount     uint64
	ZeroThreshold float64
	Offset        int32
	Negative      uint64
}

// The scales an exponential histogram may have: the specification's
// (data model, "Exponential Scale": -10 to 20).
const (
	MinExponentialScale = -10
	MaxExponentialScale = 20
)

// OTLPMetricsStats counts what ReadOTLPMetrics passed over.
type OTLPMetricsStats struct {
	// NotHistograms counts the metrics of other types (gauge, sum,
	// summary), by type; Summaries names the summaries, which cannot give
	// a timeout.
	NotHistograms map[string]int64
	Summaries     []string
	// NotTimes counts the histogram points of metrics whose unit is no
	// time (bytes, say), by metric; NoValue those flagged
	// NO_RECORDED_VALUE; OtherMetric those of metrics other than --metric.
	NotTimes    map[string]int64
	NoValue     int64
	OtherMetric map[string]int64
}

// ReadOTLPMetrics reads OTLP/JSON metrics and calls point with every
// histogram data point (valid until the call returns) and bad with every
// bad record (*ParseError), which the caller counts and reports; an error
// of either ends the reading and is returned, and so is a read error. With
// o.Metric set, only that metric is read.
func ReadOTLPMetrics(r io.Reader, name string, o Options, st *OTLPMetricsStats, point func(*MetricPoint) error, bad func(error) error) error {
	n, err := newSpanNamer(name, "OTLP metrics", Options{By: o.By})
	if err != nil {
		return err
	}
	if st.NotHistograms == nil {
		st.NotHistograms, st.NotTimes, st.OtherMetric = map[string]int64{}, map[string]int64{}, map[string]int64{}
	}
	d := &otlpMetricsDecoder{name: name, o: o, st: st, namer: n, unm: protojson.UnmarshalOptions{DiscardUnknown: true},
		point: point, bad: bad}
	frames := newOTLPFrames(bufio.NewReaderSize(r, 64<<10), name)
	unm := proto.UnmarshalOptions{DiscardUnknown: true}
	for {
		msg, rec, isProto, err := frames.next()
		d.p.Record = rec
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				if err := bad(err); err != nil {
					return err
				}
				continue
			}
			return err
		}
		d.req.Reset()
		if isProto {
			err = unm.Unmarshal(msg, &d.req)
		} else {
			err = d.unm.Unmarshal(bytes.TrimPrefix(msg, utf8BOM), &d.req)
		}
		if err != nil {
			what := "an OTLP/JSON"
			if isProto {
				what = "an OTLP protobuf"
			}
			if err := bad(&ParseError{File: name, Line: rec, Reason: "is not " + what + " ExportMetricsServiceRequest: " + protojsonReason(err)}); err != nil {
				return err
			}
			continue
		}
		if err := d.request(&d.req); err != nil {
			return err
		}
	}
}

type otlpMetricsDecoder struct {
	name   string
	o      Options
	st     *OTLPMetricsStats
	namer  spanNamer
	unm    protojson.UnmarshalOptions
	req    colmetricspb.ExportMetricsServiceRequest
	point  func(*MetricPoint) error
	bad    func(error) error
	p      MetricPoint
	series []byte
}

// request hands out the histogram points of one request.
func (d *otlpMetricsDecoder) request(req *colmetricspb.ExportMetricsServiceRequest) error {
	for _, rm := range req.GetResourceMetrics() {
		res := rm.GetResource().GetAttributes()
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if err := d.metric(res, sm.GetScope(), m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (d *otlpMetricsDecoder) metric(res []*commonpb.KeyValue, scope *commonpb.InstrumentationScope, m *metricspb.Metric) error {
	var n int
	var temporality metricspb.AggregationTemporality
	switch data := m.GetData().(type) {
	case *metricspb.Metric_Histogram:
		n, temporality = len(data.Histogram.GetDataPoints()), data.Histogram.GetAggregationTemporality()
	case *metricspb.Metric_ExponentialHistogram:
		n, temporality = len(data.ExponentialHistogram.GetDataPoints()), data.ExponentialHistogram.GetAggregationTemporality()
	case *metricspb.Metric_Summary:
		d.st.NotHistograms["summary"]++
		if !slices.Contains(d.st.Summaries, m.GetName()) && len(d.st.Summaries) < 10 {
			d.st.Summaries = append(d.st.Summaries, m.GetName())
		}
		return nil
	case *metricspb.Metric_Gauge:
		d.st.NotHistograms["gauge"]++
		return nil
	case *metricspb.Metric_Sum:
		d.st.NotHistograms["sum"]++
		return nil
	default:
		d.st.NotHistograms["empty"]++
		return nil
	}
	if d.o.Metric != "" && m.GetName() != d.o.Metric {
		d.st.OtherMetric[m.GetName()] += int64(n)
		return nil
	}
	unit, from := metricUnit(m.GetUnit(), m.GetName(), d.o.Unit)
	if unit == 0 {
		d.st.NotTimes[m.GetName()] += int64(n)
		return nil
	}
	p := &d.p
	*p = MetricPoint{File: d.name, Record: p.Record, Metric: m.GetName(), Unit: unit, UnitFrom: from,
		Cumulative: temporality == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		Bounds:     p.Bounds[:0], Counts: p.Counts[:0]}
	if temporality == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED {
		return d.badPoint("aggregationTemporality", "0", "is unspecified: neither delta nor cumulative")
	}
	switch data := m.GetData().(type) {
	case *metricspb.Metric_Histogram:
		for _, dp := range data.Histogram.GetDataPoints() {
			if err := d.explicit(res, scope, dp); err != nil {
				return err
			}
		}
	case *metricspb.Metric_ExponentialHistogram:
		for _, dp := range data.ExponentialHistogram.GetDataPoints() {
			if err := d.exponential(res, scope, dp); err != nil {
				return err
			}
		}
	}
	return nil
}

// noRecordedValue is DataPointFlags.FLAG_NO_RECORDED_VALUE.
const noRecordedValue = uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK)

func (d *otlpMetricsDecoder) badPoint(field, value, reason string) error {
	return d.bad(&ParseError{File: d.name, Line: d.p.Record, Field: field, Value: displayValue(value), Reason: reason})
}

func (d *otlpMetricsDecoder) explicit(res []*commonpb.KeyValue, scope *commonpb.InstrumentationScope, dp *metricspb.HistogramDataPoint) error {
	if dp.GetFlags()&noRecordedValue != 0 {
		d.st.NoValue++
		return nil
	}
	p := &d.p
	p.Exponential = false
	if nb, nc := len(dp.GetExplicitBounds()), len(dp.GetBucketCounts()); nc != nb+1 && (nc != 0 || nb != 0) {
		return d.badPoint("bucketCounts", strconv.Itoa(nc), fmt.Sprintf("counts %d buckets for %d explicitBounds: there must be one more", nc, nb))
	}
	for i, b := range dp.GetExplicitBounds() {
		switch {
		case math.IsNaN(b) || math.IsInf(b, 0):
			return d.badPoint("explicitBounds", strconv.FormatFloat(b, 'g', -1, 64), "is not a finite bound")
		case i > 0 && b <= dp.ExplicitBounds[i-1]:
			return d.badPoint("explicitBounds", strconv.FormatFloat(b, 'g', -1, 64), "does not increase: the bounds must be strictly increasing")
		}
	}
	var total uint64
	for _, c := range dp.GetBucketCounts() {
		total += c
	}
	if len(dp.GetBucketCounts()) == 0 && dp.GetCount() > 0 {
		return d.badPoint("bucketCounts", "[]", fmt.Sprintf("is empty for a count of %d: the point has no buckets", dp.GetCount()))
	}
	if total != dp.GetCount() {
		return d.badPoint("count", strconv.FormatUint(dp.GetCount(), 10), fmt.Sprintf("is not the sum of the bucket counts, %d", total))
	}
	p.Bounds = append(p.Bounds[:0], dp.GetExplicitBounds()...)
	p.Counts = append(p.Counts[:0], dp.GetBucketCounts()...)
	return d.finish(res, scope, dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano(), dp.GetCount(), dp.Sum, dp.Min, dp.Max)
}

func (d *otlpMetricsDecoder) exponential(res []*commonpb.KeyValue, scope *commonpb.InstrumentationScope, dp *metricspb.ExponentialHistogramDataPoint) error {
	if dp.GetFlags()&noRecordedValue != 0 {
		d.st.NoValue++
		return nil
	}
	p := &d.p
	p.Exponential = true
	if s := dp.GetScale(); s < MinExponentialScale || s > MaxExponentialScale {
		return d.badPoint("scale", strconv.Itoa(int(s)), fmt.Sprintf("lies outside %d to %d, the scales the specification allows", MinExponentialScale, MaxExponentialScale))
	}
	if zt := dp.GetZeroThreshold(); zt < 0 || math.IsNaN(zt) || math.IsInf(zt, 0) {
		return d.badPoint("zeroThreshold", strconv.FormatFloat(zt, 'g', -1, 64), "is not a finite threshold of 0 or more")
	}
	pos, neg := dp.GetPositive(), dp.GetNegative()
	// The highest index must have a bound a float64 holds: base^(i+1) with
	// i = offset + len - 1 (an offset near the int32 limits is corrupt).
	if top := int64(pos.GetOffset()) + int64(len(pos.GetBucketCounts())); len(pos.GetBucketCounts()) > 0 &&
		(math.IsInf(ExponentialBound(dp.GetScale(), top), 0) || ExponentialBound(dp.GetScale(), int64(pos.GetOffset())) == 0) {
		return d.badPoint("positive.offset", strconv.Itoa(int(pos.GetOffset())), fmt.Sprintf("with %d buckets at scale %d lies beyond what a float64 bounds", len(pos.GetBucketCounts()), dp.GetScale()))
	}
	total := dp.GetZeroCount()
	var negative uint64
	for _, c := range pos.GetBucketCounts() {
		total += c
	}
	for _, c := range neg.GetBucketCounts() {
		negative += c
	}
	total += negative
	if total != dp.GetCount() {
		return d.badPoint("count", strconv.FormatUint(dp.GetCount(), 10), fmt.Sprintf("is not the sum of the zero count and the bucket counts, %d", total))
	}
	p.Scale, p.ZeroCount, p.ZeroThreshold, p.Offset, p.Negative = dp.GetScale(), dp.GetZeroCount(), dp.GetZeroThreshold(), pos.GetOffset(), negative
	p.Counts = append(p.Counts[:0], pos.GetBucketCounts()...)
	p.Bounds = p.Bounds[:0]
	return d.finish(res, scope, dp.GetAttributes(), dp.GetStartTimeUnixNano(), dp.GetTimeUnixNano(), dp.GetCount(), dp.Sum, dp.Min, dp.Max)
}

// ExponentialBound is base^index for base 2^(2^-scale): the lower bound of
// bucket index (exclusive), the upper bound of bucket index-1 (inclusive).
// It is exact at the powers of two; between them within a float64's
// rounding.
func ExponentialBound(scale int32, index int64) float64 {
	if scale <= 0 {
		return math.Ldexp(1, int(index<<uint(-scale)))
	}
	// index = whole x 2^scale + frac, so that the power of two is exact.
	div := int64(1) << uint(scale)
	whole, frac := index/div, index%div
	if frac < 0 {
		whole, frac = whole-1, frac+div
	}
	return math.Ldexp(math.Exp2(float64(frac)/float64(div)), int(whole))
}

// finish fills in what both kinds share and hands the point out.
func (d *otlpMetricsDecoder) finish(res []*commonpb.KeyValue, scope *commonpb.InstrumentationScope, attrs []*commonpb.KeyValue, start, end, count uint64, sum, lo, hi *float64) error {
	p := &d.p
	switch {
	case end == 0:
		return d.badPoint("timeUnixNano", "0", "is not set: the point has no time")
	case end > math.MaxInt64:
		return d.badPoint("timeUnixNano", strconv.FormatUint(end, 10), "is past the year 2262")
	case start > end:
		return d.badPoint("startTimeUnixNano", strconv.FormatUint(start, 10), "is after the point's time")
	}
	p.Start, p.Time = time.Unix(0, int64(start)), time.Unix(0, int64(end))
	if start == 0 {
		p.Start = time.Time{}
	}
	p.Count = count
	p.Sum, p.Min, p.Max = optional(sum), optional(lo), optional(hi)
	var s Sample
	code, fe := spanStatus(&s,
		func() (int64, bool) { return attrInt(attrs, "http.response.status_code", "http.status_code") },
		func() (int64, bool) { return attrInt(attrs, "rpc.grpc.status_code") },
		func() bool { return false })
	if fe != nil {
		return d.badPoint(fe.Field, fe.Value, fe.Reason)
	}
	p.Status, p.Excluded, p.Censored = s.Status, s.Excluded, s.Censored
	// A point's group keys read as a span's: the caller is its
	// resource's service.name, attr:NAME its own attributes, then its
	// resource's.
	f := otlpFields{caller: attrString(res, "service.name"), attrs: attrs, res: res}
	p.Group = d.namer.group(&f, &s, code)
	p.Series = d.seriesKey(res, scope, attrs)
	return d.point(p)
}

func optional(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// seriesKey is the identity of a point's series: its resource's, scope's
// and own attributes, each list sorted by key.
func (d *otlpMetricsDecoder) seriesKey(res []*commonpb.KeyValue, scope *commonpb.InstrumentationScope, attrs []*commonpb.KeyValue) string {
	b := d.series[:0]
	for _, list := range [][]*commonpb.KeyValue{res, attrs} {
		keys := make([]int, len(list))
		for i := range keys {
			keys[i] = i
		}
		slices.SortFunc(keys, func(a, c int) int { return strings.Compare(list[a].GetKey(), list[c].GetKey()) })
		for _, i := range keys {
			b = strconv.AppendQuote(b, list[i].GetKey())
			b = append(b, '=')
			b = strconv.AppendQuote(b, anyString(list[i].GetValue()))
			b = append(b, ',')
		}
		if scope != nil {
			b = strconv.AppendQuote(append(b, '|'), scope.GetName()+" "+scope.GetVersion())
			scope = nil
		}
		b = append(b, '|')
	}
	d.series = b
	return string(b)
}

// metricUnit is what one unit of a metric lasts and where that was read:
// the metric's UCUM unit, else flag (--unit), else a Prometheus-style
// name's suffix; 0 when the metric is no time.
func metricUnit(ucum, name string, flag time.Duration) (time.Duration, string) {
	switch strings.TrimSpace(ucum) {
	case "s":
		return time.Second, `the metric's unit "s"`
	case "ms":
		return time.Millisecond, `the metric's unit "ms"`
	case "us":
		return time.Microsecond, `the metric's unit "us"`
	case "ns":
		return time.Nanosecond, `the metric's unit "ns"`
	case "min":
		return time.Minute, `the metric's unit "min"`
	case "h":
		return time.Hour, `the metric's unit "h"`
	case "", "1":
	default:
		return 0, ""
	}
	if flag > 0 {
		return flag, usage.Unit.String()
	}
	switch {
	case strings.HasSuffix(name, "_seconds"):
		return time.Second, "the name's suffix _seconds"
	case strings.HasSuffix(name, "_milliseconds"):
		return time.Millisecond, "the name's suffix _milliseconds"
	case strings.HasSuffix(name, "_microseconds"):
		return time.Microsecond, "the name's suffix _microseconds"
	}
	return 0, ""
}

// sniffOTLPMetrics accepts a JSON object with an array resourceMetrics
// (or resource_metrics, protobuf's own field name), as sniffOTLP does
// resourceSpans.
func sniffOTLPMetrics(line []byte) bool {
	return sniffOTLPKey(line, "resourceMetrics", "resource_metrics")
}

var metricFlag = Flag{Name: "metric", Usage: "OTLP metrics: the histogram to read, e.g. http.client.request.duration; default: the one the file holds",
	Field: func(o *Options) *string { return &o.Metric }}

func init() {
	Register(Format{
		Name:        "otlp-metrics",
		Edges:       true,
		Bucketed:    true,
		Priority:    55, // see Format.Priority
		Summary:     "OpenTelemetry histograms (explicit and exponential), OTLP/JSON or protobuf as the Collector's file exporter writes them; {metric}",
		Sniff:       sniffOTLPMetrics,
		SniffBinary: sniffOTLPMetricsProto,
		Flags:       []Flag{metricFlag},
	})
}
