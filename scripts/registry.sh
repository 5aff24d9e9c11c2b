#!/usr/bin/env bash
# scripts/registry.sh - a real Confluent-compatible Schema Registry (Apicurio
# Registry, its /apis/ccompat/v7 API) for the sidestream integration tests.
# No Docker, no downloads except Maven Central through `mvn`: the first start
# builds a runnable registry from scripts/registry/pom.xml into a cache folder
# (see docs/registry.md).
#
# Usage: scripts/registry.sh COMMAND [ARGS...]
#
#   up | start       start the registry (build it on first use); a no-op when
#                    it is already running. Schemas kept by `stop` are reused.
#                    Last stdout line:
#                      SIDESTREAM_IT_REGISTRY=http://127.0.0.1:18081/apis/ccompat/v7
#   down             stop the registry and delete its dir (schemas included)
#   stop             stop the registry, keep its schemas (an outage)
#   restart          stop + start, keeping the schemas
#   status           exit 0 if the registry is running and answers, 1 if not
#   logs [-f] [N]    print the last N (200) lines of the registry log
#   selftest         register an Avro and a Protobuf schema through the
#                    Confluent API, read them back by id, print the ids;
#                    starts (and afterwards stops) a registry if none runs
#   resolve          only build the cache (e.g. as a CI setup step)
#   url              print the Confluent-compatible base URL
#
# Environment (all optional):
#   SIDESTREAM_CACHE                   build cache root   (~/.cache/sidestream)
#   SIDESTREAM_REGISTRY_DIR            schemas/log dir    (/tmp/sidestream-registry)
#   SIDESTREAM_REGISTRY_PORT           HTTP port          (18081)
#   SIDESTREAM_REGISTRY_HEAP_OPTS      JVM heap flags     (-Xms128m -Xmx512m)
#   SIDESTREAM_REGISTRY_START_TIMEOUT  seconds to wait    (240)
#   SIDESTREAM_REGISTRY_STOP_TIMEOUT   seconds before SIGKILL (60)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
BUILD_SRC="$SCRIPT_DIR/registry"
POM="$BUILD_SRC/pom.xml"

APICURIO_VERSION="$(sed -n 's:.*<apicurio.version>\(.*\)</apicurio.version>.*:\1:p' "$POM" | head -n1)"
CACHE_ROOT="${SIDESTREAM_CACHE:-${HOME:-/root}/.cache/sidestream}"
REG_HOME="$CACHE_ROOT/apicurio-registry-$APICURIO_VERSION"
APP_DIR="$REG_HOME/app"            # the runner jar beside lib/
MARKER="$REG_HOME/.resolved"

DATA_DIR="${SIDESTREAM_REGISTRY_DIR:-/tmp/sidestream-registry}"
# Trailing slashes dropped: the pid check matches the process's
# command line, which names files under $DATA_DIR as given.
while [[ "$DATA_DIR" == */ && "$DATA_DIR" != / ]]; do DATA_DIR="${DATA_DIR%/}"; done
PORT="${SIDESTREAM_REGISTRY_PORT:-18081}"
HOST=127.0.0.1
BASE_URL="http://$HOST:$PORT/apis/ccompat/v7"
HEAP_OPTS="${SIDESTREAM_REGISTRY_HEAP_OPTS:--Xms128m -Xmx512m}"
# Ceilings, not pacing: a quiet 2-core machine starts the registry in about
# 20 s (Quarkus boot plus the H2 schema); a loaded one takes several times
# that.
START_TIMEOUT="${SIDESTREAM_REGISTRY_START_TIMEOUT:-240}"
STOP_TIMEOUT="${SIDESTREAM_REGISTRY_STOP_TIMEOUT:-60}"

DB_DIR="$DATA_DIR/db"              # H2 files: schemas survive stop/restart
LOG_FILE="$DATA_DIR/registry.log"  # JVM stdout/stderr (Quarkus console log)
PID_FILE="$DATA_DIR/registry.pid"
LOCK_FILE="${DATA_DIR%/}.lock"     # beside the dir: survives `down`

log() { printf 'registry.sh: %s\n' "$*" >&2; }
die() { printf 'registry.sh: error: %s\n' "$*" >&2; exit 1; }

