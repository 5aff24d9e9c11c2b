#!/usr/bin/env bash
# scripts/build.sh [OUTPUT] - the router binary exactly as the Dockerfile
# builds it: static (CGO_ENABLED=0), -trimpath, symbols stripped, version
# stamped into main.version. OUTPUT defaults to dist/router.
#
# Environment:
#   VERSION        the version to stamp (default: git describe --always --dirty,
#                  or "dev" outside a git work tree)
#   GOOS, GOARCH   cross-compile, as for go build
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$REPO_DIR/dist/router}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
VERSION="${VERSION:-$(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo dev)}"

cd "$REPO_DIR"
mkdir -p "$(dirname "$OUT")"
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X main.version=$VERSION" \
  -o "$OUT" ./cmd/router
echo "built $OUT ($VERSION)" >&2
