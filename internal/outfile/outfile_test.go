package outfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func fails(err error) func(io.Writer) error {
	return func(w io.Writer) error {
		_, _ = io.WriteString(w, "half")
		return err
	}
}

// names lists a directory.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWrite(t *testing.T) {
	errWrite := errors.New("disk on fire")
	cancelled, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted")
	cancel(cause)
	tests := []struct {
		name     string
		old      string // "" no file before
		oldMode  os.FileMode
		ctx      context.Context
		write    func(io.Writer) error
		want     string // the file afterwards
		wantMode os.FileMode
		wantErr  error
	}{
		{"new file", "", 0, context.Background(), text("new"), "new", 0o644, nil},
		{"replaced, mode kept", "old", 0o600, context.Background(), text("new"), "new", 0o600, nil},
		{"write fails: old file kept", "old", 0o640, context.Background(), fails(errWrite), "old", 0o640, errWrite},
		{"write fails: no new file", "", 0, context.Background(), fails(errWrite), "", 0, errWrite},
		{"cancelled: old file kept", "old", 0o644, cancelled, text("new"), "old", 0o644, cause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.txt")
			if tt.old != "" {
				require.NoError(t, os.WriteFile(path, []byte(tt.old), tt.oldMode))
				require.NoError(t, os.Chmod(path, tt.oldMode))
			}
			var temps Temps
			err := temps.Write(tt.ctx, path, tt.write)
			assert.ErrorIs(t, err, tt.wantErr)
			if tt.wantErr == nil {
				require.NoError(t, err)
			}
			assert.Empty(t, temps.names, "no temporary file left registered")
			if tt.want == "" {
				assert.Empty(t, names(t, dir), "nothing left behind")
				return
			}
			assert.Equal(t, []string{"out.txt"}, names(t, dir), "no temporary file left behind")
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			st, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, tt.wantMode, st.Mode().Perm())
		})
	}
}

// TestWriteAllOrNothing: when one file fails, none is replaced, not even
// the ones written before it.
func TestWriteAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.json")
	require.NoError(t, os.WriteFile(a, []byte("old a"), 0o644))
	errWrite := errors.New("no space left")
	err := (&Temps{}).WriteAll(context.Background(), File{a, text("new a")}, File{b, fails(errWrite)})
	require.ErrorIs(t, err, errWrite)
	got, err := os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "old a", string(got), "a is not replaced when b fails")
	assert.Equal(t, []string{"a.yaml"}, names(t, dir))

	// Cancelled after every file was written: none is renamed.
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := func(w io.Writer) error { cancel(errors.New("SIGINT")); return text("new b")(w) }
	err = (*Temps)(nil).WriteAll(ctx, File{a, text("new a")}, File{b, stop})
	require.Error(t, err)
	got, err = os.ReadFile(a)
	require.NoError(t, err)
	assert.Equal(t, "old a", string(got))
	assert.Equal(t, []string{"a.yaml"}, names(t, dir))

	require.NoError(t, (*Temps)(nil).WriteAll(context.Background(), File{a, text("new a")}, File{b, text("new b")}))
	for path, want := range map[string]string{a: "new a", b: "new b"} {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
}

func TestBytes(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.json")
	require.NoError(t, (*Temps)(nil).WriteAll(context.Background(), Bytes(a, []byte("a: 1\n")), Bytes(b, nil)))
	for path, want := range map[string]string{a: "a: 1\n", b: ""} {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	assert.Equal(t, []string{"a.yaml", "b.json"}, names(t, dir))
}

// TestWriteNotAFile: a symbolic link is followed and kept; a named pipe is
// written to, not replaced.
func TestWriteNotAFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "report.txt")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
	link := filepath.Join(dir, "latest.txt")
	require.NoError(t, os.Symlink("report.txt", link))
	require.NoError(t, (&Temps{}).Write(context.Background(), link, text("new")))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link is kept")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	st, err = os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	read := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		read <- string(b)
	}()
	require.NoError(t, (&Temps{}).Write(context.Background(), fifo, text("into the pipe")))
	assert.Equal(t, "into the pipe", <-read)
	st, err = os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeNamedPipe, "still a pipe")
}

// TestCleanup: the temporary file being written is registered, and Cleanup
// removes it (what a second signal does before the program exits).
func TestCleanup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.hlog")
	var temps Temps
	err := temps.Write(context.Background(), path, func(w io.Writer) error {
		require.Len(t, temps.names, 1)
		require.Len(t, names(t, dir), 1, "the temporary file")
		temps.Cleanup()
		assert.Empty(t, names(t, dir), "Cleanup removed it")
		return text("late")(w)
	})
	require.Error(t, err, "the file it would rename is gone")
	assert.Empty(t, names(t, dir))
}
