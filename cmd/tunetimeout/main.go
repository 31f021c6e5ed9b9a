// Command tunetimeout recommends client timeouts, connection pools and retry
// policies from measured latency.
//
// Exit codes: 0 success; 1 the command ran and failed (unreadable input,
// nothing to analyse, a bad record under --strict); 2 the command line is
// wrong (unknown command, missing or extra arguments, unknown flag, bad
// flag value, a --by the input does not have); 130 interrupted by SIGINT or
// SIGTERM (the run stops at once, at any stage, and writes no --output).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tunetimeout/tunetimeout/internal/escape"
	"github.com/tunetimeout/tunetimeout/internal/usage"
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
	if err != nil && !errors.As(err, new(commandError)) {
		if _, rest, ferr := root.Find(args); ferr != nil {
			// The only error of Find: the first word names no command.
			err = unknownCommand(root, rest)
		}
	}
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
	return exitCode(err)
}

// exitCode is 2 for a wrong command line, 1 for any other error. Cobra
// checks the command line (the command's name, its flags and their values,
// its arguments, flags required or exclusive) before it runs the command,
// with errors of no type of its own: an error that did not come from a
// command's RunE (commandError) is the command line's. A command marks
// its own (usageError), and so do the packages below for an option that
// names what the input does not have, such as --by rout (usage.Error).
func exitCode(err error) int {
	if !errors.As(err, new(commandError)) || errors.As(err, new(usageError)) || errors.As(err, new(*usage.Error)) {
		return 2
	}
	return 1
}

// usageError marks a wrong command line (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// commandError is an error a command's RunE returned: the command line
// passed cobra's checks and the command ran (markRuns).
type commandError struct{ err error }

func (e commandError) Error() string { return e.err.Error() }
func (e commandError) Unwrap() error { return e.err }

// markRuns wraps the RunE of root and every command under it so that the
// errors they return are told from cobra's (exitCode).
func markRuns(root *cobra.Command) {
	if runE := root.RunE; runE != nil {
		root.RunE = func(c *cobra.Command, args []string) error {
			if err := runE(c, args); err != nil {
				return commandError{err}
			}
			return nil
		}
	}
	for _, sub := range root.Commands() {
		markRuns(sub)
	}
}

// unknownCommand is the error for a first word that names no command, in
// one line. Cobra's own lists its suggestions after tabs, which the
// escaping of errors (they may quote data) would print as \x09.
func unknownCommand(root *cobra.Command, args []string) error {
	name := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			name = a
			break
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", name, root.Name())
	if s := root.SuggestionsFor(name); len(s) > 0 {
		return usageError{fmt.Errorf("%s; did you mean %s?", msg, strings.Join(s, " or "))}
	}
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usageError{fmt.Errorf("%s; the commands are %s", msg, strings.Join(names, ", "))}
}

// noArgs is cobra.NoArgs as a usage error that says what to give instead.
func noArgs(instead string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if instead == "" {
			return usageError{fmt.Errorf("%s takes no arguments (got %q)", c.Name(), args[0])}
		}
		return usageError{fmt.Errorf("%s reads no files (got %q): %s", c.Name(), args[0], fmt.Sprintf(instead, args[0]))}
	}
}
