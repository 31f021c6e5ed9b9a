package ingest

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
