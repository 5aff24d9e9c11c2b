#!/usr/bin/env bash
# scripts/ui-test.sh - the web view (/ui) in a real browser, on a fresh
# machine: installs Debian's chromium if missing, the pinned playwright-core
# from the npm registry (npm ci, from scripts/ui-test/package-lock.json),
# builds the router, runs one short `router demo` and points the browser at
# its /ui while it runs (scripts/ui-test/ui.test.mjs says what is checked).
#
# The demo runs with api.auth: bearer (a fresh token through
# SIDESTREAM_API_TOKENS): the page must ask for it, then show the view.
#
# Environment:
#   SIDESTREAM_UI_SCREENSHOT  where to save a screenshot (docs/ui.png to
#                             refresh the README's; default a temp file)
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_DIR"
log() { printf 'ui-test.sh: %s\n' "$*" >&2; }
die() { printf 'ui-test.sh: error: %s\n' "$*" >&2; exit 1; }

# Chromium from Debian (Node.js and npm come with the machine).
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$CHROMIUM" ]]; then
  SUDO=()
  [[ "$(id -u)" -ne 0 ]] && SUDO=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  log "installing chromium from Debian's packages"
  if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium fonts-liberation </dev/null >/tmp/ui-test.apt.log 2>&1; then
    "${SUDO[@]}" apt-get update -q </dev/null >>/tmp/ui-test.apt.log 2>&1 || { tail -20 /tmp/ui-test.apt.log >&2; die "apt-get update failed"; }
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium fonts-liberation </dev/null >>/tmp/ui-test.apt.log 2>&1 || { tail -20 /tmp/ui-test.apt.log >&2; die "apt-get install chromium failed"; }
  fi
fi
command -v node >/dev/null || die "node (20 or later) is required"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || die "node $(node --version) is too old: playwright-core needs 20 or later"
(cd scripts/ui-test && npm ci --no-audit --no-fund --loglevel=error >/tmp/ui-test.npm.log 2>&1) || { cat /tmp/ui-test.npm.log >&2; die "npm ci failed"; }

work="$(mktemp -d)"
demo_pid=""
cleanup() {
  [[ -n "$demo_pid" ]] && kill "$demo_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/router" ./cmd/router

# One short demo: 12000 records at 400/s keep it running ~30 s, so the
# page can connect and watch its counters move even when chromium takes
# many seconds to start on a loaded machine (10 s of input left a slow
# start little margin). On a quiet machine the browser is done in a few
# seconds and waits for the demo's verdict. The API asks for a bearer
# token, which the page is given at its login field.
token="$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"
SIDESTREAM_API_AUTH=bearer SIDESTREAM_API_TOKENS="$token" \
  "$work/router" demo --records 12000 --rate 400 --listen 127.0.0.1:0 --linger 2s --quiet >"$work/demo.json" 2>"$work/demo.err" &
demo_pid=$!
url=""
start=$SECONDS
until url="$(sed -n 's|.*web view at \(http://[^ ]*/ui\)$|\1/|p' "$work/demo.err" | head -1)"; [[ -n "$url" ]]; do
  kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.err" >&2; die "the demo stopped before serving /ui"; }
  ((SECONDS - start < 60)) || { cat "$work/demo.err" >&2; die "the demo printed no web view address within 60 s"; }
  sleep 0.1
done
log "web view at $url"

shot="${SIDESTREAM_UI_SCREENSHOT:-$work/ui.png}"
[[ "$shot" = /* ]] || shot="$REPO_DIR/$shot"
if ! (cd scripts/ui-test && UI_URL="$url" UI_TOKEN="$token" UI_ROUTES=error,warn,main,dirty UI_SCREENSHOT="$shot" CHROMIUM="$CHROMIUM" node ui.test.mjs | tee "$work/ui.json"); then
  cat "$work/demo.err" >&2
  die "browser test failed"
fi
grep -q '"ok":true' "$work/ui.json" || die "browser test did not finish"
wait "$demo_pid" || { cat "$work/demo.err" >&2; die "the demo failed"; }
demo_pid=""
grep -q '"conservation":true' "$work/demo.json" || die "demo verdict: $(cat "$work/demo.json")"
log "ok (screenshot $shot)"
