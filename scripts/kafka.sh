#!/usr/bin/env bash
# scripts/kafka.sh - a real single-node Apache Kafka broker (KRaft,
# combined broker+controller) for the sidestream tests: 4.x by default,
# 3.7 and later 3.x too (scripts/compat.sh runs them; docs/compatibility.md).
# No Docker, no downloads except Maven Central through `mvn` (see
# scripts/kafka/pom.xml).
#
# Usage: scripts/kafka.sh COMMAND [ARGS...]
#
#   up | start       start the broker (format storage on first start); a no-op
#                    when it is already running. Existing data (after `stop` or
#                    `down --keep`) is reused. Last stdout line:
#                      SIDESTREAM_IT_BROKERS=127.0.0.1:19092
#   down [--keep]    stop the broker and delete the data dir (--keep keeps it)
#   stop             stop the broker, keep the data
#   restart          stop + start, keeping the data (broker-bounce tests)
#   status           exit 0 if the broker is running and answers, 1 if not
#   logs [-f] [N]    print the last N (200) lines of the broker log, -f follows
#   topics ARGS...   kafka-topics (org.apache.kafka.tools.TopicCommand);
#                    --bootstrap-server is added unless given
#   groups ARGS...   kafka-consumer-groups, same rule
#   tool CLASS ARGS  run any class from the Kafka classpath (tools logging)
#   resolve          only fill the jar cache (e.g. as a CI setup step)
#   classpath        print the classpath (the libs/* glob)
#   brokers          print the bootstrap address
#
# Environment (all optional):
#   SIDESTREAM_CACHE         jar cache root       (~/.cache/sidestream)
#   SIDESTREAM_KAFKA_VERSION Kafka version        (from scripts/kafka/pom.xml);
#                            3.7 or later. Before 3.9 the controller quorum
#                            is static (controller.quorum.voters, no
#                            --standalone); 3.x logs through log4j 1
#                            (reload4j), configured beside the log4j2 file
#   SIDESTREAM_KAFKA_DIR     data/config/log dir  (/tmp/sidestream-kafka)
#   SIDESTREAM_KAFKA_PORT    PLAINTEXT port       (19092; controller is +1)
#   SIDESTREAM_KAFKA_HEAP_OPTS      JVM heap flags    (-Xms256m -Xmx1g)
#   SIDESTREAM_KAFKA_START_TIMEOUT  seconds to wait   (180)
#   SIDESTREAM_KAFKA_STOP_TIMEOUT   seconds before SIGKILL (60)
#   SIDESTREAM_KAFKA_EXTRA_CONFIG   extra server.properties lines, applied at
#                                   format time (a fresh data dir)
#
#   SIDESTREAM_KAFKA_FORMAT_ARGS   extra arguments of `kafka-storage format`,
#                                   e.g. "--feature transaction.version=1"
# Secure listeners (optional, for the TLS/SASL tests; read at format time,
# that is with a fresh data dir; unset, nothing above changes). The
# PLAINTEXT listener stays, for the inter-broker and admin traffic:
#   SIDESTREAM_KAFKA_SASL_PORT      add a SASL_PLAINTEXT listener on this port
#                                   with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
#                                   OAUTHBEARER (Kafka's unsecured JWS validator:
#                                   any token with alg "none", a "sub" and an
#                                   unexpired "exp" passes; tests only)
#   SIDESTREAM_KAFKA_OAUTH_REAUTH_MS  optional: connections.max.reauth.ms of
#                                   the OAUTHBEARER connections (KIP-368: the
#                                   session lifetime the broker gives a client,
#                                   at most the token's remaining lifetime)
#   SIDESTREAM_KAFKA_SASL_USERS     its users, "name:password" separated by
#                                   spaces or commas (letters, digits, . _ -):
#                                   PLAIN users in the listener's JAAS config,
#                                   SCRAM credentials (both hashes) added by
#                                   `kafka-storage format --add-scram`
#   SIDESTREAM_KAFKA_SSL_PORT       add an SSL listener on this port
#   SIDESTREAM_KAFKA_SSL_CERT       its certificate chain, a PEM file
#   SIDESTREAM_KAFKA_SSL_KEY        its private key, an unencrypted PKCS#8 PEM file
#   SIDESTREAM_KAFKA_SSL_CLIENT_CA  optional: a PEM CA file; the SSL listener
#                                   then requires client certificates it signed
#   SIDESTREAM_KAFKA_AUTHORIZER     1: enable ACLs (KRaft's StandardAuthorizer).
#                                   Everything is allowed until an ACL names a
#                                   resource; the PLAINTEXT and CONTROLLER
#                                   principal (User:ANONYMOUS: inter-broker,
#                                   controller, admin traffic) is a super user
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
POM="$SCRIPT_DIR/kafka/pom.xml"

