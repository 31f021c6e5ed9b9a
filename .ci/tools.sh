#!/usr/bin/env bash
# The release tools, pinned, built from the Go module proxy into
# $(go env GOPATH)/bin. go install builds each once (goreleaser 13 minutes and
# syft 9 on 2 cores); later runs on the same
# machine find the module and build caches and take seconds. Sourced by
# .ci/run; by hand: bash .ci/tools.sh.
set -euo pipefail
export PATH="/usr/local/go/bin:$(go env GOPATH)/bin:$PATH"
tools=(
  # GoReleaser: the release archives, checksums, SBOMs and Homebrew cask
  # (.goreleaser.yaml). v2.18 needs a newer Go than 1.26.
  github.com/goreleaser/goreleaser/v2@v2.17.0
  # syft: GoReleaser's sboms run it on every archive.
  github.com/anchore/syft/cmd/syft@v1.57.2
  # actionlint: the CI action's example workflow and steps (action.yml,
  # docs/examples/check.yml; deploy/action runs it).
  github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
  # Helm: lints and renders the chart (deploy/helm/tunetimeout; deploy/helm
  # runs it).
  helm.sh/helm/v4/cmd/helm@v4.3.2
)
for t in "${tools[@]}"; do
  start=$SECONDS
  go install "$t"
  echo "installed $t in $((SECONDS - start))s"
done
