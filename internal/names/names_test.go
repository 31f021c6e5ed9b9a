package names

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCap(t *testing.T) {
	short := strings.Repeat("a", MaxBytes)
	assert.Equal(t, short, Cap(short), "a name of MaxBytes is kept whole")

	long := "/api/" + strings.Repeat("é", 1<<20) // 2 MiB of two-byte characters
	got := Cap(long)
	assert.LessOrEqual(t, len(got), MaxBytes)
	assert.True(t, utf8.ValidString(got), "cut at a character boundary")
	assert.True(t, strings.HasPrefix(got, "/api/éé"))
	assert.Contains(t, got, "…[cut: 2097157 bytes, sha256 ")
	assert.Equal(t, got, Cap(long), "the same name, the same result")

	// Two long names that differ only past the cut stay two.
	other := long[:len(long)-2] + "x"
	assert.NotEqual(t, Cap(long), Cap(other))
	assert.Equal(t, []byte(got), CapBytes([]byte(long)))
	b := []byte("short")
	assert.Same(t, &b[0], &CapBytes(b)[0], "a short name is not copied")
}
