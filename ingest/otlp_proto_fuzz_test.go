package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzOTLPProto runs the otlp decoder over a protobuf message framed as
// the file exporter frames it (with kind&8, over the bytes as they are,
// framing included; kind%3 and kind&4 choose --span-kind and --by): no
// panic, no loop, only *ParseError with positive, non-decreasing message
// numbers, or the error of a length prefix over the limit; every sample's
// latency at least 0. Run it with -fuzzminimizetime 5s or so: minimizing
// an input as large as the seed requests takes the default 60s.
func FuzzOTLPProto(f *testing.F) {
	reqs, _ := otlpTestRequests(1)
	// A small request, for the fuzzer to mutate, besides a large one.
	small := proto.Clone(reqs[0]).(*coltracepb.ExportTraceServiceRequest)
	small.ResourceSpans = small.ResourceSpans[:1]
	small.ResourceSpans[0].ScopeSpans[0].Spans = small.ResourceSpans[0].ScopeSpans[0].Spans[:2]
	reqs = append(reqs, small)
	for _, req := range reqs {
		msg, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg, uint8(0))
		f.Add(frameOTLP(msg, msg[:len(msg)/2]), uint8(8|2))
	}
	f.Add([]byte{}, uint8(1))
	f.Add([]byte{0x0a, 0x7f}, uint8(0))
	f.Add([]byte{0, 0, 0, 2, 0x0a, 0x00, 0xff, 0xff}, uint8(8|2))
	f.Add(append(bytes.Clone(zstdMagic), 0, 0, 0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		raw := kind&8 != 0
		input := data
		if !raw {
			input = frameOTLP(data)
		}
		o := Options{SpanKind: []string{"client", "server", "any"}[int(kind)%3]}
		if kind&4 != 0 {
			o.By = SpanGroupKeys
		}
		d, err := NewDecoder("otlp", bytes.NewReader(input), "fuzz.binpb", o)
		if err != nil {
			t.Fatalf("NewDecoder: %v", err)
		}
		last := 0
		for n := 0; ; n++ {
			if n > 10*len(input)+2 {
				t.Fatalf("Next called %d times on %d bytes without io.EOF", n, len(input))
			}
			s, err := d.Next()
			if err == io.EOF {
				break
			}
			var pe *ParseError
			if errors.As(err, &pe) {
				if pe.Line < 1 || pe.Line < last {
					t.Fatalf("error at record %d after record %d: %v", pe.Line, last, pe)
				}
				last = pe.Line
				if !strings.HasPrefix(pe.Error(), fmt.Sprintf("fuzz.binpb:%d: ", pe.Line)) {
					t.Fatalf("bad error text: %v", pe)
				}
				continue
			}
			if err != nil {
				if !strings.Contains(err.Error(), "its length prefix says") {
					t.Fatalf("fatal error from Next on an in-memory input: %v", err)
				}
				break
			}
			if s.Latency < 0 || s.Status < 0 || s.Status > 999 || s.Excluded != "" && s.Censored {
				t.Fatalf("bad sample %+v", s)
			}
		}
		_ = sniffOTLPProto(input)
	})
}
