package e2e

import (
	"net"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireBinary returns the path of a server binary, or skips the test (or
// fails it under TUNETIMEOUT_E2E=1) when it is not installed.
func requireBinary(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
		if _, err := os.Stat(dir + "/" + name); err == nil {
			return dir + "/" + name
		}
	}
	msg := name + " is not installed: apt-get install -y " + debianPackage
	if os.Getenv("TUNETIMEOUT_E2E") == "1" {
		t.Fatal(msg + " (TUNETIMEOUT_E2E=1 requires it)")
	}
	t.Skip(msg + " (or set TUNETIMEOUT_E2E=1 to make this a failure)")
	return ""
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
