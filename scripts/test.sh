#!/usr/bin/env bash
# test.sh - every test of make test, in phases, with a table of each
# phase's wall and CPU time at the end.
#
# usage: scripts/test.sh [PHASE|STEP...]   (default: every phase)
#
# Phases run in steps; the phases of one step run at the same time, each
# writing its output to build/test-logs/PHASE.log (printed when it fails).
# The steps are ordered so that what reads the machine's CPU (threads
# waiting for a CPU, idle cores, workers' busy shares, samples/s against a
# script's own) runs alone, and what only needs CPU shares a step:
#
#   go       lint, fuzz (FUZZTIME each target), the shim against libtorch
#            2.x (when its sources changed), the Python suite, every Go
#            package but the live suites, with the binaries make build
#            made (PIPETOP_TEST_BIN); beside them the live suites' tests
#            that do not read the CPU (e2e: testkit.Concurrent, in
#            parallel) and the GPU check's dry run on the CPU
#   live     the live suites' tests that read the CPU (testkit.Serial),
#            alone: tests/diagnosis, tests/bisect, the quick tests/tune case
#
# A failed phase does not stop the others; the exit status is 1 if any
# failed. Environment: FUZZTIME (default 1000x: 1,000 inputs a target), GO (default go), PY (default
# /usr/bin/python3).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
repo=$(pwd)
export PATH="/usr/local/go/bin:$PATH"
export PIPETOP_TEST_BIN="$repo/bin"
GO=${GO:-go}
PY=${PY:-/usr/bin/python3}
FUZZTIME=${FUZZTIME:-1000x}
logs=build/test-logs
mkdir -p "$logs"

# The live suites (their tests say which read the CPU: testkit.OnlyEnv),
# and the cases of tests/tune that make test runs (make test-tune runs all).
live_pkgs=(./tests/diagnosis ./tests/bisect)
tune_quick='TestComputeBoundTriesNothing|TestInterruptedDuringTheBisect'

phase_lint() { make --no-print-directory lint; }
phase_fuzz() { scripts/fuzz.sh "$FUZZTIME" 1; }
phase_libtorch2() { scripts/check-libtorch2.sh; }
# phase_python runs the Python suite's modules two at a time (they mostly
# wait on the processes they start), each module's output kept together.
phase_python() {
  # shellcheck disable=SC2046 # one word per file
  "$PY" -m py_compile $(git ls-files '*.py') || return 1
  git ls-files 'clients/python/test_*.py' | xargs -n1 basename | sed 's/\.py$//' |
    xargs -P 2 -I{} "$0" --python-module {}
}

# python_module runs one module of the Python suite, its output at once.
python_module() {
  local out rc
  out=$(cd clients/python && "$PY" -m unittest -v "$1" 2>&1)
  rc=$?
  printf '== %s\n%s\n' "$1" "$out"
  return $rc
}
phase_go() {
  local pkgs
  pkgs=$($GO list ./... | grep -Ev '/tests/(diagnosis|bisect|tune)$') || return 1
  # shellcheck disable=SC2086 # one word per package
  $GO test -count=1 -timeout 20m $pkgs
}
phase_gpucheck() {
  "$PY" -m unittest discover -s scripts/gpucheck -p 'test_*.py' &&
    PYTHON="$PY" scripts/gpu-check.sh --cpu
}
# phase_e2e runs the live suites' tests that do not read the CPU, four at
# a time in each package (they mostly wait on the scripts they start).
phase_e2e() {
  PIPETOP_TEST_ONLY=concurrent $GO test -count=1 -timeout 20m -parallel 4 "${live_pkgs[@]}" &&
    PIPETOP_TEST_ONLY=concurrent $GO test -count=1 -timeout 10m -run "$tune_quick" ./tests/tune
}

# phase_live runs the live suites' tests that read the CPU, one package
# and one test at a time.
phase_live() {
  PIPETOP_TEST_ONLY=serial $GO test -count=1 -timeout 20m -p 1 "${live_pkgs[@]}" &&
    PIPETOP_TEST_ONLY=serial $GO test -count=1 -timeout 10m -run "$tune_quick" ./tests/tune
}

case ${1:-} in
--phase) "phase_$2"; exit ;;
--python-module) python_module "$2"; exit ;;
esac

steps=("go:lint fuzz libtorch2 python go e2e gpucheck" "live:live")
want=" $* "
rows=() failed=()

# run_step starts every phase of a step (those asked for) and waits for them.
run_step() {
  local step=$1; shift
  local name pids=() names=()
  for name in "$@"; do
    [[ $want == "  " || $want == *" $name "* || $want == *" $step "* ]] || continue
    echo "test: $step: $name (log: $logs/$name.log)"
    (
      t0=$EPOCHREALTIME
      /usr/bin/time -f '%U %S' -o "$logs/$name.cpu" "$0" --phase "$name" >"$logs/$name.log" 2>&1
      rc=$?
      echo "$rc $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b - a}')" >"$logs/$name.result"
    ) &
    pids+=($!) names+=("$name")
  done
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    result "$step" "${names[$i]}"
  done
}

# result records a finished phase's row and prints its log when it failed.
result() {
  local step=$1 name=$2 rc wall cpu
  read -r rc wall <"$logs/$name.result"
  # time(1) writes "Command exited with non-zero status N" first when it did.
  cpu=$(tail -1 "$logs/$name.cpu" 2>/dev/null | awk '{printf "%.0f", $1 + $2}')
  rows+=("$(printf '%-8s %-10s %6.0f s %6s s  %s' "$step" "$name" "$wall" "${cpu:-?}" "$([[ $rc == 0 ]] && echo ok || echo "FAILED ($rc)")")")
  if [[ $rc != 0 ]]; then
    failed+=("$name")
    echo "---- $name failed (status $rc): $logs/$name.log"
    tail -200 "$logs/$name.log"
  else
    echo "test: $name ok"
  fi
}

t_all=$SECONDS
for s in "${steps[@]}"; do
  t_step=$SECONDS n=${#rows[@]}
  # shellcheck disable=SC2086 # one word per phase
  run_step "${s%%:*}" ${s#*:}
  ((${#rows[@]} > n)) && rows+=("$(printf '%-8s %-10s %6d s' "${s%%:*}" "(step)" $((SECONDS - t_step)))")
done

echo
echo "step     phase        wall      CPU  status"
printf '%s\n' "${rows[@]}"
printf '%-19s %6d s\n' "total" $((SECONDS - t_all))
if ((${#failed[@]})); then
  echo "test: FAILED: ${failed[*]}"
  exit 1
fi
echo "test: every phase passed"
