package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// The messages of an OTLP file, as the OpenTelemetry Collector's file
// exporter writes them, for every OTLP decoder (traces here; metrics and
// logs read the same framing). The exporter has two framings
// (opentelemetry-collector-contrib, exporter/fileexporter/file_writer.go:
// exportMessageAsLine and exportMessageAsBuffer, chosen by
// buildExportFunc):
//
//   - format: json, without compression: one OTLP/JSON message per line;
//   - format: proto (and format: json with the legacy compression: zstd):
//     each message preceded by its length, 4 bytes, an unsigned 32-bit
//     big-endian integer, and nothing else: no header, no separator.
//
// With compression: zstd the exporter (exporter/fileexporter/codec.go,
// marshaller.go) compresses each message on its own before framing it,
// so a framed message may be a zstd frame, decompressed here; with its
// native-compression feature gate it compresses the whole file instead
// (compression_writer.go), which Open decompresses before any decoder.
//
// An input is told apart by its first byte (otlpFramed): a length prefix
// of at most maxOTLPMessage starts with a byte of 0 to 4, a control
// character no text starts with; any other input, from "{" to a line of
// garbage, is read as lines, as the decoder read OTLP/JSON before it read
// protobuf, so that a bad line of JSON stays a bad line.

// maxOTLPMessage is the largest framed message read: a length prefix
// above it is refused before anything is allocated for it. It is far
// above what one exported batch holds (gRPC refuses a received message
// over 4 MiB by default), so a larger prefix is corrupt, or the file is
// not the exporter's.
const maxOTLPMessage = 64 << 20

// otlpFrames hands out the messages of one OTLP input in turn, each with
// its record number: the line number for OTLP/JSON, the message number
// (1-based) for length-prefixed protobuf. Memory is one message (at most
// maxOTLPMessage, grown as its bytes arrive, so a prefix that promises more
// than the input holds costs what the input holds) or one line (at most
// maxLine, as lineSource reads lines).
type otlpFrames struct {
	name   string // the input, in errors
	br     *bufio.Reader
	src    lineSource // the lines of OTLP/JSON, from br or from a chunk in memory
	mode   otlpMode
	record int
	buf    []byte        // the last protobuf message read
	zbuf   []byte        // the last one decompressed
	zdec   *zstd.Decoder // made for the first zstd-compressed message
	ended  bool          // a cut-off message ended the input
	lost   error         // a length prefix over the limit: the framing is lost
}

type otlpMode uint8

const (
	otlpModeUnknown otlpMode = iota // not yet seen: the first next looks
	otlpModeLines
	otlpModeFramed
)

// zstdMagic starts every zstd frame (RFC 8878).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// newOTLPFrames returns the messages of br's input, named name in errors.
// Whether it is lines or framed protobuf is decided by the first call of
// next.
func newOTLPFrames(br *bufio.Reader, name string) *otlpFrames {
	return &otlpFrames{name: name, br: br, src: lineSource{br: br, limit: maxOTLPMessage}}
}

// next returns the next message and its record number. proto says how msg
// is encoded: protobuf, or OTLP/JSON (a line, trimmed, perhaps after a
// byte order mark; or a framed message that turned out to be JSON). msg is
// valid until the next call. Blank lines are passed over. A message that
// is bad as it stands (a line longer than 1 MiB, a zstd frame that does
// not decompress) is a *ParseError, and next goes on after it; so is a
// message that the input's end cuts off, after which next returns io.EOF.
// A length prefix above maxOTLPMessage ends the reading with an error,
// returned again by every later call: the framing is lost. The end of the input is io.EOF; a read error is
// returned as it is.
func (f *otlpFrames) next() (msg []byte, record int, proto bool, err error) {
	if f.mode == otlpModeUnknown {
		f.mode = otlpModeLines
		if b, _ := f.br.Peek(1); otlpFramed(b) {
			f.mode = otlpModeFramed
		}
	}
	if f.mode == otlpModeLines {
		msg, err := f.nextLine()
		return msg, f.record, false, err
	}
	return f.nextFramed()
}

func (f *otlpFrames) nextLine() ([]byte, error) {
	for {
		f.record++
		line, err := f.src.next()
		if err == errLongLine {
			return nil, &ParseError{File: f.name, Line: f.record, Reason: "line is longer than 64 MiB"}
		}
		if err != nil {
			return nil, err
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, nil
		}
	}
}

