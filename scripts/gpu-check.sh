#!/usr/bin/env bash
# gpu-check.sh [--cpu] [--out DIR] [--prep] - the GPU half of pipetop and
# pipetrain, proven in one short run on a GPU machine that has PyTorch (its
# libtorch, headers and CMake config), CMake, a C++ compiler and nvcc, but no
# Go and no network.
#
#   make gpu-check-prep       here: bin/ (the Go binaries) and bin/lib (the
#                             shared libraries bin/pipetrain needs beyond glibc)
#   scripts/gpu-check.sh --out DIR
#                             there, with bin/ carried along: prints the digest
#                             and writes DIR/summary.txt and DIR/logs.tar.gz
#   scripts/gpu-check.sh --cpu
#                             the same parts end to end on the CPU, at small
#                             sizes and without the NVML/GPM parts (make test)
#   --only PART,...           run only these parts (a rerun of the failed ones;
#                             train-bN and bisect need shim and data listed too)
#
# Parts, in order, with the time each is planned to take on a 16-core H200
# machine (GPU: estimates until the first GPU run replaces them) and as measured
# here with --cpu (2 idle cores). Every part runs under its own time limits; a
# failed part is reported and the rest still run; the exit status is 1 if any
# failed. With --out, DIR/summary.txt is brought up to date after every part,
# so a run stopped from outside still leaves what it had.
#
#   part         what                                          GPU (est.)   --cpu
#   machine      nvidia-smi, torch and CUDA versions                 ~10 s    ~3 s
#   libs         link what bin/pipetrain lacks here from bin/lib      <1 s    <1 s
#   shim         libpipetorch.so built against the machine's        ~90 s    ~2 s
#                libtorch (PyTorch's CMake prefix; --cpu: the one    (cached)
#                make build made)
#   matmul       gpusample (NVML + GPM) during a bf16 matmul         ~15 s       -
#   export       pipetop export during a matmul: GPM SM activity     ~15 s       -
#                and occupancy next to NVML kernel-active
#   data         demo dataset, 1-frame chunks (16x200 frames)        ~15 s    ~1 s
#   train-bN     seed preset (--cpu: tiny) at batch 2, 64, 256       3x~35 s  2x~8 s
#                (--cpu: 2, 8), bf16, loader cache 1/10 of the data:
#                pipetop --json and --once while it trains; samples/s,
#                GPU busy (CUDA events), stage table, verdict, GPM next
#                to kernel-active; checks GPU busy <= step, stages <= step
#   bisect       pipetrain bisect at batch 64 (--cpu: 2)              ~40 s   ~10 s
#   python       the stdlib publisher on a PyTorch loop with CUDA    ~25 s   ~10 s
#                event timings, a viewer attached; same checks
#   pipetop-run  pipetop run on a plain PyTorch loop (when this      ~25 s   ~10 s
#                pipetop has `run`)
#   ddp          the same loop as one DDP rank under pipetop run     ~25 s   ~10 s
#                (NCCL; --cpu: Gloo): comm in the table, with its
#                GPU time from CUDA events on a GPU
#   lightning    the Lightning callback (when lightning and the      ~35 s       -
#                callback import)
#   total (GPU): about 6.5 minutes planned, shim build included. No part starts
#   after GPU_CHECK_BUDGET (480 s); a part already running keeps its own limits,
#   so give the run a wall-clock limit of about 9 minutes from outside.
#
# The goal line says whether the seed preset reached GPU busy >= 90 % at
# batch >= 64 and, if not, the stage that holds it back (from the verdict).
# Work files go to build/gpu-check (build/gpu-check-cpu with --cpu).
# Environment: PYTHON (a python3 that imports torch; default: the first of
# python3, /usr/bin/python3 that does), GPU_CHECK_BATCHES (e.g. "64"),
# GPU_CHECK_BUDGET (seconds after which no part starts; default 480).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
repo=$(pwd)