pom_version() {
  sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM" | head -n1
}

KAFKA_VERSION="${SIDESTREAM_KAFKA_VERSION:-$(pom_version)}"
CACHE_ROOT="${SIDESTREAM_CACHE:-${HOME:-/root}/.cache/sidestream}"
KAFKA_HOME="$CACHE_ROOT/kafka-$KAFKA_VERSION"
LIBS="$KAFKA_HOME/libs"
MARKER="$KAFKA_HOME/.resolved"

DATA_DIR="${SIDESTREAM_KAFKA_DIR:-/tmp/sidestream-kafka}"
# Trailing slashes dropped: the pid check matches the process's
# command line, which names files under $DATA_DIR as given.
while [[ "$DATA_DIR" == */ && "$DATA_DIR" != / ]]; do DATA_DIR="${DATA_DIR%/}"; done
PORT="${SIDESTREAM_KAFKA_PORT:-19092}"
CONTROLLER_PORT=$((PORT + 1))
HOST=127.0.0.1
BROKERS="$HOST:$PORT"
HEAP_OPTS="${SIDESTREAM_KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"
# Ceilings, not pacing: a quiet 2-core machine starts the broker in ~7 s
# and stops it in a few; a loaded one, after a restart with many
# partitions to recover, takes several times longer. A stop that reaches
# SIGKILL leaves a log to recover and so slows the next start.
START_TIMEOUT="${SIDESTREAM_KAFKA_START_TIMEOUT:-180}"
STOP_TIMEOUT="${SIDESTREAM_KAFKA_STOP_TIMEOUT:-60}"

CONFIG="$DATA_DIR/server.properties"
LOG4J_CONFIG="$DATA_DIR/log4j2.properties"
LOG4J1_CONFIG="$DATA_DIR/log4j.properties" # Kafka 3.x (reload4j)
LOG_DIR="$DATA_DIR/log"           # broker's own log4j output
KAFKA_LOG_DIRS="$DATA_DIR/data"    # topic partitions + KRaft metadata log
SERVER_LOG="$LOG_DIR/server.log"
OUT_FILE="$DATA_DIR/kafka.out"     # JVM stdout/stderr
PID_FILE="$DATA_DIR/kafka.pid"
LOCK_FILE="${DATA_DIR%/}.lock"     # beside the data dir: survives `down`

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { printf 'kafka.sh: error: %s\n' "$*" >&2; exit 1; }

# The KRaft quorum's form: 3.9 (KIP-853) and later take a dynamic quorum,
# bootstrapped with `format --standalone`; 3.7 and 3.8 only a static
# voter list. Kafka before 3.7 is not run here.
[[ "$KAFKA_VERSION" =~ ^([0-9]+)\.([0-9]+)\. ]] || die "SIDESTREAM_KAFKA_VERSION '$KAFKA_VERSION' is not X.Y.Z"
KAFKA_MAJOR="${BASH_REMATCH[1]}" KAFKA_MINOR="${BASH_REMATCH[2]}"
((KAFKA_MAJOR > 3 || (KAFKA_MAJOR == 3 && KAFKA_MINOR >= 7))) || die "Kafka $KAFKA_VERSION: this script runs 3.7 and later"
dynamic_quorum() { ((KAFKA_MAJOR > 3 || KAFKA_MINOR >= 9)); }
# The controller listener is advertised for a dynamic quorum's bootstrap;
# before 3.9 a combined node must not advertise it.
advertised_controller() { if dynamic_quorum; then printf ',CONTROLLER://%s:%s' "$HOST" "$CONTROLLER_PORT"; fi; }

# The lock lives beside the data dir: "/" has no "beside" (its lock would
# be ./.lock, wherever the script runs).
[[ "$DATA_DIR" != / ]] || die "SIDESTREAM_KAFKA_DIR must name a directory below /, got '$DATA_DIR'"
# shellcheck source=lib/service.sh
. "$SCRIPT_DIR/lib/service.sh"

# ---------------------------------------------------------------- java, cache

