package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version from the build information is used.
var version = ""

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of tunetimeout",
		Example: "  tunetimeout version",
		Args:    noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, goVersion := version, "unknown"
			if info, ok := debug.ReadBuildInfo(); ok {
				goVersion = info.GoVersion
				if v == "" {
					v = info.Main.Version
				}
			}
			if v == "" {
				v = "(devel)"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "tunetimeout %s (%s)\n", v, goVersion)
			return err
		},
	}
}
