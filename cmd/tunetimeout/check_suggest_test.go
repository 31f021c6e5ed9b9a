package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckSuggestRefusesForgedHeaders: a config named
// "x\n--- victim.conf\n+++ victim.conf\n.yaml" wrote its name raw into the
// diff's headers, and check --suggest | patch -p0 edited victim.conf. A
// name with a control character is refused, and nothing is written.
func TestCheckSuggestRefusesForgedHeaders(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(checkData, "envoy-250ms.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	hostile := filepath.Join(dir, "x\n--- victim.conf\n+++ victim.conf\n.yaml")
	require.NoError(t, os.WriteFile(hostile, body, 0o644))

	out, errOut, code := execute(t, "", "check", hostile, "--data", mixture, "--suggest")
	assert.Equal(t, 1, code, errOut)
	assert.Empty(t, out, "no diff at all")
	assert.Equal(t, fmt.Sprintf("tunetimeout: --suggest: config file %q: its name holds a control character (U+000A), which a diff header cannot hold safely: rename the file\n", hostile), errOut)

	// The same file under a plain name gets its diff.
	plain := filepath.Join(dir, "envoy.yaml")
	require.NoError(t, os.WriteFile(plain, body, 0o644))
	out, errOut, code = execute(t, "", "check", plain, "--data", mixture, "--suggest")
	assert.Equal(t, 1, code, errOut)
	assert.True(t, strings.HasPrefix(out, "--- "+plain+"\n+++ "+plain+"\n@@ "), out)
}
