package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newReleaseFiles is the hidden command the release build runs before it
// packs the archives (.goreleaser.yaml, before.hooks): the man pages of
// every command, made by cobra/doc's man generator from the commands'
// own help as docs/cli is made from it, and the completion scripts of
// cobra's completion command, for bash, zsh and fish, written under
// --dir. It is hidden: it is for the build, not for users.
func newReleaseFiles() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:    "release-files --dir DIR",
		Short:  "Write the man pages and shell completions the release archives carry",
		Hidden: true,
		Args:   noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeReleaseFiles(cmd.Root(), dir)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the directory to write man/ and completions/ into (required)")
	_ = c.MarkFlagRequired("dir")
	return c
}

// writeReleaseFiles writes dir/man/tunetimeout*.1 and
// dir/completions/tunetimeout.{bash,zsh,fish}. The man pages' date is
// SOURCE_DATE_EPOCH's where it is set (cobra/doc reads it), so a release
// build is the same on every run.
func writeReleaseFiles(root *cobra.Command, dir string) error {
	man := filepath.Join(dir, "man")
	completions := filepath.Join(dir, "completions")
	for _, d := range []string{man, completions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	source := "tunetimeout"
	if version != "" {
		source += " " + version
	}
	header := &doc.GenManHeader{Title: "TUNETIMEOUT", Section: "1", Source: source, Manual: "tunetimeout manual"}
	root.DisableAutoGenTag = true
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for shell, write := range map[string]func(string) error{
		"bash": func(f string) error { return root.GenBashCompletionFileV2(f, true) },
		"zsh":  root.GenZshCompletionFile,
		"fish": func(f string) error { return root.GenFishCompletionFile(f, true) },
	} {
		if err := write(filepath.Join(completions, "tunetimeout."+shell)); err != nil {
			return fmt.Errorf("%s completion: %w", shell, err)
		}
	}
	return nil
}
