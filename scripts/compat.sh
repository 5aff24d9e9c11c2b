#!/usr/bin/env bash
# scripts/compat.sh - the compatibility matrix: for each Apache Kafka version
# a broker of its own (scripts/kafka.sh, from Maven Central), the chosen
# integration tests (itest) against it, then a table version x test ->
# pass/fail. docs/compatibility.md says what the rows and tests are.
#
# Usage: scripts/compat.sh [ROW ...]
#   ROW is a Kafka version (3.7 or later, as scripts/kafka.sh runs them),
#   or VERSION+kip848: the router built with KIP-848's consumer group
#   protocol (SIDESTREAM_IT_GROUP_PROTOCOL=consumer, Kafka 4.x), the
#   broker's consumer-group session 6 s like the tests' --session-timeout.
#   Default rows: 3.7.2 3.9.2 4.4.0 4.4.0+kip848.
#   Exit 0 only when every test of every row passed (a test that did not
#   run, or was skipped, fails its row).
#
# Environment (all optional):
#   SIDESTREAM_COMPAT_TESTS        tests of every row, space separated
#                                  (TestKill9ExactlyOnce
#                                  TestGracefulStopExactlyOnce
#                                  TestWindowRestartEquivalence)
#   SIDESTREAM_COMPAT_KIP848_TESTS tests of a +kip848 row (the above and
#                                  TestScaleOutInExactlyOnce: rebalances are
#                                  where the protocols differ)
#   SIDESTREAM_COMPAT_PORT         first row's broker port (19300); row i
#                                  takes PORT+10*i and the next one
#   SIDESTREAM_COMPAT_DIR          prefix of the rows' broker dirs and logs
#                                  (/tmp/sidestream-compat): DIR-ROW/,
#                                  DIR-ROW.itest.log, DIR-matrix.txt
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_DIR"