mode=gpu out="" prep=0 only=""
while (($#)); do
  case $1 in
  --cpu) mode=cpu ;;
  --out) out=${2:?--out needs a directory}; shift ;;
  --out=*) out=${1#--out=} ;;
  --prep) prep=1 ;;
  --only) only=",${2:?--only needs a list of parts},"; shift ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# prep_libs copies the shared libraries bin/pipetrain loads, glibc's own
# aside, into bin/lib, so that a machine without them (libblosc, say) can
# borrow them: gpu-check links only the ones that machine lacks.
prep_libs() {
  [[ -x bin/pipetrain ]] || { echo "gpu-check: bin/pipetrain missing: make build first" >&2; return 1; }
  rm -rf bin/lib && mkdir -p bin/lib
  ldd bin/pipetrain | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
    case $soname in libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) continue ;; esac
    cp -L "$path" "bin/lib/$soname" && echo "bin/lib/$soname"
  done
}
if ((prep)); then prep_libs; exit; fi

# ---- sizes --------------------------------------------------------------------
if [[ $mode == gpu ]]; then
  work=build/gpu-check device=cuda preset=seed batches=${GPU_CHECK_BATCHES:-"2 64 256"} bisect_batch=64
  workers=12 threads=2 episodes=16 frames=200 cache_mb=64 log_every=10 warm=5 collect=5 once=2
  bisect_secs=3 py_secs=15 py_warm=5 py_batch=256 goal=0.9
  plain=(--batch 256 --size 64 --width 128 --workers 4)
else
  work=build/gpu-check-cpu device=cpu preset=tiny batches=${GPU_CHECK_BATCHES:-"2 8"} bisect_batch=2
  workers=1 threads=1 episodes=4 frames=60 cache_mb=4 log_every=4 warm=1 collect=2 once=1
  bisect_secs=1 py_secs=10 py_warm=3 py_batch=16 goal=""
  plain=(--batch 16 --size 32 --width 16 --workers 1)
fi
rm -rf "$work" && mkdir -p "$work/logs"
logs=$work/logs summary=$work/summary.txt
if [[ -n $out ]]; then mkdir -p "$out" || exit 1; fi
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  [[ -n ${sockdir:-} ]] && rm -rf "$sockdir"
}
trap cleanup EXIT
sockdir=$(mktemp -d)
export PIPETOP_SOCKET_DIR=$sockdir PYTHONUNBUFFERED=1

# find_python picks a python3 that imports torch.
find_python() {
  local c
  for c in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$c" >/dev/null && "$c" -c 'import torch' 2>/dev/null && { command -v "$c"; return; }
  done
  return 1
}
py=$(find_python) || { say "gpu-check: no python3 with torch (set PYTHON)"; exit 1; }

# ---- the part runner ----------------------------------------------------------
table=() failed=0 skipped_rc=3 budget=${GPU_CHECK_BUDGET:-480} t_start=$SECONDS
# part NAME FUNC...: runs FUNC, timing it; rc 0 ok, 3 skipped, else failed.
# Past the time budget, parts are not started (the summary still comes).
part() {
  local name=$1 t0=$SECONDS rc status
  shift
  [[ -z $only || $only == *",$name,"* ]] || return 0
  say ""
  say "== $name"
  if ((SECONDS - t_start > budget)); then
    say "not started: past the ${budget} s budget (GPU_CHECK_BUDGET)"
    rc=1
  else
    "$@"
    rc=$?
  fi
  case $rc in 0) status=ok ;; "$skipped_rc") status=skipped ;; *) status=FAILED failed=1 ;; esac
  table+=("$(printf '%-12s %-8s %4d s' "$name" "$status" $((SECONDS - t0)))")
  if [[ -n $out ]]; then cp "$summary" "$out/" 2>/dev/null; fi
}

