package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version, commit and date are stamped at build time, as the release build
// (.goreleaser.yaml) does:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=0a1b2c3 -X main.date=2026-12-05T17:00:00Z"
//
// Unstamped, each comes from the build information instead: the module
// version (go install module@version sets it) and the vcs.revision and
// vcs.time settings that go build records from a checkout.
var version, commit, date = "", "", ""

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of tunetimeout",
		Long: `version prints the version, the commit it was built from, when that was and
the Go release that built it, on one line. A release build has them stamped in;
any other build says what the Go build information knows: the module version
of go install module@version, the commit and time of a build from a checkout,
and "unknown" for what it does not.`,
		Example: "  tunetimeout version",
		Args:    noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(version, commit, date, info))
			return err
		},
	}
}

// versionLine is the line version prints: the stamped values first, then
// what info (nil when the binary has none) records, then "(devel)" or
// "unknown".
func versionLine(v, rev, when string, info *debug.BuildInfo) string {
	goVersion, modified, stamped := "unknown", false, rev != ""
	if info != nil {
		goVersion = info.GoVersion
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.time":
				if when == "" {
					when = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true" && !stamped
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if rev == "" {
		rev = "unknown"
	} else if modified {
		rev += "+modified"
	}
	if when == "" {
		when = "unknown"
	}
	return fmt.Sprintf("tunetimeout %s (commit %s, built %s, %s)", v, rev, when, goVersion)
}
