#!/usr/bin/env bash
# Runs every fuzz target in the workspace for the given time each (default
# 30s). Go keeps the new interesting inputs it finds in its build cache;
# this copies them into each package's testdata/fuzz, the corpus committed
# with the code (and run as seeds by every plain go test).
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
only=${2:-.}   # an extended regexp: fuzz only the targets whose name matches
mapfile -t targets < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' apis shared operator doorman forwarder kubectl-napwake e2e 2>/dev/null)
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets"; exit 0; }
for f in "${targets[@]}"; do
  dir=$(dirname "$f")
  for fn in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | awk '{print $2}' | grep -E "$only"); do
    echo "[$(date +%H:%M:%S)] fuzzing $fn in ./$dir for $t"
    go test -run='^$' -fuzz="^$fn\$" -fuzztime="$t" "./$dir"
    pkg=$(cd "$dir" && go list .)
    cache="$(go env GOCACHE)/fuzz/$pkg/$fn"
    if [ -d "$cache" ]; then
      mkdir -p "$dir/testdata/fuzz/$fn"
      cp -n "$cache"/* "$dir/testdata/fuzz/$fn/" 2>/dev/null || true
      echo "  corpus: $(ls "$dir/testdata/fuzz/$fn" | wc -l) inputs in $dir/testdata/fuzz/$fn"
    fi
  done
done
