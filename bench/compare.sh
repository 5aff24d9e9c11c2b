#!/usr/bin/env bash
# bench/compare.sh - the whole comparison of docs/benchmarks.md in one
# command: a real Apache Kafka from scripts/kafka.sh, the pass-through
# limit, sidestream W1/W2 and the Kafka Streams and Goka peers on the same
# preloaded input, a table on stdout, JSON in bench/results/compare.json,
# the Markdown section of docs/benchmarks.md and docs/benchmarks-compare.png.
#
#   bench/compare.sh                          # 1,000,000 records, 3 repetitions
#   bench/compare.sh --records 200000 --reps 3
#   bench/compare.sh --smoke                  # a few thousand records, every contender once, writes nothing
#   bench/compare.sh --contenders limit-alo,sidestream-w1-eos
#   bench/compare.sh tableload --rows 1000000 --reps 3   # a lookup table's load, as a process (bench/README.md)
#
# Arguments go to `throughput compare` (see bench/README.md). Environment:
#   SIDESTREAM_KAFKA_PORT (29192) and SIDESTREAM_KAFKA_DIR
#   (/tmp/sidestream-bench-kafka): the broker. One already running there is
#   used and left running; one this script starts is stopped at the end.
#   SIDESTREAM_IT_BROKERS: use this broker (e.g. the one scripts/test.sh
#   started) and start none.
#   BENCH_SKIP_PEERS=1: do not build the Kafka Streams and Goka peers.
set -euo pipefail
cd "$(dirname "$0")/.."

export SIDESTREAM_KAFKA_PORT=${SIDESTREAM_KAFKA_PORT:-29192}
export SIDESTREAM_KAFKA_DIR=${SIDESTREAM_KAFKA_DIR:-/tmp/sidestream-bench-kafka}
BIN=$(mktemp -d)
started=0
cleanup() {
	if ((started)); then scripts/kafka.sh down >/dev/null 2>&1 || true; fi
	rm -rf "$BIN"
}
trap cleanup EXIT

# bench/ is its own module (bench/go.mod: the harness's and the peers'
# libraries stay out of the router's requirements).
go build -C bench -o "$BIN/throughput" ./throughput
sub=compare
if [[ "${1:-}" == tableload ]]; then
	sub=tableload
	shift
fi
peers=()
if [[ -z "${BENCH_SKIP_PEERS:-}" && $sub == compare ]]; then
	if go build -C bench/peers/goka -o "$BIN/goka-peer" . 2>"$BIN/goka.err"; then
		peers+=(--goka-bin "$BIN/goka-peer")
	else
		echo "compare.sh: the Goka peer does not build (skipped):" >&2
		cat "$BIN/goka.err" >&2
	fi
	if ! mvn -B -q --no-transfer-progress -f bench/peers/kafka-streams/pom.xml package >"$BIN/mvn.log" 2>&1; then
		echo "compare.sh: the Kafka Streams peer does not build (skipped):" >&2
		tail -n 20 "$BIN/mvn.log" >&2
		rm -rf bench/peers/kafka-streams/target/classes
	fi
fi

if [[ -n "${SIDESTREAM_IT_BROKERS:-}" ]]; then
	brokers=$SIDESTREAM_IT_BROKERS
else
	if ! scripts/kafka.sh status >/dev/null 2>&1; then
		started=1
		scripts/kafka.sh up >/dev/null
	fi
	brokers=$(scripts/kafka.sh brokers)
fi
if [[ $sub == tableload ]]; then
	"$BIN/throughput" tableload --brokers "$brokers" "$@"
	exit
fi
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/kafka/pom.xml | head -n1)

"$BIN/throughput" compare --brokers "$brokers" --kafka-version "${SIDESTREAM_KAFKA_VERSION:-$version}" \
	--command "bench/compare.sh${*:+ $*}" "${peers[@]}" "$@"
