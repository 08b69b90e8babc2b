#!/usr/bin/env bash
# Regenerates screenshots/: runs pipetop in tmux at 120x40 and 80x24
# attached to a real training run (bin/pipetrain train on the demo dataset),
# captures the screen with `tmux capture-pane -e -p`, and converts the
# capture to SVG (scripts/ansi2svg) and PNG (rsvg-convert, Debian package
# librsvg2-bin). A second run trains on the same kind of data with zarr's
# default chunking and a decoded-chunk cache smaller than the data, as
# with a real dataset: the input-bound case.
#
# usage: scripts/screenshots.sh      (make screenshots builds first)
# env:   DATA       the demo dataset (data/demo.zarr; generated if missing)
#        SLOW_DATA  the default-chunked dataset (data/demo-default-chunks.zarr)
#        SETTLE     seconds to let pipetop collect before capturing (20)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/screenshots"
work=$(mktemp -d)
server="pipetop-shots-$$"
export PATH="/usr/local/go/bin:$PATH"
export PIPETOP_SOCKET_DIR="$work/sockets"
SETTLE=${SETTLE:-20}
DATA=${DATA:-$root/data/demo.zarr}
SLOW_DATA=${SLOW_DATA:-$root/data/demo-default-chunks.zarr}
bin="$root/bin"

pub_pid=""
cleanup() {
	tmux -L "$server" kill-server 2>/dev/null || true
	if [ -n "$pub_pid" ]; then kill "$pub_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

command -v tmux >/dev/null || { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }
for b in pipetop pipetrain; do
	[ -x "$bin/$b" ] || { echo "$bin/$b missing: run make build" >&2; exit 1; }
done
(cd "$root" && go build -o "$work/ansi2svg" ./scripts/ansi2svg)
[ -d "$DATA" ] || "$bin/pipetrain" data gen --out "$DATA" --episodes 20 --frames 200 --chunk-frames 1
[ -d "$SLOW_DATA" ] || "$bin/pipetrain" data gen --out "$SLOW_DATA" --episodes 20 --frames 200 --chunk-frames auto

# train DATA NAME WORKERS CACHE_MB: start a real training run in the background.
train() {
	"$bin/pipetrain" train --data "$1" --name "$2" --workers "$3" --cache-mb "$4" --threads 1 --preset small --batch 8 \
		--log-every 10 >"$work/$2.log" 2>&1 &
	pub_pid=$!
	for _ in $(seq 1 100); do
		"$bin/pipetop" ls 2>/dev/null | grep "^$2 " >/dev/null && return
		sleep 0.2
	done
	cat "$work/$2.log" >&2
	exit 1
}

stop_training() {
	kill -INT "$pub_pid" 2>/dev/null || true
	wait "$pub_pid" 2>/dev/null || true
	pub_pid=""
}

# shot NAME COLS ROWS [KEYS...]: capture pipetop at COLS x ROWS after
# pressing KEYS.
shot() {
	local name=$1 cols=$2 rows=$3
	shift 3
	tmux -L "$server" new-session -d -s "$name" -x "$cols" -y "$rows" \
		"exec env TERM=xterm-256color COLORTERM=truecolor $bin/pipetop --window 30s"
	sleep "$SETTLE"
	for k in "$@"; do
		tmux -L "$server" send-keys -t "$name" "$k"
		sleep 1.5
	done
	tmux -L "$server" capture-pane -e -p -t "$name" >"$out/$name.ansi"
	tmux -L "$server" kill-session -t "$name"
	"$work/ansi2svg" -cols "$cols" -rows "$rows" -title "pipetop $cols x $rows" <"$out/$name.ansi" >"$out/$name.svg"
	if command -v rsvg-convert >/dev/null; then
		rsvg-convert -o "$out/$name.png" "$out/$name.svg"
	fi
	echo "wrote $out/$name.svg" >&2
}

mkdir -p "$out"
train "$DATA" demo 1 0
shot pipetop-120x40 120 40
shot pipetop-80x24 80 24
shot pipetop-stages-120x40 120 40 s
shot pipetop-help-80x24 80 24 '?'
stop_training
# The demo data (750 MB decoded) fits the loader's default 1 GiB cache; a real
# dataset of hundreds of GB would not: a 1 MiB cache, far smaller than the
# data, stands for that, with decoding inline on the training thread (the
# loader never decodes a chunk twice per batch, and with a worker it keeps
# up with the small preset on this data even at 16 MiB).
train "$SLOW_DATA" demo-default-chunks 0 1
shot pipetop-input-bound-120x40 120 40
stop_training

# Two real ranks (pipetrain --nproc 2, Gloo on the CPU): the ranks pane.
"$bin/pipetrain" train --nproc 2 --data "$DATA" --name dp --workers 1 --threads 1 --preset tiny --batch 8 \
	--log-every 10 >"$work/dp.log" 2>&1 &
pub_pid=$!
for _ in $(seq 1 150); do
	[ "$("$bin/pipetop" ls 2>/dev/null | grep -c '^dp-rank')" -ge 2 ] && break
	sleep 0.2
done
shot pipetop-ranks-2-120x40 120 40
stop_training

# 64 simulated ranks with one planted straggler: the SYNTHETIC publisher
# (made-up steps, marked so on screen) shows how the pane aggregates.
"$bin/synthetic" -name sim -ranks 64 -straggler 17 -straggle 15ms -comm 3ms -rate 20 -quiet \
	-stages "data_wait=2ms,forward=20ms,backward=15ms,optim=2ms,other=0s" >"$work/sim.log" 2>&1 &
pub_pid=$!
sleep 3
shot pipetop-ranks-64-120x40 120 40
stop_training
# A plain PyTorch loop beside a "metrics logger" thread that holds the GIL
# (examples/auto/side_thread.py), under pipetop run's automatic
# instrumentation: the gil-bound verdict names the thread and its function.
"$bin/pipetop" run --no-tui --name gil -- /usr/bin/python3 "$root/examples/auto/side_thread.py" --side spin --seconds 120 \
	>"$work/gil.log" 2>&1 &
pub_pid=$!
for _ in $(seq 1 150); do
	"$bin/pipetop" ls 2>/dev/null | grep "^gil " >/dev/null && break
	sleep 0.2
done
shot pipetop-gil-120x40 120 40
stop_training
command -v rsvg-convert >/dev/null || echo "rsvg-convert not found (apt-get install librsvg2-bin): SVG only" >&2
