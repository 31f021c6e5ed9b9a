package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIReference keeps docs/cli.md, the command-line reference, equal
// to what the commands say of themselves (go test ./cmd/tunetimeout
// -update rewrites it).
func TestCLIReference(t *testing.T) {
	got := cliReference(newRoot(nil, io.Discard, io.Discard))
	path := filepath.Join("..", "..", "docs", "cli.md")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/tunetimeout -update to create it")
	assert.Equal(t, string(want), got, "docs/cli.md is out of date: go test ./cmd/tunetimeout -update")
}

// cliReference writes the reference of root and its commands in Markdown:
// each command's description, usage, examples and flags, as --help shows
// them.
func cliReference(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("<!-- Generated from the commands' own help by TestCLIReference (go test ./cmd/tunetimeout -update); do not edit. -->\n\n")
	cmds := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			cmds = append(cmds, c)
		}
	}
	for _, c := range cmds[1:] {
		b.WriteString("- [`" + c.CommandPath() + "`](#" + strings.ReplaceAll(c.CommandPath(), " ", "-") + "): " + c.Short + "\n")
	}
	for _, c := range cmds {
		b.WriteString("\n## " + c.CommandPath() + "\n\n")
		b.WriteString(c.Short + ".\n\n")
		if c.Long != "" {
			b.WriteString("```text\n" + strings.TrimRight(c.Long, "\n") + "\n```\n\n")
		}
		if c.Runnable() {
			b.WriteString("Usage:\n\n```text\n" + c.UseLine() + "\n```\n\n")
		}
		if c.Example != "" {
			b.WriteString("Examples:\n\n```sh\n" + strings.TrimRight(c.Example, "\n") + "\n```\n\n")
		}
		if c.HasAvailableLocalFlags() {
			b.WriteString("Flags:\n\n```text\n" + strings.TrimRight(c.LocalFlags().FlagUsages(), "\n") + "\n```\n")
		}
	}
	return b.String()
}
