#!/usr/bin/env bash
# What pipetop's stack sampler, reading the trainer from outside, costs the
# training loop: clients/python/bench_auto_loop.py (a DataLoader, an MLP,
# Adam and a busy-wait to STEP_MS a step) under pipetop run --no-tui with
# the stack samples on (PIPETOP_STACKS_HZ unset: the default rate) and off
# (PIPETOP_STACKS_HZ=0), alternating which goes first, ROUNDS rounds; the
# table gives each side's median wall time per step and the median of the
# rounds' on/off ratios.
#
# usage: bench/stacks_steptime.sh   env: ROUNDS (7), STEP_MS (2), STEPS (2000), PY (/usr/bin/python3)
set -euo pipefail

ROUNDS=${ROUNDS:-7}
STEP_MS=${STEP_MS:-2}
STEPS=${STEPS:-2000}
PY=${PY:-/usr/bin/python3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PIPETOP_SOCKET_DIR="$WORK/sockets" PIPETOP_CACHE_DIR="$WORK/cache" PIPETOP_SUMMARY_DIR="$WORK/summaries"
mkdir -p "$PIPETOP_SUMMARY_DIR"
(cd "$ROOT" && CGO_CFLAGS=-Wno-deprecated-declarations go build -o "$WORK/pipetop" ./cmd/pipetop)

# step HZ: the mean wall ms per step of one run with PIPETOP_STACKS_HZ=HZ
# ("" for the default).
step() {
	local hz=()
	[ -n "$1" ] && hz=("PIPETOP_STACKS_HZ=$1")
	env "${hz[@]}" "$WORK/pipetop" run --no-tui --no-gpu -- "$PY" "$ROOT/clients/python/bench_auto_loop.py" \
		--step-ms "$STEP_MS" --steps "$STEPS" 2>/dev/null | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.readlines()[-1])["step_ms"])'
}

median() { printf "%s\n" "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

on=() off=() ratio=()
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then a=$(step ""); b=$(step 0); else b=$(step 0); a=$(step ""); fi
	on+=("$a") off+=("$b") ratio+=("$(echo "$a / $b" | bc -l)")
	printf "round %d: on %.4f ms, off %.4f ms\n" "$r" "$a" "$b" >&2
done
printf "step %s ms, %s steps, %d rounds, %d cores\n" "$STEP_MS" "$STEPS" "$ROUNDS" "$(nproc)"
printf "median step: stack samples on %.4f ms, off %.4f ms; median on/off %.4f\n" "$(median "${on[@]}")" "$(median "${off[@]}")" "$(median "${ratio[@]}")"
