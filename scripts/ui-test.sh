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
# Then the cluster view (scripts/ui-test/cluster.test.mjs): three
# `router run` instances of a second application (the same example with
# its own application id and output topics, so the demo's verdict is
# untouched) join on the demo's embedded Kafka while it produces, each
# named by its API address (--instance-id 127.0.0.1:PORT) and reaching the
# others through --owner-url-template 'http://{instance}'. The first
# instance's page must list all three; one is then killed and must be
# marked unreachable.
#
# Last, the graph of three more examples (scripts/ui-test/labels.test.mjs):
# no two of its labels overlap.
#
# Environment:
#   SIDESTREAM_UI_SCREENSHOTS  a folder to save the screenshots in
#                              (docs/img to refresh the docs': ui.png,
#                              ui-cluster.png, ui-cluster-down.png;
#                              default a temp folder)
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
run_pids=()
cleanup() {
  for p in "${run_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -n "$demo_pid" ]] && kill "$demo_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/router" ./cmd/router

# One short demo: 24000 records at 400/s keep it producing ~60 s, so the
# page can connect and watch its counters move even when chromium takes
# many seconds to start on a loaded machine, and the cluster's instances
# have records to share while the second browser test runs. It lingers
# (its Kafka up) until the cluster test is done, then is stopped. The API
# asks for a bearer token, which the page is given at its login field.
token="$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"
SIDESTREAM_API_AUTH=bearer SIDESTREAM_API_TOKENS="$token" \
  "$work/router" demo --records 24000 --rate 400 --listen 127.0.0.1:0 --linger 10m --quiet >"$work/demo.json" 2>"$work/demo.err" &
demo_pid=$!
url=""
start=$SECONDS
until url="$(sed -n 's|.*web view at \(http://[^ ]*/ui\)$|\1/|p' "$work/demo.err" | head -1)"; [[ -n "$url" ]]; do
  kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.err" >&2; die "the demo stopped before serving /ui"; }
  ((SECONDS - start < 60)) || { cat "$work/demo.err" >&2; die "the demo printed no web view address within 60 s"; }
  sleep 0.1
done
log "web view at $url"
kafka="$(sed -n 's|.*embedded Kafka at \([0-9.:]*\);.*|\1|p' "$work/demo.err" | head -1)"
[[ -n "$kafka" ]] || { cat "$work/demo.err" >&2; die "the demo printed no Kafka address"; }

# The cluster: the example as a second application with its own output
# topics, three instances named by their API addresses.
cp -r examples "$work/cluster"
sed -i -e 's/^application_id: .*/application_id: logs-cluster/' -e 's/topic: logs\./topic: cluster./' "$work/cluster/logs-by-level.yaml"
read -r -a ports <<<"$(node -e '
  const net = require("net");
  (async () => {
    const ss = [];
    for (let i = 0; i < 3; i++) { const s = net.createServer(); await new Promise((r) => s.listen(0, "127.0.0.1", r)); ss.push(s); }
    console.log(ss.map((s) => s.address().port).join(" "));
    ss.forEach((s) => s.close());
  })();')"
instances=()
for port in "${ports[@]}"; do
  SIDESTREAM_API_AUTH=bearer SIDESTREAM_API_TOKENS="$token" \
    "$work/router" run "$work/cluster/logs-by-level.yaml" --brokers "$kafka" --listen "127.0.0.1:$port" \
    --instance-id "127.0.0.1:$port" --owner-url-template 'http://{instance}' --log-level warn 2>"$work/run-$port.err" &
  run_pids+=($!)
  disown "$!" # the test kills one: no job notice for it
  instances+=("127.0.0.1:$port")
done

shots="${SIDESTREAM_UI_SCREENSHOTS:-$work}"
[[ "$shots" = /* ]] || shots="$REPO_DIR/$shots"
mkdir -p "$shots"
if ! (cd scripts/ui-test && UI_URL="$url" UI_TOKEN="$token" UI_ROUTES=error,warn,main,dirty UI_SCREENSHOT="$shots/ui.png" CHROMIUM="$CHROMIUM" node ui.test.mjs | tee "$work/ui.json"); then
  cat "$work/demo.err" >&2
  die "browser test failed"
fi
grep -q '"ok":true' "$work/ui.json" || die "browser test did not finish"

if ! (cd scripts/ui-test && UI_URL="http://${instances[0]}/ui/" UI_TOKEN="$token" UI_INSTANCES="$(IFS=,; echo "${instances[*]}")" \
  UI_PARTITIONS=6 UI_KILL_PID="${run_pids[2]}" UI_SCREENSHOT="$shots/ui-cluster.png" UI_SCREENSHOT_DOWN="$shots/ui-cluster-down.png" \
  CHROMIUM="$CHROMIUM" node cluster.test.mjs | tee "$work/cluster.json"); then
  tail -n 20 "$work"/run-*.err >&2
  die "cluster browser test failed"
fi
grep -q '"ok":true' "$work/cluster.json" || die "cluster browser test did not finish"
for p in "${run_pids[@]}"; do kill "$p" 2>/dev/null || true; done
run_pids=()

# The demo's verdict, then its linger is ended.
start=$SECONDS
until grep -q '"conservation"' "$work/demo.json"; do
  kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.err" >&2; die "the demo stopped without a verdict"; }
  ((SECONDS - start < 180)) || { cat "$work/demo.err" >&2; die "no demo verdict within 180 s"; }
  sleep 0.5
done
kill -TERM "$demo_pid"
wait "$demo_pid" || { cat "$work/demo.err" >&2; die "the demo failed"; }
demo_pid=""
grep -q '"conservation":true' "$work/demo.json" || die "demo verdict: $(cat "$work/demo.json")"

# The graph of the other shapes (a window with its late route, assemblies
# by key and from three inputs): no label overlaps another, none leaves
# its node. A short demo of each, watched while it runs.
label_urls=()
for ex in late-orders assemble-orders order-payment-shipment; do
  : >"$work/$ex.err"
  "$work/router" demo "examples/$ex.yaml" --records 3000 --rate 150 --listen 127.0.0.1:0 --linger 1m --quiet >"$work/$ex.json" 2>"$work/$ex.err" &
  run_pids+=($!)
done
for ex in late-orders assemble-orders order-payment-shipment; do
  start=$SECONDS
  until u="$(sed -n 's|.*web view at \(http://[^ ]*/ui\)$|\1/|p' "$work/$ex.err" | head -1)"; [[ -n "$u" ]]; do
    ((SECONDS - start < 60)) || { cat "$work/$ex.err" >&2; die "the $ex demo printed no web view address within 60 s"; }
    sleep 0.2
  done
  label_urls+=("$u")
done
if ! (cd scripts/ui-test && UI_URLS="$(IFS=,; echo "${label_urls[*]}")" CHROMIUM="$CHROMIUM" node labels.test.mjs | tee "$work/labels.json"); then
  die "graph label test failed"
fi
grep -q '"ok":true' "$work/labels.json" || die "graph label test did not finish"
log "ok (screenshots in $shots)"