# The lock lives beside the data dir: "/" has no "beside" (its lock would
# be ./.lock, wherever the script runs).
[[ "$DATA_DIR" != / ]] || die "SIDESTREAM_REGISTRY_DIR must name a directory below /, got '$DATA_DIR'"
# shellcheck source=lib/service.sh
. "$SCRIPT_DIR/lib/service.sh"

# ---------------------------------------------------------------- java, cache

JAVA_BIN=""
find_java() { svc_find_java 11 "Apicurio $APICURIO_VERSION"; }

# The cache is keyed on everything the build reads.
build_hash() {
  (cd "$BUILD_SRC" && find . -type f ! -path './target/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
    sha256sum | cut -d' ' -f1
}

runner_jar() { compgen -G "$APP_DIR/*-runner.jar" | head -n1; }

cache_ok() {
  [[ -f "$MARKER" ]] && [[ "$(cat "$MARKER")" == "$(build_hash)" ]] && [[ -n "$(runner_jar)" ]]
}

# Build the registry from Maven Central, once (marker keyed on the build's
# hash). The build runs in a copy of scripts/registry inside the cache, so
# the repository gets no target/ folder.
resolve() {
  cache_ok && return 0
  command -v mvn >/dev/null 2>&1 || die "mvn not found; run scripts/install-deps.sh"
  find_java
  mkdir -p "$CACHE_ROOT"
  exec 8>"$REG_HOME.lock"
  flock 8
  if cache_ok; then exec 8>&-; return 0; fi
  log "building Apicurio Registry $APICURIO_VERSION from Maven Central into $REG_HOME (once; a few minutes when ~/.m2 is empty) ..."
  local start=$SECONDS tmp="$REG_HOME.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/build"
  cp -r "$BUILD_SRC/." "$tmp/build/"
  rm -rf "$tmp/build/target"
  if ! JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$JAVA_BIN")")")" \
      mvn -B -q --no-transfer-progress -f "$tmp/build/pom.xml" -DskipTests package \
      </dev/null >"$tmp/mvn.log" 2>&1 8>&- 9>&-; then
    tail -n 40 "$tmp/mvn.log" >&2 || true
    rm -rf "$tmp"
    die "mvn could not build io.apicurio:apicurio-registry-app:$APICURIO_VERSION (see scripts/registry/pom.xml)"
  fi
  compgen -G "$tmp/build/target/*-runner.jar" >/dev/null || { rm -rf "$tmp"; die "mvn ran but made no runner jar"; }
  mkdir -p "$tmp/app"
  mv "$tmp/build/target/"*-runner.jar "$tmp/build/target/lib" "$tmp/app/"
  rm -rf "$tmp/build" "$tmp/mvn.log"
  build_hash >"$tmp/.resolved"
  rm -rf "$REG_HOME"
  mv "$tmp" "$REG_HOME"
  log "built in $((SECONDS - start)) s ($(find "$APP_DIR/lib" -name "*.jar" | wc -l) jars, $(du -sh "$APP_DIR" | cut -f1))"
  exec 8>&-
}

# --------------------------------------------------------------- processes

http_code() { # path
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL$1" 2>/dev/null || true
}

answers() { [[ "$(http_code /subjects)" == 200 ]]; }

port_open() { svc_port_open "$HOST" "$1"; }

# The JVM carries -Dsidestream.registry.dir=<dir>: that, not the port, says
# which registry a process is.
is_our_registry() { svc_cmdline_has "$1" "-Dsidestream.registry.dir=$DATA_DIR"; }

registry_pid() { svc_find_pid "$PID_FILE" is_our_registry; }

# --------------------------------------------------------------- commands

