package ingest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// protoRequest is an ExportTraceServiceRequest of service svc whose client
// spans, one per name, each call cart and take 250ms.
func protoRequest(t *testing.T, svc string, names ...string) []byte {
	t.Helper()
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	ss := &tracepb.ScopeSpans{}
	for i, name := range names {
		start := uint64(1_700_000_000_000_000_000 + i)
		ss.Spans = append(ss.Spans, &tracepb.Span{
			TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{byte(i + 1)}, 8), Name: name,
			Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: start, EndTimeUnixNano: start + 250_000_000,
			Attributes: []*commonpb.KeyValue{str("peer.service", "cart")},
		})
	}
	msg, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", svc)}},
		ScopeSpans: []*tracepb.ScopeSpans{ss},
	}}})
	require.NoError(t, err)
	return msg
}

// Issue 30, item 12, for OTLP protobuf: one malformed span (here a name
// that is not UTF-8, which proto3 refuses) made the whole message one bad
// record, its 9 good spans dropped with it. The message is walked one span
// at a time: the good spans are read and the bad one counted.
func TestOTLPProtoMalformedSpanAlone(t *testing.T) {
	names := []string{"GET", "GET", "GET", "GET", "BADBAD", "GET", "GET", "GET", "GET", "GET"}
	msg := protoRequest(t, "web", names...)
	require.Equal(t, 1, bytes.Count(msg, []byte("BADBAD")))
	msg = bytes.Replace(msg, []byte("BADBAD"), []byte("\xff\xfe\xfd\xfc\xfb\xfa"), 1)
	var whole coltracepb.ExportTraceServiceRequest
	require.Error(t, proto.Unmarshal(msg, &whole), "the test's message is one proto refuses")

	for _, tc := range []struct {
		name    string
		input   []byte
		errs    []string
		samples int
	}{
		{"one bad span", frameOTLP(msg, protoRequest(t, "api", "GET")),
			[]string{`t.binpb:1: span 5 of the request is not an OTLP protobuf span: `}, 10},
		{"a message whose structure is wrong is one bad record", frameOTLP([]byte{0x0a, 0x05, 0x12, 0x7f}, protoRequest(t, "api", "GET")),
			[]string{`t.binpb:1: protobuf message is not an ExportTraceServiceRequest: `}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder("otlp", bytes.NewReader(tc.input), "t.binpb", Options{})
			require.NoError(t, err)
			samples, errs := decodeAll(t, d)
			require.Len(t, errs, len(tc.errs), "%v", errs)
			for i, e := range errs {
				assert.True(t, strings.HasPrefix(e.Error(), tc.errs[i]), "%s\nwant %s", e.Error(), tc.errs[i])
			}
			require.Len(t, samples, tc.samples)
			for i, s := range samples {
				assert.Equal(t, 250*time.Millisecond, s.Latency, "sample %d", i)
			}
			if tc.samples == 10 {
				assert.Equal(t, "web", samples[0].Group[:3])
				assert.Equal(t, "api", samples[9].Group[:3])
			}
		})
	}
}
