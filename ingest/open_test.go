package ingest

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenStdin(t *testing.T) {
	rc, err := Open("-", strings.NewReader("latency_ms\n1\n"))
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Equal(t, "latency_ms\n1\n", string(b))
	assert.NoError(t, rc.Close())
}

func TestOpenFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "data.csv")
	require.NoError(t, os.WriteFile(name, []byte("latency_ms\n7\n"), 0o644))
	rc, err := Open(name, nil)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Equal(t, "latency_ms\n7\n", string(b))
}

func TestOpenMissing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := Open("missing.csv", nil)
	require.Error(t, err)
	assert.Equal(t, "open missing.csv: no such file or directory", err.Error())
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestOpenCompressed(t *testing.T) {
	const content = "latency_ms\n7\n8\n"
	dir := t.TempDir()
	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	_, _ = gw.Write([]byte(content))
	require.NoError(t, gw.Close())
	zw, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zst := zw.EncodeAll([]byte(content), nil)

	tests := []struct {
		name string
		data []byte
	}{
		{"access.log.2.gz", gz.Bytes()},
		{"access.log.3.zst", zst},
		{"misnamed.log", gz.Bytes()}, // recognised by its magic bytes, not its name
		{"plain.log", []byte(content)},
		{"tiny.log", []byte("1")}, // shorter than the magic
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			require.NoError(t, os.WriteFile(path, tt.data, 0o644))
			rc, err := Open(path, nil)
			require.NoError(t, err)
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			want := content
			if tt.name == "tiny.log" {
				want = "1"
			}
			assert.Equal(t, want, string(b))
		})
	}
	t.Run("stdin", func(t *testing.T) {
		rc, err := Open("-", bytes.NewReader(gz.Bytes()))
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, content, string(b))
	})
	t.Run("corrupt gzip", func(t *testing.T) {
		path := filepath.Join(dir, "bad.gz")
		require.NoError(t, os.WriteFile(path, []byte{0x1f, 0x8b, 0, 0}, 0o644))
		_, err := Open(path, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bad.gz: gzip:")
	})
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"access.log", "access.log.1", "access.log.2.gz", "other.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	got, err := Expand([]string{"-", filepath.Join(dir, "access.log*"), "plain-missing.csv"})
	require.NoError(t, err)
	assert.Equal(t, []string{"-", filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1"),
		filepath.Join(dir, "access.log.2.gz"), "plain-missing.csv"}, got)
	_, err = Expand([]string{filepath.Join(dir, "nothing*.log")})
	assert.EqualError(t, err, filepath.Join(dir, "nothing*.log")+": no file matches")
}

// compress returns content as a gzip or zstd stream.
func compress(t testing.TB, format string, content []byte) []byte {
	t.Helper()
	if format == "zstd" {
		zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		require.NoError(t, err)
		defer zw.Close()
		return zw.EncodeAll(content, nil)
	}
	var b bytes.Buffer
	gw := gzip.NewWriter(&b)
	_, _ = gw.Write(content)
	require.NoError(t, gw.Close())
	return b.Bytes()
}

// rawDecompress reads a stream with the bare decoder, up to its error: what
// the decompressor hands on before it finds the stream cut off.
func rawDecompress(format string, data []byte) ([]byte, error) {
	var r io.Reader
	if format == "zstd" {
		zr, err := zstd.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	} else {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		r = zr
	}
	return io.ReadAll(r)
}

