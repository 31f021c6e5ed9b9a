// Command tunetimeout recommends client timeouts, connection pools and retry
// policies from measured latency.
//
// Exit codes: 0 success; 1 the command ran and failed (unreadable input,
// nothing to analyse, a bad record under --strict); 2 the command line is
// wrong (unknown flag, bad flag value); 130 interrupted by SIGINT or
// SIGTERM (the run stops at once, at any stage, and writes no --output).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tunetimeout/tunetimeout/internal/escape"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal cancels the run, which stops within a moment
		// at whatever stage it is (reading, merging, simulating,
		// reporting). A second signal, or a run still going after
		// stopGrace (blocked reading a pipe that sends nothing), ends
		// the program at once, its temporary files removed.
		sig := <-sigs
		cancel(interrupted{sig})
		select {
		case <-sigs:
		case <-time.After(stopGrace):
		}
		temps.Cleanup()
		fmt.Fprintf(os.Stderr, "tunetimeout: %v\n", interrupted{sig})
		os.Exit(130)
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}

// stopGrace is how long a cancelled run may take to stop by itself.
const stopGrace = 3 * time.Second

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, errInterrupted) {
		// Whatever the command was doing when it stopped: the signal is
		// the reason, and the exit code says so.
		fmt.Fprintf(stderr, "tunetimeout: %v\n", cause)
		return 130
	}
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
