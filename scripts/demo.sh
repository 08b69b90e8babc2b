#!/usr/bin/env bash
# The demo: generate the demo dataset if missing, start a real training run
# in the background, and open pipetop attached to it. Quitting pipetop stops
# the trainer (it writes a checkpoint on the way out).
#
# usage: scripts/demo.sh [DATA_DIR]     (make demo runs it after building)
# Environment: DEMO_PRESET (small), DEMO_BATCH (8), DEMO_CHUNK_FRAMES (1; "auto"
# gives zarr's default chunking), DEMO_CACHE_MB (the loader's decoded-chunk
# cache; 0 = its 1 GiB default, which holds the whole 750 MB demo data),
# DEMO_WORKERS (loader workers, 1; 0 decodes on the training thread).
# DEMO_CHUNK_FRAMES=auto DEMO_CACHE_MB=1 DEMO_WORKERS=0 stands for a real
# dataset hundreds of times the cache: the input-bound run.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-data/demo.zarr}
preset=${DEMO_PRESET:-small}
batch=${DEMO_BATCH:-8}
chunk=${DEMO_CHUNK_FRAMES:-1}
cache=${DEMO_CACHE_MB:-0}
workers=${DEMO_WORKERS:-1}
name=demo
mkdir -p build/demo

if [ ! -d "$data" ]; then
  echo "demo: generating $data (20 episodes x 200 frames, 4 cameras 128x128, chunk frames $chunk)"
  bin/pipetrain data gen --out "$data" --episodes 20 --frames 200 --chunk-frames "$chunk"
fi

log=build/demo/train.log
echo "demo: training preset $preset, batch $batch (log: $log)"
# One libtorch thread and one loader worker: the two cores of a small box.
bin/pipetrain train --data "$data" --preset "$preset" --batch "$batch" --workers "$workers" --threads 1 --cache-mb "$cache" \
  --name "$name" --ckpt build/demo/ckpt --ckpt-every 1000 --log-every 10 >"$log" 2>&1 &
trainer=$!
stop() {
  if kill -0 "$trainer" 2>/dev/null; then
    kill -INT "$trainer" 2>/dev/null || true
    wait "$trainer" 2>/dev/null || true
    echo "demo: trainer stopped; last lines of $log:"
    tail -n 3 "$log"
  fi
}
trap stop EXIT

# Wait for the trainer's socket (it loads libtorch and the dataset first).
for _ in $(seq 1 300); do
  if ! kill -0 "$trainer" 2>/dev/null; then
    echo "demo: the trainer exited early:" >&2
    cat "$log" >&2
    exit 1
  fi
  bin/pipetop ls 2>/dev/null | grep "^$name " >/dev/null && break
  sleep 0.2
done

if [ -t 0 ] && [ -t 1 ]; then
  bin/pipetop attach "$name"
else
  # No terminal (CI, a pipe): show snapshots instead of the live view.
  for _ in 1 2 3; do
    bin/pipetop attach "$name" --once --interval 3s
    echo
  done
fi
