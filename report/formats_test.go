package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFormatsRegistry: one registry says which formats write a report,
// which a policy alone, and which embed the snippets; the errors list
// what the asking command accepts.
func TestFormatsRegistry(t *testing.T) {
	assert.Equal(t, []string{"html", "json", "markdown", "text"}, Formats())
	assert.Equal(t, []string{"json", "text"}, PolicyFormats())
	for name, want := range map[string]bool{"html": true, "markdown": true, "text": false, "json": false, "yaml": false} {
		assert.Equal(t, want, EmbedsSnippets(name), name)
	}
	w, err := Lookup("markdown")
	require.NoError(t, err)
	assert.NotNil(t, w)
	_, err = Lookup("yaml")
	assert.EqualError(t, err, `unknown output format "yaml" (known: html, json, markdown, text)`)
	_, err = LookupPolicy("html")
	assert.EqualError(t, err, `unknown output format "html" (known: json, text)`)
	assert.Equal(t, []string{"json", "markdown", "sarif", "text"}, CheckFormats())
	_, err = LookupCheck("html")
	assert.EqualError(t, err, `unknown output format "html" (known: json, markdown, sarif, text)`)
	_, err = Lookup("sarif")
	assert.Error(t, err, "sarif writes checks, not reports")
}
