#!/usr/bin/env bash
# Benchmarks the doorman's pass-through path beside HAProxy (mode tcp) and a
# direct connection, on loopback only, plus the memory of 2048 held
# connections and wake-to-first-byte with 1, 50 and 256 held (from the
# endpoints table, and through a real API server's watch). Writes the
# report, with the machine, to docs/bench/doorman.md (OUT= to change).
# Bounded: each throughput run lasts -duration (3 s), and the whole run a
# couple of minutes at most. Extra arguments go to the bench program
# (doorman/internal/tools/bench): -duration, -rounds, -held, -haproxy.
# NAPWAKE_BENCH_CPUPROFILE=FILE writes a CPU profile of the doorman process
# while it passes the held callers on (go tool pprof -top).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/docs/bench/doorman.md}
command -v haproxy >/dev/null || { echo "doorman.sh: haproxy not found (Debian: apt-get install haproxy)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The doorman module builds on its own (its go.mod replaces apis/shared).
(cd "$root/doorman" && GOWORK=off go build -o "$tmp/bench" ./internal/tools/bench)

# 2048 held connections need two descriptors each, in one process.
ulimit -n 16384 2>/dev/null || true

{
	echo "# Doorman benchmark"
	echo
	echo "Recorded by \`hack/bench/doorman.sh\` on $(date -u +%Y-%m-%dT%H:%MZ), loopback only."
	echo
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);" \
		"load average $(cut -d' ' -f1-3 /proc/loadavg) at start; $(go env GOVERSION); $(haproxy -v | head -1 | cut -d' ' -f1-3)."
	echo
	echo "The load generator, the test backend and the doorman share the machine's CPUs; HAProxy runs as its own process."
	echo "Compare the rows of one run (the ratios), not runs on different machines."
	echo
	timeout 600 "$tmp/bench" "$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
	echo
	echo "## Wake to first byte through the watch"
	echo
	echo "From the Service's own EndpointSlice create call returning, on a real kube-apiserver and etcd (envtest, on this machine too),"
	echo "through the doorman's informers, to each held caller's first byte at the pod."
	echo
	echo "| held | p50 ms | p99 ms | max ms |"
	echo "|---|---|---|---|"
	(cd "$root/doorman" && NAPWAKE_WAKE_HELD=1,50,256 GOWORK=off timeout 300 go test -count=1 -run TestWakeToFirstByteThroughTheWatch -v ./internal/kube) > "$tmp/watch.log" 2>&1 ||
		{ cat "$tmp/watch.log" >&2; exit 1; }
	grep '^| ' "$tmp/watch.log"
	echo
	echo "Targets (issue 5): throughput at least HAProxy's; added latency no more than HAProxy's; at most 8 KiB resident per held connection;"
	echo "wake to first byte p99 at most 20 ms with 1, 50 and 256 held."
} > "$tmp/report.md"
mkdir -p "$(dirname "$out")"
cp "$tmp/report.md" "$out"
cat "$out"