JAVA_BIN=""
find_java() { svc_find_java 17 "Kafka $KAFKA_VERSION"; }

pom_hash() { { cat "$POM"; echo "kafka.version=$KAFKA_VERSION"; } | sha256sum | cut -d' ' -f1; }

cache_ok() {
  [[ -f "$MARKER" ]] && [[ "$(cat "$MARKER")" == "$(pom_hash)" ]] &&
    compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null
}

# Fill $LIBS from Maven Central, once (marker file keyed on the pom's hash).
resolve() {
  cache_ok && return 0
  command -v mvn >/dev/null 2>&1 || die "mvn not found; run scripts/install-deps.sh"
  mkdir -p "$CACHE_ROOT"
  exec 8>"$KAFKA_HOME.lock"
  flock 8
  if cache_ok; then exec 8>&-; return 0; fi
  log "resolving Apache Kafka $KAFKA_VERSION and its runtime jars from Maven Central into $LIBS ..."
  local start=$SECONDS tmp="$KAFKA_HOME.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! mvn -B -q --no-transfer-progress -f "$POM" \
      -Dkafka.version="$KAFKA_VERSION" \
      dependency:copy-dependencies \
      -DincludeScope=runtime \
      -DoutputDirectory="$tmp/libs" </dev/null >"$tmp/mvn.log" 2>&1 8>&- 9>&-; then
    tail -n 40 "$tmp/mvn.log" >&2 || true
    rm -rf "$tmp"
    die "mvn could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION (try SIDESTREAM_KAFKA_VERSION=4.1.1)"
  fi
  compgen -G "$tmp/libs/kafka_2.13-*.jar" >/dev/null || { rm -rf "$tmp"; die "mvn ran but no kafka_2.13 jar was copied"; }
  rm -f "$tmp/mvn.log"
  pom_hash >"$tmp/.resolved"
  rm -rf "$KAFKA_HOME"
  mv "$tmp" "$KAFKA_HOME"
  log "resolved $(ls "$LIBS" | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in $((SECONDS - start)) s"
  exec 8>&-
}

# The tools' logging flags, one a line: log4j2 (4.x) and log4j 1 (3.x,
# reload4j); each version reads the one it has.
tools_log_flags() {
  local f="$KAFKA_HOME/tools-log4j.properties"
  if [[ ! -f "$f" ]]; then
    printf '%s\n' 'log4j.rootLogger=WARN, stderr' \
      'log4j.appender.stderr=org.apache.log4j.ConsoleAppender' \
      'log4j.appender.stderr.Target=System.err' \
      'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout' \
      'log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n' >"$f.$$"
    mv "$f.$$" "$f"
  fi
  printf '%s\n' "-Dlog4j2.configurationFile=$(tools_log4j)" "-Dlog4j.configuration=file:$f"
}

tools_log4j() {
  local f="$KAFKA_HOME/tools-log4j2.properties"
  if [[ ! -f "$f" ]]; then
    cat >"$f.$$" <<'EOF'
# Kafka command line tools: warnings and errors to stderr only.
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
EOF
    mv "$f.$$" "$f"
  fi
  printf '%s' "$f"
}

# --------------------------------------------------------------- processes

port_open() { svc_port_open "$HOST" "$1"; }

is_our_broker() { # pid
  local pid="$1" cmd
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmd" == *kafka.Kafka* && "$cmd" == *"$CONFIG"* ]]
}

# Print the broker's pid (from the pid file, else by its command line).
broker_pid() { svc_find_pid "$PID_FILE" is_our_broker; }

running_and_ready() {
  broker_pid >/dev/null && port_open "$PORT"
}

# --------------------------------------------------------------- config

random_cluster_id() {
  # A Kafka Uuid as text: 16 random bytes, base64url without padding,
  # not starting with '-' (what `kafka-storage random-uuid` prints).
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* && "$id" != AAAAAAAAAAAAAAAAAAAAAA && "$id" != AAAAAAAAAAAAAAAAAAAAAQ ]] && break
  done
  printf '%s' "$id"
}