# wait_for NAME PID SECS: until pipetop lists NAME (or PID exits, or SECS pass).
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    bin/pipetop ls 2>/dev/null | awk '{print $1}' | grep -x "$1" >/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# snapshot NAME TAG: pipetop --json and --once of a live trainer into
# logs/TAG.*; the JSON is taken again (up to 3 times) until it holds steps.
snapshot() {
  local try
  for try in 1 2 3; do
    timeout $((collect + 30)) bin/pipetop attach "$1" --json --interval "${collect}s" >"$logs/$2.json" 2>>"$logs/$2.err" ||
      return 1
    "$py" -c 'import json, sys; s = json.load(open(sys.argv[1])).get("summary"); sys.exit(0 if s and s.get("steps") else 1)' \
      "$logs/$2.json" 2>/dev/null && break
  done
  timeout $((once + 30)) bin/pipetop attach "$1" --once --interval "${once}s" --width 120 >"$logs/$2.txt" 2>>"$logs/$2.err"
}

# stop PID SECS: SIGTERM (pipetrain stops after the step), then SIGKILL
# after SECS; returns its exit status.
stop() {
  kill -TERM "$1" 2>/dev/null
  local i
  for ((i = 0; i < $2 * 10; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
  wait "$1"
}

# ---- parts ----------------------------------------------------------------------
p_machine() {
  say "mode $mode, $(nproc) cores, python $py"
  if [[ $mode == gpu ]]; then
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary" || return 1
  fi
  timeout 120 "$py" -c '
import sys, torch
cuda = torch.cuda.is_available()
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if cuda else "(no GPU)")
sys.exit(0 if cuda or sys.argv[1] == "cpu" else 1)' "$mode" 2>&1 | tee -a "$summary"
}

p_libs() {
  local lib=$work/lib missing so round
  mkdir -p "$lib"
  go_libs=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for round in 1 2 3 4; do
    missing=$(LD_LIBRARY_PATH="$lib" ldd bin/pipetrain 2>&1 | awk '/not found/ {print $1}')
    if [[ -z $missing ]]; then
      local borrowed
      borrowed=$(ls "$lib" | paste -sd' ')
      say "bin/pipetrain: every shared library found${borrowed:+ (from bin/lib: $borrowed)}"
      return 0
    fi
    for so in $missing; do
      [[ -e bin/lib/$so ]] || { say "bin/pipetrain needs $so: not on this machine nor in bin/lib (make gpu-check-prep)"; return 1; }
      ln -sf "$repo/bin/lib/$so" "$lib/$so"
    done
  done
  say "bin/pipetrain: libraries still missing: $missing"
  return 1
}

p_shim() {
  local dir prefix
  if [[ $mode == gpu ]]; then
    prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || return 1
    dir=build/torch-cuda
    export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # skips PyTorch's architecture probe
    if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
    command -v cmake >/dev/null || export PATH=$(dirname "$py"):$PATH  # pip's cmake beside python
    # libtorch and the CUDA libraries of the PyTorch install come first, so
    # the shim and torch share one CUDA runtime.
    torch_libs=$("$py" -c '
import glob, os, torch
d = os.path.dirname(torch.__file__)
site = os.path.dirname(d)
print(":".join([os.path.join(d, "lib")] + sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))))')
    go_libs=$torch_libs:$go_libs
  else
    prefix="" dir=build/torch
  fi
  local t0=$SECONDS
  shim=$(TORCH_PREFIX=$prefix timeout 300 scripts/build-shim.sh "$dir" 2>"$logs/shim-build.log" | tail -1)
  if [[ ! -f $shim ]]; then
    say "shim build failed; the end of $logs/shim-build.log:"
    tail -25 "$logs/shim-build.log" | tee -a "$summary"
    return 1
  fi
  say "shim: $shim ($((SECONDS - t0)) s, libtorch from ${prefix:-the default search})"
  if [[ $mode == gpu ]] && ! grep -qs PIPETORCH_CUDA "$dir/CMakeFiles/pipetorch.dir/flags.make" "$dir/build.ninja"; then
    say "the shim was built without its CUDA paths: that libtorch has no CUDA"
    return 1
  fi
}

