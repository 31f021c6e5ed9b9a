package ingest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func scanLinks(t *testing.T, format, input string) []SpanLink {
	t.Helper()
	var got []SpanLink
	require.NoError(t, ScanSpanLinks(strings.NewReader(input), "spans", format, Options{}, func(l SpanLink) error {
		got = append(got, l)
		return nil
	}))
	return got
}

func id8(s string) (b [8]byte) {
	hex.Decode(b[:], []byte(s))
	return b
}

func TestScanSpanLinksOTLP(t *testing.T) {
	input := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"frontend"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","kind":3,"startTimeUnixNano":"1000000000","endTimeUnixNano":"1100000000","attributes":[{"key":"peer.service","value":{"stringValue":"cart"}}]},` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","kind":1,"startTimeUnixNano":"1000000000","endTimeUnixNano":"1100000000"}]}]}]}
not json
{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"cart"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"aaa19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b174","kind":2,"startTimeUnixNano":"1010000000","endTimeUnixNano":"1300000000"},` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"bbb19b7ec3c1b174","kind":2,"startTimeUnixNano":"1010000000","endTimeUnixNano":"1"}]}]}]}
`
	got := scanLinks(t, "otlp", input)
	require.Len(t, got, 2, "the internal span, the bad line and the span ending before its start are passed over")
	c, s := got[0], got[1]
	assert.True(t, c.Client)
	assert.False(t, c.Server)
	assert.Equal(t, "frontend", c.Caller)
	assert.Equal(t, "cart", c.Callee)
	assert.Equal(t, id8("eee19b7ec3c1b174"), c.SpanID)
	assert.Equal(t, time.Unix(1, 100_000_000).UTC(), c.End)
	assert.True(t, s.Server)
	assert.Equal(t, c.TraceID, s.TraceID)
	assert.Equal(t, c.SpanID, s.ParentID, "the server span is the client span's child")
	assert.Equal(t, "cart", s.Caller)
	assert.Equal(t, "-", s.Callee)
	assert.Equal(t, time.Unix(1, 300_000_000).UTC(), s.End)
}

func TestScanSpanLinksZipkin(t *testing.T) {
	input := `[{"traceId":"d269b633813fc60c","id":"eee19b7ec3c1b174","kind":"CLIENT","timestamp":1000000,"duration":100000,` +
		`"localEndpoint":{"serviceName":"frontend"},"remoteEndpoint":{"serviceName":"cart"}},` +
		`{"traceId":"d269b633813fc60c","id":"aaa19b7ec3c1b174","parentId":"eee19b7ec3c1b174","kind":"SERVER","timestamp":1010000,"duration":290000,` +
		`"localEndpoint":{"serviceName":"cart"}},` +
		`{"traceId":"d269b633813fc60c","id":"ccc19b7ec3c1b174","timestamp":1010000,"duration":1}]`
	got := scanLinks(t, "zipkin", input)
	require.Len(t, got, 2)
	c, s := got[0], got[1]
	assert.Equal(t, "frontend cart", c.Caller+" "+c.Callee)
	assert.Equal(t, [16]byte{8: 0xd2, 9: 0x69, 10: 0xb6, 11: 0x33, 12: 0x81, 13: 0x3f, 14: 0xc6, 15: 0x0c}, c.TraceID,
		"a 64-bit trace id is the low half")
	assert.Equal(t, c.SpanID, s.ParentID)
	assert.True(t, s.Server)
	assert.Equal(t, time.UnixMicro(1_300_000).UTC(), s.End)
	assert.Equal(t, time.UnixMicro(1_100_000).UTC(), c.End)
}

func TestScanSpanLinksOtherFormat(t *testing.T) {
	err := ScanSpanLinks(strings.NewReader(""), "x", "nginx", Options{}, func(SpanLink) error { return nil })
	assert.True(t, errors.Is(err, ErrNoSpanLinks), "%v", err)
}

// checkSpanDecoder is the span formats' fuzz check: format's decoder over
// data (named name), with a --span-kind and, with kind&4, every group key,
// never panics nor loops, fails only with *ParseError of positive,
// non-decreasing lines and cut values, and hands out samples in bounds.
func checkSpanDecoder(t *testing.T, format, name string, data []byte, kind uint8) {
	t.Helper()
	o := Options{SpanKind: []string{"client", "server", "any"}[int(kind)%3]}
	if kind&4 != 0 {
		o.By = SpanGroupKeys
	}
	d, err := NewDecoder(format, bytes.NewReader(data), name, o)
	if err != nil {
		t.Fatalf("NewDecoder: %v", err)
	}
	lastLine := 0
	for n := 0; ; n++ {
		if n > len(data)+2 {
			t.Fatalf("Next called %d times on %d bytes without io.EOF", n, len(data))
		}
		s, err := d.Next()
		if err == io.EOF {
			return
		}
		var pe *ParseError
		if errors.As(err, &pe) {
			if pe.Line < 1 || pe.Line < lastLine {
				t.Fatalf("error at line %d after line %d: %v", pe.Line, lastLine, pe)
			}
			lastLine = pe.Line
			if len(pe.Value) > maxValueLen+len("...") {
				t.Fatalf("value of %d bytes not cut: %v", len(pe.Value), pe)
			}
			if !strings.HasPrefix(pe.Error(), fmt.Sprintf("%s:%d: ", name, pe.Line)) {
				t.Fatalf("bad error text: %v", pe)
			}
			continue
		}
		if err != nil {
			t.Fatalf("fatal error from Next on an in-memory input: %v", err)
		}
		if s.Latency < 0 || s.Status < 0 || s.Status > 999 || s.Excluded != "" && s.Censored {
			t.Fatalf("bad sample %+v", s)
		}
	}
}

// TestScanSpanLinksNamesAsGroups: a service named "-" or holding a quote
// is written in a link as the span's group writes it, so that the
// budgets and attempts read from links meet the group's edge; before,
// the link kept the raw names and those edges' budgets went missing.
func TestScanSpanLinksNamesAsGroups(t *testing.T) {
	input := `[{"traceId":"d269b633813fc60c","id":"eee19b7ec3c1b174","kind":"CLIENT","timestamp":1000000,"duration":100000,` +
		`"localEndpoint":{"serviceName":"-"},"remoteEndpoint":{"serviceName":"a\"b"}}]`
	got := scanLinks(t, "zipkin", input)
	require.Len(t, got, 1)
	assert.Equal(t, `"-"`, got[0].Caller)
	assert.Equal(t, `"a\"b"`, got[0].Callee)
	d, err := NewDecoder("zipkin", strings.NewReader(input), "spans", Options{})
	require.NoError(t, err)
	s, err := d.Next()
	require.NoError(t, err)
	assert.Equal(t, s.Group, got[0].Caller+" "+got[0].Callee, "the link names the span's group")
}
