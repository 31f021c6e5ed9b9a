package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frameOTLP writes msgs as the file exporter writes format: proto, each
// after its length in 4 bytes, big-endian (exportMessageAsBuffer).
func frameOTLP(msgs ...[]byte) []byte {
	var b []byte
	for _, m := range msgs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
		b = append(b, m...)
	}
	return b
}

// frameRecord is what otlpFrames.next returned once.
type frameRecord struct {
	msg    string
	record int
	proto  bool
	err    error
}

func readFrames(t *testing.T, input []byte) []frameRecord {
	t.Helper()
	f := newOTLPFrames(bufio.NewReaderSize(bytes.NewReader(input), 16), "in.binpb")
	var out []frameRecord
	for n := 0; ; n++ {
		require.Less(t, n, 1000, "next does not end")
		msg, rec, proto, err := f.next()
		if err == io.EOF {
			return out
		}
		out = append(out, frameRecord{string(msg), rec, proto, err})
		if err != nil && !isBadRecord(err) {
			return out
		}
	}
}

func TestOTLPFrames(t *testing.T) {
	// Messages longer than the reader's buffer (16 bytes here), one empty.
	long := "\x0a" + strings.Repeat("x", 100)
	framed := frameOTLP([]byte("\x0a\x00"), []byte(long), nil, []byte("\x0a\x02ab"))
	// The exporter's legacy compression: zstd, message by message.
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zframed := frameOTLP(enc.EncodeAll([]byte(long), nil), []byte("\x0a\x00"), enc.EncodeAll([]byte(`{"resourceSpans":[]}`), nil))

	tests := []struct {
		name  string
		input []byte
		want  []frameRecord
	}{
		{"protobuf", framed, []frameRecord{
			{"\x0a\x00", 1, true, nil}, {long, 2, true, nil}, {"", 3, true, nil}, {"\x0a\x02ab", 4, true, nil}}},
		{"lines, numbered with the blank ones", []byte("\n {\"a\":1} \r\n\n\ufeff{}\nlast"), []frameRecord{
			{`{"a":1}`, 2, false, nil}, {"\ufeff{}", 4, false, nil}, {"last", 5, false, nil}}},
		{"a line of text is a line, not a length", []byte("hello\n{}"), []frameRecord{
			{"hello", 1, false, nil}, {"{}", 2, false, nil}}},
		{"empty", nil, nil},
		{"zstd messages, protobuf and JSON", zframed, []frameRecord{
			{long, 1, true, nil}, {"\x0a\x00", 2, true, nil}, {`{"resourceSpans":[]}`, 3, false, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, readFrames(t, tt.input))
		})
	}
}

// TestOTLPFramesCutOff: a message the input's end cuts, in its length or
// in its body, is a bad record with its number, and the last.
func TestOTLPFramesCutOff(t *testing.T) {
	whole := frameOTLP([]byte("\x0a\x00"), []byte("\x0a\x03abc"))
	for cut := len(whole) - 1; cut > 6; cut-- {
		got := readFrames(t, whole[:cut])
		require.Len(t, got, 2, "cut at %d", cut)
		assert.Equal(t, frameRecord{"\x0a\x00", 1, true, nil}, got[0])
		var pe *ParseError
		require.ErrorAs(t, got[1].err, &pe, "cut at %d", cut)
		assert.Equal(t, 2, pe.Line)
		assert.Contains(t, pe.Error(), "in.binpb:2: protobuf message is cut off: the input ends ")
		if cut < 10 {
			assert.Contains(t, pe.Reason, "bytes into its 4-byte length")
		} else {
			assert.Contains(t, pe.Reason, fmt.Sprintf("after %d of its 5 bytes", cut-10))
		}
	}
}