do_start() {
  if registry_pid >/dev/null && answers; then
    log "already running (pid $(registry_pid)) at $BASE_URL"
    return 0
  fi
  resolve
  find_java
  local pid
  if pid="$(registry_pid)"; then
    log "registry process $pid exists; waiting for it to answer"
    wait_ready "$pid"
    return 0
  fi
  if port_open "$PORT"; then
    die "port $PORT on $HOST is taken by another process; stop it or set SIDESTREAM_REGISTRY_PORT"
  fi
  mkdir -p "$DATA_DIR" "$DB_DIR"
  local jar
  jar="$(runner_jar)"
  log "starting Apicurio Registry $APICURIO_VERSION at $BASE_URL (dir $DATA_DIR)"
  printf '\n==== %s start\n' "$(date -u +%FT%TZ)" >>"$LOG_FILE"
  # The subshell closes every inherited descriptor above 2 (lock files, a
  # caller's pipes) and then becomes the JVM: $! is the registry's pid.
  # Runtime configuration as system properties, which rank above the
  # application.properties inside the build.
  (
    # shellcheck disable=SC2086  # HEAP_OPTS is a list of flags
    svc_exec_daemon "$JAVA_BIN" $HEAP_OPTS -XX:+ExitOnOutOfMemoryError \
      -Djava.awt.headless=true \
      "-Dsidestream.registry.dir=$DATA_DIR" \
      -Dquarkus.http.host="$HOST" \
      -Dquarkus.http.port="$PORT" \
      -Dquarkus.datasource.jdbc.url="jdbc:h2:file:$DB_DIR/registry" \
      -Dquarkus.datasource.jdbc.min-size=1 \
      -Dquarkus.datasource.jdbc.initial-size=1 \
      -Dquarkus.datasource.jdbc.max-size=16 \
      -Dquarkus.log.console.color=false \
      -jar "$jar"
  ) </dev/null >>"$LOG_FILE" 2>&1 &
  pid=$!
  echo "$pid" >"$PID_FILE"
  wait_ready "$pid"
}

wait_ready() { # pid
  local pid="$1" start=$SECONDS
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "the registry exited during startup; last lines of $LOG_FILE:"
      tail -n 40 "$LOG_FILE" >&2 2>/dev/null || true
      rm -f "$PID_FILE"
      die "the registry did not start"
    fi
    if answers; then
      log "ready in $((SECONDS - start)) s (pid $pid)"
      return 0
    fi
    if ((SECONDS - start >= START_TIMEOUT)); then
      log "not answering after $START_TIMEOUT s; last lines of $LOG_FILE:"
      tail -n 40 "$LOG_FILE" >&2 2>/dev/null || true
      die "the registry did not become ready (still running as pid $pid; stop it with 'scripts/registry.sh down')"
    fi
    sleep 0.5
  done
}

do_stop() {
  local pid
  if ! pid="$(registry_pid)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping registry (pid $pid)"
  svc_stop "$pid" is_our_registry "$STOP_TIMEOUT"
  rm -f "$PID_FILE"
}

with_lock() { svc_with_lock "$LOCK_FILE" "$@"; }

cmd_up() {
  with_lock do_start
  echo "SIDESTREAM_IT_REGISTRY=$BASE_URL"
}

cmd_down() {
  [[ $# -eq 0 ]] || die "down takes no arguments (use 'stop' to keep the schemas)"
  with_lock do_stop
  svc_remove_dir "$DATA_DIR" "$REPO_DIR"
}

cmd_restart() {
  with_lock true # hold the lock for the rest of this process
  do_stop
  do_start
  echo "SIDESTREAM_IT_REGISTRY=$BASE_URL"
}

cmd_status() {
  local pid
  if pid="$(registry_pid)"; then
    if answers; then
      echo "running pid=$pid url=$BASE_URL version=$APICURIO_VERSION dir=$DATA_DIR"
      return 0
    fi
    echo "starting or unresponsive pid=$pid url=$BASE_URL"
    return 1
  fi
  echo "stopped"
  return 1
}

cmd_logs() {
  local follow=0 n=200
  for a in "$@"; do
    case "$a" in
      -f|--follow) follow=1 ;;
      ''|*[!0-9]*) die "logs: unknown argument '$a' (use -f and/or a line count)" ;;
      *) n="$a" ;;
    esac
  done
  [[ -f "$LOG_FILE" ]] || die "no log at $LOG_FILE"
  if ((follow)); then exec tail -n "$n" -F "$LOG_FILE"; fi
  tail -n "$n" "$LOG_FILE"
}

# ---------------------------------------------------------------- selftest

