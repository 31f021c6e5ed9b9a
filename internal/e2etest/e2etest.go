// Package e2etest holds the one rule for tests that need a real binary
// (nginx, HAProxy, Prometheus, Chromium, python3): without TUNETIMEOUT_E2E=1
// a missing binary skips the test, saying what to install; with it (as in
// .ci/run) the test fails instead.
package e2etest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireBinary returns the path of the binary name, or skips the test (or
// fails it under TUNETIMEOUT_E2E=1) with install in the message when it is
// missing. Debian keeps servers in /usr/sbin, which a non-root PATH lacks,
// so the usual directories are searched too.
func RequireBinary(t testing.TB, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/usr/local/bin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	msg := name + " is not installed: " + install
	if os.Getenv("TUNETIMEOUT_E2E") == "1" {
		t.Fatal(msg + " (TUNETIMEOUT_E2E=1 requires it)")
	}
	t.Skip(msg + " (or set TUNETIMEOUT_E2E=1 to make this a failure)")
	return ""
}

// RequireFile skips the test (or fails it under TUNETIMEOUT_E2E=1) with
// install in the message when path does not exist: a library a real binary
// needs, say.
func RequireFile(t testing.TB, path, install string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	msg := path + " is missing: " + install
	if os.Getenv("TUNETIMEOUT_E2E") == "1" {
		t.Fatal(msg + " (TUNETIMEOUT_E2E=1 requires it)")
	}
	t.Skip(msg + " (or set TUNETIMEOUT_E2E=1 to make this a failure)")
}
