// Command tunetimeout recommends client timeouts, connection pools and retry
// policies from measured latency.
//
// Exit codes: 0 success; 1 the command ran and failed (unreadable input,
// nothing to analyse, a bad record under --strict); 2 the command line is
// wrong (unknown flag, bad flag value).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// An error may quote a file name or a value from the data: escaped,
	// but the line breaks between joined errors kept.
	fmt.Fprintf(stderr, "tunetimeout: %s\n", escape.Lines(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// usageError marks a wrong command line (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
