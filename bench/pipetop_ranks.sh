#!/usr/bin/env bash
# Measures what pipetop costs attached to a simulated multi-process run of
# 64 ranks, side by side with a run of 1 rank: CPU time (every thread's
# schedstat, in % of one core) and bytes written to the terminal. The
# ranks are the SYNTHETIC publisher's (-ranks R: a socket per rank, one
# process, rank 1 a planted straggler); the target is <= 2 % of a core at a
# 1 s refresh with 64 ranks.
#
# usage: bench/pipetop_ranks.sh [DURATION_SECONDS]   (default 30)
# env:   RANKS (the large run, 64), RATE (steps/s of each rank, 50),
#        INTERVAL (refresh, 1s), SIZE (terminal, 120x40), WARMUP (5)
set -euo pipefail

DURATION=${1:-30}
RANKS=${RANKS:-64}
RATE=${RATE:-50}
INTERVAL=${INTERVAL:-1s}
SIZE=${SIZE:-120x40}
WARMUP=${WARMUP:-5}
COLS=${SIZE%x*}
ROWS=${SIZE#*x}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
SERVER="pipetop-ranks-$$"
export PIPETOP_SOCKET_DIR="$WORK/sockets"
# shellcheck source=bench/lib.bash
. "$ROOT/bench/lib.bash"

pub_pid=""
stop_pub() {
	if [ -n "$pub_pid" ]; then
		kill -INT "$pub_pid" 2>/dev/null || true
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

# ranks N: attaches pipetop to a simulated run of N ranks and measures it.
ranks() {
	local n=$1 label="$1-rank"
	[ "$n" -gt 1 ] && label="$1-ranks"
	if [ "$n" -gt 1 ]; then
		"$WORK/synthetic" -name sim -ranks "$n" -straggler 1 -rate "$RATE" -quiet -run "sim-$n" &
	else # one rank of a run of one
		"$WORK/synthetic" -name sim-rank0 -rank 0 -world-size 1 -rate "$RATE" -quiet -run "sim-$n" &
	fi
	pub_pid=$!
	sleep 2
	measure "$label" 1 "env TERM=xterm-256color $WORK/pipetop attach sim-$n --no-gpu --interval $INTERVAL"
	stop_pub
	grep -q "ranks · $n" "$WORK/$label-1.screen" || [ "$n" -lt 2 ] ||
		{ echo "$label: no ranks pane on screen:" >&2; cat "$WORK/$label-1.screen" >&2; exit 1; }
}

bench_build
echo "ranks publish $RATE steps/s each; terminal ${COLS}x${ROWS}, refresh $INTERVAL, ${DURATION}s measured after ${WARMUP}s warm-up" >&2
printf "%-28s %10s %14s\n" "pipetop attached to" "CPU (1 core)" "terminal"
ranks 1
ranks "$RANKS"
