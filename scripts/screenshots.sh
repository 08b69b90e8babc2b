#!/usr/bin/env bash
# Regenerates screenshots/: runs pipetop in tmux at 120x40 and 80x24
# attached to a running trainer, captures the screen with
# `tmux capture-pane -e -p`, and converts the capture to SVG (scripts/ansi2svg)
# and PNG (rsvg-convert, Debian package librsvg2-bin, when installed).
#
# usage: scripts/screenshots.sh
# env:   PUBLISHER  the trainer command (default: the SYNTHETIC publisher,
#                   examples/synthetic, with an input-bound stage mix)
#        SETTLE     seconds to let pipetop collect before capturing (6)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/screenshots"
work=$(mktemp -d)
server="pipetop-shots-$$"
export PATH="/usr/local/go/bin:$PATH"
export PIPETOP_SOCKET_DIR="$work/sockets"
SETTLE=${SETTLE:-6}
PUBLISHER=${PUBLISHER:-"$work/synthetic -name synthetic-demo -rate 250 -quiet \
-stages data_wait=6ms,h2d=0.5ms,forward=2ms,backward=1ms,optim=0.4ms,sync=0.1ms,other=0s \
-gpu h2d=0.4ms,forward=1.6ms,backward=2.2ms,optim=0.3ms"}

pub_pid=""
cleanup() {
	tmux -L "$server" kill-server 2>/dev/null || true
	if [ -n "$pub_pid" ]; then kill "$pub_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

command -v tmux >/dev/null || { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }
(cd "$root" && CGO_CFLAGS=-Wno-deprecated-declarations go build -o "$work/pipetop" ./cmd/pipetop \
	&& go build -o "$work/synthetic" ./examples/synthetic && go build -o "$work/ansi2svg" ./scripts/ansi2svg)

$PUBLISHER &
pub_pid=$!
sleep 1

# shot NAME COLS ROWS [KEYS...]: capture pipetop at COLS x ROWS after
# pressing KEYS.
shot() {
	local name=$1 cols=$2 rows=$3
	shift 3
	tmux -L "$server" new-session -d -s "$name" -x "$cols" -y "$rows" \
		"exec env TERM=xterm-256color COLORTERM=truecolor $work/pipetop --window 30s"
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
shot pipetop-120x40 120 40
shot pipetop-80x24 80 24
shot pipetop-stages-120x40 120 40 s
shot pipetop-help-80x24 80 24 '?'
command -v rsvg-convert >/dev/null || echo "rsvg-convert not found (apt-get install librsvg2-bin): SVG only" >&2
