// Command image builds tunetimeout's container image from the linux
// binaries of the release build (dist/, goreleaser release --snapshot
// --clean), with no Docker engine and no registry: go-containerregistry
// lays one layer, the binary alone, on an empty OCI base and writes the
// image as an OCI layout (dist/image, an index of linux/amd64 and
// linux/arm64) and as a tarball `docker load` and `podman load` read
// (dist/tunetimeout_image_linux_amd64.tar). The image runs as a numeric
// non-root user, has no shell and carries the OCI labels of
// https://github.com/opencontainers/image-spec/blob/main/annotations.md.
//
//	go run ./image --dist ../dist
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Binary is where the binary lies in the image, and User the user it runs
// as: 65532, the "nonroot" user of distroless images, numeric so that no
// /etc/passwd is needed and Kubernetes' runAsNonRoot can verify it.
const (
	Binary = "/usr/local/bin/tunetimeout"
	User   = "65532:65532"
	Repo   = "ghcr.io/tunetimeout/tunetimeout"
)

type artifact struct {
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
}

type metadata struct {
	Version string    `json:"version"`
	Commit  string    `json:"commit"`
	Date    time.Time `json:"date"`
}

func main() {
	dist := flag.String("dist", "dist", "GoReleaser's dist/ directory")
	flag.Parse()
	if err := build(*dist); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(dist string) error {
	var arts []artifact
	var meta metadata
	if err := readJSON(filepath.Join(dist, "artifacts.json"), &arts); err != nil {
		return err
	}
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var amd64 v1.Image
	for _, a := range arts {
		if a.Type != "Binary" || a.Goos != "linux" {
			continue
		}
		img, err := image(filepath.Join(dist, "..", a.Path), a.Goarch, meta)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: a.Goarch},
		}})
		if a.Goarch == "amd64" {
			amd64 = img
		}
	}
	if amd64 == nil {
		return fmt.Errorf("no linux/amd64 binary in %s/artifacts.json", dist)
	}
	dir := filepath.Join(dist, "image")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": meta.Version,
	})); err != nil {
		return err
	}
	tag, err := name.NewTag(Repo + ":" + meta.Version)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(filepath.Join(dist, "tunetimeout_image_linux_amd64.tar"), tag, amd64)
}

// image is one platform's image: the binary as its one layer, dated at
// the commit so that one commit builds the same image twice.
func image(bin, arch string, meta metadata) (v1.Image, error) {
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var layer bytes.Buffer
	w := tar.NewWriter(&layer)
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: meta.Date}); err != nil {
			return nil, err
		}
	}
	if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: Binary[1:], Mode: 0o755, Size: int64(len(body)), ModTime: meta.Date}); err != nil {
		return nil, err
	}
	if _, err := w.Write(body); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{
		Created: v1.Time{Time: meta.Date}, CreatedBy: "deploy/image: " + Binary,
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: meta.Date}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{Binary}
	cfg.Config.Cmd = []string{"--help"}
	cfg.Config.Labels = Labels(meta)
	return mutate.ConfigFile(img, cfg)
}

// Labels are the image's OCI annotations, as labels of its config.
func Labels(meta metadata) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "tunetimeout",
		"org.opencontainers.image.description": "Recommend client timeouts, pools and retry policies from measured latency",
		"org.opencontainers.image.source":      "https://github.com/tunetimeout/tunetimeout",
		"org.opencontainers.image.url":         "https://github.com/tunetimeout/tunetimeout",
		"org.opencontainers.image.version":     meta.Version,
		"org.opencontainers.image.revision":    meta.Commit,
		"org.opencontainers.image.created":     meta.Date.UTC().Format(time.RFC3339),
	}
}

func readJSON(path string, v any) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
