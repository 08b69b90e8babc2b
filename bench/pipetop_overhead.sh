#!/usr/bin/env bash
# Measures what pipetop costs attached to busy trainers, next to btop
# measured the same way in the same rounds: CPU time (every thread's
# schedstat, in % of one core) and bytes written to the terminal (tmux
# pipe-pane). Each case runs ROUNDS rounds; a round measures pipetop and
# btop one after the other, alternating which goes first, so a noisy moment
# cannot decide a case. The table at the end gives medians over the rounds.
#
# Cases (CASES, all by default):
#   rate-1000  one trainer at 1,000 steps/s
#   rate-10    one trainer at 10 steps/s
#   ranks-64   a run of 64 ranks at RANKS_RATE steps/s each, one pipetop
#              attached to all of them
#   viewers-8  8 copies of pipetop attached at once to the 1,000 steps/s
#              trainer (the mean copy)
#   threads-200 one trainer whose process tree holds 200 threads (the thread
#              sampler's case)
#   run-1000   pipetop run -- the synthetic publisher at 1,000 steps/s, with
#              the monitor on the terminal (pipetop's own CPU: the command it
#              runs is another process; btop runs beside the same publisher)
#   run-record-1000  the same with --record (the recording in $WORK)
#   run-py-1000  pipetop run -- a PyTorch loop at 1,000 steps/s
#              (bench/py_trainer.py, Debian's python3 with torch), whose
#              stack samples pipetop reads from outside at the default rate
#              (PIPETOP_STACKS_HZ, 100/s); btop runs beside another copy
#   run-py-1000-off  the same with PIPETOP_STACKS_HZ=0 (no stack samples)
#
# usage: bench/pipetop_overhead.sh [DURATION_SECONDS]   (per measurement, default 30)
# env:   ROUNDS (3), CASES, RANKS (64), RANKS_RATE (100), INTERVAL (refresh,
#        1s), SIZE (terminal, 120x40), WARMUP (seconds before measuring, 10),
#        PUBLISHER (command for the single trainer; default: the SYNTHETIC
#        publisher at the case's rate), PY (the run-py cases' Python with
#        torch, /usr/bin/python3)
set -euo pipefail

DURATION=${1:-30}
ROUNDS=${ROUNDS:-3}
CASES=${CASES:-"rate-1000 rate-10 ranks-64 viewers-8 threads-200 run-1000 run-record-1000"}
RANKS=${RANKS:-64}
RANKS_RATE=${RANKS_RATE:-100}
INTERVAL=${INTERVAL:-1s}
SIZE=${SIZE:-120x40}
WARMUP=${WARMUP:-10}
PY=${PY:-/usr/bin/python3}
COLS=${SIZE%x*}
ROWS=${SIZE#*x}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
SERVER="pipetop-bench-$$"
export PIPETOP_SOCKET_DIR="$WORK/sockets"
# shellcheck source=bench/lib.bash
. "$ROOT/bench/lib.bash"

pub_pid=""
stop_pub() {
	if [ -n "$pub_pid" ]; then
		kill -INT "$pub_pid" 2>/dev/null || true
		# A Python trainer started with & ignores SIGINT (no job control).
		for _ in $(seq 1 20); do kill -0 "$pub_pid" 2>/dev/null || break; sleep 0.1; done
		kill -TERM "$pub_pid" 2>/dev/null || true
		wait "$pub_pid" 2>/dev/null || true
		pub_pid=""
	fi
}
cleanup() {
	tmux -L "$SERVER" kill-server 2>/dev/null || true
	stop_pub
	rm -rf "$WORK"
}
trap cleanup EXIT

# start_case CASE: starts the case's publisher and sets TARGET (what pipetop
# attaches to) and COPIES.
start_case() {
	COPIES=1
	TARGET=bench
	case $1 in
	rate-1000 | viewers-8) ${PUBLISHER:-"$WORK/synthetic" -name bench -rate 1000 -quiet} & ;;
	rate-10) ${PUBLISHER:-"$WORK/synthetic" -name bench -rate 10 -quiet} & ;;
	ranks-*)
		"$WORK/synthetic" -name sim -ranks "$RANKS" -straggler 1 -rate "$RANKS_RATE" -quiet -run "sim-$RANKS" &
		TARGET="sim-$RANKS"
		;;
	threads-200) "$WORK/synthetic" -name bench -rate 1000 -threads 200 -quiet & ;;
	run-py-*) # pipetop run starts its own trainer; btop's turn gets this one
		$PY "$ROOT/bench/py_trainer.py" --step-ms 1 &
		;;
	run-*) # pipetop run starts its own publisher; btop's turn gets this one
		"$WORK/synthetic" -name other -rate 1000 -quiet &
		;;
	*)
		echo "unknown case $1" >&2
		exit 2
		;;
	esac
	pub_pid=$!
	[ "$1" = viewers-8 ] && COPIES=8
	sleep 2
}

