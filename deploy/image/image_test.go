package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var dist = filepath.Join("..", "..", "dist")

// TestImage reads the image back from the OCI layout build wrote (run go
// run ./image --dist ../dist first; .ci/run does): both platforms, each
// running as a numeric non-root user with the binary as its entrypoint
// and the labels of this build; one layer holding only the binary, which
// runs and prints the stamped version and commit.
func TestImage(t *testing.T) {
	var meta metadata
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); os.IsNotExist(err) && os.Getenv("TUNETIMEOUT_E2E") == "" {
		t.Skip("no dist/: goreleaser release --snapshot --clean, then go run ./image --dist ../dist")
	} else {
		require.NoError(t, err)
	}
	p, err := layout.FromPath(filepath.Join(dist, "image"))
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	topManifest, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topManifest.Manifests, 1)
	assert.Equal(t, meta.Version, topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	var archs []string
	for _, d := range im.Manifests {
		archs = append(archs, d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, d.Platform.Architecture, cfg.Architecture)
		assert.Equal(t, "65532:65532", cfg.Config.User, "a numeric non-root user")
		assert.Equal(t, []string{Binary}, cfg.Config.Entrypoint)
		assert.Equal(t, Labels(meta), cfg.Config.Labels)
		files := layerFiles(t, img)
		assert.Equal(t, []string{Binary[1:]}, keys(files), "the binary is the only file: no shell")
		if d.Platform.Architecture == "amd64" {
			bin := filepath.Join(t.TempDir(), "tunetimeout")
			require.NoError(t, os.WriteFile(bin, files[Binary[1:]], 0o755))
			out, err := exec.Command(bin, "version").CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.True(t, strings.HasPrefix(string(out), "tunetimeout "+meta.Version+" (commit "+meta.Commit+","), "%s", out)
		}
	}
	assert.ElementsMatch(t, []string{"amd64", "arm64"}, archs)

	// The tarball for docker load holds the same linux/amd64 image.
	loaded, err := tarball.ImageFromPath(filepath.Join(dist, "tunetimeout_image_linux_amd64.tar"), nil)
	require.NoError(t, err)
	cfg, err := loaded.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "amd64", cfg.Architecture)
	assert.Equal(t, "65532:65532", cfg.Config.User)
}

// layerFiles reads an image's file system, its layers flattened: the
// regular files by name. Anything else but the directories above the
// binary (a link, a device: a shell would bring links) fails the test.
func layerFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	r := tar.NewReader(rc)
	files := map[string][]byte{}
	for {
		h, err := r.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		switch h.Typeflag {
		case tar.TypeDir:
			assert.True(t, strings.HasPrefix(Binary[1:], h.Name), "directory %s", h.Name)
		case tar.TypeReg:
			assert.Equal(t, int64(0o755), h.Mode, h.Name)
			body, err := io.ReadAll(r)
			require.NoError(t, err)
			files[h.Name] = body
		default:
			t.Errorf("%s: type %c in the image", h.Name, h.Typeflag)
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
