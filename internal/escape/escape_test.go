package escape

import (
	"encoding/json"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// hostile are names seen to forge report lines or break YAML: an SGR colour,
// an OSC 52 clipboard write, an 8-bit CSI, a bidi override, a newline that
// starts a fake line, DEL, a NUL, a byte that is not UTF-8, line separators.
var hostile = []string{
	"/a\x1b[31mred\x1b[0m",
	"\x1b]52;c;ZWNobyBoaQ==\x07",
	"/x\u009b2J",
	"/admin\u202e/gpj.exe",
	"/ok\n== evil: 1 calls ==",
	"del\x7f", "nul\x00", "bad\xffutf8", "sep\u2028par\u2029", "bom\ufeff", "tab\tcr\r",
	"\u2066isolate\u2069 \u200fRLM",
}

func TestVisible(t *testing.T) {
	tests := map[string]string{
		"/users/{id}":          "/users/{id}",
		"/café/日本":             "/café/日本",
		"/a\x1b[31mred":        `/a\x1b[31mred`,
		"/x\u009b2J":           `/x\u009b2J`,
		"/admin\u202e/gpj.exe": `/admin\u202e/gpj.exe`,
		"/ok\n== evil ==":      `/ok\x0a== evil ==`,
		"del\x7f":              `del\x7f`,
		"bad\xffutf8":          `bad\xffutf8`,
		"sep\u2028":            `sep\u2028`,
		`back\slash`:           `back\slash`,
	}
	for in, want := range tests {
		assert.Equal(t, want, Visible(in), "%q", in)
	}
	assert.Equal(t, "line 1\nname \\x1b\n", Lines("line 1\nname \x1b\n"), "Lines keeps line breaks")
	for _, s := range hostile {
		for _, r := range Visible(s) {
			require.False(t, Unsafe(r), "%q: %q left raw", s, r)
		}
	}
	s := "/plain/route"
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Visible(s) }), "clean text is not copied")
}

// TestQuote: the quoted form is read back as the same string by JSON, YAML
// and Go, and holds no unsafe character itself.
func TestQuote(t *testing.T) {
	for _, s := range append(hostile, "plain", `quo"te\`, "日本 ✓", "") {
		q := Quote(s)
		for _, r := range q {
			require.False(t, Unsafe(r), "%q: %q left raw in %s", s, r, q)
		}
		want := s
		if !utf8.ValidString(s) {
			want = string([]rune(s)) // U+FFFD for the bad byte
		}
		var fromJSON string
		require.NoError(t, json.Unmarshal([]byte(q), &fromJSON), q)
		assert.Equal(t, want, fromJSON)
		var fromYAML map[string]string
		require.NoError(t, yaml.Unmarshal([]byte("k: "+q+"\n"), &fromYAML), q)
		assert.Equal(t, want, fromYAML["k"])
		fromGo, err := strconv.Unquote(q)
		require.NoError(t, err, q)
		assert.Equal(t, want, fromGo)
	}
}

func TestJSON(t *testing.T) {
	for _, s := range hostile {
		doc, err := json.Marshal(map[string]string{"name": s})
		require.NoError(t, err)
		out := JSON(doc)
		for _, r := range string(out) {
			require.False(t, Unsafe(r), "%q: %q left raw in %s", s, r, out)
		}
		var back, orig map[string]string
		require.NoError(t, json.Unmarshal(out, &back))
		require.NoError(t, json.Unmarshal(doc, &orig))
		assert.Equal(t, orig, back, "the same values")
	}
	clean := []byte(`{"a": "b"}` + "\n")
	assert.Equal(t, clean, JSON(clean))
}