func TestOpenTruncated(t *testing.T) {
	var content bytes.Buffer
	content.WriteString("latency_ms\n")
	for i := range 20000 {
		fmt.Fprintf(&content, "%d\n", i*7919%100003)
	}
	for _, format := range []string{"gzip", "zstd"} {
		data := compress(t, format, content.Bytes())
		for _, frac := range []float64{0.1, 0.37, 0.5, 0.93} {
			cut := int(float64(len(data)) * frac)
			t.Run(fmt.Sprintf("%s/%d", format, cut), func(t *testing.T) {
				raw, rawErr := rawDecompress(format, data[:cut])
				require.ErrorIs(t, rawErr, io.ErrUnexpectedEOF, "the bare decoder sees the cut")
				whole := raw[:bytes.LastIndexByte(raw, '\n')+1]

				rc, err := Open("-", bytes.NewReader(data[:cut]))
				require.NoError(t, err)
				got, err := io.ReadAll(rc)
				require.NoError(t, err, "a cut-off stream ends like a file, after its last whole line")
				assert.Equal(t, string(whole), string(got), "the whole lines, and not the partial one")
				tr := Truncated(rc)
				require.NotNil(t, tr)
				assert.Equal(t, format, tr.Format)
				assert.Equal(t, len(raw) > len(whole), tr.Partial)
				assert.Equal(t, int64(len(raw)), tr.Offset)
				assert.Contains(t, tr.Error(), fmt.Sprintf("-: the %s stream ends early, after %d bytes of data", format, len(raw)))
			})
		}
	}
	t.Run("binary streams are handed on whole", func(t *testing.T) {
		// Protobuf (its first byte no text starts with) has no lines: every
		// byte decompressed before the cut is handed on, none is "a
		// partial line" (the decoder counts the message the cut cuts; a
		// second count here counted it twice).
		reqs, _ := otlpTestRequests(50)
		_, pb := otlpEncodings(t, reqs)
		require.True(t, isBinaryLead(pb[0]))
		for _, format := range []string{"gzip", "zstd"} {
			data := compress(t, format, pb)
			cut := len(data) * 2 / 3
			raw, rawErr := rawDecompress(format, data[:cut])
			require.ErrorIs(t, rawErr, io.ErrUnexpectedEOF)
			require.Greater(t, len(raw), 0)
			require.NotEqual(t, byte('\n'), raw[len(raw)-1])
			rc, err := Open("-", bytes.NewReader(data[:cut]))
			require.NoError(t, err)
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.Equal(t, raw, got, format)
			tr := Truncated(rc)
			require.NotNil(t, tr, format)
			assert.False(t, tr.Partial, format)
			assert.NotContains(t, tr.Error(), "last line", format)
			_, errs := decodeOTLP(t, got, Options{})
			require.NotEmpty(t, errs)
			assert.Contains(t, errs[len(errs)-1].Error(), "protobuf message is cut off", format)
		}
	})
	t.Run("text that starts with a control byte is text", func(t *testing.T) {
		// docker compose logs --ansi always: each line starts with ESC;
		// its cut last line must still be held back, not read as a record.
		var b bytes.Buffer
		for i := range 5000 {
			fmt.Fprintf(&b, "\x1b[36mweb-1  |\x1b[0m 10.0.0.1 - - [02/Nov/2026:10:00:00 +0000] \"GET /%d HTTP/1.1\" 200 5 \"-\" \"-\" 0.%03d\n", i, i%1000)
		}
		for _, format := range []string{"gzip", "zstd"} {
			data := compress(t, format, b.Bytes())
			cut := len(data) / 2
			raw, _ := rawDecompress(format, data[:cut])
			whole := raw[:bytes.LastIndexByte(raw, '\n')+1]
			require.Less(t, len(whole), len(raw))
			rc, err := Open("-", bytes.NewReader(data[:cut]))
			require.NoError(t, err)
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.Equal(t, string(whole), string(got), format)
			require.NotNil(t, Truncated(rc))
			assert.True(t, Truncated(rc).Partial, format)
		}
	})
	t.Run("gzip cut after its data", func(t *testing.T) {
		// The deflate data are whole, the trailer (CRC, size) is missing:
		// every line is read, none is partial, and the cut is still told.
		data := compress(t, "gzip", []byte("latency_ms\n1\n2\n"))
		rc, err := Open("-", bytes.NewReader(data[:len(data)-8]))
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, "latency_ms\n1\n2\n", string(got))
		require.NotNil(t, Truncated(rc))
		assert.False(t, Truncated(rc).Partial)
	})
	t.Run("whole streams are not truncated", func(t *testing.T) {
		for _, format := range []string{"gzip", "zstd"} {
			// No final line break: a whole stream hands on its last bytes.
			rc, err := Open("-", bytes.NewReader(compress(t, format, []byte("latency_ms\n1\n2"))))
			require.NoError(t, err)
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			assert.Equal(t, "latency_ms\n1\n2", string(got), format)
			assert.Nil(t, Truncated(rc), format)
		}
		rc, err := Open("-", strings.NewReader("latency_ms\n1"))
		require.NoError(t, err)
		assert.Nil(t, Truncated(rc), "a plain input")
	})
	t.Run("a line longer than what is held back", func(t *testing.T) {
		long := bytes.Repeat([]byte("a"), maxHeld+maxHeld/2)
		data := compress(t, "gzip", append(append([]byte("x\n"), long...), '\n'))
		rc, err := Open("-", bytes.NewReader(data))
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, len(long)+3, len(got))
	})
}