p_matmul() {
  [[ $mode == gpu ]] || { say "skipped: no NVML on the CPU"; return $skipped_rc; }
  timeout 90 bin/gpusample -interval 1s -- "$py" scripts/gpucheck/matmul.py 6 >"$logs/gpusample.txt" 2>&1
  local rc=$?
  # One line per sample: the activity readings with their sources.
  awk '/^--- sample/ {if (l) print l; l = "matmul sample " $3 ":"}
    /kernel-active|SM activity|SM occupancy|tensor active/ {sub(/^ +/, ""); l = l " " $0 ";"}
    END {if (l) print l}' "$logs/gpusample.txt" | tee -a "$summary"
  ((rc == 0)) || { say "gpusample exit status $rc; see $logs/gpusample.txt"; return 1; }
  grep -q 'kernel-active *[0-9]' "$logs/gpusample.txt" || { say "no NVML kernel-active reading"; return 1; }
  grep -q 'SM activity *[0-9]' "$logs/gpusample.txt" || say "note: no GPM SM activity on this machine (see gpusample.txt)"
}

p_export() {
  [[ $mode == gpu ]] || { say "skipped: no NVML on the CPU"; return $skipped_rc; }
  local port=19464
  bin/pipetop export --listen "127.0.0.1:$port" --interval 1s >"$logs/export.log" 2>&1 &
  local exporter=$!
  pids+=("$exporter")
  sleep 1
  timeout 60 "$py" scripts/gpucheck/matmul.py 6 "http://127.0.0.1:$port/metrics" >"$logs/export.txt" 2>&1
  local rc=$?
  kill "$exporter" 2>/dev/null
  grep -E '^pipetop_gpu_(sm_activity|sm_occupancy|tensor_activity|kernel_active)_ratio' "$logs/export.txt" |
    sed 's/^/export: /' | tee -a "$summary"
  ((rc == 0)) || { say "scrape failed; see $logs/export.txt and export.log"; return 1; }
  grep -q '^pipetop_gpu_kernel_active_ratio' "$logs/export.txt" || { say "no kernel-active metric"; return 1; }
  grep -q '^pipetop_gpu_sm_activity_ratio' "$logs/export.txt" || say "note: no GPM metrics exported on this machine"
}

# The dataset outlives the work folder, so a rerun does not generate it again.
p_data() {
  local dir=build/gpu-check-data-${episodes}x$frames.zarr
  if [[ ! -d $dir ]]; then
    rm -rf "$dir.tmp"
    timeout 300 env LD_LIBRARY_PATH="$go_libs" bin/pipetrain data gen --out "$dir.tmp" --episodes "$episodes" \
      --frames "$frames" --chunk-frames 1 >"$logs/data.log" 2>&1 || { tail -5 "$logs/data.log" | tee -a "$summary"; return 1; }
    mv "$dir.tmp" "$dir"
    say "$(tail -1 "$logs/data.log")"
  fi
  data=$dir
  say "data: $data, 1-frame chunks, decoded cameras $((episodes * frames * 4 * 128 * 128 * 3 / 1048576)) MiB, loader cache $cache_mb MiB"
}

trainflags() {
  echo --data "$data" --preset "$preset" --precision bf16 --device "$device" --workers "$workers" \
    --threads "$threads" --cache-mb "$cache_mb" --shim "$shim"
}

