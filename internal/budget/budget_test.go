package budget

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBudget: what is taken is gone for the rest of the run; the read that
// passes a bound fails with an error naming it, and so does every read
// after it.
func TestBudget(t *testing.T) {
	b := New()
	assert.NoError(t, b.Nodes(MaxNodes-10, "YAML nodes"))
	assert.NoError(t, b.Nodes(10, "nginx words"), "exactly the budget")
	err := b.Nodes(1, "nginx words")
	assert.EqualError(t, err, "nginx words: over the node budget of one run, 1,048,576 nodes in all")
	assert.True(t, errors.Is(err, ErrSpent))
	assert.Error(t, b.Nodes(0+1, "YAML nodes"))
	assert.NoError(t, b.Nodes(0, "YAML nodes"), "nothing more is always there")

	assert.NoError(t, b.Bytes(40<<20, "a.conf"))
	assert.EqualValues(t, 24<<20, b.BytesLeft())
	assert.EqualError(t, b.Bytes(24<<20+1, "b.conf"), "b.conf: over the byte budget of one run, 64 MiB in all")
	assert.EqualValues(t, 0, b.BytesLeft(), "a failed read leaves nothing for the next")
}

// TestIncludable: a regular file and a directory are read, a device, a
// pipe and a socket are named and refused.
func TestIncludable(t *testing.T) {
	assert.NoError(t, Includable(0o644))
	assert.NoError(t, Includable(fs.ModeDir|0o755))
	assert.EqualError(t, Includable(fs.ModeDevice|fs.ModeCharDevice|0o666), "not a regular file (a device); an include is read only from a regular file")
	assert.EqualError(t, Includable(fs.ModeNamedPipe|0o644), "not a regular file (a named pipe); an include is read only from a regular file")
	assert.EqualError(t, Includable(fs.ModeSocket|0o755), "not a regular file (a socket); an include is read only from a regular file")
}
