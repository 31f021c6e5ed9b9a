package targettest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tunetimeout/tunetimeout/target"
)

// PBLine is the line of the nth (from 1) occurrence of s in data.
func PBLine(t *testing.T, data []byte, s string, nth int) int {
	t.Helper()
	at := 0
	for i := 0; i < nth; i++ {
		j := bytes.Index(data[at:], []byte(s))
		require.GreaterOrEqual(t, j, 0, "%q occurs fewer than %d times", s, nth)
		if i < nth-1 {
			at += j + len(s)
		} else {
			at += j
		}
	}
	return 1 + bytes.Count(data[:at], []byte("\n"))
}

// PBFind returns the object of a name.
func PBFind(t *testing.T, objs []target.Object, name string) target.Object {
	t.Helper()
	for _, o := range objs {
		if o.Name == name {
			return o
		}
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	t.Fatalf("no object %q in %q", name, names)
	return target.Object{}
}

// PBLinesInside fails unless every object and setting stands in the
// file, at a line from 1 to its last.
func PBLinesInside(t *testing.T, file string, data []byte, objs []target.Object) {
	t.Helper()
	lines := 1 + bytes.Count(data, []byte("\n"))
	check := func(what string, p target.Pos) {
		if p.File != file || p.Line < 1 || p.Line > lines {
			t.Fatalf("%s at %s: outside %s (%d lines)", what, p, file, lines)
		}
	}
	for _, o := range objs {
		check(o.Name, o.Pos)
		for _, s := range []*target.Setting[float64]{o.Timeout, o.PerTryTimeout, o.BackoffBase, o.BackoffMax, o.RetryBudget, o.HedgeDelay, o.ConnectTimeout, o.QueueTimeout} {
			if s != nil {
				check(o.Name, s.Pos)
			}
		}
		for _, s := range []*target.Setting[int]{o.Attempts, o.HedgeAttempts, o.MaxInFlight} {
			if s != nil {
				check(o.Name, s.Pos)
			}
		}
		if o.RetryOn != nil {
			check(o.Name, o.RetryOn.Pos)
		}
		if o.RetryNonIdempotent != nil {
			check(o.Name, o.RetryNonIdempotent.Pos)
		}
	}
}