p_train() {
  local batch=$1 name=gpucheck-b$1 tag=train-b$1
  [[ -f ${shim:-} && -d ${data:-} ]] || { say "needs the shim and the data"; return 1; }
  # shellcheck disable=SC2046
  env LD_LIBRARY_PATH="$go_libs" bin/pipetrain train $(trainflags) --batch "$batch" --name "$name" --log-every "$log_every" >"$logs/$tag.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  local i
  # Past start-up: the first logged step (allocator, cuDNN/cuBLAS warm-up).
  for ((i = 0; i < 1200; i++)); do
    grep -qs '^step' "$logs/$tag.log" && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q '^step' "$logs/$tag.log"; then
    say "no step logged; the end of $logs/$tag.log:"
    tail -15 "$logs/$tag.log" | tee -a "$summary"
    stop $pid 5
    return 1
  fi
  sleep "$warm"
  snapshot "$name" "$tag"
  local snap=$?
  stop $pid 60
  local rc=$?
  grep -E '^(policy|params|data):' "$logs/$tag.log" | sed "s/^/b$batch /" | tee -a "$summary"
  grep -E '^(step|done|stopped)' "$logs/$tag.log" | tail -2 | sed "s/^/b$batch /" | tee -a "$summary"
  sed -n '1,40p' "$logs/$tag.txt" >>"$summary" 2>/dev/null
  ((snap == 0)) || { say "pipetop could not snapshot $name; see $logs/$tag.err"; return 1; }
  ((rc == 0)) || { say "pipetrain exit status $rc"; return 1; }
  local need=() g=()
  [[ $mode == gpu ]] && need=(--need-gpu)
  [[ -n $goal ]] && ((batch >= 64)) && g=(--goal "$goal")
  "$py" scripts/gpucheck/stagecheck.py "$logs/$tag.json" --label "b$batch" "${need[@]}" "${g[@]}" | tee -a "$summary"
  return "${PIPESTATUS[0]}"
}

p_bisect() {
  [[ -f ${shim:-} && -d ${data:-} ]] || { say "needs the shim and the data"; return 1; }
  # shellcheck disable=SC2046
  timeout 300 env LD_LIBRARY_PATH="$go_libs" bin/pipetrain bisect $(trainflags) --batch "$bisect_batch" \
    --seconds-per-phase "$bisect_secs" --warmup 3 --no-serve 2>"$logs/bisect.log" | tee -a "$summary"
  local rc=${PIPESTATUS[0]}
  ((rc == 0)) || { tail -10 "$logs/bisect.log" | tee -a "$summary"; return 1; }
}

# watch_python TAG NAME PID STAGECHECK-FLAGS...: attach to a Python run, check
# its snapshot, wait for it to end.
watch_python() {
  local tag=$1 name=$2 pid=$3
  shift 3
  if ! wait_for "$name" "$pid" 120; then
    say "$name never appeared in pipetop ls; the end of $logs/$tag.log:"
    tail -15 "$logs/$tag.log" | tee -a "$summary"
    stop "$pid" 5
    return 1
  fi
  sleep "$py_warm"
  snapshot "$name" "$tag"
  local snap=$?
  timeout $((py_secs + 90)) tail --pid="$pid" -f /dev/null
  wait "$pid"
  local rc=$?
  sed -n '1,30p' "$logs/$tag.txt" >>"$summary" 2>/dev/null
  ((snap == 0)) || { say "pipetop could not snapshot $name; see $logs/$tag.err"; return 1; }
  ((rc == 0)) || { say "exit status $rc; the end of $logs/$tag.log:"; tail -15 "$logs/$tag.log" | tee -a "$summary"; return 1; }
  "$py" scripts/gpucheck/stagecheck.py "$logs/$tag.json" --label "$tag" "$@" | tee -a "$summary"
  return "${PIPESTATUS[0]}"
}

p_python() {
  local cuda=() need=()
  [[ $mode == gpu ]] && cuda=(--cuda-timing) need=(--need-gpu)
  "$py" examples/pytorch_loop.py --device "$device" "${cuda[@]}" --steps 100000000 --seconds "$py_secs" \
    --batch "$py_batch" --workers 2 --name gpucheck-py >"$logs/python.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  watch_python python gpucheck-py "$pid" "${need[@]}"
}

