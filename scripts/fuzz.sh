#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time each.
# usage: scripts/fuzz.sh [FUZZTIME]   (default 10s)
set -euo pipefail
fuzztime=${1:-10s}
export PATH="/usr/local/go/bin:$PATH"
status=0
while IFS= read -r file; do
  pkg=./$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    echo "fuzz $pkg $target ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
      cat /tmp/fuzz.$$.log; status=1
    fi
    tail -1 /tmp/fuzz.$$.log
  done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz')
rm -f /tmp/fuzz.$$.log
exit $status
