// Package budget bounds what one run reads of configuration files: the
// bytes of every file and include, and the nodes built from them (YAML
// nodes counted with their aliases expanded, the words of an nginx
// config). A config is a few kilobytes; without a bound on the whole run,
// a small file that names a large one many times (nginx's include, YAML's
// anchors and aliases) takes the machine, however small each file is.
//
// One Budget serves a whole run: `check` reads every config and include
// against one, and the nginx config named by usage.NginxConf is read with
// its includes against one. What is spent is not given back: the bound
// is on the work, not on what is held at the end.
package budget

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/tunetimeout/tunetimeout/internal/human"
)

// The bounds of one run, stated in check --help and docs/input.md.
const (
	// MaxBytes bounds the bytes read of every config file and include of
	// a run, and the bytes YAML aliases add by repeating values.
	MaxBytes = 64 << 20
	// MaxNodes bounds the nodes read from them: YAML nodes with aliases
	// expanded, each property a Spring file flattens to (a segment of its
	// key each), the words of an nginx config, and what an object repeats
	// from its resource (each host of a route).
	MaxNodes = 1 << 20
	// MaxFileBytes bounds one config file or include: configs are
	// kilobytes, and a read must be bounded before the run's budget is
	// known to be enough.
	MaxFileBytes = 16 << 20
)

// ErrSpent is the error of a read beyond a budget; errors.Is finds it in
// the error that says which bound it hit.
var ErrSpent = errors.New("over the budget of a run")

// Budget is what is left to read in one run. The zero value has nothing
// left; New returns a full one.
type Budget struct {
	bytes, nodes int64
}

// New returns the budget of one run: MaxBytes and MaxNodes.
func New() *Budget { return &Budget{bytes: MaxBytes, nodes: MaxNodes} }

// spentError says which bound a read went over.
type spentError struct{ msg string }

func (e *spentError) Error() string        { return e.msg }
func (e *spentError) Is(target error) bool { return target == ErrSpent }

// Bytes takes n bytes of what ("include \"big.conf\"", "values YAML
// aliases repeat"); the error names the byte bound once the run has read more.
func (b *Budget) Bytes(n int64, what string) error {
	if n <= b.bytes {
		b.bytes -= n
		return nil
	}
	b.bytes = 0
	return &spentError{fmt.Sprintf("%s: over the byte budget of one run, %s in all", what, human.Bytes(MaxBytes))}
}

// Nodes takes n nodes of what ("YAML nodes with aliases expanded", "nginx
// words"); the error names the node bound once the run has read more.
func (b *Budget) Nodes(n int64, what string) error {
	if n <= b.nodes {
		b.nodes -= n
		return nil
	}
	b.nodes = 0
	return &spentError{fmt.Sprintf("%s: over the node budget of one run, %s nodes in all", what, human.Count(MaxNodes))}
}

// NodesLeft is how many nodes the run may still read.
func (b *Budget) NodesLeft() int64 { return b.nodes }

// BytesLeft is how many bytes the run may still read.
func (b *Budget) BytesLeft() int64 { return b.bytes }

// Includable refuses a file a config includes that is neither a regular
// file nor a directory (a *NotIncludable): a device may give bytes for
// ever and opening a named pipe waits for a writer. OpenInclude checks it
// before the open and again on the open file.
func Includable(m fs.FileMode) error {
	if m.IsRegular() || m.IsDir() {
		return nil
	}
	kind := "not a regular file"
	switch {
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	}
	return &NotIncludable{Kind: kind}
}
