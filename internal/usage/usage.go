// Package usage marks the errors that say the command line is wrong, not
// the data: an option that names a field, column or label the input does
// not have (--by rout), found only once the input is read, below the CLI.
// The CLI exits 2 for them, as for an unknown flag, so that `check`'s exit
// 1 ("findings") never stands for a typo.
package usage

import "fmt"

// Error is a wrong command line found while reading the input.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is fmt.Errorf marked as a wrong command line.
func Errorf(format string, a ...any) error { return &Error{fmt.Errorf(format, a...)} }
