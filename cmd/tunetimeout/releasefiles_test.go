package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleaseFiles runs the hidden command the release build calls and
// reads back what it wrote: a man page a command, each from that
// command's own help, and the completion scripts.
func TestReleaseFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1764954000") // 2025-12-05
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"release-files", "--dir", dir}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())

	pages, err := filepath.Glob(filepath.Join(dir, "man", "*.1"))
	require.NoError(t, err)
	var names []string
	for _, p := range pages {
		names = append(names, filepath.Base(p))
	}
	assert.Contains(t, names, "tunetimeout.1")
	assert.Contains(t, names, "tunetimeout-check.1")
	assert.Contains(t, names, "tunetimeout-watch.1")
	assert.NotContains(t, names, "tunetimeout-release-files.1", "the hidden command has no page")

	check, err := os.ReadFile(filepath.Join(dir, "man", "tunetimeout-check.1"))
	require.NoError(t, err)
	assert.Contains(t, string(check), `.TH "TUNETIMEOUT" "1" "Dec 2025"`, "the date is SOURCE_DATE_EPOCH's")
	assert.Contains(t, string(check), `\fB--fail-on\fP="error"`, "the page lists check's own flags")

	bash, err := os.ReadFile(filepath.Join(dir, "completions", "tunetimeout.bash"))
	require.NoError(t, err)
	assert.Contains(t, string(bash), "__start_tunetimeout")
	for shell, want := range map[string]string{"zsh": "#compdef tunetimeout", "fish": "complete -c tunetimeout"} {
		body, err := os.ReadFile(filepath.Join(dir, "completions", "tunetimeout."+shell))
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(body), want), "%s completion lacks %q", shell, want)
	}

	// Broken: a --dir that is a file is an error, not a half-written tree.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	stderr.Reset()
	assert.NotEqual(t, 0, run(t.Context(), []string{"release-files", "--dir", file}, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "not a directory")
}
