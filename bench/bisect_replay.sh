#!/usr/bin/env bash
# The cost of pipetop bisect's cached replay to the training loop.
#
# bench/bisect_replay.py (a tiny MLP, batches of 64 from a DataLoader, one
# intra-op thread, steps of a few milliseconds) runs under the automatic
# instrumentation (python3 -m pipetop_publish.auto) in two modes, alternating,
# ROUNDS times each:
#   (a) PIPETOP_BISECT_PHASE=cached: pipetop replays the loader's first
#       CACHE batches (its Replay iterator through the instrumented __next__),
#   (b) --self-replay: the script replays its own first CACHE batches itself
#       (a plain Python iterator; the instrumentation still times its steps).
# Each times its own loop for RUN_SECONDS after a 1 s warm-up and prints steps
# per wall second and per CPU second of its training thread; this prints
# both modes per round, then the medians and the ratios (b)/(a): the
# replay's cost is ratio - 1 (the bar: under 1 %).
#
# What decides the figure: the step rate (the replay costs a fixed few
# microseconds a batch, so the faster the step, the larger the share) and
# the cores: on a 2-core machine shared with other work, wall-clock rounds
# of the same mode differ by tens of percent, so the CPU-time figure (the
# training thread's own time, single intra-op thread) is the one to read;
# the alternation and the medians take out slow drifts. Where even that
# swings, the last line is the steadier figure: the time of one next() on
# each mode's epoch iterators alone (ours: the Replay iterator through the
# instrumented __next__; the script's: itertools), the difference as a share
# of the median step.
#
# Environment: ROUNDS (5), RUN_SECONDS (5), CACHE (16), PYTHON (/usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
SECONDS_EACH=${RUN_SECONDS:-5}
CACHE=${CACHE:-16}
PY=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH=clients/python PIPETOP_SOCKET_DIR="$tmp" PIPETOP_SUMMARY_DIR="$tmp" PIPETOP_STACKS_HZ=${PIPETOP_STACKS_HZ:-100}

# One run: "steps/s steps/cpu-s next-ns".
run() {
	"$PY" -m pipetop_publish.auto bench/bisect_replay.py --seconds "$SECONDS_EACH" --cache "$CACHE" "$@" 2>/dev/null |
		"$PY" -c 'import json, sys; d = json.loads(sys.stdin.readline()); print(d["steps_per_sec"], d["steps_per_cpu_sec"], d["next_ns"])'
}

printf '%-6s %24s %24s\n' round "cached steps/s (cpu)" "self-replay steps/s (cpu)"
rows=()
for r in $(seq 1 "$ROUNDS"); do
	x=$(PIPETOP_BISECT_PHASE=cached PIPETOP_BISECT_CACHE_BATCHES="$CACHE" run)
	y=$(run --self-replay)
	rows+=("$x $y")
	read -r xw xc xn <<<"$x"
	read -r yw yc yn <<<"$y"
	printf '%-6s %24s %24s\n' "$r" "$xw ($xc)" "$yw ($yc)"
done
printf '%s\n' "${rows[@]}" | "$PY" -c '
import statistics, sys
cols = list(zip(*[[float(v) for v in line.split()] for line in sys.stdin if line.strip()]))
wa, ca, na, wb, cb, nb = (statistics.median(c) for c in cols)
print("%-6s %24s %24s" % ("median", "%.1f (%.1f)" % (wa, ca), "%.1f (%.1f)" % (wb, cb)))
print("ratio self/cached, wall: %.4f (replay cost %+.2f %%)" % (wb / wa, (wb / wa - 1) * 100))
print("ratio self/cached, cpu:  %.4f (replay cost %+.2f %%)" % (cb / ca, (cb / ca - 1) * 100))
print("next() per batch: cached %.0f ns, self-replay %.0f ns: %+.0f ns, %.3f %% of the %.2f ms median step (cpu)"
      % (na, nb, na - nb, (na - nb) / (1e7 / ca), 1e3 / ca))
'
