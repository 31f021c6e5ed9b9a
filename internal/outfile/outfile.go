// Package outfile writes output files whole or not at all: each through a
// temporary file beside it, renamed over it once complete and only if the
// run was not cancelled by then, so that a failed or interrupted run leaves
// neither a half-written file nor a temporary one, and never replaces a
// good file. The temporary files being written are kept in a Temps, whose
// Cleanup removes them when the program must end at once (a second signal).
package outfile

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// File is one file to write: its name and what writes its contents.
type File struct {
	Path  string
	Write func(io.Writer) error
}

// Bytes is the file named path that holds b.
func Bytes(path string, b []byte) File {
	return File{Path: path, Write: func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}}
}

// Temps is the set of temporary files being written. The zero value is
// ready to use; a nil *Temps writes the same way without keeping track.
type Temps struct {
	mu    sync.Mutex
	names map[string]bool
}

// Write writes what write produces to the file named path (WriteAll of
// one file).
func (t *Temps) Write(ctx context.Context, path string, write func(io.Writer) error) error {
	return t.WriteAll(ctx, File{Path: path, Write: write})
}

// WriteAll writes every file through a temporary file beside it, and
// renames the temporary files over their files only once all of them are
// written and ctx is not cancelled: an error or a cancellation while
// writing leaves every file as it was (a rename that fails once others
// were done, rare on one file system, leaves those done). A file keeps the mode of the one it replaces, 0644 when
// new. A symbolic link is followed (the file it names is replaced, the link
// kept); what is not a regular file (/dev/stdout, a device, a named pipe)
// is written to directly, as is a file in a directory that takes no new
// files: those are written last before the renames, and an interrupted
// run may leave part of them written.
func (t *Temps) WriteAll(ctx context.Context, files ...File) error {
	var staged []*stagedFile
	defer func() {
		for _, s := range staged {
			if s.tmp != "" {
				t.remove(s.tmp) // gone by then when renamed
			}
		}
	}()
	for _, f := range files {
		s, err := t.stage(f)
		if s != nil {
			staged = append(staged, s)
		}
		if err != nil {
			return err
		}
		if err := context.Cause(ctx); err != nil {
			return err
		}
	}
	for _, s := range staged {
		if s.tmp == "" {
			if err := writeDirect(ctx, s.path, s.write); err != nil {
				return err
			}
		}
	}
	for _, s := range staged {
		if s.tmp != "" {
			if err := os.Chmod(s.tmp, s.mode); err != nil {
				return err
			}
		}
	}
	for _, s := range staged {
		if s.tmp != "" {
			if err := os.Rename(s.tmp, s.path); err != nil {
				return err
			}
		}
	}
	return nil
}

// stagedFile is a file written to its temporary file, or (tmp "") one to
// be written directly.
type stagedFile struct {
	path, tmp string
	mode      os.FileMode
	write     func(io.Writer) error
}

// stage writes f to a temporary file beside it, or returns it to be
// written directly. A temporary file it made is returned with an error
// too, for the caller to remove.
func (t *Temps) stage(f File) (*stagedFile, error) {
	path := f.Path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	st, statErr := os.Stat(path)
	if statErr == nil && !st.Mode().IsRegular() {
		return &stagedFile{path: path, write: f.Write}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		if statErr == nil && errors.Is(err, fs.ErrPermission) {
			return &stagedFile{path: path, write: f.Write}, nil
		}
		return nil, err
	}
	s := &stagedFile{path: path, tmp: tmp.Name(), mode: 0o644}
	if statErr == nil {
		s.mode = st.Mode().Perm()
	}
	t.add(s.tmp)
	bw := bufio.NewWriterSize(tmp, 64<<10)
	err = f.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	return s, err
}

// writeDirect writes to path itself, for what cannot be replaced by a
// rename; an interrupted run may leave part of it written.
func writeDirect(ctx context.Context, path string, write func(io.Writer) error) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (t *Temps) add(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[string]bool{}
	}
	t.names[name] = true
}

// remove deletes the file (if it is still there) and forgets it.
func (t *Temps) remove(name string) {
	if t == nil {
		os.Remove(name)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	os.Remove(name)
	delete(t.names, name)
}

// Cleanup deletes every temporary file still being written.
func (t *Temps) Cleanup() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.names {
		os.Remove(name)
	}
	t.names = nil
}
