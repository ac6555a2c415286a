#!/usr/bin/env bash
# Runs every fuzz target in the workspace for the given time each (default
# 30s). New interesting inputs land in each package's testdata/fuzz, the
# corpus committed with the code.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
mapfile -t targets < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' apis shared operator doorman forwarder kubectl-napwake e2e 2>/dev/null)
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets"; exit 0; }
for f in "${targets[@]}"; do
  dir=$(dirname "$f")
  for fn in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | awk '{print $2}'); do
    echo "[$(date +%H:%M:%S)] fuzzing $fn in ./$dir for $t"
    go test -run='^$' -fuzz="^$fn\$" -fuzztime="$t" "./$dir"
  done
done
