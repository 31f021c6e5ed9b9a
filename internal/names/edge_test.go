package names

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEdge(t *testing.T) {
	for _, tt := range []struct {
		name, caller, callee string
		ok                   bool
	}{
		{"frontend checkout", "frontend", "checkout", true},
		{"  frontend \t checkout\n", "frontend", "checkout", true}, // split where strings.Fields splits
		{"- checkout", "-", "checkout", true},                      // a missing caller
		{`"a\"b" c`, `"a\"b"`, "c", true},                          // quoted, kept as written
		{`"a b" c`, `"a b"`, "c", true},                            // a name with a space, quoted
		{`c "a b"`, "c", `"a b"`, true},
		{`"a" "b c" d`, "", "", false}, // three values
		{`"a b c`, "", "", false},      // a quote never closed: three words
		{"all", "", "", false},
		{"other", "", "", false},
		{"GET /users checkout", "", "", false},
		{"", "", "", false},
	} {
		caller, callee, ok := Edge(tt.name)
		assert.Equal(t, tt.ok, ok, "%q", tt.name)
		assert.Equal(t, tt.caller, caller, "%q", tt.name)
		assert.Equal(t, tt.callee, callee, "%q", tt.name)
	}
}

// EdgeName writes what Edge reads.
func TestEdgeName(t *testing.T) {
	assert.Equal(t, "frontend checkout", EdgeName("frontend", "checkout"))
	caller, callee, ok := Edge(EdgeName("-", "checkout"))
	assert.True(t, ok)
	assert.Equal(t, [2]string{"-", "checkout"}, [2]string{caller, callee})
}
