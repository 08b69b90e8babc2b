#!/usr/bin/env bash
# Regenerates the report screenshots in screenshots/: records a real
# training run of two ranks (bin/pipetrain train --nproc 2, Gloo on the CPU,
# on the demo dataset) with pipetop record, writes its pipetop report, and
# takes a full-width screenshot of the page in headless Chromium (Debian
# package chromium). A second report is of the SYNTHETIC publisher with a
# planted straggler and a data_wait step change, as the report's browser
# test plants them (made-up steps; the page says so in its config).
#
# usage: scripts/report-screenshots.sh      (make build first)
# env:   DATA      the demo dataset (data/demo.zarr; generated if missing)
#        SECONDS_  how long each run is recorded (40)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/screenshots"
work=$(mktemp -d)
export PIPETOP_SOCKET_DIR="$work/sockets"
mkdir -p "$PIPETOP_SOCKET_DIR"
DATA=${DATA:-$root/data/demo.zarr}
SECS=${SECONDS_:-40}
bin="$root/bin"
pub_pid=""
cleanup() {
	if [ -n "$pub_pid" ]; then kill "$pub_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium is required (apt-get install chromium)" >&2; exit 1; }
for b in pipetop pipetrain synthetic; do
	[ -x "$bin/$b" ] || { echo "$bin/$b missing: run make build" >&2; exit 1; }
done
[ -d "$DATA" ] || "$bin/pipetrain" data gen --out "$DATA" --episodes 20 --frames 200 --chunk-frames 1

# shot HTML PNG HEIGHT: a 1280-pixel-wide screenshot of the page.
shot() {
	"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
		--window-size="1280,$3" --screenshot="$2" "file://$1" >/dev/null 2>&1
	echo "wrote $2"
}

# A real run of two ranks.
"$bin/pipetrain" train --nproc 2 --data "$DATA" --name rep --workers 1 --threads 1 --preset tiny --batch 8 \
	--log-every 10 >"$work/rep.log" 2>&1 &
pub_pid=$!
for _ in $(seq 1 150); do
	[ "$("$bin/pipetop" ls 2>/dev/null | grep -c '^rep-rank')" -ge 2 ] && break
	sleep 0.2
done
"$bin/pipetop" record --duration "${SECS}s" --no-gpu -o "$work/rep.pipetop" rep-rank0
kill -INT "$pub_pid" 2>/dev/null || true
wait "$pub_pid" 2>/dev/null || true
pub_pid=""
"$bin/pipetop" report "$work/rep.pipetop" -o "$work/rep.html"
shot "$work/rep.html" "$out/report-ranks-2.png" 3600

# The SYNTHETIC planted run: rank 1 a straggler, data_wait 6 → 20 ms at 15 s.
"$bin/synthetic" -name planted -rate 100 -quiet -ranks 2 -straggler 1 -straggle 6ms -change-after 15s -change 20ms &
pub_pid=$!
for _ in $(seq 1 150); do
	[ "$("$bin/pipetop" ls 2>/dev/null | grep -c '^planted-rank')" -ge 2 ] && break
	sleep 0.2
done
"$bin/pipetop" record --duration "${SECS}s" --no-gpu --interval 500ms -o "$work/planted.pipetop" planted-rank0
kill "$pub_pid" 2>/dev/null || true
pub_pid=""
"$bin/pipetop" report "$work/planted.pipetop" -o "$work/planted.html"
shot "$work/planted.html" "$out/report-planted-straggler.png" 3600
