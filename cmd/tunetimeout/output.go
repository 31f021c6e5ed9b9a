package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/ingest"
	"github.com/tunetimeout/tunetimeout/internal/outfile"
	"github.com/tunetimeout/tunetimeout/report"
)

// emitReport writes r in the format of write to the file named by output,
// whole or not at all (outfile), or to the command's output when output is
// "" or "-".
func emitReport(cmd *cobra.Command, output string, write report.Writer, r *report.Report) error {
	if output == "" || output == "-" {
		return write(cmd.OutOrStdout(), r)
	}
	return temps.Write(cmd.Context(), output, func(w io.Writer) error { return write(w, r) })
}

// formatHint adds to an unknown output format the likely slip behind it:
// -o (the format) given a file name, where --output was meant.
func formatHint(err error, format string) error {
	if strings.ContainsAny(format, "./\\") {
		return fmt.Errorf("%w: -o is the format; did you mean --output %s?", err, format)
	}
	return err
}

// temps are the temporary files being written, removed by main when a
// second signal ends the program at once.
var temps outfile.Temps

// refuseInputAsOutput fails when the file output names is one of the
// inputs (ingest.CheckOutput): writing it would destroy the data being read.
func refuseInputAsOutput(flag, output string, inputs []string) error {
	if err := ingest.CheckOutput(output, inputs); err != nil {
		return fmt.Errorf("%s %w", flag, err)
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

// stdinNotice tells a person at a terminal that the command waits for
// standard input (no file given, or "-"), which it would otherwise do in
// silence: a pipe or a file is read without a word.
func stdinNotice(cmd *cobra.Command, args []string) {
	if (len(args) == 0 || slices.Contains(args, "-")) && isTerminalInput(cmd.InOrStdin()) {
		fmt.Fprintln(cmd.ErrOrStderr(), "tunetimeout: reading standard input; Ctrl-D ends it")
	}
}

// isTerminalInput reports whether r is a terminal: a character device that
// is not /dev/null (where a job started without input reads nothing).
// Tests replace it.
var isTerminalInput = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