write_config() {
  mkdir -p "$DATA_DIR" "$LOG_DIR" "$KAFKA_LOG_DIRS"
  cat >"$CONFIG" <<EOF
# Generated by scripts/kafka.sh for the sidestream tests. Single node, KRaft,
# combined broker + controller. Regenerated only with a fresh data dir.
process.roles=broker,controller
node.id=1
$(if dynamic_quorum; then echo "controller.quorum.bootstrap.servers=$HOST:$CONTROLLER_PORT"; else echo "controller.quorum.voters=1@$HOST:$CONTROLLER_PORT"; fi)
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT$(advertised_controller)
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT

log.dirs=$KAFKA_LOG_DIRS

# The router creates its topics itself with an admin client.
auto.create.topics.enable=false
delete.topic.enable=true
num.partitions=1
default.replication.factor=1
min.insync.replicas=1

# Internal topics on one node.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1

# Fast tests.
group.initial.rebalance.delay.ms=0
# Kafka defaults, spelled out for the transaction tests.
transaction.max.timeout.ms=900000
transaction.abort.timed.out.transaction.cleanup.interval.ms=10000
transactional.id.expiration.ms=604800000
# group.coordinator.rebalance.protocols: Kafka's default (classic + consumer ...).

num.network.threads=3
num.io.threads=4
log.retention.hours=168
log.segment.bytes=1073741824
# Short, so the tests see time retention act (TestReplayOldData: a
# repartition topic must never expire a replay's year-old records).
log.retention.check.interval.ms=2000
EOF
  if secure_mode; then
    write_secure_config
  fi
  if [[ -n "${SIDESTREAM_KAFKA_EXTRA_CONFIG:-}" ]]; then
    printf '\n# SIDESTREAM_KAFKA_EXTRA_CONFIG\n%s\n' "$SIDESTREAM_KAFKA_EXTRA_CONFIG" >>"$CONFIG"
  fi
  cat >"$LOG4J_CONFIG" <<EOF
# Broker logging (log4j2), written by scripts/kafka.sh.
status = warn
appender.server.type = RollingFile
appender.server.name = SERVER
appender.server.fileName = $SERVER_LOG
appender.server.filePattern = $LOG_DIR/server.log.%i
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.server.policies.type = Policies
appender.server.policies.size.type = SizeBasedTriggeringPolicy
appender.server.policies.size.size = 100MB
appender.server.strategy.type = DefaultRolloverStrategy
appender.server.strategy.max = 3
rootLogger.level = info
rootLogger.appenderRef.server.ref = SERVER
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache.kafka
logger.apache.level = info
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.controller.name = org.apache.kafka.controller
logger.controller.level = info
logger.state.name = state.change.logger
logger.state.level = warn
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = warn
EOF
  cat >"$LOG4J1_CONFIG" <<EOF
# Broker logging of Kafka 3.x (log4j 1 API, reload4j), written by
# scripts/kafka.sh: the same file and levels as log4j2.properties.
log4j.rootLogger=INFO, server
log4j.appender.server=org.apache.log4j.RollingFileAppender
log4j.appender.server.File=$SERVER_LOG
log4j.appender.server.MaxFileSize=100MB
log4j.appender.server.MaxBackupIndex=3
log4j.appender.server.layout=org.apache.log4j.PatternLayout
log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.authorizer.logger=WARN
EOF
}

# ---------------------------------------------------------- secure listeners

SASL_PORT="${SIDESTREAM_KAFKA_SASL_PORT:-}"
SSL_PORT="${SIDESTREAM_KAFKA_SSL_PORT:-}"

secure_mode() { [[ -n "$SASL_PORT" || -n "$SSL_PORT" ]]; }

# Print the SASL users as "name password" lines, checked.
sasl_users() {
  local u users=()
  IFS=', ' read -r -a users <<<"${SIDESTREAM_KAFKA_SASL_USERS:-}"
  for u in ${users[@]+"${users[@]}"}; do
    [[ "$u" =~ ^([A-Za-z0-9._-]+):([A-Za-z0-9._-]+)$ ]] ||
      die "SIDESTREAM_KAFKA_SASL_USERS: '${u%%:*}:...' is not name:password (letters, digits, . _ -)"
    printf '%s %s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
  done
}

