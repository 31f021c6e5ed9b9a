package ingest

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
