package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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
// The file keeps the mode of the one it replaces, 0644 when new.
func writeOutput(ctx context.Context, output string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*")
	if err != nil {
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
	if st, err := os.Stat(output); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.Chmod(name, mode); err != nil {
		return err
	}
	return os.Rename(name, output)
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
