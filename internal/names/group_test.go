package names

import (
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
