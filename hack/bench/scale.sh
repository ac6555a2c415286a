#!/usr/bin/env bash
# Benchmarks the doorman at scale (docs/bench/scale.md): the doorman, as a process of
# its own against the real API server (envtest), with 10 routed ports and
# with the whole range (10,000): time to Ready, resident memory, goroutines,
# and the time from one more route's status write to its port accepting.
# Prints the go test -bench output and the 10,000-against-10 ratios;
# docs/bench/scale.md records a run. Needs `ulimit -Hn` above 10,100.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${KUBEBUILDER_ASSETS:=$("$root/hack/testbed/build-binaries.sh" etcd kube-apiserver kubectl | tail -n1)}"
export KUBEBUILDER_ASSETS
if (( $(ulimit -Hn) < 10100 )); then
  echo "scale.sh: the hard limit on open files is $(ulimit -Hn); 10,000 listeners need more: raise it (ulimit -Hn 20000 as root)" >&2
  exit 1
fi
cd "$root/doorman"
echo "[$(date +%H:%M:%S)] 10 and 10,000 routed ports (about two minutes)"
out=$(go test -p 1 -timeout 15m -run '^$' -bench 'BenchmarkRoutedPorts' -benchtime 1x . "$@")
echo "$out"
echo "$out" | awk '
  /^BenchmarkRoutedPorts\// {
    n = ($1 ~ /\/10-/) ? "small" : "full"
    for (i = 3; i < NF; i += 2) v[n, $(i + 1)] = $i
  }
  END {
    split("MiB-rss MiB-peak-rss goroutines s-to-ready ms-write-to-listen-p50 ms-write-to-listen-p90", k, " ")
    for (j = 1; j <= 6; j++) if (v["small", k[j]] > 0)
      printf "%-24s 10: %10s   10000: %10s   ratio %.1f\n", k[j], v["small", k[j]], v["full", k[j]], v["full", k[j]] / v["small", k[j]]
  }'
