#!/usr/bin/env bash
# scripts/helm.sh - Helm, built once from its Go module into a cache folder
# outside the repo, then run with the arguments given:
#
#   scripts/helm.sh lint deploy/helm/sidestream
#   scripts/helm.sh template sidestream deploy/helm/sidestream -f my-values.yaml
#   scripts/helm.sh --bin            # only build it (if needed) and print its path
#
# Nothing is downloaded but Go modules from the Go module proxy: the binary
# is `go install helm.sh/helm/v3/cmd/helm@$SIDESTREAM_HELM_VERSION`, stamped
# the way Helm's own Makefile stamps it. The first build takes a few minutes
# on 2 cores; after that the cached binary starts at once.
#
# Environment:
#   SIDESTREAM_HELM_VERSION   Helm's module version (default v3.22.0)
#   SIDESTREAM_CACHE          cache folder (default ~/.cache/sidestream)
set -euo pipefail

HELM_VERSION="${SIDESTREAM_HELM_VERSION:-v3.22.0}"
CACHE="${SIDESTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sidestream}"
BIN_DIR="$CACHE/helm-$HELM_VERSION"
HELM="$BIN_DIR/helm"

build() {
  local tmp
  tmp="$(mktemp -d "$CACHE/helm-build.XXXXXX")"
  # Helm's Makefile stamps its version and the Kubernetes minor version its
  # client libraries speak (the default .Capabilities.KubeVersion).
  local kube
  kube="$(cd "$CACHE" && GOFLAGS=-mod=mod go mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  if [[ -n "$kube" ]]; then
    local kv
    kv="$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$kube" | head -1)"
    if [[ -n "$kv" ]]; then
      for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kv"
      done
    fi
  fi
  echo "scripts/helm.sh: building helm $HELM_VERSION from its Go module into $BIN_DIR (once; a few minutes on 2 cores)" >&2
  local start=$SECONDS
  # GOTOOLCHAIN=local: never fetch another Go; fail instead if Helm needs one.
  (cd "$tmp" && GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-buildvcs=false \
    go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
  mkdir -p "$BIN_DIR"
  mv "$tmp/helm" "$HELM"
  rm -rf "$tmp"
  echo "scripts/helm.sh: built helm $HELM_VERSION in $((SECONDS - start))s" >&2
}

if [[ ! -x "$HELM" ]]; then
  mkdir -p "$CACHE"
  # One build at a time, even when several tests or shells ask at once.
  exec 9>"$CACHE/helm.lock"
  flock 9
  [[ -x "$HELM" ]] || build
  flock -u 9
fi

# Keep Helm's own config, cache and data out of the user's home and the repo.
export HELM_CONFIG_HOME="$CACHE/helm-home/config"
export HELM_CACHE_HOME="$CACHE/helm-home/cache"
export HELM_DATA_HOME="$CACHE/helm-home/data"

if [[ "${1:-}" == --bin ]]; then
  echo "$HELM"
  exit 0
fi
exec "$HELM" "$@"
