#!/usr/bin/env bash
# Runs the end-to-end throughput session of docs/benchmarks.md: for each
# repetition and mode, a fresh kfake broker in its own process (on a free
# loopback port), preloaded with N generated records, then one measured
# run; finally the medians. Results go to $OUT (JSON lines).
#
#   N=1000000 REPS=3 bench/run.sh
#   MODES="router-eos" N=200000 REPS=1 bench/run.sh
#   MODES="router-alo router-eos" RUN_ARGS="--no-schema" LABEL_SUFFIX=-noschema bench/run.sh
#   VARIANTS="router-eos router-eos-noschema=router-eos:--no-schema" bench/run.sh
#
# VARIANTS lists runs as label=mode:flag,flag (or just a mode); it
# overrides MODES, RUN_ARGS and LABEL_SUFFIX. All variants of one
# repetition run back to back, so they share the machine's conditions.
#
# On a shared machine other processes take CPU from the run: each run
# waits for a quiet machine first (at most QUIET_WAIT seconds), and a run
# during which the rest of the machine used more than MAX_OTHER cores is
# set aside in $OUT.busy and repeated (at most RETRIES times).
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000000}
REPS=${REPS:-3}
MODES=${MODES:-"passthrough-alo passthrough-eos router-alo router-eos"}
OUT=${OUT:-bench/results/run-$(date +%Y%m%d-%H%M%S).jsonl}
RUN_ARGS=${RUN_ARGS:-}         # extra flags for every run (see bench/README.md)
BROKER_ARGS=${BROKER_ARGS:-}   # extra flags for the broker, e.g. --key-by service
LABEL_SUFFIX=${LABEL_SUFFIX:-} # appended to the mode in the results
MAX_OTHER=${MAX_OTHER:-0.25}   # cores; 0 disables the check
RETRIES=${RETRIES:-5}
QUIET_WAIT=${QUIET_WAIT:-120}
BIN=$(mktemp -d)/throughput
WORK=$(mktemp -d)

go build -C bench -o "$BIN" ./throughput # bench/ is its own module (bench/go.mod)
mkdir -p "$(dirname "$OUT")"

broker_pid=""
cleanup() {
	if [[ -n "$broker_pid" ]] && kill -0 "$broker_pid" 2>/dev/null; then
		kill "$broker_pid"
		wait "$broker_pid" 2>/dev/null || true
	fi
	broker_pid=""
}
trap cleanup EXIT

# busy_pct samples /proc/stat for 3 s: the share of all cores in use.
busy_pct() {
	local b0 i0 b1 i1
	read -r b0 i0 < <(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
	sleep 3
	read -r b1 i1 < <(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
	echo $((100 * (b1 - b0) / ((b1 - b0) + (i1 - i0) + 1)))
}

wait_quiet() {
	local deadline=$((SECONDS + QUIET_WAIT)) pct
	while ((SECONDS < deadline)); do
		pct=$(busy_pct)
		((pct < 10)) && return 0
		echo "  machine ${pct}% busy, waiting" >&2
	done
}

# start_broker starts a loaded broker and sets broker_pid and addr.
start_broker() {
	local out="$WORK/broker-$1.out"
	"$BIN" broker --records "$N" ${BROKER_ARGS:-} >"$out" 2>"$WORK/broker.err" &
	broker_pid=$!
	for _ in $(seq 900); do
		grep -q '"ready"' "$out" && break
		kill -0 "$broker_pid" 2>/dev/null || { cat "$WORK/broker.err" >&2; exit 1; }
		sleep 0.2
	done
	addr=$(sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' "$out")
	[[ -n "$addr" ]] || { echo "broker not ready" >&2; exit 1; }
}

if [[ -z "${VARIANTS:-}" ]]; then
	VARIANTS=""
	for mode in $MODES; do
		VARIANTS+=" $mode$LABEL_SUFFIX=$mode:${RUN_ARGS// /,}"
	done
fi

n=0
for rep in $(seq "$REPS"); do
	for variant in $VARIANTS; do
		label=${variant%%=*}
		spec=${variant#*=}
		mode=${spec%%:*}
		args=""
		[[ "$spec" == *:* ]] && args=${spec#*:}
		args=${args//,/ }
		for try in $(seq $((RETRIES + 1))); do
			n=$((n + 1))
			start_broker "$n"
			wait_quiet
			echo "rep $rep/$REPS $label (try $try): broker $addr" >&2
			# shellcheck disable=SC2086 # args is a list of flags
			line=$("$BIN" run --mode "$mode" --label "$label" --brokers "$addr" --records "$N" --broker-pid "$broker_pid" $args)
			cleanup
			other=$(sed -n 's/.*"other_cores":\([0-9.e+-]*\).*/\1/p' <<<"$line")
			if awk -v o="$other" -v m="$MAX_OTHER" 'BEGIN { exit !(m > 0 && o > m) }'; then
				echo "  other processes used $other cores: set aside, repeating" >&2
				echo "$line" >>"$OUT.busy"
				((try <= RETRIES)) && continue
				echo "  still busy after $RETRIES retries: keeping this run" >&2
			fi
			echo "$line" | tee -a "$OUT"
			break
		done
	done
done

echo >&2
"$BIN" summarize "$OUT"
