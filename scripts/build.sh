#!/usr/bin/env bash
# scripts/build.sh [OUTPUT] - the router binary exactly as the Dockerfile
# builds it: static (CGO_ENABLED=0), -trimpath, symbols stripped, version
# stamped into main.version. OUTPUT defaults to dist/router.
#
# Environment:
#   VERSION        the version to stamp (default: git describe --always --dirty,
#                  or "dev" outside a git work tree)
#   REVISION       the VCS revision to stamp into main.revision (default:
#                  git rev-parse HEAD, "-dirty" if the tree is modified; empty
#                  outside a git work tree). -buildvcs=false keeps the build
#                  free of git (Docker, worktrees), so it is stamped here.
#   GOOS, GOARCH   cross-compile, as for go build
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$REPO_DIR/dist/router}"
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
VERSION="${VERSION:-$(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo dev)}"
if [ -z "${REVISION+x}" ]; then
  REVISION="$(git -C "$REPO_DIR" rev-parse HEAD 2>/dev/null || true)"
  if [ -n "$REVISION" ] && [ -n "$(git -C "$REPO_DIR" status --porcelain 2>/dev/null)" ]; then
    REVISION="$REVISION-dirty"
  fi
fi

cd "$REPO_DIR"
mkdir -p "$(dirname "$OUT")"
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION" \
  -o "$OUT" ./cmd/router
echo "built $OUT ($VERSION, revision ${REVISION:-unknown})" >&2