func TestOpenCorrupt(t *testing.T) {
	data := compress(t, "gzip", []byte("latency_ms\n1\n2\n"))
	data[len(data)-8] ^= 0xff // the CRC
	rc, err := Open("-", bytes.NewReader(data))
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.Error(t, err)
	assert.Equal(t, "gzip: invalid checksum, after 15 bytes of decompressed data (the file is corrupt)", err.Error())
	assert.Nil(t, Truncated(rc), "corrupt is not cut off")

	var content bytes.Buffer
	for i := range 50000 {
		fmt.Fprintf(&content, "%d\n", i*7919%100003)
	}
	zst := compress(t, "zstd", content.Bytes())
	zst[len(zst)/2] ^= 0xff
	rc, err = Open("-", bytes.NewReader(zst))
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.Error(t, err)
	assert.Regexp(t, `^zstd: .*, after \d+ bytes of decompressed data \(the file is corrupt\)$`, err.Error())
}

func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir, nil)
	require.Error(t, err)
	assert.Equal(t, dir+": is a directory (give its files, or a glob: "+filepath.Join(dir, "*")+")", err.Error())
}

func TestOpenCounted(t *testing.T) {
	// The bytes counted are the file's, before decompression.
	data := compress(t, "gzip", bytes.Repeat([]byte("123\n"), 100000))
	name := filepath.Join(t.TempDir(), "a.gz")
	require.NoError(t, os.WriteFile(name, data, 0o644))
	var n int
	rc, err := OpenCounted(name, nil, func(k int) { n += k })
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	assert.Equal(t, 400000, len(got))
	assert.Equal(t, len(data), n)
}

// FuzzOpenCompressed reads gzip and zstd streams cut anywhere, with a byte
// changed or not: it never panics, and a stream that is only cut hands on
// whole lines of the original, or all of it.
func FuzzOpenCompressed(f *testing.F) {
	f.Add([]byte("latency_ms\n1\n2\n"), uint16(10), false, uint16(0), false)
	f.Add([]byte("a\nb"), uint16(1000), true, uint16(3), true)
	f.Add(bytes.Repeat([]byte("12\n"), 300), uint16(40), true, uint16(0), false)
	f.Fuzz(func(t *testing.T, content []byte, cut uint16, zst bool, flip uint16, doFlip bool) {
		format := "gzip"
		if zst {
			format = "zstd"
		}
		whole := compress(t, format, content)
		data := slices.Clone(whole[:min(int(cut), len(whole))])
		if doFlip && len(data) > 0 {
			data[int(flip)%len(data)] ^= 0x5a
		}
		rc, err := Open("-", bytes.NewReader(data))
		if err != nil {
			return // a header too short or bad
		}
		got, err := io.ReadAll(rc)
		if _, ok := rc.(*compressed); !ok {
			// Cut inside the magic bytes: a plain input.
			require.NoError(t, err)
			assert.Equal(t, data, got)
			return
		}
		if doFlip {
			return
		}
		require.NoError(t, err)
		tr := Truncated(rc)
		if len(data) == len(whole) {
			assert.Nil(t, tr)
			assert.Equal(t, content, got)
			return
		}
		require.NotNil(t, tr, "a cut stream is told")
		assert.True(t, bytes.HasPrefix(content, got), "a prefix of the original")
		if len(got) > 0 {
			assert.Equal(t, byte('\n'), got[len(got)-1], "ending after a whole line")
		}
	})
}

// OpenAs reads a file under another name: its errors and its cut-off
// report say the name, never the path (a spool of a remote source).
func TestOpenAs(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenAs(filepath.Join(dir, "gone.json"), "service checkout at http://jaeger", nil, nil)
	require.Error(t, err)
	assert.Equal(t, "service checkout at http://jaeger: no such file or directory", err.Error())
	assert.ErrorIs(t, err, fs.ErrNotExist)

	path := filepath.Join(dir, "spool.csv.gz")
	data := compress(t, "gzip", []byte(strings.Repeat("latency_ms\n7\n", 2000)))
	require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o644))
	rc, err := OpenAs(path, "events at clickhouse", nil, nil)
	require.NoError(t, err)
	defer rc.Close()
	_, err = io.ReadAll(rc)
	require.NoError(t, err)
	tr := Truncated(rc)
	require.NotNil(t, tr)
	assert.Equal(t, "events at clickhouse", tr.Name)
	assert.NotContains(t, tr.Error(), dir)
}
