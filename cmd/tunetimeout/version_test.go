package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionLine(t *testing.T) {
	checkout := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "95e791b0"}, {Key: "vcs.time", Value: "2026-12-05T16:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		name, v, rev, when string
		info               *debug.BuildInfo
		want               string
	}{
		{"stamped by the release build", "v0.3.0", "0a1b2c3", "2026-12-05T17:00:00Z", checkout,
			"tunetimeout v0.3.0 (commit 0a1b2c3, built 2026-12-05T17:00:00Z, go1.26.8)"},
		{"a build from a modified checkout", "", "", "", checkout,
			"tunetimeout (devel) (commit 95e791b0+modified, built 2026-12-05T16:00:00Z, go1.26.8)"},
		{"go install module@version", "", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			"tunetimeout v0.3.0 (commit unknown, built unknown, go1.26.8)"},
		{"no build information", "", "", "", nil,
			"tunetimeout (devel) (commit unknown, built unknown, unknown)"},
	} {
		assert.Equal(t, c.want, versionLine(c.v, c.rev, c.when, c.info), c.name)
	}
}
