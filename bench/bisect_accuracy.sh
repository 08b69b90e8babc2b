#!/usr/bin/env bash
# pipetop bisect's phases against the planted script's own measurement of
# the same part (cmd/pipetop/testdata/bisect/train.py --control MODE, run
# under the same automatic instrumentation), ROUNDS alternating runs of
# each: the median samples/s of each side and their ratio (target: within
# ±15 %). The cold phase (the loader alone, its files evicted from the page
# cache first) stands beside the script's own cold control (the loader
# alone after it evicted its files itself); the files case (files.py: one
# file an item, decoded for ~15 ms) is the one whose loader reads files it
# decodes little, the input case's Zarr store (a few MB, decoded 1334x) is
# decode-bound cold or warm; slowfiles is the files case with the bisect
# and the controls in a cgroup v1 blkio cgroup that reads the disk at
# 1 MiB/s (blkio.throttle.read_bps_device; as root, skipped with a reason
# where the blkio hierarchy is not writable): storage-bound cold. The last
# column is the bisect's verdict on the storage (the cold phase's finding)
# in the last round. What decides the figures: the cores (the
# loader's workers and the network share them), the step rate (thousands of
# steps a second make the per-step instrumentation count), and whatever
# else runs on the machine (single runs differ by up to 20 % on a loaded
# 2-core box: hence medians).
#
# usage: bench/bisect_accuracy.sh        (make build first)
# env:   CASES    the planted cases (input compute contention seed files
#                 slowfiles)
#        ROUNDS   alternating runs of each side (3)
#        SECONDS_PER_PHASE  measured seconds of a phase and a control (5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
CASES=${CASES:-input compute contention seed files slowfiles}
ROUNDS=${ROUNDS:-3}
S=${SECONDS_PER_PHASE:-5}
py=/usr/bin/python3
work=$(mktemp -d)
export PIPETOP_SOCKET_DIR="$work/sockets" PIPETOP_SUMMARY=0
[ -x "$root/bin/pipetop" ] || { echo "bin/pipetop missing: run make build" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# files: 300 files of 128 KiB of random bytes for the files case.
mkdir -p "$work/files"
for i in $(seq -w 1 300); do head -c 131072 /dev/urandom >"$work/files/$i.bin"; done
sync

# blkio: a blkio cgroup reading the disk of $work at 1 MiB/s, in $cg
# ("" with the reason on stderr where it cannot be made).
cg=""
blkio() {
	local dev dir=/sys/fs/cgroup/blkio/pipetop-bench-$$
	dev=$(stat -c '%Hd:%Ld' "$work")
	[ -e "/sys/dev/block/$dev/partition" ] && dev=$(cat "/sys/dev/block/$dev/../dev")
	if mkdir "$dir" 2>/dev/null && echo "$dev 1048576" >"$dir/blkio.throttle.read_bps_device" 2>/dev/null; then
		cg=$dir
	else
		rmdir "$dir" 2>/dev/null || true
		echo "slowfiles skipped: the blkio hierarchy at /sys/fs/cgroup/blkio is not writable (cgroup v1, as root)" >&2
	fi
}
# throttled CMD...: CMD in the blkio cgroup for the slowfiles case, else
# as it is; the files case's files are read into the page cache first,
# outside the cgroup, so that the warm loader (phase and control) is warm:
# a cold phase or control before it evicted them.
throttled() {
	case $c in files | slowfiles) cat "$work"/files/* >/dev/null ;; esac
	if [ "$c" = slowfiles ]; then sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"; else "$@"; fi
}
cleanup() {
	if [ -n "$cg" ]; then
		for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do echo "$p" >/sys/fs/cgroup/blkio/cgroup.procs; done
		rmdir "$cg" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# setup CASE: the script and its arguments, the phases and the pairs
# (phase:control mode) of the case.
setup() {
	case $1 in
	files | slowfiles)
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

case " $CASES " in *" slowfiles "*) blkio ;; esac

printf '%-11s %-8s %14s %14s %7s  %s\n' case phase "bisect smp/s" "script smp/s" ratio "bisect's storage verdict"
for c in $CASES; do
	[ "$c" = slowfiles ] && [ -z "$cg" ] && continue
	setup "$c"
	for r in $(seq 1 "$ROUNDS"); do
		for pair in $pairs; do
			m=${pair#*:}
			throttled env PYTHONPATH="$root/clients/python" "$py" -m pipetop_publish.auto "${args[@]}" --control "$m" --seconds "$S" |
				sed -n 's/.*"samples_per_sec": \([0-9.]*\).*/\1/p' >>"$work/$c.control.$m"
		done
		throttled "$root/bin/pipetop" bisect --no-tui --json --seconds-per-phase "$S" --phases "$phases" -- "$py" "${args[@]}" 2>/dev/null |
			"$py" -c 'import json,sys
r = json.load(sys.stdin)
for p in r["phases"]: print(p["phase"], p["samples_per_sec"])
v = r["verdict"]["headline"]
i = v.find("storage-bound")
print("verdict", "storage-bound" if i >= 0 and not v[:i].endswith("not ") else ("not storage-bound" if i >= 0 else "-"))' |
			while read -r phase rate; do
				if [ "$phase" = verdict ]; then echo "$rate" >"$work/$c.verdict"; else echo "$rate" >>"$work/$c.bisect.$phase"; fi
			done
	done
	for pair in $pairs; do
		phase=${pair%%:*} mode=${pair#*:}
		b=$(median <"$work/$c.bisect.$phase") s=$(median <"$work/$c.control.$mode")
		v=-
		[ "$phase" = cold ] && v=$(cat "$work/$c.verdict")
		printf '%-11s %-8s %14.1f %14.1f %7.2f  %s\n' "$c" "$phase" "$b" "$s" "$(awk -v b="$b" -v s="$s" 'BEGIN {print b/s}')" "$v"
	done
done