TESTS="${SIDESTREAM_COMPAT_TESTS:-TestKill9ExactlyOnce TestGracefulStopExactlyOnce TestWindowRestartEquivalence}"
KIP848_TESTS="${SIDESTREAM_COMPAT_KIP848_TESTS:-$TESTS TestScaleOutInExactlyOnce}"
BASE_PORT="${SIDESTREAM_COMPAT_PORT:-19300}"
DIR="${SIDESTREAM_COMPAT_DIR:-/tmp/sidestream-compat}"
ROWS=("$@")
((${#ROWS[@]})) || ROWS=(3.7.2 3.9.2 4.4.0 4.4.0+kip848)

# KIP-848's group session is the broker's (the client's session timeout
# is ignored): 6 s, as the tests give the classic protocol, so a killed
# member's partitions move in seconds; its minimums allow that.
KIP848_BROKER_CONFIG="group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=6000
group.consumer.min.heartbeat.interval.ms=1000
group.consumer.heartbeat.interval.ms=2000"

log() { printf 'compat.sh: %s\n' "$*" >&2; }
die() { printf 'compat.sh: error: %s\n' "$*" >&2; exit 1; }

for row in "${ROWS[@]}"; do
  [[ "$row" =~ ^[0-9]+\.[0-9]+\.[0-9]+(\+kip848)?$ ]] || die "row '$row' is not VERSION or VERSION+kip848"
done

# Every broker this script started is stopped on exit, whatever happened.
declare -a STARTED=()
kafka() { # row command...
  local row="$1" i="$2"; shift 2
  SIDESTREAM_KAFKA_VERSION="${row%+kip848}" \
  SIDESTREAM_KAFKA_PORT=$((BASE_PORT + 10 * i)) \
  SIDESTREAM_KAFKA_DIR="$DIR-$row" \
  SIDESTREAM_KAFKA_EXTRA_CONFIG="$(if [[ "$row" == *+kip848 ]]; then printf '%s' "$KIP848_BROKER_CONFIG"; fi)" \
    scripts/kafka.sh "$@"
}
cleanup() {
  local s
  for s in ${STARTED[@]+"${STARTED[@]}"}; do kafka "${s%:*}" "${s##*:}" down >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

declare -A RESULT=() ELAPSED=()
all_tests=()
add_tests() { local t; for t in "$@"; do [[ " ${all_tests[*]-} " == *" $t "* ]] || all_tests+=("$t"); done; }

run_row() { # row index
  local row="$1" i="$2" tests start=$SECONDS protocol=classic t
  tests="$TESTS"
  if [[ "$row" == *+kip848 ]]; then tests="$KIP848_TESTS" protocol=consumer; fi
  # shellcheck disable=SC2086 # a list of names
  add_tests $tests
  kafka "$row" "$i" down >/dev/null 2>&1 || true # a fresh data dir: EXTRA_CONFIG applies at format
  STARTED+=("$row:$i")
  local brokers
  if ! kafka "$row" "$i" up >"$DIR-$row.kafka.log" 2>&1; then
    tail -n 30 "$DIR-$row.kafka.log" >&2
    for t in $tests; do RESULT["$row/$t"]="no-broker"; done
    ELAPSED["$row"]=$((SECONDS - start))
    return 0
  fi
  brokers="$(sed -n 's/^SIDESTREAM_IT_BROKERS=//p' "$DIR-$row.kafka.log")"
  log "Kafka ${row%+kip848} on $brokers ($protocol group protocol): $tests"
  local re
  re="^($(tr ' ' '|' <<<"$tests"))\$"
  SIDESTREAM_IT_BROKERS="$brokers" SIDESTREAM_IT_GROUP_PROTOCOL="$protocol" \
    go test -count=1 -timeout 30m -v -run "$re" ./itest >"$DIR-$row.itest.log" 2>&1 || true
  grep -E '^(--- |FAIL|ok|scenario=)|panic' "$DIR-$row.itest.log" | sed "s/^/  [$row] /" >&2 || true
  for t in $tests; do
    if grep -qE "^--- PASS: $t \\(" "$DIR-$row.itest.log"; then
      RESULT["$row/$t"]=pass
    elif grep -qE "^--- SKIP: $t \\(" "$DIR-$row.itest.log"; then
      RESULT["$row/$t"]=SKIP
    elif grep -qE "^--- FAIL: $t \\(" "$DIR-$row.itest.log"; then
      RESULT["$row/$t"]=FAIL
    else
      RESULT["$row/$t"]=not-run
    fi
  done
  kafka "$row" "$i" down >/dev/null 2>&1 || true
  ELAPSED["$row"]=$((SECONDS - start))
}

mkdir -p "$(dirname "$DIR")"
total=$SECONDS
for i in "${!ROWS[@]}"; do
  run_row "${ROWS[$i]}" "$i"
done

# The matrix: one line per test, one column per row; "-" is a test the
# row does not run.
npass=0 nfail=0
for k in "${!RESULT[@]}"; do
  if [[ "${RESULT[$k]}" == pass ]]; then npass=$((npass + 1)); else nfail=$((nfail + 1)); fi
done
{
  printf 'Kafka compatibility matrix (scripts/compat.sh, %s)\n' "$(date -u +%Y-%m-%dT%H:%MZ)"
  printf '%-32s' test
  for row in "${ROWS[@]}"; do printf ' %-14s' "$row"; done
  printf '\n'
  for t in "${all_tests[@]}"; do
    printf '%-32s' "$t"
    for row in "${ROWS[@]}"; do
      r="${RESULT["$row/$t"]:--}"
      printf ' %-14s' "$r"
    done
    printf '\n'
  done
  printf '%-32s' "elapsed (broker + tests)"
  for row in "${ROWS[@]}"; do printf ' %-14s' "${ELAPSED[$row]}s"; done
  printf '\ntotal %ds\n' $((SECONDS - total))
  printf 'compat: %d passed, %d failed\n' "$npass" "$nfail"
} | tee "$DIR-matrix.txt"

if ((nfail)); then
  log "a test failed or did not run; logs: $DIR-ROW.itest.log"
  exit 1
fi
