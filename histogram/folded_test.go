package histogram

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFoldedAtLeast: the count of distinct folded groups is exact up to
// maxFoldedNames and says it is a lower bound beyond, however the folds
// arrive (one set, merged sets, a summary's list of names); it never gives
// the cap as if it were a count.
func TestFoldedAtLeast(t *testing.T) {
	s := NewSet()
	s.Limit(1)
	s.Group("/kept")
	for i := range 1000 {
		s.Group(fmt.Sprintf("/a/%d", i%500))
	}
	samples, groups := s.Folded()
	assert.Equal(t, []any{int64(1000), 500}, []any{samples, groups})
	assert.False(t, s.FoldedAtLeast(), "500 names are counted exactly")

	for i := range maxFoldedNames + 10 {
		s.Fold(fmt.Sprintf("/b/%d", i))
	}
	samples, groups = s.Folded()
	assert.EqualValues(t, 1000+maxFoldedNames+10, samples)
	assert.Equal(t, maxFoldedNames, groups)
	assert.True(t, s.FoldedAtLeast(), "the names beyond the cap are not remembered")

	// Folding a name it remembers does not make an exact count a bound.
	exact := NewSet()
	for range 3 {
		exact.Fold("/x")
	}
	_, groups = exact.Folded()
	assert.Equal(t, 1, groups)
	assert.False(t, exact.FoldedAtLeast())

	// Merged: the bound carries over, and a union past the cap is one.
	m := NewSet()
	m.Merge(exact)
	assert.False(t, m.FoldedAtLeast())
	m.Merge(s)
	assert.True(t, m.FoldedAtLeast())
	a, b := NewSet(), NewSet()
	for i := range maxFoldedNames / 2 {
		a.Fold(fmt.Sprintf("/a/%d", i))
		b.Fold(fmt.Sprintf("/b/%d", i))
	}
	a.Fold("/one more")
	require.False(t, a.FoldedAtLeast())
	a.Merge(b)
	_, groups = a.Folded()
	assert.Equal(t, maxFoldedNames, groups)
	assert.True(t, a.FoldedAtLeast())

	// A summary's list as long as the cap may have been cut there.
	names := make([]string, maxFoldedNames)
	for i := range names {
		names[i] = fmt.Sprintf("/s/%d", i)
	}
	fromLog := NewSet()
	fromLog.AddFolded(5, names[:10], false)
	assert.False(t, fromLog.FoldedAtLeast())
	fromLog.AddFolded(5, names, false)
	assert.True(t, fromLog.FoldedAtLeast())
	said := NewSet()
	said.AddFolded(5, names[:10], true)
	assert.True(t, said.FoldedAtLeast(), "a list the summary says it cut")

	// Long names: their bytes are bounded too.
	long := NewSet()
	name := strings.Repeat("x", 1<<20)
	for i := range 20 {
		long.foldName(fmt.Sprint(i, name))
	}
	_, groups = long.Folded()
	assert.Equal(t, 15, groups, "16 MiB of names")
	assert.True(t, long.FoldedAtLeast())
}
