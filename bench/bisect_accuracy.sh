#!/usr/bin/env bash
# pipetop bisect's phases against the planted script's own measurement of
# the same part (cmd/pipetop/testdata/bisect/train.py --control MODE, run
# under the same automatic instrumentation), ROUNDS alternating runs of
# each: the median samples/s of each side and their ratio (target: within
# ±15 %). The cold phase (the loader alone, its files evicted from the page
# cache first) stands beside the script's own cold control (the loader
# alone after it evicted its files itself); the files case (files.py: one
# file an item, decoded for a few ms) is the one whose loader reads files
# it decodes little, the input case's Zarr store (a few MB, decoded 1334x)
# is decode-bound cold or warm. What decides the figures: the cores (the
# loader's workers and the network share them), the step rate (thousands of
# steps a second make the per-step instrumentation count), and whatever
# else runs on the machine (single runs differ by up to 20 % on a loaded
# 2-core box: hence medians).
#
# usage: bench/bisect_accuracy.sh        (make build first)
# env:   CASES    the planted cases (input compute contention seed files)
#        ROUNDS   alternating runs of each side (3)
#        SECONDS_PER_PHASE  measured seconds of a phase and a control (5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CASES=${CASES:-input compute contention seed files}
ROUNDS=${ROUNDS:-3}
S=${SECONDS_PER_PHASE:-5}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PIPETOP_SOCKET_DIR="$work/sockets" PIPETOP_SUMMARY=0
[ -x "$root/bin/pipetop" ] || { echo "bin/pipetop missing: run make build" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# files: 300 files of 128 KiB of random bytes for the files case.
mkdir -p "$work/files"
for i in $(seq -w 1 300); do head -c 131072 /dev/urandom >"$work/files/$i.bin"; done
sync

# setup CASE: the script and its arguments, the phases and the pairs
# (phase:control mode) of the case.
setup() {
	case $1 in
	files)
		args=("$root/cmd/pipetop/testdata/bisect/files.py" --dir "$work/files")
		phases=loader,cold
		pairs="loader:loader cold:cold"
		;;
	*)
		args=("$root/cmd/pipetop/testdata/bisect/train.py" --case "$1")
		phases=loader,cold,cached,forward,full
		pairs="loader:loader cold:cold cached:network forward:forward full:full"
		;;
	esac
}

printf '%-11s %-8s %14s %14s %7s\n' case phase "bisect smp/s" "script smp/s" ratio
for c in $CASES; do
	setup "$c"
	for r in $(seq 1 "$ROUNDS"); do
		for pair in $pairs; do
			m=${pair#*:}
			PYTHONPATH="$root/clients/python" "$py" -m pipetop_publish.auto "${args[@]}" --control "$m" --seconds "$S" |
				sed -n 's/.*"samples_per_sec": \([0-9.]*\).*/\1/p' >>"$work/$c.control.$m"
		done
		"$root/bin/pipetop" bisect --no-tui --json --seconds-per-phase "$S" --phases "$phases" -- "$py" "${args[@]}" 2>/dev/null |
			"$py" -c 'import json,sys
for p in json.load(sys.stdin)["phases"]: print(p["phase"], p["samples_per_sec"])' |
			while read -r phase rate; do echo "$rate" >>"$work/$c.bisect.$phase"; done
	done
	for pair in $pairs; do
		phase=${pair%%:*} mode=${pair#*:}
		b=$(median <"$work/$c.bisect.$phase") s=$(median <"$work/$c.control.$mode")
		printf '%-11s %-8s %14.1f %14.1f %7.2f\n' "$c" "$phase" "$b" "$s" "$(awk -v b="$b" -v s="$s" 'BEGIN {print b/s}')"
	done
done
