#!/usr/bin/env bash
# scripts/elasticsearch.sh - a real Elasticsearch for the sidestream hand-off
# tests: Elasticsearch 7.10.2 (the last Apache-2.0 release), one node in one
# JVM on loopback. No Docker, no distribution: the first start resolves the
# server's jars from Maven Central with `mvn` (scripts/elasticsearch/pom.xml)
# into a cache folder and compiles the launcher class there with javac
# (scripts/elasticsearch/src; it starts the node with the Netty 4 module as
# a classpath plugin). A test server: no security, no bootstrap checks.
#
# Usage: scripts/elasticsearch.sh COMMAND
#
#   up | start  start the server (resolve on first use), put an index
#               template with 0 replicas (indices turn green on one node);
#               a no-op when it runs. Documents kept by `stop` are reused.
#               Last stdout line:
#                 SIDESTREAM_IT_ELASTICSEARCH=http://127.0.0.1:19200
#   down        stop the server and delete its dir (documents included)
#   stop        stop the server, keep its documents (an outage)
#   restart     stop + start, keeping the documents
#   status      exit 0 if the server runs and answers, 1 if not
#   logs [N]    print the last N (200) lines of its log
#   resolve     only fill the cache (e.g. as a CI setup step)
#   url         print the base URL
#
# Environment (all optional):
#   SIDESTREAM_CACHE                 cache root          (~/.cache/sidestream)
#   SIDESTREAM_ELASTICSEARCH_DIR     data/log dir        (/tmp/sidestream-elasticsearch)
#   SIDESTREAM_ELASTICSEARCH_PORT    HTTP port           (19200)
#   SIDESTREAM_ELASTICSEARCH_TRANSPORT_PORT  transport port (19201; 19300 is scripts/compat.sh's)
#   SIDESTREAM_ELASTICSEARCH_HEAP_OPTS  JVM flags        (-Xms256m -Xmx512m -XX:+UseSerialGC)
#   SIDESTREAM_ELASTICSEARCH_START_TIMEOUT  seconds to wait (180)
#   SIDESTREAM_ELASTICSEARCH_STOP_TIMEOUT   seconds before SIGKILL (60)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
BUILD_SRC="$SCRIPT_DIR/elasticsearch"
POM="$BUILD_SRC/pom.xml"
ES_VERSION="$(sed -n 's:.*<elasticsearch.version>\(.*\)</elasticsearch.version>.*:\1:p' "$POM" | head -n1)"
CACHE_ROOT="${SIDESTREAM_CACHE:-${HOME:-/root}/.cache/sidestream}"
ES_HOME="$CACHE_ROOT/elasticsearch-$ES_VERSION"
MARKER="$ES_HOME/.resolved"
MAIN_CLASS=dev.sidestream.testing.elasticsearch.Launcher

DATA_DIR="${SIDESTREAM_ELASTICSEARCH_DIR:-/tmp/sidestream-elasticsearch}"
while [[ "$DATA_DIR" == */ && "$DATA_DIR" != / ]]; do DATA_DIR="${DATA_DIR%/}"; done
PORT="${SIDESTREAM_ELASTICSEARCH_PORT:-19200}"
TPORT="${SIDESTREAM_ELASTICSEARCH_TRANSPORT_PORT:-19201}"
HOST=127.0.0.1
BASE_URL="http://$HOST:$PORT"
HEAP_OPTS="${SIDESTREAM_ELASTICSEARCH_HEAP_OPTS:--Xms256m -Xmx512m -XX:+UseSerialGC}"
# Ceilings, not pacing: a quiet 2-core machine starts the node in about
# 5 s, a loaded one in 20 s; the ceiling leaves room for worse.
START_TIMEOUT="${SIDESTREAM_ELASTICSEARCH_START_TIMEOUT:-180}"
STOP_TIMEOUT="${SIDESTREAM_ELASTICSEARCH_STOP_TIMEOUT:-60}"