func (f *otlpFrames) nextFramed() (msg []byte, record int, proto bool, err error) {
	switch {
	case f.lost != nil:
		return nil, f.record, true, f.lost
	case f.ended:
		return nil, f.record, true, io.EOF
	}
	f.record++
	var prefix [4]byte
	switch n, err := io.ReadFull(f.br, prefix[:]); {
	case err == io.EOF:
		return nil, f.record, true, io.EOF
	case err == io.ErrUnexpectedEOF:
		f.ended = true
		return nil, f.record, true, &ParseError{File: f.name, Line: f.record,
			Reason: fmt.Sprintf("protobuf message is cut off: the input ends %d bytes into its 4-byte length", n)}
	case err != nil:
		return nil, f.record, true, err
	}
	size := binary.BigEndian.Uint32(prefix[:])
	if size > maxOTLPMessage {
		f.lost = fmt.Errorf("%s: protobuf message %d: its length prefix says %d bytes, more than the %d MiB a message may have: the file is corrupt, or not framed as the Collector's file exporter frames OTLP",
			f.name, f.record, size, maxOTLPMessage>>20)
		return nil, f.record, true, f.lost
	}
	if cap(f.buf) > 4<<20 {
		f.buf = nil // do not keep a large message's memory for small ones
	}
	buf := f.buf[:0]
	for len(buf) < int(size) {
		step := min(int(size)-len(buf), max(len(buf), 64<<10))
		buf = slices.Grow(buf, step)
		n, err := io.ReadFull(f.br, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			f.buf, f.ended = buf, true
			return nil, f.record, true, &ParseError{File: f.name, Line: f.record,
				Reason: fmt.Sprintf("protobuf message is cut off: the input ends after %d of its %d bytes", len(buf), size)}
		}
		if err != nil {
			return nil, f.record, true, err
		}
	}
	f.buf = buf
	if !bytes.HasPrefix(buf, zstdMagic) {
		return buf, f.record, true, nil
	}
	if f.zdec == nil {
		// Bounded as the messages are: DecodeAll refuses more output.
		f.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(maxOTLPMessage))
		if err != nil {
			return nil, f.record, true, fmt.Errorf("%s: zstd: %w", f.name, err)
		}
	}
	if cap(f.zbuf) > 4<<20 {
		f.zbuf = nil
	}
	f.zbuf, err = f.zdec.DecodeAll(buf, f.zbuf[:0])
	if err != nil {
		return nil, f.record, true, &ParseError{File: f.name, Line: f.record,
			Reason: "zstd-compressed message does not decompress: " + displayValue(err.Error())}
	}
	if j := bytes.TrimSpace(f.zbuf); len(j) > 0 && j[0] == '{' {
		return j, f.record, false, nil // format: json, compression: zstd
	}
	return f.zbuf, f.record, true, nil
}

// resetMem makes f read data, whole lines of OTLP/JSON in memory, the
// first numbered record: a chunk of a parallel read, which only cuts
// inputs of lines (see otlpDecoder.cuttable).
func (f *otlpFrames) resetMem(data []byte, record int) {
	f.src.resetMem(data)
	f.mode, f.record, f.ended, f.lost = otlpModeLines, record-1, false, nil
}

// resetReader makes f read r (nil: br as it is), the rest of an input of
// OTLP/JSON lines from line number record on.
func (f *otlpFrames) resetReader(r io.Reader, record int) {
	f.src.resetReader(r)
	f.mode, f.record, f.ended, f.lost = otlpModeLines, record-1, false, nil
}

// otlpFramed reports whether block, the start of an input, is framed
// protobuf rather than lines: whether its first byte may start a length
// prefix of at most maxOTLPMessage (0 to 4), a control character no text
// starts with.
func otlpFramed(block []byte) bool { return len(block) > 0 && block[0] <= maxOTLPMessage>>24 }

// sniffOTLPProto accepts the start of a file exporter's protobuf file of
// spans (Format.SniffBinary): see otlpProtoSignal.
func sniffOTLPProto(head []byte) bool { return otlpProtoSignal(head) == otlpSignalTraces }

// sniffOTLPMetricsProto accepts the start of one of metrics.
func sniffOTLPMetricsProto(head []byte) bool { return otlpProtoSignal(head) == otlpSignalMetrics }

// What a protobuf OTLP file holds.
type otlpSignal uint8

const (
	otlpSignalNone otlpSignal = iota // not an OTLP file as the exporter frames it
	otlpSignalTraces
	otlpSignalMetrics
)