// TestOTLPFramesBounded: a length prefix above maxOTLPMessage ends the
// reading with an error that names the file, the message and the length,
// and one that promises more than the input holds costs what it holds:
// nothing of the size the prefix says is allocated.
func TestOTLPFramesBounded(t *testing.T) {
	allocated := func(input []byte) (got []frameRecord, bytes uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got = readFrames(t, input)
		runtime.ReadMemStats(&after)
		return got, after.TotalAlloc - before.TotalAlloc
	}

	over := append(frameOTLP([]byte("\x0a\x00")), 0xff, 0xff, 0xff, 0xf0, 0x0a)
	got, n := allocated(over)
	require.Len(t, got, 2)
	err := got[1].err
	require.Error(t, err)
	assert.False(t, isBadRecord(err), "the framing is lost: not a bad record to go on after")
	assert.Equal(t, "in.binpb: protobuf message 2: its length prefix says 4294967280 bytes, more than the 64 MiB a message may have: "+
		"the file is corrupt, or not framed as the Collector's file exporter frames OTLP", err.Error())
	assert.Less(t, n, uint64(1<<20))
	f := newOTLPFrames(bufio.NewReader(bytes.NewReader(over)), "in.binpb")
	_, _, _, _ = f.next()
	_, _, _, err1 := f.next()
	_, rec, _, err2 := f.next()
	assert.Equal(t, err, err1)
	assert.Equal(t, err, err2, "the same error again: the bytes after the prefix are not read as a message")
	assert.Equal(t, 2, rec)

	// 60 MiB promised, 100 bytes there.
	big := binary.BigEndian.AppendUint32(nil, 60<<20)
	big = append(big, bytes.Repeat([]byte{0x0a}, 100)...)
	got, n = allocated(big)
	require.Len(t, got, 1)
	var pe *ParseError
	require.ErrorAs(t, got[0].err, &pe)
	assert.Equal(t, "protobuf message is cut off: the input ends after 100 of its 62914560 bytes", pe.Reason)
	assert.Less(t, n, uint64(1<<20), "grown as the bytes arrive")
}

// TestOTLPFramesBadZstd: a zstd frame that does not decompress is a bad
// record, and the reading goes on.
func TestOTLPFramesBadZstd(t *testing.T) {
	input := frameOTLP(append(bytes.Clone(zstdMagic), 1, 2, 3), []byte("\x0a\x00"))
	got := readFrames(t, input)
	require.Len(t, got, 2)
	var pe *ParseError
	require.ErrorAs(t, got[0].err, &pe)
	assert.Equal(t, 1, pe.Line)
	assert.Contains(t, pe.Reason, "zstd-compressed message does not decompress: ")
	assert.Equal(t, frameRecord{"\x0a\x00", 2, true, nil}, got[1])
}

func TestSniffOTLPProto(t *testing.T) {
	tests := []struct {
		name string
		head []byte
		want bool
	}{
		{"resource_spans", frameOTLP([]byte("\x0a\x03abc")), true},
		{"resource_spans cut by the window", frameOTLP([]byte("\x0a\x03abcdef"))[:7], true},
		{"an empty message first", frameOTLP(nil, []byte("\x0a\x00")), true},
		{"a zstd-compressed message", frameOTLP(append(bytes.Clone(zstdMagic), 0)), true},
		{"field 1 longer than the message", frameOTLP([]byte("\x0a\x09abc")), false},
		{"another field first", frameOTLP([]byte("\x12\x00")), false},
		{"a length over the limit", []byte{0x05, 0, 0, 0, 0x0a, 0}, false},
		{"too short", []byte{0, 0, 0}, false},
		{"only empty messages", frameOTLP(nil, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sniffOTLPProto(tt.head))
		})
	}
}

// TestOTLPFramesError: a read error is returned as it is.
func TestOTLPFramesError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(frameOTLP([]byte("\x0a\x00"))[:5]), readErr{boom})
	f := newOTLPFrames(bufio.NewReader(r), "in")
	_, _, _, err := f.next()
	assert.ErrorIs(t, err, boom)
}

// TestDetectBinary: a binary input is offered to the binary sniffers
// (SniffBinary), and one none takes is refused as before, by its lines.
func TestDetectBinary(t *testing.T) {
	f, _, err := Detect("auto", bytes.NewReader(frameOTLP([]byte("\x0a\x02\x0a\x00"))), "in.binpb", Options{})
	require.NoError(t, err)
	assert.Equal(t, "otlp", f.Name)

	_, _, err = Detect("auto", bytes.NewReader([]byte("\x00\x01\x02\x03garbage\n")), "in.bin", Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in.bin: cannot tell the input format from its first line")
}