check_secure_env() {
  local p
  for p in "$SASL_PORT" "$SSL_PORT"; do
    [[ -z "$p" || "$p" =~ ^[0-9]+$ ]] || die "secure listener port '$p' is not a number"
  done
  [[ -z "${SIDESTREAM_KAFKA_OAUTH_REAUTH_MS:-}" || "$SIDESTREAM_KAFKA_OAUTH_REAUTH_MS" =~ ^[0-9]+$ ]] ||
    die "SIDESTREAM_KAFKA_OAUTH_REAUTH_MS '$SIDESTREAM_KAFKA_OAUTH_REAUTH_MS' is not a number of milliseconds"
  sasl_users >/dev/null # dies on a malformed user, in this shell
  if [[ -n "$SASL_PORT" && -z "$(sasl_users)" ]]; then
    die "SIDESTREAM_KAFKA_SASL_PORT needs SIDESTREAM_KAFKA_SASL_USERS (name:password ...)"
  fi
  if [[ -n "$SSL_PORT" ]]; then
    local f
    for f in SIDESTREAM_KAFKA_SSL_CERT SIDESTREAM_KAFKA_SSL_KEY; do
      [[ -n "${!f:-}" && -r "${!f}" ]] || die "SIDESTREAM_KAFKA_SSL_PORT needs $f, a readable PEM file"
    done
    if [[ -n "${SIDESTREAM_KAFKA_SSL_CLIENT_CA:-}" && ! -r "$SIDESTREAM_KAFKA_SSL_CLIENT_CA" ]]; then
      die "SIDESTREAM_KAFKA_SSL_CLIENT_CA '$SIDESTREAM_KAFKA_SSL_CLIENT_CA' is not readable"
    fi
  fi
}

# Append the secure listeners to server.properties: these lines override
# the listener lines above (the last value of a key wins).
write_secure_config() {
  check_secure_env
  local listeners="PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT"
  local advertised
  advertised="PLAINTEXT://$HOST:$PORT$(advertised_controller)"
  local map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
  if [[ -n "$SASL_PORT" ]]; then
    listeners+=",SASL_PLAINTEXT://$HOST:$SASL_PORT"
    advertised+=",SASL_PLAINTEXT://$HOST:$SASL_PORT"
    map+=",SASL_PLAINTEXT:SASL_PLAINTEXT"
  fi
  if [[ -n "$SSL_PORT" ]]; then
    listeners+=",SSL://$HOST:$SSL_PORT"
    advertised+=",SSL://$HOST:$SSL_PORT"
    map+=",SSL:SSL"
  fi
  {
    printf '\n# Secure listeners (SIDESTREAM_KAFKA_SASL_PORT, SIDESTREAM_KAFKA_SSL_PORT).\n'
    printf 'listeners=%s\nadvertised.listeners=%s\nlistener.security.protocol.map=%s\n' "$listeners" "$advertised" "$map"
    if [[ -n "$SASL_PORT" ]]; then
      local jaas="" name pass
      while read -r name pass; do jaas+=" user_$name=\"$pass\""; done < <(sasl_users)
      printf 'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER\n'
      printf 'listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER\n'
      # No server callback handler: Kafka validates unsecured JWS tokens.
      printf 'listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";\n'
      if [[ -n "${SIDESTREAM_KAFKA_OAUTH_REAUTH_MS:-}" ]]; then
        printf 'listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms=%s\n' "$SIDESTREAM_KAFKA_OAUTH_REAUTH_MS"
      fi
      printf 'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required%s;\n' "$jaas"
      printf 'listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n'
      printf 'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n'
    fi
    if [[ -n "$SSL_PORT" ]]; then
      # A PEM key store is one file with the key and the certificate chain.
      cat "$SIDESTREAM_KAFKA_SSL_KEY" "$SIDESTREAM_KAFKA_SSL_CERT" >"$DATA_DIR/ssl-keystore.pem"
      chmod 600 "$DATA_DIR/ssl-keystore.pem"
      printf 'listener.name.ssl.ssl.keystore.type=PEM\nlistener.name.ssl.ssl.keystore.location=%s\n' "$DATA_DIR/ssl-keystore.pem"
      if [[ -n "${SIDESTREAM_KAFKA_SSL_CLIENT_CA:-}" ]]; then
        cp "$SIDESTREAM_KAFKA_SSL_CLIENT_CA" "$DATA_DIR/ssl-client-ca.pem"
        printf 'listener.name.ssl.ssl.truststore.type=PEM\nlistener.name.ssl.ssl.truststore.location=%s\n' "$DATA_DIR/ssl-client-ca.pem"
        printf 'listener.name.ssl.ssl.client.auth=required\n'
      fi
    fi
    if [[ "${SIDESTREAM_KAFKA_AUTHORIZER:-}" == 1 ]]; then
      printf '\n# ACLs (SIDESTREAM_KAFKA_AUTHORIZER=1).\n'
      printf 'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n'
      printf 'allow.everyone.if.no.acl.found=true\nsuper.users=User:ANONYMOUS\n'
    fi
  } >>"$CONFIG"
}