// otlpProtoSignal tells what head, the start of a framed protobuf file,
// holds: a length prefix of a message of at most maxOTLPMessage bytes
// (an empty first message passed over), whose first field is field 1
// (resource_spans or resource_metrics: both requests are built alike) as a
// length-delimited one (tag 0x0a) whose length fits in the message; or a
// zstd frame, one message compressed on its own, read as far as head
// reaches. The two signals part at their items: under field 2 (scope_*)
// field 2 is a Span or a Metric (otlpItemSignal). A file whose head says
// neither is read as spans, the format that read protobuf first.
func otlpProtoSignal(head []byte) otlpSignal {
	for len(head) >= 4 {
		size := binary.BigEndian.Uint32(head)
		if size > maxOTLPMessage {
			return otlpSignalNone
		}
		msg := head[4:]
		if size == 0 {
			head = msg
			continue
		}
		msg = msg[:min(len(msg), int(size))]
		if bytes.HasPrefix(msg, zstdMagic) {
			// One message compressed on its own: protobuf, or OTLP/JSON
			// (format: json with compression: zstd frames it too).
			inner := zstdHead(msg)
			if len(inner) > 0 && inner[0] == '{' {
				if sniffOTLPMetrics(inner) {
					return otlpSignalMetrics
				}
				return otlpSignalTraces
			}
			if sig := otlpRequestSignal(inner); sig != otlpSignalNone {
				return sig
			}
			return otlpSignalTraces
		}
		if len(msg) < 2 || msg[0] != 0x0a {
			return otlpSignalNone
		}
		n, k := binary.Uvarint(msg[1:])
		if k <= 0 || n+uint64(1+k) > uint64(size) {
			return otlpSignalNone
		}
		if sig := otlpRequestSignal(msg); sig != otlpSignalNone {
			return sig
		}
		return otlpSignalTraces
	}
	return otlpSignalNone
}

// zstdHead is what the start of a zstd frame decompresses to, at most 64
// KiB; nothing when it does not.
func zstdHead(frame []byte) []byte {
	d, err := zstd.NewReader(bytes.NewReader(frame), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(64<<20))
	if err != nil {
		return nil
	}
	defer d.Close()
	out := make([]byte, 64<<10)
	n, _ := io.ReadFull(d, out)
	return out[:n]
}

// otlpRequestSignal walks request -> resource_* -> scope_* -> the first
// item (see otlpProtoSignal), as far as b, perhaps cut, reaches.
func otlpRequestSignal(b []byte) otlpSignal {
	sig := otlpSignalNone
	protoFields(b, func(num, wire int, v []byte) bool {
		if num != 1 || wire != 2 {
			return true
		}
		protoFields(v, func(num, wire int, v []byte) bool {
			if num != 2 || wire != 2 {
				return true
			}
			protoFields(v, func(num, wire int, v []byte) bool {
				if num != 2 || wire != 2 {
					return true
				}
				sig = otlpItemSignal(v)
				return false
			})
			return sig == otlpSignalNone
		})
		return sig == otlpSignalNone
	})
	return sig
}

// otlpItemSignal tells a Span from a Metric by its fields, in any order
// (the Collector's own marshaller writes them last to first): a fixed64
// field (a Span's times, 7 and 8; a Metric has none) is a span; a
// message in field 7 (sum) or 10 (exponential histogram), numbers a
// Span gives a fixed64 and a count, is a metric; so is a message in field
// 9 (histogram; a Span's attribute there) whose field 2 is a varint (the
// temporality; an attribute's value is a message).
func otlpItemSignal(item []byte) otlpSignal {
	sig := otlpSignalNone
	protoFields(item, func(num, wire int, v []byte) bool {
		switch {
		case wire == 1:
			sig = otlpSignalTraces
		case wire == 2 && (num == 7 || num == 10):
			sig = otlpSignalMetrics
		case wire == 2 && num == 9:
			protoFields(v, func(num, wire int, _ []byte) bool {
				if num == 2 {
					if wire == 0 {
						sig = otlpSignalMetrics
					} else {
						sig = otlpSignalTraces
					}
					return false
				}
				return true
			})
		}
		return sig == otlpSignalNone
	})
	return sig
}

// protoFields calls fn with each field of the protobuf message b (its
// number, wire type and, for a length-delimited one, its bytes) until fn
// returns false or b ends; a length-delimited field that b cuts off is
// handed out as far as b holds it, and ends the walk. Groups and malformed
// bytes end it too.
func protoFields(b []byte, fn func(num, wire int, v []byte) bool) {
	for len(b) > 0 {
		tag, k := binary.Uvarint(b)
		if k <= 0 || tag>>3 == 0 || tag>>3 > 1<<29 {
			return
		}
		b = b[k:]
		num, wire := int(tag>>3), int(tag&7)
		var v []byte
		switch wire {
		case 0:
			_, k = binary.Uvarint(b)
			if k <= 0 {
				return
			}
			b = b[k:]
		case 1:
			if len(b) < 8 {
				return
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return
			}
			b = b[4:]
		case 2:
			n, k := binary.Uvarint(b)
			if k <= 0 {
				return
			}
			b = b[k:]
			if n > uint64(len(b)) {
				fn(num, wire, b)
				return
			}
			v, b = b[:n], b[n:]
		default:
			return
		}
		if !fn(num, wire, v) {
			return
		}
	}
}
