package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMD(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/users/{id}", "/users/{id}"},
		{"<script>alert(1)</script>", `\<script\>alert(1)\</script\>`},
		{"a|b", `a\|b`},
		{"*x* _y_ `z` [l](u) ~s~ &amp;", "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\~s\\~ \\&amp;"},
		{"two\nlines", "two lines"},
		{`back\slash`, `back\\slash`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, md(tt.in), tt.in)
	}
	assert.Equal(t, "````", codeFence("a ``` b"))
	assert.Equal(t, "```", codeFence("no ticks"))
}

// TestMarkdownEscapesInput: a payload reads as text; every table row keeps
// its columns.
func TestMarkdownEscapesInput(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, hostile()))
	out := b.String()
	assert.Contains(t, out, "## \\<script\\>alert(1)\\</script\\>\n\n3 calls")
	assert.Contains(t, out, `"\>\<img src=x onerror=alert(1)\>`)
	inFence := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		// Code spans show their content as it is.
		text := regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
		assert.NotRegexp(t, `(^|[^\\])<[a-zA-Z/]`, text, "raw HTML outside code: %q", line)
		if strings.HasPrefix(line, "|") {
			cells := len(strings.Split(strings.ReplaceAll(line, `\|`, ""), "|")) - 2
			switch {
			case strings.HasPrefix(line, "| # ") || strings.HasPrefix(line, "|--:|---|--:|---|"):
				assert.Equal(t, 4, cells, line)
			}
		}
	}
	assert.False(t, inFence, "fences are closed")
	assert.Contains(t, out, "```\n"+payloads[2]+"\n"+payloads[0]+"\n```", "snippets are code, verbatim")
}
