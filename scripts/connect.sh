#!/usr/bin/env bash
# scripts/connect.sh - the Connect tier of the sidestream tests: a Kafka
# Connect standalone worker with Debezium's JDBC sink, and a test-owned
# MariaDB, all on loopback. No Docker: Connect and the connector come from
# Maven Central through `mvn` (scripts/connect/*/pom.xml), MariaDB from
# Debian's packages (installed here when missing).
#
# Usage: scripts/connect.sh COMMAND
#
#   up        resolve jars, start MariaDB and the worker (no connectors: the
#             test submits deploy/connect/*.properties over REST). Prints
#               SIDESTREAM_IT_CONNECT=http://127.0.0.1:18083
#               SIDESTREAM_IT_MYSQL=127.0.0.1:13306
#   down      stop both and delete their data dirs
#   resolve   only fill the jar cache
#   status    exit 0 when both answer
#
# Environment (all optional):
#   SIDESTREAM_CACHE          jar cache root      (~/.cache/sidestream)
#   SIDESTREAM_IT_BROKERS     the brokers         (127.0.0.1:19092)
#   SIDESTREAM_CONNECT_DIR    worker + MariaDB data/logs (/tmp/sidestream-connect)
#   SIDESTREAM_CONNECT_PORT   worker REST port    (18083)
#   SIDESTREAM_MARIADB_PORT   MariaDB port        (13306)
# MariaDB has a database "sidestream" and a user sidestream/sidestream.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$SCRIPT_DIR/kafka/pom.xml" | head -n1)"
CACHE_ROOT="${SIDESTREAM_CACHE:-${HOME:-/root}/.cache/sidestream}"
CONNECT_HOME="$CACHE_ROOT/connect-$KAFKA_VERSION"
BROKERS="${SIDESTREAM_IT_BROKERS:-127.0.0.1:19092}"
DIR="${SIDESTREAM_CONNECT_DIR:-/tmp/sidestream-connect}"
REST_PORT="${SIDESTREAM_CONNECT_PORT:-18083}"
DB_PORT="${SIDESTREAM_MARIADB_PORT:-13306}"
HOST=127.0.0.1

log() { printf 'connect.sh: %s\n' "$*" >&2; }
die() { printf 'connect.sh: error: %s\n' "$*" >&2; exit 1; }
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null; }

# Ceilings, not pacing, in seconds: what a loaded 2-core machine twice as
# slow as a quiet one still meets. The worker's JVM scans every plugin
# jar (the JDBC sink brings Hibernate) before its REST API lists them.
DB_START_TIMEOUT=120
WORKER_START_TIMEOUT=300
STOP_TIMEOUT=60