p_pipetop_run() {
  # grep reads the whole help: with -q it could exit first, and pipefail
  # would then count pipetop's broken pipe as "no run command".
  if ! bin/pipetop run --help 2>&1 | grep 'usage: pipetop run' >/dev/null; then
    say "skipped: this pipetop has no \`run\` command"
    return $skipped_rc
  fi
  # From the logs folder: pipetop run leaves its end-of-run summary file there.
  env -C "$logs" "$repo/bin/pipetop" run --no-tui --name gpucheck-run -- "$py" "$repo/scripts/gpucheck/plain_loop.py" \
    --device "$device" --seconds $((py_secs + 5)) "${plain[@]}" >"$logs/pipetop-run.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  watch_python pipetop-run gpucheck-run "$pid" || return 1
  grep -vE '^\s*$' "$logs/pipetop-run.log" | tail -15 | tee -a "$summary"
}

p_ddp() {
  if ! bin/pipetop run --help 2>&1 | grep 'usage: pipetop run' >/dev/null; then
    say "skipped: this pipetop has no \`run\` command"
    return $skipped_rc
  fi
  local need=(--need-stage comm) port
  [[ $mode == gpu ]] && need+=(--need-gpu)
  port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env -C "$logs" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
    "$repo/bin/pipetop" run --no-tui --name gpucheck-ddp -- "$py" "$repo/scripts/gpucheck/plain_loop.py" --ddp \
    --device "$device" --seconds $((py_secs + 5)) "${plain[@]}" >"$logs/ddp.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  watch_python ddp gpucheck-ddp "$pid" "${need[@]}"
}

p_lightning() {
  if ! PYTHONPATH=clients/python timeout 120 "$py" -c \
    'import lightning.pytorch as L' 2>/dev/null &&
    ! PYTHONPATH=clients/python timeout 120 "$py" -c 'import pytorch_lightning' 2>/dev/null; then
    say "skipped: lightning is not installed for $py"
    return $skipped_rc
  fi
  if ! PYTHONPATH=clients/python timeout 60 "$py" -c 'from pipetop_publish.integrations import lightning_callback' 2>/dev/null; then
    say "skipped: this publisher has no Lightning callback (pipetop_publish.integrations)"
    return $skipped_rc
  fi
  PYTHONPATH=clients/python "$py" scripts/gpucheck/plain_loop.py --lightning --name gpucheck-lightning \
    --device "$device" --seconds $((py_secs + 10)) "${plain[@]}" >"$logs/lightning.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  watch_python lightning gpucheck-lightning "$pid"
}

# ---- run --------------------------------------------------------------------------
go_libs=${LD_LIBRARY_PATH:-} shim="" data=""
part machine p_machine
if [[ $mode == gpu && $failed == 1 ]]; then
  say "no usable GPU: stopping here"
else
  part libs p_libs
  part shim p_shim
  part matmul p_matmul
  part export p_export
  part data p_data
  for b in $batches; do part "train-b$b" p_train "$b"; done
  part bisect p_bisect
  part python p_python
  part pipetop-run p_pipetop_run
  part ddp p_ddp
  part lightning p_lightning
fi

say ""
say "== summary ($mode, $((SECONDS - t_start)) s)"
for row in "${table[@]}"; do say "$row"; done
if [[ -n $goal ]]; then
  grep -h 'goal GPU busy' "$summary" | sed -E 's/^([^:]*):.*; (goal .*)$/\1 \2/' >"$work/goal.txt"
  if [[ -s $work/goal.txt ]]; then while read -r l; do say "$l"; done <"$work/goal.txt"; else say "goal: no run reached the check"; fi
fi
tar -C "$work" -czf "$work/logs.tar.gz" logs summary.txt 2>/dev/null
if [[ -n $out ]]; then
  mkdir -p "$out" && cp "$summary" "$work/logs.tar.gz" "$out/"
fi
exit $failed
