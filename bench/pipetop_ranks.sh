#!/usr/bin/env bash
# Measures what pipetop costs attached to a simulated multi-process run of
# 64 ranks, side by side with a run of 1 rank: CPU time (utime+stime from
# /proc/PID/stat, in % of one core) and bytes written to the terminal. The
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

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server="pipetop-ranks-$$"
export PIPETOP_SOCKET_DIR="$work/sockets"
export PATH="/usr/local/go/bin:$PATH"

pub_pid=""
stop_pub() {
	if [ -n "$pub_pid" ]; then
		kill -INT "$pub_pid" 2>/dev/null || true
		wait "$pub_pid" 2>/dev/null || true
		pub_pid=""
	fi
}
cleanup() {
	tmux -L "$server" kill-server 2>/dev/null || true
	stop_pub
	rm -rf "$work"
}
trap cleanup EXIT

command -v tmux >/dev/null || { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }
echo "building pipetop and the synthetic publisher..." >&2
(cd "$root" && CGO_CFLAGS=-Wno-deprecated-declarations go build -o "$work/pipetop" ./cmd/pipetop \
	&& go build -o "$work/synthetic" ./examples/synthetic)

ticks=$(getconf CLK_TCK)
cputicks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# measure NAME RANKS: starts a simulated run of RANKS ranks, attaches
# pipetop to it in a fresh tmux window of SIZE and prints
# "NAME cpu% bytes/s".
measure() {
	local name=$1 n=$2 out="$work/$1.out"
	if [ "$n" -gt 1 ]; then
		"$work/synthetic" -name sim -ranks "$n" -straggler 1 -rate "$RATE" -quiet -run "sim-$n" &
	else # one rank of a run of one
		"$work/synthetic" -name sim-rank0 -rank 0 -world-size 1 -rate "$RATE" -quiet -run "sim-$n" &
	fi
	pub_pid=$!
	sleep 2
	: >"$out"
	tmux -L "$server" new-session -d -s "$name" -x "$COLS" -y "$ROWS" \
		"exec env TERM=xterm-256color $work/pipetop attach sim-$n --no-gpu --interval $INTERVAL"
	tmux -L "$server" pipe-pane -t "$name" -o "cat >>'$out'"
	local pid
	pid=$(tmux -L "$server" display-message -p -t "$name" '#{pane_pid}')
	sleep "$WARMUP"
	local t0 b0 s0 t1 b1 s1
	t0=$(cputicks "$pid"); b0=$(stat -c %s "$out"); s0=$(date +%s.%N)
	sleep "$DURATION"
	t1=$(cputicks "$pid"); b1=$(stat -c %s "$out"); s1=$(date +%s.%N)
	tmux -L "$server" capture-pane -p -t "$name" >"$work/$name.screen"
	tmux -L "$server" kill-session -t "$name"
	stop_pub
	grep -q "ranks · $n" "$work/$name.screen" || [ "$n" -lt 2 ] || { echo "$name: no ranks pane on screen:" >&2; cat "$work/$name.screen" >&2; exit 1; }
	awk -v n="$name" -v dt="$(echo "$s1 - $s0" | bc -l)" -v dc="$((t1 - t0))" -v db="$((b1 - b0))" -v hz="$ticks" \
		'BEGIN { printf "%-28s %8.2f %% %10.0f B/s\n", n, 100 * dc / hz / dt, db / dt }'
}

echo "ranks publish $RATE steps/s each; terminal ${COLS}x${ROWS}, refresh $INTERVAL, ${DURATION}s measured after ${WARMUP}s warm-up" >&2
printf "%-28s %10s %14s\n" "pipetop attached to" "CPU (1 core)" "terminal"
measure "1-rank" 1
measure "$RANKS-ranks" "$RANKS"
