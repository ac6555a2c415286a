#!/usr/bin/env bash
# Benchmarks the operator moving 1000 routed Services' EndpointSlices to the
# remaining doorman pod when one stops being Ready, against a bare client
# making the same 1000 slice updates with the same concurrency, in the same
# run, against a real API server (envtest). The time is until a watching
# client sees every slice point at the remaining pod. Target: ratio <= 1.2,
# and well under the 10 s the spec promises.
# Writes the report, with the machine, to docs/bench/routing.md (OUT= to
# change). ROUNDS (default 5) runs the measurement that many times on one setup.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/docs/bench/routing.md}
export NAPWAKE_BENCH_ROUNDS=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root/operator" && timeout 900 go test -count=1 -run '^$' -bench BenchmarkRouteMove -benchtime 1x -v \
	-timeout 800s ./internal/routing/) > "$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }

{
	echo "# Routing benchmark: moving 1000 routed Services"
	echo
	echo "Recorded by \`hack/bench/routing.sh\` on $(date -u +%Y-%m-%dT%H:%MZ), against envtest's etcd and kube-apiserver on the same machine."
	echo
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);" \
		"load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(go env GOVERSION)."
	echo
	echo "1000 Services (40 paused workloads x 25 single-port Services) routed to two doorman pods; one stops being Ready."
	echo "\`router-s\`: from that change to a watching client seeing every slice point at the other pod only."
	echo "\`bare-s\`: a bare client making the same 1000 slice updates, 32 at a time like the router, until the watcher sees them all"
	echo "(the mean of one run just before and one just after). \`ratio\` = router-s / bare-s; target <= 1.2, router-s well under 10 s."
	echo "Neither client throttles itself (QPS -1), as the operator's doesn't: controller-runtime's GetConfig leaves that to API Priority and Fairness."
	echo "An operator client limited to client-go's default 5 requests/s would take over 3 minutes for 1000 slices."
	echo
	echo '```'
	grep -E '^(goos|goarch|cpu|Benchmark)|round:' "$tmp/out" | sed 's/^ *//'
	echo '```'
} > "$out"
cat "$out"
