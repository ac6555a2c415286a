#!/usr/bin/env bash
# make lint: golangci-lint over every module (the rules, and why each
# exclusion is there, are in .golangci.yml), then every go.mod tidy.
#   hack/lint.sh MODULE...
# golangci-lint is pinned in hack/lint/go.mod (a module of its own, so its
# dependencies never move the components' or the other tools') and built
# once into bin/, keyed by that version.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

version=$(GOWORK=off go -C hack/lint list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)
bin="$root/bin/golangci-lint-$version"
if [ ! -x "$bin" ]; then
  say "Building golangci-lint $version (once; about 2 minutes)"
  GOWORK=off go -C hack/lint build -o "$bin" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
fi

fail=0
n=0
for m in "$@"; do
  n=$((n + 1))
  say "golangci-lint $m ($n of $#)"
  (cd "$m" && "$bin" run --config "$root/.golangci.yml" ./...) || fail=1
done

# Tidy: each module on its own (GOWORK=off), as a user building it would.
# kubectl-napwake requires released apis/shared instead of replacing them,
# so only the workspace resolves it; go mod tidy cannot check it offline.
say "go mod tidy -diff over every module"
for m in "$@" hack/tools hack/lint hack/chart; do
  [ "$m" = kubectl-napwake ] && continue
  if ! out=$(GOWORK=off go -C "$m" mod tidy -diff 2>&1); then
    echo "$m/go.mod is not tidy (run: GOWORK=off go -C $m mod tidy):"; echo "$out" | head -40; fail=1
  fi
done
[ "$fail" = 0 ] && say "lint: no findings, every go.mod tidy"
exit "$fail"
