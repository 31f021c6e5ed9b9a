package names

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGroupValue(t *testing.T) {
	for v, want := range map[string]string{
		"":           "-",
		"-":          `"-"`,
		"--":         "--",
		"/api":       "/api",
		"x y":        `"x y"`,
		"a\"b":       `"a\"b"`,
		"tab\there":  `"tab\there"`,
		"nbsp\u00a0": `"nbsp\u00a0"`,
		"nel\u0085":  `"nel\u0085"`,
		"é":          "é",
	} {
		assert.Equal(t, want, Value(v), "%q", v)
		b := FinishValue([]byte("k "+v), 2)
		assert.Equal(t, "k "+want, string(b), "%q appended", v)
	}
}

// TestSplit: the values joined as a group's name split back to themselves,
// and a name the rule cannot have written is an error.
func TestSplit(t *testing.T) {
	for _, values := range [][]string{
		{"GET", "/api"},
		{"x y", "z"},
		{"x", "y z"},
		{"-", ""},
		{"", "callee"},
		{`a"b`, "tab\there"},
		{"é", "nbsp\u00a0", "nel\u0085"},
		{`"quoted"`},
	} {
		words := make([]string, len(values))
		for i, v := range values {
			words[i] = Value(v)
		}
		name := strings.Join(words, " ")
		got, err := Split(name)
		if assert.NoError(t, err, name) {
			assert.Equal(t, values, got, name)
		}
	}
	for _, name := range []string{"a  b", `"a"b`, `"a`, " a"} {
		_, err := Split(name)
		assert.Error(t, err, "%q", name)
	}
}
