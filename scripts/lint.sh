#!/usr/bin/env bash
# scripts/lint.sh - golangci-lint v2 over the module with .golangci.yml:
# the import rules of DESIGN.md (depguard), errcheck, staticcheck, govet,
# ineffassign, unused and a function-length ceiling. golangci-lint is built
# once from its Go module into a cache folder outside the repo (a few
# minutes on 2 cores), then the cached binary runs at once.
#
#   scripts/lint.sh            # lint everything (the module, bench/ and tools/release)
#   scripts/lint.sh --bin      # only build it (if needed) and print its path
#   scripts/lint.sh run ./api  # any golangci-lint arguments
#
# Environment:
#   SIDESTREAM_GOLANGCI_VERSION  the module version (default v2.15.0)
#   SIDESTREAM_CACHE             cache folder (default ~/.cache/sidestream)
set -euo pipefail

VERSION="${SIDESTREAM_GOLANGCI_VERSION:-v2.15.0}"
CACHE="${SIDESTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sidestream}"
BIN_DIR="$CACHE/golangci-lint-$VERSION"
LINT="$BIN_DIR/golangci-lint"
REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

build() {
  local tmp start=$SECONDS
  tmp="$(mktemp -d "$CACHE/golangci-build.XXXXXX")"
  echo "scripts/lint.sh: building golangci-lint $VERSION from its Go module into $BIN_DIR (once; a few minutes on 2 cores)" >&2
  # GOTOOLCHAIN=local: never fetch another Go; fail instead if it needs one.
  (cd "$tmp" && GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-mod=mod \
    go install -trimpath "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION")
  mkdir -p "$BIN_DIR"
  mv "$tmp/golangci-lint" "$LINT"
  rm -rf "$tmp"
  echo "scripts/lint.sh: built golangci-lint $VERSION in $((SECONDS - start))s" >&2
}

if [[ ! -x "$LINT" ]]; then
  mkdir -p "$CACHE"
  exec 9>"$CACHE/golangci-lint.lock"
  flock 9
  [[ -x "$LINT" ]] || build
  flock -u 9
fi

if [[ "${1:-}" == --bin ]]; then
  echo "$LINT"
  exit 0
fi
cd "$REPO_DIR"
if (($# == 0)); then
  "$LINT" run ./...
  # bench/ and tools/release are modules of their own (bench/go.mod, the
  # release's image builder): ./... from the root reaches neither, so each
  # is linted from inside it with the same rules.
  (cd bench && "$LINT" run --config "$REPO_DIR/.golangci.yml" ./...)
  cd tools/release
  exec "$LINT" run --config "$REPO_DIR/.golangci.yml" ./...
fi
exec "$LINT" "$@"
