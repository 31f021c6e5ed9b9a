// Package release tests the artifacts of the release build in ../../dist,
// which `goreleaser release --snapshot --clean` writes (.ci/run runs it
// first). Without dist/ the tests skip, unless TUNETIMEOUT_E2E is set:
// then a missing dist/ fails them.
package release

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var dist = filepath.Join("..", "..", "dist")

// artifact is one entry of dist/artifacts.json, GoReleaser's list of what
// it built.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
}

type metadata struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
}

func readDist(t *testing.T) ([]artifact, metadata) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(dist, "artifacts.json"))
	if os.IsNotExist(err) && os.Getenv("TUNETIMEOUT_E2E") == "" {
		t.Skip("no dist/: run goreleaser release --snapshot --clean first (TUNETIMEOUT_E2E=1 makes this a failure)")
	}
	require.NoError(t, err)
	var arts []artifact
	require.NoError(t, json.Unmarshal(body, &arts))
	body, err = os.ReadFile(filepath.Join(dist, "metadata.json"))
	require.NoError(t, err)
	var meta metadata
	require.NoError(t, json.Unmarshal(body, &meta))
	return arts, meta
}

// TestArchives: one archive a platform, each listed in checksums.txt with
// its true sum and described by an SBOM, and the linux/amd64 one holds
// the binary, the man pages and the completions.
func TestArchives(t *testing.T) {
	arts, _ := readDist(t)
	sums := map[string]string{}
	body, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "checksums.txt line %q", line)
		sums[name] = sum
	}
	platforms := map[string]bool{}
	sboms := map[string]bool{}
	for _, a := range arts {
		if a.Type == "SBOM" {
			sboms[a.Name] = true
		}
	}
	for _, a := range arts {
		if a.Type != "Archive" {
			continue
		}
		platforms[a.Goos+"/"+a.Goarch] = true
		assert.Equal(t, sums[a.Name], fileSum(t, a.Path), "checksums.txt's sum of %s", a.Name)
		assert.True(t, sboms[a.Name+".sbom.json"], "no SBOM of %s", a.Name)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		assert.True(t, platforms[p], "no archive for %s", p)
	}
	files := archiveFiles(t, linuxArchive(t, arts))
	for _, f := range []string{"tunetimeout", "README.md", "man/tunetimeout.1", "man/tunetimeout-check.1", "completions/tunetimeout.bash", "completions/tunetimeout.zsh", "completions/tunetimeout.fish"} {
		assert.Contains(t, files, f)
	}
}

// TestVersionFromArchive runs the linux/amd64 binary out of its archive:
// it prints the version GoReleaser stamped and the commit checked out.
func TestVersionFromArchive(t *testing.T) {
	arts, meta := readDist(t)
	bin := filepath.Join(t.TempDir(), "tunetimeout")
	require.NoError(t, os.WriteFile(bin, archiveFiles(t, linuxArchive(t, arts))["tunetimeout"], 0o755))
	out, err := exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	assert.Equal(t, meta.Commit, strings.TrimSpace(string(head)))
	assert.True(t, strings.HasPrefix(string(out), "tunetimeout "+meta.Version+" (commit "+meta.Commit+", built "),
		"version printed %q, want version %s and commit %s stamped", out, meta.Version, meta.Commit)
	assert.NotContains(t, meta.Version, "devel")
}

// TestHomebrewCask: the cask names this version and the sums of the
// darwin archives it installs.
func TestHomebrewCask(t *testing.T) {
	arts, meta := readDist(t)
	body, err := os.ReadFile(filepath.Join(dist, "homebrew", "Casks", "tunetimeout.rb"))
	require.NoError(t, err)
	cask := string(body)
	assert.Contains(t, cask, `version "`+meta.Version+`"`)
	assert.Contains(t, cask, `binary "tunetimeout"`)
	for _, a := range arts {
		if a.Type == "Archive" && a.Goos == "darwin" {
			assert.Contains(t, cask, fileSum(t, a.Path), "the cask's sum of %s", a.Name)
		}
	}
}

func linuxArchive(t *testing.T, arts []artifact) string {
	for _, a := range arts {
		if a.Type == "Archive" && a.Goos == "linux" && a.Goarch == "amd64" {
			return a.Path
		}
	}
	t.Fatal("no linux/amd64 archive in dist/artifacts.json")
	return ""
}

// archiveFiles reads a .tar.gz whole: the regular files by name.
func archiveFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", path))
	require.NoError(t, err)
	defer f.Close()
	z, err := gzip.NewReader(f)
	require.NoError(t, err)
	r := tar.NewReader(z)
	files := map[string][]byte{}
	for {
		h, err := r.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			body, err := io.ReadAll(r)
			require.NoError(t, err)
			files[h.Name] = body
		}
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", path))
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