# POST/GET with the Confluent content type; prints the body, then the status
# code on a line of its own.
sr() { # method path [json-body]
  local args=(-s --max-time 30 -X "$1" -H 'Accept: application/vnd.schemaregistry.v1+json')
  [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/vnd.schemaregistry.v1+json' --data-binary "$3")
  curl "${args[@]}" -w '\n%{http_code}' "$BASE_URL$2"
}

# Call, require the status code, print the body.
expect() { # code method path [body]
  local want="$1" out code body
  shift
  out="$(sr "$@")" || die "selftest: $1 $2: curl failed"
  code="${out##*$'\n'}"
  body="${out%$'\n'*}"
  [[ "$code" == "$want" ]] || die "selftest: $1 $2 answered $code, want $want: $body"
  printf '%s' "$body"
}

selftest_run() {
  command -v jq >/dev/null 2>&1 || die "selftest needs jq"
  local avro proto body aid aid2 pid got
  avro='{"type":"record","name":"T","namespace":"sidestream.selftest","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}'
  proto=$'syntax = "proto3";\npackage sidestream.selftest;\n\nmessage P {\n  int64 id = 1;\n  string name = 2;\n}\n'

  body="$(expect 200 POST /subjects/t-value/versions "$(jq -cn --arg s "$avro" '{schema: $s}')")"
  aid="$(jq -er '.id' <<<"$body")" || die "selftest: no id in $body"
  got="$(expect 200 GET "/schemas/ids/$aid")"
  [[ "$(jq -r '.schema' <<<"$got" | jq -cS .)" == "$(jq -cS . <<<"$avro")" ]] ||
    die "selftest: schema $aid read back differs: $got"
  [[ "$(jq -r '.schemaType // "AVRO"' <<<"$got")" == AVRO ]] || die "selftest: schema $aid is not AVRO: $got"
  # The same schema again: the same id, not a new version.
  body="$(expect 200 POST /subjects/t-value/versions "$(jq -cn --arg s "$avro" '{schema: $s}')")"
  aid2="$(jq -er '.id' <<<"$body")"
  [[ "$aid2" == "$aid" ]] || die "selftest: re-registering gave id $aid2, want $aid"
  body="$(expect 200 GET /subjects/t-value/versions/latest)"
  [[ "$(jq -r '.id' <<<"$body")" == "$aid" ]] || die "selftest: latest of t-value is not id $aid: $body"

  body="$(expect 200 POST /subjects/t-proto-value/versions "$(jq -cn --arg s "$proto" '{schemaType: "PROTOBUF", schema: $s}')")"
  pid="$(jq -er '.id' <<<"$body")" || die "selftest: no id in $body"
  [[ "$pid" != "$aid" ]] || die "selftest: the Protobuf schema got the Avro schema's id $aid"
  got="$(expect 200 GET "/schemas/ids/$pid")"
  [[ "$(jq -r '.schemaType' <<<"$got")" == PROTOBUF ]] || die "selftest: schema $pid is not PROTOBUF: $got"
  jq -r '.schema' <<<"$got" | grep -q 'message P' || die "selftest: schema $pid read back lacks message P: $got"

  # An unknown id is a 404 with Confluent's error code 40403.
  body="$(expect 404 GET /schemas/ids/2147483000)"
  [[ "$(jq -r '.error_code' <<<"$body")" == 40403 ]] || die "selftest: unknown id answered $body, want error_code 40403"

  echo "registry selftest passed: $BASE_URL avro subject=t-value id=$aid protobuf subject=t-proto-value id=$pid"
}

cmd_selftest() {
  local started=0 had_dir=0
  [[ -e "$DATA_DIR" ]] && had_dir=1
  if ! registry_pid >/dev/null || ! answers; then
    with_lock do_start
    exec 9>&-
    started=1
  fi
  # Not `(selftest_run) || rc=$?`: on the left of || errexit is off, and a
  # failed check inside $(...) would not stop the test.
  local rc=0
  set +e
  (set -e; selftest_run)
  rc=$?
  set -e
  # Leave things as found: a registry it started is stopped, and its dir
  # removed unless it held schemas before.
  if ((started)); then
    if ((had_dir)); then with_lock do_stop; else cmd_down; fi
  fi
  return "$rc"
}

usage() { svc_usage "$0"; }

main() {
  local cmd="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "$cmd" in
    up|start)  [[ $# -eq 0 ]] || die "$cmd takes no arguments"; cmd_up ;;
    down)      cmd_down "$@" ;;
    stop)      with_lock do_stop ;;
    restart)   cmd_restart ;;
    status)    cmd_status ;;
    logs)      cmd_logs "$@" ;;
    selftest)  cmd_selftest ;;
    resolve)   resolve; log "registry in $APP_DIR" ;;
    url)       echo "$BASE_URL" ;;
    -h|--help|help) usage ;;
    "") usage; exit 2 ;;
    *) die "unknown command '$cmd' (see 'scripts/registry.sh help')" ;;
  esac
}

main "$@"