pom_hash() { cat "$SCRIPT_DIR"/connect/*/pom.xml | { cat; echo "kafka.version=$KAFKA_VERSION"; } | sha256sum | cut -d' ' -f1; }

# Fill $CONNECT_HOME/libs (the worker), $CONNECT_HOME/plugins/jdbc (the
# connector and the MariaDB driver) and $CONNECT_HOME/plugins/camel-elasticsearch
# (Camel Kafka Connector with the elasticsearch-rest component), each plugin
# isolated by plugin.path, once.
resolve() {
  local marker="$CONNECT_HOME/.resolved"
  [[ -f "$marker" && "$(cat "$marker")" == "$(pom_hash)" ]] && return 0
  "$SCRIPT_DIR/install-deps.sh"
  mkdir -p "$CACHE_ROOT"
  exec 8>"$CONNECT_HOME.lock"
  flock 8
  if [[ -f "$marker" && "$(cat "$marker")" == "$(pom_hash)" ]]; then exec 8>&-; return 0; fi
  log "resolving Kafka Connect $KAFKA_VERSION, the Debezium JDBC sink and the Camel Elasticsearch sink from Maven Central ..."
  local start=$SECONDS tmp="$CONNECT_HOME.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local what dest
  for what in runtime jdbc camel-elasticsearch; do
    dest="$tmp/plugins/$what"; [[ $what == runtime ]] && dest="$tmp/libs"
    if ! mvn -B -q --no-transfer-progress -f "$SCRIPT_DIR/connect/$what/pom.xml" \
        -Dkafka.version="$KAFKA_VERSION" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$dest" </dev/null >"$tmp/mvn-$what.log" 2>&1 8>&-; then
      tail -n 30 "$tmp/mvn-$what.log" >&2
      rm -rf "$tmp"
      die "mvn could not resolve scripts/connect/$what/pom.xml"
    fi
  done
  camel_service_jar "$tmp/plugins/camel-elasticsearch" || { rm -rf "$tmp"; die "could not write the Camel sink's ServiceLoader jar"; }
  pom_hash >"$tmp/.resolved"
  rm -rf "$CONNECT_HOME"; mv "$tmp" "$CONNECT_HOME"
  log "resolved in $((SECONDS - start)) s ($(du -sh "$CONNECT_HOME" | cut -f1))"
  exec 8>&-
}

# camel_service_jar DIR: Camel Kafka Connector 0.11.0 has no KIP-898
# manifest, so a worker with plugin.discovery=service_load would not list
# it: a jar of that one manifest, naming its sink connector, joins it.
camel_service_jar() {
  local dir="$1" src
  src="$(mktemp -d)"
  mkdir -p "$src/META-INF/services"
  echo org.apache.camel.kafkaconnector.CamelSinkConnector >"$src/META-INF/services/org.apache.kafka.connect.sink.SinkConnector"
  (cd "$src" && jar cf "$dir/sidestream-camel-sink-service.jar" META-INF) 8>&-
  local rc=$?
  rm -rf "$src"
  return $rc
}

# ------------------------------------------------------------------ MariaDB

DB_DIR="$DIR/mariadb"
DB_SOCK="$DB_DIR/mysqld.sock"

install_mariadb() {
  command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]] && command -v mariadb >/dev/null 2>&1 &&
    command -v curl >/dev/null 2>&1 && return 0
  log "installing mariadb-server and curl from Debian's packages"
  local sudo=(); [[ "$(id -u)" -ne 0 ]] && sudo=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends mariadb-server mariadb-client curl </dev/null >"$DIR/apt.log" 2>&1; then
    "${sudo[@]}" apt-get update -q </dev/null >>"$DIR/apt.log" 2>&1 || { tail -20 "$DIR/apt.log" >&2; die "apt-get update failed"; }
    "${sudo[@]}" apt-get install -y -q --no-install-recommends mariadb-server mariadb-client curl </dev/null >>"$DIR/apt.log" 2>&1 ||
      { tail -20 "$DIR/apt.log" >&2; die "apt-get install mariadb-server failed"; }
  fi
  # Debian starts the system's own service on install: this instance is
  # separate (own datadir, port, socket); the system one is left alone.
}

mariadbd_bin() { command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd; }

db_up() {
  mkdir -p "$DIR"
  install_mariadb
  if [[ -f "$DB_DIR/mariadbd.pid" ]] && kill -0 "$(cat "$DB_DIR/mariadbd.pid")" 2>/dev/null && port_open "$DB_PORT"; then
    log "MariaDB already running on $HOST:$DB_PORT"; return 0
  fi
  port_open "$DB_PORT" && die "port $DB_PORT is taken; set SIDESTREAM_MARIADB_PORT"
  local user; user="$(id -un)"
  if [[ ! -d "$DB_DIR/data/mysql" ]]; then
    rm -rf "$DB_DIR"; mkdir -p "$DB_DIR/data"
    mariadb-install-db --no-defaults --datadir="$DB_DIR/data" --user="$user" \
      --auth-root-authentication-method=normal --skip-test-db >"$DB_DIR/install.log" 2>&1 ||
      { tail -20 "$DB_DIR/install.log" >&2; die "mariadb-install-db failed"; }
  fi
  (
    exec setsid "$(mariadbd_bin)" --no-defaults --datadir="$DB_DIR/data" --user="$user" \
      --bind-address=$HOST --port="$DB_PORT" --socket="$DB_SOCK" --pid-file="$DB_DIR/mariadbd.pid" \
      --log-error="$DB_DIR/error.log" --skip-name-resolve --innodb-buffer-pool-size=64M \
      --innodb-flush-log-at-trx-commit=2 --skip-log-bin
  ) </dev/null >/dev/null 2>&1 &
  local start=$SECONDS
  until mariadb --no-defaults --socket="$DB_SOCK" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
    ((SECONDS - start < DB_START_TIMEOUT)) || { tail -30 "$DB_DIR/error.log" >&2; die "MariaDB did not answer within $DB_START_TIMEOUT s"; }
    sleep 0.3
  done
  mariadb --no-defaults --socket="$DB_SOCK" -uroot -e "
    CREATE DATABASE IF NOT EXISTS sidestream;
    CREATE USER IF NOT EXISTS 'sidestream'@'%' IDENTIFIED BY 'sidestream';
    GRANT ALL ON sidestream.* TO 'sidestream'@'%';"
  log "MariaDB ready on $HOST:$DB_PORT in $((SECONDS - start)) s (data $DB_DIR)"
}

db_down() {
  local pid
  if [[ -f "$DB_DIR/mariadbd.pid" ]] && pid="$(cat "$DB_DIR/mariadbd.pid")" && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    local start=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
      ((SECONDS - start < STOP_TIMEOUT)) || { kill -KILL "$pid" 2>/dev/null || true; break; }
      sleep 0.2
    done
    log "MariaDB stopped"
  fi
}

# ------------------------------------------------------------------ worker

W_PID="$DIR/worker.pid"

worker_up() {
  resolve
  if [[ -f "$W_PID" ]] && kill -0 "$(cat "$W_PID")" 2>/dev/null && port_open "$REST_PORT"; then
    log "worker already running on $HOST:$REST_PORT"; return 0
  fi
  port_open "$REST_PORT" && die "port $REST_PORT is taken; set SIDESTREAM_CONNECT_PORT"
  mkdir -p "$DIR"
  cat >"$DIR/log4j2.properties" <<L4J
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $DIR/worker.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
logger.reflections.name = org.reflections
logger.reflections.level = error
logger.hibernate.name = org.hibernate
logger.hibernate.level = warn
L4J
  # deploy/connect/worker.properties as it is, plus plugin.path (which
  # Connect reads before config providers); its ${env:...} references are
  # the variables below.
  { cat "$REPO_DIR/deploy/connect/worker.properties"; printf '\nplugin.path=%s\n' "$CONNECT_HOME/plugins"; } >"$DIR/worker.properties"
  (
    export SIDESTREAM_CONNECT_BROKERS="$BROKERS"
    export SIDESTREAM_CONNECT_OFFSETS_FILE="$DIR/offsets"
    export SIDESTREAM_CONNECT_REST_PORT="$REST_PORT"
    for fd in /proc/$BASHPID/fd/*; do
      fd="${fd##*/}"; if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid java -Xms128m -Xmx512m -XX:+UseSerialGC -Djava.awt.headless=true \
      -Dlog4j2.configurationFile="$DIR/log4j2.properties" \
      -cp "$CONNECT_HOME/libs/*" org.apache.kafka.connect.cli.ConnectStandalone \
      "$DIR/worker.properties"
  ) </dev/null >"$DIR/worker.out" 2>&1 &
  echo $! >"$W_PID"
  local start=$SECONDS
  local plugins=""
  until plugins="$(curl -fsS --max-time 10 "http://$HOST:$REST_PORT/connector-plugins" 2>/dev/null)" &&
      grep -q JdbcSinkConnector <<<"$plugins" && grep -q CamelSinkConnector <<<"$plugins"; do
    if ! kill -0 "$(cat "$W_PID")" 2>/dev/null || ((SECONDS - start >= WORKER_START_TIMEOUT)); then
      tail -n 40 "$DIR/worker.log" "$DIR/worker.out" >&2 || true
      die "the Connect worker did not list JdbcSinkConnector and CamelSinkConnector within $WORKER_START_TIMEOUT s (or exited)"
    fi
    sleep 0.5
  done
  log "Connect worker ready on $HOST:$REST_PORT in $((SECONDS - start)) s"
}

worker_down() {
  local pid
  if [[ -f "$W_PID" ]] && pid="$(cat "$W_PID")" && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    local start=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
      ((SECONDS - start < STOP_TIMEOUT)) || { kill -KILL "$pid" 2>/dev/null || true; break; }
      sleep 0.2
    done
    log "worker stopped"
  fi
  rm -f "$W_PID"
}

case "${1:-}" in
  up)
    mkdir -p "$DIR"
    db_up
    worker_up
    echo "SIDESTREAM_IT_CONNECT=http://$HOST:$REST_PORT"
    echo "SIDESTREAM_IT_MYSQL=$HOST:$DB_PORT"
    ;;
  down)
    worker_down
    db_down
    case "$DIR" in ""|/|"${HOME:-/}"|"$REPO_DIR") die "refusing to delete '$DIR'" ;; esac
    rm -rf "$DIR"
    ;;
  resolve) resolve ;;
  status) port_open "$REST_PORT" && port_open "$DB_PORT" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
