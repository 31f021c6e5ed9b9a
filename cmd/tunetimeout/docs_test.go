package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliDocs is the directory of the command-line reference.
var cliDocs = filepath.Join("..", "..", "docs", "cli")

// TestCLIReference keeps docs/cli, the command-line reference, one file a
// command, equal to what the commands say of themselves: a file that
// differs, is missing or is not a command's fails the test (go test
// ./cmd/tunetimeout -run TestCLIReference -update rewrites the directory).
func TestCLIReference(t *testing.T) {
	want := cliReference(newRoot(nil, io.Discard, io.Discard))
	if *update {
		require.NoError(t, os.MkdirAll(cliDocs, 0o755))
		old, err := filepath.Glob(filepath.Join(cliDocs, "*.md"))
		require.NoError(t, err)
		for _, f := range old {
			if _, ok := want[filepath.Base(f)]; !ok {
				require.NoError(t, os.Remove(f))
			}
		}
		for name, body := range want {
			require.NoError(t, os.WriteFile(filepath.Join(cliDocs, name), body, 0o644))
		}
	}
	entries, err := os.ReadDir(cliDocs)
	require.NoError(t, err, "run go test ./cmd/tunetimeout -run TestCLIReference -update to create it")
	var have []string
	for _, e := range entries {
		have = append(have, e.Name())
		body, ok := want[e.Name()]
		if !ok {
			t.Errorf("docs/cli/%s is no command's reference: remove it, or go test ./cmd/tunetimeout -run TestCLIReference -update", e.Name())
			continue
		}
		got, err := os.ReadFile(filepath.Join(cliDocs, e.Name()))
		require.NoError(t, err)
		assert.Equal(t, string(body), string(got), "docs/cli/%s is out of date: go test ./cmd/tunetimeout -run TestCLIReference -update", e.Name())
	}
	for name := range want {
		if !slices.Contains(have, name) {
			t.Errorf("docs/cli/%s is missing: go test ./cmd/tunetimeout -run TestCLIReference -update", name)
		}
	}
}

// cliReference returns the Markdown reference of root and every command
// below it by file name, one file a command named as cobra/doc's
// GenMarkdownTree names them (tunetimeout_analyze.md) and laid out as its
// GenMarkdownCustom writes them without the auto-generated tag, so the
// files are the same on every run: the short description, the long one,
// the usage line, the examples, the flags as --help wraps them, links to
// the parent, the subcommands and the help topics the command names. Each
// help topic has a page too (tunetimeout_formats.md), which cobra/doc
// leaves out. (cobra/doc's GenMarkdownTree is not used: it stamps each
// file with the day it ran; its man generator is, in release-files.)
func cliReference(root *cobra.Command) map[string][]byte {
	files := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		files[docFile(c)] = commandDoc(c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	return files
}

func docFile(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

func commandDoc(c *cobra.Command) []byte {
	if c.IsAdditionalHelpTopicCommand() {
		return topicDoc(c)
	}
	c.InitDefaultHelpFlag()
	var b bytes.Buffer
	b.WriteString(docHeader)
	b.WriteString("## " + c.CommandPath() + "\n\n")
	b.WriteString(c.Short + "\n\n")
	if c.Long != "" {
		b.WriteString("### Synopsis\n\n```text\n" + strings.TrimRight(c.Long, "\n") + "\n```\n\n")
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "```sh\n%s\n```\n\n", c.UseLine())
	}
	if len(c.Aliases) > 0 {
		b.WriteString("Aliases: `" + strings.Join(c.Aliases, "`, `") + "`\n\n")
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "### Examples\n\n```sh\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(&b, "### Options\n\n```text\n%s\n```\n\n", strings.TrimRight(fs.FlagUsagesWrapped(helpWidth), " \n"))
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(&b, "### Options inherited from parent commands\n\n```text\n%s\n```\n\n", strings.TrimRight(fs.FlagUsagesWrapped(helpWidth), " \n"))
	}
	var also []string
	if p := c.Parent(); p != nil {
		also = append(also, fmt.Sprintf("* [%s](%s) - %s", p.CommandPath(), docFile(p), p.Short))
	}
	children := slices.Clone(c.Commands())
	slices.SortFunc(children, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
	for _, sub := range children {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			also = append(also, fmt.Sprintf("* [%s](%s) - %s", sub.CommandPath(), docFile(sub), sub.Short))
		}
	}
	for _, t := range topicsOf(c) {
		also = append(also, fmt.Sprintf("* [%s help %s](%s_%s.md) - %s", c.Root().Name(), t.name, c.Root().Name(), t.name, t.short))
	}
	if len(also) > 0 {
		b.WriteString("### See also\n\n" + strings.Join(also, "\n") + "\n")
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
}

const docHeader = "<!-- Generated from the commands' own help by TestCLIReference (go test ./cmd/tunetimeout -run TestCLIReference -update); do not edit. -->\n\n"

// topicDoc is the page of a help topic: its name as people ask for it,
// its summary and text, and links to the root and to the commands whose
// help names it.
func topicDoc(c *cobra.Command) []byte {
	var b bytes.Buffer
	root := c.Root()
	b.WriteString(docHeader)
	fmt.Fprintf(&b, "## %s help %s\n\n%s\n\n", root.Name(), c.Name(), c.Short)
	fmt.Fprintf(&b, "```text\n%s\n```\n\n", strings.TrimRight(c.Long, "\n"))
	also := []string{fmt.Sprintf("* [%s](%s) - %s", root.CommandPath(), docFile(root), root.Short)}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if !cmd.HasParent() {
			return
		}
		for _, t := range topicsOf(cmd) {
			if t.name == c.Name() {
				also = append(also, fmt.Sprintf("* [%s](%s) - %s", cmd.CommandPath(), docFile(cmd), cmd.Short))
			}
		}
	}
	walk(root)
	b.WriteString("### See also\n\n" + strings.Join(also, "\n") + "\n")
	return b.Bytes()
}
