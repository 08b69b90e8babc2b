#!/usr/bin/env bash
# Regenerates screenshots/bisect-* and tune-*: runs `pipetop bisect` in tmux
# on a real planted PyTorch script (cmd/pipetop/testdata/bisect/train.py
# --case input: Zarr frames with zarr-python's default chunks, 2 DataLoader
# workers), captures the live view during the cached phase and the table at
# the end, then `pipetop tune` on cmd/pipetop/testdata/tune/train.py --case
# cpu_items (items loaded on the training thread) during a trial and at the
# end, with `tmux capture-pane -e -p`, and converts each capture to SVG
# (scripts/ansi2svg) and PNG (rsvg-convert, Debian package librsvg2-bin).
#
# usage: scripts/bisect-screenshots.sh      (make screenshots builds first)
# env:   SECONDS_PER_PHASE  each phase's measured time (10)
#        TUNE_BUDGET        the tune's budget (3m)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/screenshots"
work=$(mktemp -d)
server="pipetop-bisect-shots-$$"
export PATH="/usr/local/go/bin:$PATH"
export PIPETOP_SOCKET_DIR="$work/sockets"
SECONDS_PER_PHASE=${SECONDS_PER_PHASE:-10}
bin="$root/bin"

cleanup() {
	tmux -L "$server" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

command -v tmux >/dev/null || { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }
[ -x "$bin/pipetop" ] || { echo "$bin/pipetop missing: run make build" >&2; exit 1; }
(cd "$root" && go build -o "$work/ansi2svg" ./scripts/ansi2svg)

# capture NAME COLS ROWS: the session's screen as ANSI, SVG and PNG;
# capture NAME COLS all: every line the command printed (the scrollback
# too), as many rows as it has.
capture() {
	local name=$1 cols=$2 rows=$3
	if [ "$rows" = all ]; then
		tmux -L "$server" capture-pane -e -p -S - -E - -t shot | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$out/$name.ansi"
		rows=$(wc -l <"$out/$name.ansi")
	else
		tmux -L "$server" capture-pane -e -p -t shot >"$out/$name.ansi"
	fi
	"$work/ansi2svg" -cols "$cols" -rows "$rows" -title "pipetop bisect" <"$out/$name.ansi" >"$out/$name.svg"
	if command -v rsvg-convert >/dev/null; then
		rsvg-convert -o "$out/$name.png" "$out/$name.svg"
	fi
	echo "wrote $out/$name.svg" >&2
}

# await TEXT: wait (at most 5 minutes) until the screen shows TEXT.
await() {
	for _ in $(seq 1 1500); do
		tmux -L "$server" capture-pane -p -t shot | grep -qF -- "$1" && return
		sleep 0.2
	done
	echo "timed out waiting for '$1'" >&2
	tmux -L "$server" capture-pane -p -t shot >&2
	exit 1
}

# session CMD: run CMD (a shell line) in the tmux session, 120x40.
session() {
	tmux -L "$server" kill-session -t shot 2>/dev/null || true
	tmux -L "$server" new-session -d -s shot -x 120 -y 40 "exec env TERM=xterm-256color COLORTERM=truecolor sh -c '$1; sleep 600'"
}

mkdir -p "$out"
cd "$work"
# The script's own output goes to a file: the screen keeps the monitor,
# then the table.
session "$bin/pipetop bisect --no-gpu --seconds-per-phase $SECONDS_PER_PHASE \
	-- /usr/bin/python3 $root/cmd/pipetop/testdata/bisect/train.py --case input 2>$work/bisect.log; echo; echo pipetop bisect exited \$?"
await "phase cached"
sleep 4 # the steps and the flame bar filled in
await "phase cached"
capture bisect-live-120x40 120 40
await "pipetop bisect exited"
capture bisect-table-120 120 all

session "$bin/pipetop tune --no-gpu --seconds-per-trial 5 --budget ${TUNE_BUDGET:-3m} -o $work/tune.json \
	-- /usr/bin/python3 $root/cmd/pipetop/testdata/tune/train.py --case cpu_items 2>$work/tune.log; echo; echo pipetop tune exited \$?"
await "trial-2"
sleep 4
await "trial-2"
capture tune-live-120x40 120 40
await "pipetop tune exited"
capture tune-table-120 120 all
