// Package testbin builds the repository's tunetimeout binary once for a
// test package of the deploy module, and removes it when the package's
// tests end (Main).
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Tool returns the binary built from the repository at root (go build
// ./cmd/tunetimeout), building it at the first call; a failed build fails
// t with the compiler's output.
func Tool(t testing.TB, root string) string {
	t.Helper()
	once.Do(func() {
		dir, e := os.MkdirTemp("", "tunetimeout-deploy")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "tunetimeout")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/tunetimeout")
		cmd.Dir = root
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("go build ./cmd/tunetimeout: %v\n%s", err, out)
	}
	return path
}

// Main runs the package's tests, removes the binary Tool built, and
// exits with the tests' code: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
	os.Exit(code)
}
