#!/usr/bin/env bash
# gpu-check.sh - one script for a GPU machine that has PyTorch (its libtorch,
# headers and CMake config) but no Go and no network.
#
# Build here first (make build), then run this there with bin/ carried:
#   bin/pipetrain bin/pipetop bin/gpusample  (Go binaries, built here)
# It builds the shim against the machine's CUDA libtorch, samples the GPU
# (NVML + GPM) while a bf16 matrix multiply runs, generates the demo data, and
# trains the seed preset at batch 2, 64 and 256 in bf16 with pipetop
# snapshotting each run. Results go to $OUT (or ./build/gpu-check).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-check}
mkdir -p "$out"
steps=${GPU_CHECK_STEPS:-60}
py=$(command -v python3)
log() { echo "== $*" | tee -a "$out/summary.txt"; }

log "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a "$out/summary.txt"
"$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' | tee -a "$out/summary.txt"

log "GPU sample while a bf16 matmul runs (expect GPM SM activity/occupancy on Hopper)"
bin/gpusample -n 3 -interval 1s -- "$py" -c '
import torch, time
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 5:
    b = a @ a
torch.cuda.synchronize()
' 2>&1 | tee "$out/gpusample.txt"

log "pipetop export on the real GPU while a matmul runs (GPM next to kernel-active)"
bin/pipetop export --listen 127.0.0.1:19464 --interval 1s >"$out/export.log" 2>&1 &
exporter=$!
"$py" -c '
import torch, time, urllib.request
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 6:
    b = a @ a
torch.cuda.synchronize()
print(urllib.request.urlopen("http://127.0.0.1:19464/metrics").read().decode())
' 2>&1 | grep -E '^pipetop_gpu_' | tee "$out/export.txt" | head -20
kill $exporter 2>/dev/null

log "build the shim against PyTorch's libtorch"
export TORCH_PREFIX=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
shim=$(scripts/build-shim.sh build/torch-cuda 2>"$out/shim-build.log" | tail -1) || { tail -30 "$out/shim-build.log"; exit 1; }
log "shim: $shim"
# libtorch's shared libraries live beside the Python package.
export LD_LIBRARY_PATH="$("$py" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))'):${LD_LIBRARY_PATH:-}"

data=build/gpu-check-data.zarr
if [ ! -d "$data" ]; then
  log "generate demo data"
  bin/pipetrain data gen --out "$data" --episodes 40 --frames 200 --chunk-frames 1 2>&1 | tail -1 | tee -a "$out/summary.txt"
fi

export PIPETOP_SOCKET_DIR=$(mktemp -d)
for batch in 2 64 256; do
  log "train: seed preset, batch $batch, bf16, $steps steps"
  name=gpu-b$batch
  bin/pipetrain train --data "$data" --preset seed --batch "$batch" --precision bf16 --device cuda \
    --workers 8 --threads 4 --shim "$shim" --name "$name" --max-steps "$steps" --log-every 10 \
    >"$out/train-b$batch.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do bin/pipetop ls 2>/dev/null | grep -q "^$name " && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  sleep 8  # past warm-up (cuDNN autotuning, allocator growth)
  bin/pipetop attach "$name" --json --interval 5s >"$out/pipetop-b$batch.json" 2>>"$out/pipetop-b$batch.err"
  bin/pipetop attach "$name" --once --interval 2s --width 120 >"$out/pipetop-b$batch.txt" 2>&1
  wait $pid
  grep -E '^(policy|params|step|done)' "$out/train-b$batch.log" | tail -4 | tee -a "$out/summary.txt"
  sed -n '1,40p' "$out/pipetop-b$batch.txt" | tee -a "$out/summary.txt"
done

log "bisect: seed preset, batch 64, with a batch sweep"
bin/pipetrain bisect --data "$data" --preset seed --batch 64 --precision bf16 --device cuda --workers 8 \
  --threads 4 --shim "$shim" --seconds-per-phase 5 --batch-sweep 2,256 --no-serve 2>"$out/bisect.log" | tee -a "$out/summary.txt"