NODE_DIR="$DATA_DIR/node"          # path.home: data/ and logs/ below
LOG_FILE="$DATA_DIR/elasticsearch.log"
PID_FILE="$DATA_DIR/elasticsearch.pid"
LOCK_FILE="${DATA_DIR%/}.lock"

log() { printf 'elasticsearch.sh: %s\n' "$*" >&2; }
die() { printf 'elasticsearch.sh: error: %s\n' "$*" >&2; exit 1; }

[[ "$DATA_DIR" != / ]] || die "SIDESTREAM_ELASTICSEARCH_DIR must name a directory below /, got '$DATA_DIR'"
# shellcheck source=lib/service.sh
. "$SCRIPT_DIR/lib/service.sh"

JAVA_BIN=""
find_java() { svc_find_java 11 "Elasticsearch $ES_VERSION"; }

# The cache is keyed on everything the resolve reads: the pom and the
# launcher's source.
build_hash() {
  (cd "$BUILD_SRC" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
cache_ok() { [[ -f "$MARKER" && "$(cat "$MARKER")" == "$(build_hash)" ]]; }

resolve() {
  cache_ok && return 0
  command -v mvn >/dev/null 2>&1 || die "mvn not found; run scripts/install-deps.sh"
  find_java
  local javac_bin
  javac_bin="$(dirname "$(readlink -f "$JAVA_BIN")")/javac"
  [[ -x "$javac_bin" ]] || javac_bin="$(command -v javac || true)"
  [[ -n "$javac_bin" ]] || die "javac not found (a JDK compiles the launcher); run scripts/install-deps.sh"
  mkdir -p "$CACHE_ROOT"
  exec 8>"$ES_HOME.lock"
  flock 8
  if cache_ok; then exec 8>&-; return 0; fi
  log "resolving Elasticsearch $ES_VERSION from Maven Central into $ES_HOME (once) ..."
  local start=$SECONDS tmp="$ES_HOME.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp/classes"
  if ! mvn -B -q --no-transfer-progress -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp/libs" </dev/null >"$tmp/mvn.log" 2>&1 8>&- 9>&-; then
    tail -n 30 "$tmp/mvn.log" >&2 || true
    rm -rf "$tmp"
    die "mvn could not resolve scripts/elasticsearch/pom.xml"
  fi
  if ! "$javac_bin" -nowarn -d "$tmp/classes" -cp "$tmp/libs/*" \
      $(find "$BUILD_SRC/src" -name '*.java') >"$tmp/javac.log" 2>&1; then
    cat "$tmp/javac.log" >&2
    rm -rf "$tmp"
    die "javac could not compile scripts/elasticsearch/src"
  fi
  rm -f "$tmp/mvn.log" "$tmp/javac.log"
  build_hash >"$tmp/.resolved"
  rm -rf "$ES_HOME"; mv "$tmp" "$ES_HOME"
  log "resolved in $((SECONDS - start)) s ($(find "$ES_HOME/libs" -name '*.jar' | wc -l) jars, $(du -sh "$ES_HOME" | cut -f1))"
  exec 8>&-
}

# ---------------------------------------------------------------- processes

answers() { [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL/_cluster/health" 2>/dev/null || true)" == 200 ]]; }

# The JVM carries -Dsidestream.elasticsearch.dir=<dir>: that, not the
# port, says which server a process is.
is_ours() { svc_cmdline_has "$1" "-Dsidestream.elasticsearch.dir=$DATA_DIR"; }

server_pid() { svc_find_pid "$PID_FILE" is_ours; }

# Every index this server creates gets 0 replicas: one node can hold no
# replica, and a yellow index is not what the tests mean to check.
put_template() {
  curl -fsS --max-time 30 -X PUT "$BASE_URL/_template/sidestream-defaults" -H 'Content-Type: application/json' \
    -d '{"index_patterns":["*"],"order":0,"settings":{"number_of_shards":1,"number_of_replicas":0}}' >/dev/null ||
    die "could not put the index template"
}

do_start() {
  if server_pid >/dev/null && answers; then
    log "already running (pid $(server_pid)) at $BASE_URL"; return 0
  fi
  resolve
  find_java
  local pid
  if ! pid="$(server_pid)"; then
    port_busy "$PORT" && die "port $PORT on $HOST is taken by another process; set SIDESTREAM_ELASTICSEARCH_PORT"
    port_busy "$TPORT" && die "port $TPORT on $HOST is taken by another process; set SIDESTREAM_ELASTICSEARCH_TRANSPORT_PORT"
    mkdir -p "$NODE_DIR"
    log "starting Elasticsearch $ES_VERSION at $BASE_URL (dir $DATA_DIR)"
    printf '\n==== %s start\n' "$(date -u +%FT%TZ)" >>"$LOG_FILE"
    (
      # shellcheck disable=SC2086  # HEAP_OPTS is a list of flags
      svc_exec_daemon "$JAVA_BIN" $HEAP_OPTS -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
        "-Dsidestream.elasticsearch.dir=$DATA_DIR" -Dlog4j2.disable.jmx=true \
        -Des.logs.base_path="$NODE_DIR/logs" -Des.logs.cluster_name=sidestream-it -Des.logs.node_name=sidestream-it \
        -cp "$ES_HOME/classes:$ES_HOME/libs/*" "$MAIN_CLASS" "$NODE_DIR" "$PORT" "$TPORT"
    ) </dev/null >>"$LOG_FILE" 2>&1 &
    pid=$!
    echo "$pid" >"$PID_FILE"
  fi
  local start=$SECONDS
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$LOG_FILE" >&2 || true
      rm -f "$PID_FILE"
      die "Elasticsearch exited during startup"
    fi
    if ((SECONDS - start >= START_TIMEOUT)); then
      tail -n 40 "$LOG_FILE" >&2 || true
      die "Elasticsearch did not answer within $START_TIMEOUT s (pid $pid; 'scripts/elasticsearch.sh down' stops it)"
    fi
    sleep 0.3
  done
  put_template
  log "ready in $((SECONDS - start)) s (pid $pid)"
}

port_busy() { svc_port_open "$HOST" "$1"; }

do_stop() {
  local pid
  if ! pid="$(server_pid)"; then rm -f "$PID_FILE"; log "not running"; return 0; fi
  log "stopping Elasticsearch (pid $pid)"
  svc_stop "$pid" is_ours "$STOP_TIMEOUT"
  rm -f "$PID_FILE"
}

with_lock() { svc_with_lock "$LOCK_FILE" "$@"; }

cmd_status() {
  local pid
  if pid="$(server_pid)" && answers; then
    echo "running pid=$pid url=$BASE_URL version=$ES_VERSION dir=$DATA_DIR"; return 0
  fi
  echo "stopped"; return 1
}

main() {
  local cmd="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$cmd" in
    up|start) with_lock do_start; echo "SIDESTREAM_IT_ELASTICSEARCH=$BASE_URL" ;;
    down)     with_lock do_stop; svc_remove_dir "$DATA_DIR" "$REPO_DIR" ;;
    stop)     with_lock do_stop ;;
    restart)  with_lock do_stop; do_start; echo "SIDESTREAM_IT_ELASTICSEARCH=$BASE_URL" ;;
    status)   cmd_status ;;
    logs)     tail -n "${1:-200}" "$LOG_FILE" ;;
    resolve)  resolve; log "Elasticsearch in $ES_HOME" ;;
    url)      echo "$BASE_URL" ;;
    -h|--help|help) svc_usage "$0" ;;
    "") svc_usage "$0"; exit 2 ;;
    *) die "unknown command '$cmd' (see 'scripts/elasticsearch.sh help')" ;;
  esac
}

main "$@"
