#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time each.
# usage: scripts/fuzz.sh [FUZZTIME [WORKERS]]   (default 10s, every core)
#
# make test runs each target briefly with one worker (its seed corpus
# already ran in go test, and the other tests want the other core); make
# fuzz runs each for longer on every core. Each package's fuzzing test binary
# is built once (go test -c -fuzz, which instruments it for coverage) and
# run once per target, with the go command's fuzz cache as its corpus
# cache, as go test -fuzz would: one link per package instead of one per
# target.
#
# Go's fuzz coordinator has a race at the end of a duration-based -fuzztime
# (golang/go#75804, fixed after Go 1.26): a run that found nothing may still
# fail with a bare "context deadline exceeded". A real finding always writes
# "Failing input written to testdata/fuzz/..."; a failure without one whose
# only error is that deadline is reported as the toolchain race, not a bug.
set -euo pipefail
fuzztime=${1:-10s}
workers=${2:-$(nproc)}
export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/.."
root=$(pwd)
module=$(go list -m)
cache="$(go env GOCACHE)/fuzz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log="$work/log"
status=0

# deadline_race reports whether a failed fuzz log is only the coordinator race.
deadline_race() {
  ! grep -q 'Failing input written to' "$1" &&
    grep -q '^    context deadline exceeded$' "$1" &&
    [ "$(grep -c -- '--- FAIL' "$1")" -eq 1 ]
}

# fuzz_package builds the fuzzing test binary of package directory $1 and
# runs each of its targets (the rest of the arguments) for $fuzztime.
fuzz_package() {
  local dir=$1; shift
  local bin="$work/$(echo "$dir" | tr / _).test"
  if ! go test -c -fuzz . -o "$bin" "./$dir" >"$log" 2>&1; then
    cat "$log"; status=1; return
  fi
  for target in "$@"; do
    echo "fuzz ./$dir $target ($fuzztime, -parallel $workers)"
    if (cd "$root/$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" -test.parallel "$workers" \
      -test.fuzzcachedir "$cache/$module/$dir") >"$log" 2>&1; then
      grep 'fuzz: elapsed' "$log" | tail -1
    elif deadline_race "$log"; then
      grep 'fuzz: elapsed' "$log" | tail -1
      echo "ok (no failing input; the run ended on Go's fuzztime deadline race, golang/go#75804)"
    else
      cat "$log"; status=1
    fi
  done
}

while IFS= read -r dir; do
  targets=$(grep -ohE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go | awk '{print $2}')
  # shellcheck disable=SC2086 # one word per target
  fuzz_package "$dir" $targets
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u)
exit $status
