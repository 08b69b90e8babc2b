#!/usr/bin/env bash
# Measures what pipetop costs while attached to a busy trainer, with one
# and with VIEWERS copies attached at once: CPU time (utime+stime from
# /proc/PID/stat, in % of one core) and bytes written to the terminal (tmux
# pipe-pane), next to btop measured the same way in the same run.
#
# usage: bench/pipetop_overhead.sh [DURATION_SECONDS]   (default 60)
# env:   RATE (steps/s of the publisher, 1000), INTERVAL (refresh, 1s),
#        SIZE (terminal, 120x40), WARMUP (seconds before measuring, 3),
#        VIEWERS (the many-viewers case, 8; 0 skips it),
#        PUBLISHER (command for the trainer; default: the SYNTHETIC publisher)
set -euo pipefail

DURATION=${1:-60}
RATE=${RATE:-1000}
INTERVAL=${INTERVAL:-1s}
SIZE=${SIZE:-120x40}
WARMUP=${WARMUP:-3}
VIEWERS=${VIEWERS:-8}
COLS=${SIZE%x*}
ROWS=${SIZE#*x}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
SERVER="pipetop-bench-$$"
export PIPETOP_SOCKET_DIR="$WORK/sockets"
# shellcheck source=bench/lib.bash
. "$ROOT/bench/lib.bash"
PUBLISHER=${PUBLISHER:-"$WORK/synthetic -name bench -rate $RATE -quiet"}

pub_pid=""
cleanup() {
	tmux -L "$SERVER" kill-server 2>/dev/null || true
	if [ -n "$pub_pid" ]; then kill "$pub_pid" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

bench_build
$PUBLISHER &
pub_pid=$!
sleep 1

echo "publisher: $PUBLISHER" >&2
echo "terminal ${COLS}x${ROWS}, refresh $INTERVAL, ${DURATION}s measured after ${WARMUP}s warm-up" >&2
printf "%-28s %10s %14s\n" "tool" "CPU (1 core)" "terminal"
pipetop="env TERM=xterm-256color $WORK/pipetop --interval $INTERVAL"
measure "pipetop-attached" 1 "$pipetop"
if [ "$VIEWERS" -gt 1 ]; then
	measure "pipetop-${VIEWERS}-viewers" "$VIEWERS" "$pipetop"
fi
if command -v btop >/dev/null; then
	mkdir -p "$WORK/config/btop"
	ms=$(awk -v i="$INTERVAL" 'BEGIN { v = i + 0; if (i ~ /ms$/) print v; else print v * 1000 }')
	echo "update_ms = $ms" >"$WORK/config/btop/btop.conf"
	measure "btop-update-${ms}ms" 1 "env TERM=xterm-256color XDG_CONFIG_HOME=$WORK/config btop --utf-force"
else
	echo "btop not installed: apt-get install btop" >&2
fi