# The --add-scram arguments of `kafka-storage format`: both hashes for
# every SASL user.
scram_args() {
  [[ -n "$SASL_PORT" ]] || return 0
  local name pass
  while read -r name pass; do
    printf '%s\n' --add-scram "SCRAM-SHA-256=[name=$name,password=$pass]" --add-scram "SCRAM-SHA-512=[name=$name,password=$pass]"
  done < <(sasl_users)
}

formatted() { [[ -f "$KAFKA_LOG_DIRS/meta.properties" && -f "$CONFIG" ]]; }

format_storage() {
  local cid
  cid="$(random_cluster_id)"
  log "formatting KRaft storage in $KAFKA_LOG_DIRS (cluster id $cid)"
  local scram=() standalone=() logflags=()
  if secure_mode; then mapfile -t scram < <(scram_args); fi
  if dynamic_quorum; then standalone=(--standalone); fi
  mapfile -t logflags < <(tools_log_flags)
  if ! "$JAVA_BIN" -Xmx256m -cp "$LIBS/*" \
      "${logflags[@]}" \
      kafka.tools.StorageTool format ${standalone[@]+"${standalone[@]}"} \
      --cluster-id "$cid" --config "$CONFIG" ${scram[@]+"${scram[@]}"} ${SIDESTREAM_KAFKA_FORMAT_ARGS:-} </dev/null >"$DATA_DIR/format.log" 2>&1 9>&-; then
    cat "$DATA_DIR/format.log" >&2
    die "kafka-storage format failed"
  fi
}

configured_port() { sed -n 's:^listeners=PLAINTEXT\://[^:]*\:\([0-9]*\),.*:\1:p' "$CONFIG" | head -n1; }

# --------------------------------------------------------------- commands

do_start() {
  if running_and_ready; then
    log "already running (pid $(broker_pid)) on $BROKERS"
    return 0
  fi
  resolve
  find_java
  local pid
  if pid="$(broker_pid)"; then
    # Alive but not answering yet (e.g. a concurrent start): just wait.
    log "broker process $pid exists; waiting for it to answer"
    wait_ready "$pid" 0
    return 0
  fi
  if port_open "$PORT" || port_open "$CONTROLLER_PORT"; then
    die "port $PORT or $CONTROLLER_PORT on $HOST is taken by another process; stop it or set SIDESTREAM_KAFKA_PORT"
  fi
  local sp
  for sp in $SASL_PORT $SSL_PORT; do
    if port_open "$sp"; then die "secure listener port $sp on $HOST is taken by another process"; fi
  done
  if formatted; then
    local p
    p="$(configured_port)"
    if [[ "$p" != "$PORT" ]]; then
      die "$DATA_DIR was formatted for port $p, not $PORT; run 'scripts/kafka.sh down' first or set SIDESTREAM_KAFKA_PORT=$p"
    fi
    log "reusing existing data in $DATA_DIR"
  else
    rm -rf "$KAFKA_LOG_DIRS"
    write_config
    format_storage
  fi
  mkdir -p "$LOG_DIR"
  local offset=0
  [[ -f "$SERVER_LOG" ]] && offset="$(stat -c %s "$SERVER_LOG")"
  log "starting Kafka $KAFKA_VERSION on $BROKERS (data $DATA_DIR)"
  # In a subshell that closes every inherited descriptor above 2 (lock files,
  # a caller's pipes) and then becomes the JVM: $! is the broker's pid.
  (
    # shellcheck disable=SC2086  # HEAP_OPTS is a list of flags
    svc_exec_daemon "$JAVA_BIN" $HEAP_OPTS \
      -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
      -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError \
      -Djava.awt.headless=true \
      -Dkafka.logs.dir="$LOG_DIR" \
      -Dlog4j2.configurationFile="$LOG4J_CONFIG" \
      -Dlog4j.configuration="file:$LOG4J1_CONFIG" \
      -cp "$LIBS/*" kafka.Kafka "$CONFIG"
  ) </dev/null >"$OUT_FILE" 2>&1 &
  pid=$!
  echo "$pid" >"$PID_FILE"
  wait_ready "$pid" "$offset"
}

