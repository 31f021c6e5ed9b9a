package budget

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pipeRefused = "not a regular file (a named pipe); an include is read only from a regular file"

// TestOpenIncludeRegularAfterOpen: the file opened is checked too, not only
// the path before it: a path that is a regular file when looked at and a
// pipe once opened (swapped in between) is refused as a pipe, not read.
func TestOpenIncludeRegularAfterOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "site.conf")
	require.NoError(t, os.WriteFile(p, []byte("# a regular file when looked at\n"), 0o644))
	opened := ""
	swapped := func(name string) (*os.File, error) {
		opened = name
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer w.Close()
		if _, err := w.WriteString("server { location / { proxy_pass http://127.0.0.1:1; } }\n"); err != nil {
			return nil, err
		}
		return r, nil
	}
	f, fi, err := openIncludeWith(p, swapped)
	assert.EqualError(t, err, pipeRefused)
	assert.True(t, IsNotIncludable(err))
	assert.Nil(t, f)
	assert.Nil(t, fi)
	assert.Equal(t, p, opened, "the file is opened once the path is found regular")

	// Unswapped, the same file is read.
	f, fi, err = OpenInclude(p)
	require.NoError(t, err)
	defer f.Close()
	assert.True(t, fi.Mode().IsRegular())
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, "# a regular file when looked at\n", string(data))
}

// TestOpenIncludeFIFOWithoutWriter: a named pipe with no writer, named by
// the path or put in its place once it was looked at, is refused at once,
// not waited on (a plain open of a pipe waits until a writer comes).
func TestOpenIncludeFIFOWithoutWriter(t *testing.T) {
	dir := t.TempDir()
	p, fifo := filepath.Join(dir, "site.conf"), filepath.Join(dir, "fifo")
	require.NoError(t, os.WriteFile(p, []byte("# regular\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan error, 2)
	go func() {
		_, _, err := openIncludeWith(p, func(string) (*os.File, error) { return openNonBlocking(fifo) })
		done <- err
		_, _, err = OpenInclude(fifo)
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			assert.EqualError(t, err, pipeRefused)
		case <-time.After(10 * time.Second):
			// Free the open that waits, so that the test ends.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			t.Fatal("the open of a named pipe with no writer waited")
		}
	}
}

// TestOpenIncludeDirectory: a directory opens (nginx's include globs read
// it); a missing path is the file system's error, not a refusal.
func TestOpenIncludeDirectory(t *testing.T) {
	dir := t.TempDir()
	f, fi, err := OpenInclude(dir)
	require.NoError(t, err)
	f.Close()
	assert.True(t, fi.IsDir())
	_, _, err = OpenInclude(filepath.Join(dir, "missing.conf"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.False(t, IsNotIncludable(err))
}