bench_build
mkdir -p "$WORK/config/btop"
ms=$(awk -v i="$INTERVAL" 'BEGIN { v = i + 0; if (i ~ /ms$/) print v; else print v * 1000 }')
echo "update_ms = $ms" >"$WORK/config/btop/btop.conf"
btop="env TERM=xterm-256color XDG_CONFIG_HOME=$WORK/config btop --utf-force"
command -v btop >/dev/null || { echo "btop is required for the comparison (apt-get install btop)" >&2; exit 1; }

echo "terminal ${COLS}x${ROWS}, refresh $INTERVAL, ${DURATION}s measured after ${WARMUP}s warm-up, $ROUNDS alternating rounds, $(nproc) cores" >&2
summary=()
for c in $CASES; do
	start_case "$c"
	pipetop="env TERM=xterm-256color $WORK/pipetop attach $TARGET --no-gpu --interval $INTERVAL"
	case $c in
	run-1000) pipetop="env TERM=xterm-256color $WORK/pipetop run --no-gpu -- $WORK/synthetic -name bench -rate 1000 -quiet" ;;
	run-record-1000) pipetop="env TERM=xterm-256color $WORK/pipetop run --no-gpu --record $WORK/run.pipetop -- $WORK/synthetic -name bench -rate 1000 -quiet" ;;
	run-py-1000) pipetop="env TERM=xterm-256color PIPETOP_CACHE_DIR=$WORK/cache $WORK/pipetop run --no-gpu -- $PY $ROOT/bench/py_trainer.py --step-ms 1" ;;
	run-py-1000-off) pipetop="env TERM=xterm-256color PIPETOP_CACHE_DIR=$WORK/cache PIPETOP_STACKS_HZ=0 $WORK/pipetop run --no-gpu -- $PY $ROOT/bench/py_trainer.py --step-ms 1" ;;
	esac
	pc=() pb=() bc=() bb=()
	for r in $(seq 1 "$ROUNDS"); do
		order="pipetop btop"
		[ $((r % 2)) -eq 0 ] && order="btop pipetop"
		for tool in $order; do
			if [ "$tool" = pipetop ]; then
				measure "$c-pipetop-r$r" "$COPIES" "$pipetop"
				pc+=("$MEASURED_CPU") pb+=("$MEASURED_BPS")
			else
				measure "$c-btop-r$r" 1 "$btop"
				bc+=("$MEASURED_CPU") bb+=("$MEASURED_BPS")
			fi
		done
	done
	stop_pub
	p=$(median "${pc[@]}") b=$(median "${bc[@]}")
	summary+=("$(printf "%-12s %9.2f %% %9.0f B/s %9.2f %% %9.0f B/s %7.2fx" "$c" "$p" "$(median "${pb[@]}")" "$b" "$(median "${bb[@]}")" "$(echo "$p / $b" | bc -l)")")
done

echo
echo "medians of $ROUNDS rounds (CPU in % of one core; ratio = pipetop / btop)"
printf "%-12s %11s %13s %11s %13s %8s\n" "case" "pipetop" "terminal" "btop" "terminal" "ratio"
printf "%s\n" "${summary[@]}"