wait_ready() { # pid log-offset
  local pid="$1" offset="$2" start=$SECONDS
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "the broker exited during startup; last lines of $SERVER_LOG and $OUT_FILE:"
      tail -n 40 "$SERVER_LOG" >&2 2>/dev/null || true
      tail -n 20 "$OUT_FILE" >&2 2>/dev/null || true
      rm -f "$PID_FILE"
      die "Kafka did not start"
    fi
    if [[ -f "$SERVER_LOG" ]]; then
      local size from=$((offset + 1))
      size="$(stat -c %s "$SERVER_LOG")"
      ((size < offset)) && from=1 # rolled over
      if tail -c +"$from" "$SERVER_LOG" | grep -q 'Kafka Server started' && port_open "$PORT"; then
        log "ready in $((SECONDS - start)) s (pid $pid)"
        return 0
      fi
    fi
    if ((SECONDS - start >= START_TIMEOUT)); then
      log "not ready after $START_TIMEOUT s; last lines of $SERVER_LOG:"
      tail -n 60 "$SERVER_LOG" >&2 2>/dev/null || true
      tail -n 20 "$OUT_FILE" >&2 2>/dev/null || true
      die "Kafka did not become ready (still running as pid $pid; see 'scripts/kafka.sh logs', stop with 'scripts/kafka.sh down')"
    fi
    sleep 0.5
  done
}

do_stop() {
  local pid
  if ! pid="$(broker_pid)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping broker (pid $pid)"
  svc_stop "$pid" is_our_broker "$STOP_TIMEOUT"
  rm -f "$PID_FILE"
}

with_lock() { svc_with_lock "$LOCK_FILE" "$@"; }

cmd_up() {
  with_lock do_start
  echo "SIDESTREAM_IT_BROKERS=$BROKERS"
}

cmd_down() {
  local keep=0
  for a in "$@"; do
    case "$a" in
      --keep|-k) keep=1 ;;
      *) die "down: unknown argument '$a' (only --keep)" ;;
    esac
  done
  with_lock do_stop
  if ((keep)); then
    log "kept $DATA_DIR"
  else
    svc_remove_dir "$DATA_DIR" "$REPO_DIR"
  fi
}

cmd_restart() {
  with_lock true # hold the lock for the rest of this process
  do_stop
  do_start
  echo "SIDESTREAM_IT_BROKERS=$BROKERS"
}

cmd_status() {
  local pid
  if pid="$(broker_pid)"; then
    if port_open "$PORT"; then
      echo "running pid=$pid brokers=$BROKERS version=$KAFKA_VERSION data=$DATA_DIR"
      return 0
    fi
    echo "starting or unresponsive pid=$pid brokers=$BROKERS"
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
  [[ -f "$SERVER_LOG" ]] || die "no log at $SERVER_LOG"
  if [[ -s "$OUT_FILE" ]]; then
    echo "==> $OUT_FILE <=="; tail -n 20 "$OUT_FILE"; echo "==> $SERVER_LOG <=="
  fi
  if ((follow)); then exec tail -n "$n" -F "$SERVER_LOG"; fi
  tail -n "$n" "$SERVER_LOG"
}

run_tool() { # class args...
  resolve
  find_java
  local cls="$1"; shift
  local logflags=()
  mapfile -t logflags < <(tools_log_flags)
  exec "$JAVA_BIN" -Xmx512m -Djava.awt.headless=true \
    "${logflags[@]}" \
    -cp "$LIBS/*" "$cls" "$@"
}

with_bootstrap() { # class args...
  local cls="$1"; shift
  local a
  for a in "$@"; do
    if [[ "$a" == --bootstrap-server || "$a" == --bootstrap-server=* ]]; then
      run_tool "$cls" "$@"
    fi
  done
  run_tool "$cls" --bootstrap-server "$BROKERS" "$@"
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
    topics)    with_bootstrap org.apache.kafka.tools.TopicCommand "$@" ;;
    groups)    with_bootstrap org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "$@" ;;
    tool)      [[ $# -ge 1 ]] || die "tool: give a class name"; run_tool "$@" ;;
    resolve)   resolve; log "jars in $LIBS" ;;
    classpath) resolve; echo "$LIBS/*" ;;
    brokers)   echo "$BROKERS" ;;
    -h|--help|help) usage ;;
    "") usage; exit 2 ;;
    *) die "unknown command '$cmd' (see 'scripts/kafka.sh help')" ;;
  esac
}

main "$@"
