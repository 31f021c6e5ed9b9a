package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/report"
)

// writeOutput writes what write produces to the file named output through a
// temporary file beside it, renamed over output once whole and only if ctx
// is not cancelled by then: a failed or interrupted run leaves neither a
// half-written file nor a temporary one, and never replaces a good file.
// The file keeps the mode of the one it replaces, 0644 when new. A
// symbolic link is followed (the file it names is replaced, the link
// kept); what is not a regular file (/dev/stdout, a device, a named pipe)
// is written to directly, as is a file in a directory that takes no new
// files.
func writeOutput(ctx context.Context, output string, write func(io.Writer) error) error {
	if resolved, err := filepath.EvalSymlinks(output); err == nil {
		output = resolved
	}
	st, statErr := os.Stat(output)
	if statErr == nil && !st.Mode().IsRegular() {
		return writeDirect(ctx, output, write)
	}
	tmp, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*")
	if err != nil {
		if statErr == nil && errors.Is(err, fs.ErrPermission) {
			return writeDirect(ctx, output, write)
		}
		return err
	}
	name := tmp.Name()
	temps.add(name)
	defer temps.remove(name) // gone by then when renamed
	bw := bufio.NewWriterSize(tmp, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if statErr == nil {
		mode = st.Mode().Perm()
	}
	if err := os.Chmod(name, mode); err != nil {
		return err
	}
	return os.Rename(name, output)
}

// writeDirect writes to output itself, for what cannot be replaced by a
// rename; an interrupted run may leave part of it written.
func writeDirect(ctx context.Context, output string, write func(io.Writer) error) error {
	f, err := os.OpenFile(output, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = context.Cause(ctx)
	if err == nil {
		err = write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// emitReport writes r in the format of write to the file named by output
// (writeOutput), or to the command's output when output is "" or "-".
func emitReport(cmd *cobra.Command, output string, write report.Writer, r *report.Report) error {
	if output == "" || output == "-" {
		return write(cmd.OutOrStdout(), r)
	}
	return writeOutput(cmd.Context(), output, func(w io.Writer) error { return write(w, r) })
}

// temps are the temporary files being written, removed by cleanup when a
// second signal ends the program at once.
var temps tempFiles

type tempFiles struct {
	mu    sync.Mutex
	names map[string]bool
}

func (t *tempFiles) add(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[string]bool{}
	}
	t.names[name] = true
}

// remove deletes the file (if it is still there) and forgets it.
func (t *tempFiles) remove(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	os.Remove(name)
	delete(t.names, name)
}

// cleanup deletes every temporary file still being written.
func (t *tempFiles) cleanup() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.names {
		os.Remove(name)
	}
	t.names = nil
}

// refuseInputAsOutput fails when the file output names is one of the
// inputs (a glob expanded): writing it would destroy the data being read.
func refuseInputAsOutput(flag, output string, inputs []string) error {
	if output == "" || output == "-" {
		return nil
	}
	out, err := os.Stat(output)
	if err != nil {
		return nil // a new file: no input
	}
	names, err := ingest.Expand(inputs)
	if err != nil {
		return nil // reading the inputs reports it
	}
	for _, name := range names {
		if name == "-" {
			continue
		}
		if in, err := os.Stat(name); err == nil && os.SameFile(in, out) {
			return fmt.Errorf("%s %s is also an input: writing it would destroy what is read", flag, output)
		}
	}
	return nil
}

// errInterrupted is the cause of the context a signal cancels.
var errInterrupted = errors.New("interrupted")

// interrupted is the cause a signal gives: "interrupted (SIGINT)".
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string {
	name := e.sig.String()
	switch e.sig.String() {
	case "interrupt":
		name = "SIGINT"
	case "terminated":
		name = "SIGTERM"
	}
	return "interrupted (" + name + ")"
}

func (e interrupted) Is(target error) bool { return target == errInterrupted }
