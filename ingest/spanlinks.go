package ingest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/tunetimeout/tunetimeout/internal/names"
)

// SpanLink is what a span says of its place in a trace: its ids, its
// parent's, its kind and its start and end. Caller and Callee are named
// as the decoder names a span's caller and callee for grouping ("-" for
// one the span lacks, a value that needs it quoted: linkName), so that
// Caller+" "+Callee is a CLIENT span's group without --by.
type SpanLink struct {
	TraceID          [16]byte
	SpanID, ParentID [8]byte
	Client, Server   bool
	Start, End       time.Time
	Caller, Callee   string
}

// ErrNoSpanLinks is returned by ScanSpanLinks for a format whose records
// are not spans.
var ErrNoSpanLinks = errors.New("the format's records are not spans")

// ScanSpanLinks reads the spans of an input of format (otlp, zipkin or jaeger)
// and calls fn with the link of each CLIENT and SERVER span; spans of
// other kinds are passed over. It streams as the format's decoder does,
// by the same code: memory is one line or span and the interned names.
// Bad records are passed over too: the decoder's own reading of the input
// counts and reports them. An error of fn ends the scan and is returned;
// so is a read error. o is checked as the decoder checks it, but neither
// --span-kind nor --by change what is read.
func ScanSpanLinks(r io.Reader, name, format string, o Options, fn func(SpanLink) error) error {
	o.SpanKind, o.By = otlpKindAny, nil
	switch format {
	case "otlp":
		d, err := newOTLPDecoder(r, name, o)
		if err != nil {
			return err
		}
		return scanOTLPLinks(d.(*otlpDecoder), fn)
	case "zipkin":
		d, err := newZipkinDecoder(r, name, o)
		if err != nil {
			return err
		}
		return scanZipkinLinks(d.(*zipkinDecoder), fn)
	case "jaeger":
		d, err := newJaegerDecoder(r, name, o)
		if err != nil {
			return err
		}
		return scanJaegerLinks(d.(*jaegerDecoder), fn)
	}
	return fmt.Errorf("%s: %w: %s", name, ErrNoSpanLinks, format)
}

// isBadRecord reports whether err is a bad record, which a scan passes over.
func isBadRecord(err error) bool {
	pe := (*ParseError)(nil)
	return errors.As(err, &pe)
}

func scanOTLPLinks(d *otlpDecoder, fn func(SpanLink) error) error {
	var fnErr error
	for {
		rec, err := d.record()
		switch {
		case err == io.EOF:
			return nil
		case isBadRecord(err):
			continue
		case err != nil:
			return err
		}
		err = d.eachSpan(rec, func(caller string, sp *tracepb.Span) {
			if fnErr != nil {
				return
			}
			var l SpanLink
			switch sp.GetKind() {
			case tracepb.Span_SPAN_KIND_CLIENT:
				l.Client = true
			case tracepb.Span_SPAN_KIND_SERVER:
				l.Server = true
			default:
				return
			}
			if d.ids(sp) != nil {
				return
			}
			start, end, fe := otlpTimes(sp)
			if fe != nil {
				return
			}
			copy(l.TraceID[:], sp.TraceId)
			copy(l.SpanID[:], sp.SpanId)
			copy(l.ParentID[:], sp.ParentSpanId)
			l.Start, l.End = time.Unix(0, int64(start)).UTC(), time.Unix(0, int64(end)).UTC()
			l.Caller = linkName(d.intern, append(d.buf[:0], caller...))
			l.Callee = linkName(d.intern, appendCallee(d.buf[:0], sp.GetAttributes()))
			fnErr = fn(l)
		}, func(*ParseError) {})
		if fnErr != nil {
			return fnErr
		}
		if err != nil && !isBadRecord(err) {
			return err
		}
	}
}

func scanZipkinLinks(d *zipkinDecoder, fn func(SpanLink) error) error {
	for {
		_, err := d.nextSpan()
		switch {
		case err == io.EOF:
			return nil
		case isBadRecord(err):
			continue
		case err != nil:
			return err
		}
		sp := &d.sp
		var l SpanLink
		switch sp.Kind {
		case "CLIENT":
			l.Client = true
		case "SERVER":
			l.Server = true
		default:
			continue
		}
		ts, us, fe := zipkinTimes(sp)
		if fe != nil {
			continue
		}
		zipkinID(l.TraceID[:], sp.TraceID)
		zipkinID(l.SpanID[:], sp.ID)
		zipkinID(l.ParentID[:], sp.ParentID)
		l.Start = time.UnixMicro(ts).UTC()
		l.End = l.Start.Add(time.Duration(us) * time.Microsecond)
		f := zipkinFields{sp}
		l.Caller = linkName(d.intern, f.appendCaller(d.buf[:0]))
		l.Callee = linkName(d.intern, f.appendCallee(d.buf[:0]))
		if err := fn(l); err != nil {
			return err
		}
	}
}

func scanJaegerLinks(d *jaegerDecoder, fn func(SpanLink) error) error {
	for {
		err := d.nextTrace()
		switch {
		case err == io.EOF:
			return nil
		case isBadRecord(err):
			continue
		case err != nil:
			return err
		}
		for i := range d.tr.Spans {
			sp := &d.tr.Spans[i]
			d.tagMap(sp)
			var l SpanLink
			switch d.tags["span.kind"] {
			case "client":
				l.Client = true
			case "server":
				l.Server = true
			default:
				continue
			}
			ts, us, fe := jaegerTimes(sp)
			if fe != nil {
				continue
			}
			zipkinID(l.TraceID[:], sp.TraceID)
			zipkinID(l.SpanID[:], sp.SpanID)
			zipkinID(l.ParentID[:], jaegerParent(sp))
			l.Start = time.UnixMicro(ts).UTC()
			l.End = l.Start.Add(time.Duration(us) * time.Microsecond)
			l.Caller = linkName(d.intern, d.appendCaller(d.buf[:0], sp))
			l.Callee = linkName(d.intern, appendJaegerCallee(d.buf[:0], d.tags))
			if err := fn(l); err != nil {
				return err
			}
		}
	}
}

// zipkinID decodes the hex id v (checked by zipkinTimes: at most
// 2*len(dst) digits) into dst, right-aligned: a 64-bit trace id is the
// low half of a 128-bit one, as Zipkin reads it.
func zipkinID(dst []byte, v string) {
	if len(v)%2 == 1 {
		v = "0" + v
	}
	_, _ = hex.Decode(dst[len(dst)-len(v)/2:], []byte(v))
}

// linkName is a span's caller or callee b named as a group's name writes
// the value (names.FinishValue: "-" when missing, quoted when it holds a
// space, a quote or is "-" itself), interned: Caller+" "+Callee is then
// the group the span's decoder gives it without --by.
func linkName(m map[string]string, b []byte) string {
	return internName(m, names.FinishValue(b, 0))
}

// internName returns b as a string ("-" when empty), from m when there,
// added to m while it holds fewer than maxInternedGroups.
func internName(m map[string]string, b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	b = names.CapBytes(b)
	if name, ok := m[string(b)]; ok {
		return name
	}
	name := string(b)
	if len(m) < maxInternedGroups {
		m[name] = name
	}
	return name
}
