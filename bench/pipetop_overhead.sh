#!/usr/bin/env bash
# Measures what pipetop costs while attached to a busy trainer: CPU time
# (utime+stime from /proc/PID/stat, in % of one core) and bytes written to
# the terminal (tmux pipe-pane), next to btop measured the same way.
#
# usage: bench/pipetop_overhead.sh [DURATION_SECONDS]   (default 60)
# env:   RATE (steps/s of the publisher, 1000), INTERVAL (refresh, 1s),
#        SIZE (terminal, 120x40), WARMUP (seconds before measuring, 3),
#        PUBLISHER (command for the trainer; default: the SYNTHETIC publisher)
set -euo pipefail

DURATION=${1:-60}
RATE=${RATE:-1000}
INTERVAL=${INTERVAL:-1s}
SIZE=${SIZE:-120x40}
WARMUP=${WARMUP:-3}
COLS=${SIZE%x*}
ROWS=${SIZE#*x}

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server="pipetop-bench-$$"
export PIPETOP_SOCKET_DIR="$work/sockets"
export PATH="/usr/local/go/bin:$PATH"
PUBLISHER=${PUBLISHER:-"$work/synthetic -name bench -rate $RATE -quiet"}

pub_pid=""
cleanup() {
	tmux -L "$server" kill-server 2>/dev/null || true
	if [ -n "$pub_pid" ]; then kill "$pub_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

command -v tmux >/dev/null || { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }
echo "building pipetop and the synthetic publisher..." >&2
(cd "$root" && CGO_CFLAGS=-Wno-deprecated-declarations go build -o "$work/pipetop" ./cmd/pipetop \
	&& go build -o "$work/synthetic" ./examples/synthetic)

$PUBLISHER &
pub_pid=$!
sleep 1

ticks=$(getconf CLK_TCK)

# cputicks PID: utime+stime of PID in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the parenthesised command name).
cputicks() {
	sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}

# measure NAME COMMAND: runs COMMAND in a fresh tmux window of SIZE and
# prints "NAME cpu% bytes/s".
measure() {
	local name=$1 cmd=$2 out="$work/$1.out"
	: >"$out"
	tmux -L "$server" new-session -d -s "$name" -x "$COLS" -y "$ROWS" "exec $cmd"
	tmux -L "$server" pipe-pane -t "$name" -o "cat >>'$out'"
	local pid
	pid=$(tmux -L "$server" display-message -p -t "$name" '#{pane_pid}')
	sleep "$WARMUP"
	local t0 b0 s0 t1 b1 s1
	t0=$(cputicks "$pid"); b0=$(stat -c %s "$out"); s0=$(date +%s.%N)
	sleep "$DURATION"
	t1=$(cputicks "$pid"); b1=$(stat -c %s "$out"); s1=$(date +%s.%N)
	tmux -L "$server" kill-session -t "$name"
	awk -v n="$name" -v dt="$(echo "$s1 - $s0" | bc -l)" -v dc="$((t1 - t0))" -v db="$((b1 - b0))" -v hz="$ticks" \
		'BEGIN { printf "%-28s %8.2f %% %10.0f B/s\n", n, 100 * dc / hz / dt, db / dt }'
}

echo "publisher: $PUBLISHER" >&2
echo "terminal ${COLS}x${ROWS}, refresh $INTERVAL, ${DURATION}s measured after ${WARMUP}s warm-up" >&2
printf "%-28s %10s %14s\n" "tool" "CPU (1 core)" "terminal"
measure "pipetop-attached" "env TERM=xterm-256color $work/pipetop --interval $INTERVAL"
if command -v btop >/dev/null; then
	mkdir -p "$work/config/btop"
	ms=$(awk -v i="$INTERVAL" 'BEGIN { v = i + 0; if (i ~ /ms$/) print v; else print v * 1000 }')
	echo "update_ms = $ms" >"$work/config/btop/btop.conf"
	measure "btop-update-${ms}ms" "env TERM=xterm-256color XDG_CONFIG_HOME=$work/config btop --utf-force"
else
	echo "btop not installed: apt-get install btop" >&2
fi
