#!/usr/bin/env bash
# Loader benchmark: pipetrain's loader against the usual Python pipeline
# (zarr-python + torch DataLoader, bench/loader_peer.py) on the same
# datasets, windows, worker count and batch size, in one run:
#   1. 1-frame chunks            (uniform sampling, both)
#   2. zarr's default chunking   (peer: uniform; ours: chunk-aware sampler)
#   3. default chunking after `pipetrain data rechunk --chunk-frames 1`
# and the blosc-lz4 decode ceiling measured by a Go benchmark.
#
# Environment: BENCH_DIR (datasets, default /tmp/pipetop-bench), EPISODES
# (50), FRAMES (200), WORKERS (2), BATCH (64), OURS_SECONDS (10), PEER_SECONDS
# (10), PIPETRAIN (a prebuilt binary; default: go build ./cmd/pipetrain).
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_DIR=${BENCH_DIR:-/tmp/pipetop-bench}
EPISODES=${EPISODES:-50}
FRAMES=${FRAMES:-200}
WORKERS=${WORKERS:-2}
BATCH=${BATCH:-64}
SECONDS_OURS=${OURS_SECONDS:-10}
PEER_SECONDS=${PEER_SECONDS:-10}
PY=/usr/bin/python3
mkdir -p "$BENCH_DIR"

if [[ -z "${PIPETRAIN:-}" ]]; then
	PIPETRAIN=$BENCH_DIR/pipetrain
	go build -o "$PIPETRAIN" ./cmd/pipetrain
fi

gen() { # dir chunk-frames
	if [[ ! -f $1/.zmetadata ]]; then
		rm -rf "$1"
		"$PIPETRAIN" data gen --out "$1" --episodes "$EPISODES" --frames "$FRAMES" --chunk-frames "$2" --codec blosc-lz4 >&2
	fi
}
gen "$BENCH_DIR/frames1" 1
gen "$BENCH_DIR/default" auto
if [[ ! -f $BENCH_DIR/rechunked/.zmetadata ]]; then
	rm -rf "$BENCH_DIR/rechunked"
	"$PIPETRAIN" data rechunk "$BENCH_DIR/default" "$BENCH_DIR/rechunked" --chunk-frames 1 >&2
fi

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "datasets: $EPISODES episodes x $FRAMES frames, 4 cameras 128x128, blosc-lz4; workers $WORKERS, batch $BATCH"
echo "default chunking: $("$PIPETRAIN" data inspect "$BENCH_DIR/default" --json | $PY -c 'import json,sys; r=json.load(sys.stdin); print([a["chunks"] for a in r["arrays"] if a["path"]=="data/camera0"][0])') per camera"
echo

ours() { # dir sampler seconds
	"$PIPETRAIN" bench loader --data "$1" --workers "$WORKERS" --batch "$BATCH" --seconds "$3" --sampler "$2" --json
}
peer() { # dir seconds
	$PY bench/loader_peer.py --data "$1" --workers "$WORKERS" --batch "$BATCH" --seconds "$2" --json
}

results=()
run() { # name dir our-sampler peer-seconds target
	local p o
	p=$(peer "$2" "$4")
	o=$(ours "$2" "$3" "$SECONDS_OURS")
	results+=("$1|$3|$5|$p|$o")
}
run "1-frame chunks" "$BENCH_DIR/frames1" uniform "$PEER_SECONDS" 5
run "zarr default chunking" "$BENCH_DIR/default" chunk "$((PEER_SECONDS * 2))" 100
run "default, rechunked to 1 frame" "$BENCH_DIR/rechunked" uniform "$PEER_SECONDS" 5

ceiling=$(go test ./trainer/dataset -run '^$' -bench 'DecodeCeiling/blosc-lz4$' -benchtime 2s | awk '/MB\/s/ {print $(NF-1)}')

printf '%s\n' "${results[@]}" > "$BENCH_DIR/results.txt"
$PY - "$ceiling" "$BENCH_DIR/results.txt" <<'PY'
import json, os, sys
ceiling = float(sys.argv[1]) * 1e6  # decoded bytes/s on one core
cores = os.cpu_count()
per_sample = 2 * 4 * 128 * 128 * 3  # n_obs x cameras x frame bytes
head = ("case", "peer/s", "ours/s", "ratio", "target", "sampler", "read amp", "cache hit")
print("%-30s %9s %9s %8s %7s  %-8s %8s %9s" % head)
frames1 = None
for line in open(sys.argv[2]):
    name, sampler, target, p, o = line.rstrip("\n").split("|")
    p, o = json.loads(p), json.loads(o)
    ratio = o["samples_per_sec"] / p["samples_per_sec"]
    verdict = "ok" if ratio >= float(target) else "MISSED"
    print("%-30s %9.1f %9.0f %7.1fx %7s  %-8s %8.2f %8.1f%%  %s" % (
        name, p["samples_per_sec"], o["samples_per_sec"], ratio, ">=" + target + "x", sampler,
        o["read_amp"], 100 * o["cache_hit_rate"], verdict))
    frames1 = frames1 or o
limit = cores * ceiling / per_sample
nominal = cores * 2e9 / per_sample
ours = frames1["samples_per_sec"]
print()
print("blosc-lz4 decode ceiling (Go benchmark on these frames): %.0f MB/s per core" % (ceiling / 1e6))
print("  -> %.0f samples/s on %d cores for 1-frame chunks; ours: %.0f = %.0f%% of it" % (limit, cores, ours, 100 * ours / limit))
print("  against the nominal 2 GB/s per core (%.0f samples/s): %.0f%%" % (nominal, 100 * ours / nominal))
PY
