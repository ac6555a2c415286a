#!/usr/bin/env bash
# Benchmarks dependencies (docs/bench/deps.md): the in-memory graph of 2,000
# ManagedWorkloads with 4 edges each (package deps: plan a wake of 20, ask
# a hold, ask whether a dependent's wake reached a paused member, one
# informer event, building it all), and, against the real API server
# (envtest), a declared chain of 20 woken by one request beside the same 20
# wakes made one by one: the writes ratio (target <= 1.2) and the lists of
# ManagedWorkloads the reconciles made (want 0). Prints the go test -bench
# output; docs/bench/deps.md records a run. The three-deep chain end to end
# is the e2e spec "wakes a three-tier environment as one" (NAPWAKE_E2E_BENCH_OUT).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${KUBEBUILDER_ASSETS:=$("$root/hack/testbed/build-binaries.sh" etcd kube-apiserver kubectl | tail -n1)}"
export KUBEBUILDER_ASSETS
cd "$root/operator"
go test -p 1 -run '^$' -bench . -benchtime 2000x ./internal/deps/
go test -p 1 -timeout 10m -run '^$' -bench 'BenchmarkWakeChainOf20Writes' -benchtime 1x ./internal/controller/ "$@"
