#!/usr/bin/env bash
# Benchmarks the doorman's pass-through path beside HAProxy (mode tcp) and a
# direct connection, on loopback (as the machine schedules them, with the
# proxies pinned to a CPU of their own, and with everything on one CPU,
# and 30 rounds of latency alone, as scheduled and on one CPU) and, as root, between network
# namespaces it makes joined by veth pairs; plus the memory of 2048 held
# connections and wake-to-first-byte with 1, 50 and 256 held (from the
# endpoints table, through a real API server's EndpointSlice watch, and on
# a pod Ready by its own status through the Pod watch, beside a bare
# dialler released by the same event). Each table says
# in how many rounds the doorman did at least as well as HAProxy. Writes
# the report, with the machine, to docs/bench/doorman.md (OUT= to change).
# Bounded: each throughput run lasts -duration (2 s), five rounds per path,
# and the whole run about twelve minutes. Extra arguments go to the bench
# program (doorman/internal/tools/bench): -duration, -pass-rounds, -rounds,
# -held, -wake-held, -wake-rounds, -haproxy.
# NAPWAKE_BENCH_CPUPROFILE=FILE writes a CPU profile of the doorman process
# while it passes the held callers on (go tool pprof -top).
# NAPWAKE_BENCH_ONLY=podready runs only the wake on a pod Ready by its own
# status (target: 256 held, doorman p99 at most 1.2 times the bare
# dialler's) and prints its section instead of writing the report
# (make bench-podready); it needs KUBEBUILDER_ASSETS, not HAProxy.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/docs/bench/doorman.md}

# kube_bench LOG TEST VAR=VALUE... runs one of doorman/internal/kube's
# latency tests through envtest with the variables given, its output in
# LOG, and prints its table rows.
kube_bench() {
	local log=$1 test=$2
	shift 2
	(cd "$root/doorman" && env "$@" GOWORK=off timeout 300 go test -count=1 -run "$test" -v ./internal/kube) > "$log" 2>&1 ||
		{ cat "$log" >&2; return 1; }
	grep '^| ' "$log"
}

# podready_section prints the section of the wake on a pod Ready by its
# own status, through a real API server's Pod watch; LOG is where the
# test's output goes.
podready_section() {
	local log=$1
	echo "## Wake on a pod Ready by its own status, through the watch"
	echo
	echo "No EndpointSlice at all: callers held on the doorman, then a status update marks the Service's pod Ready on a real kube-apiserver and etcd (envtest, on this machine too),"
	echo "and the doorman passes them on from its Pod watch event. From the update call made (the call itself counts, its duration beside) to each held caller's first byte at the pod: its arrival at the pod's socket and its reading by the stand-in pod."
	echo "The peer, in the same run with rounds taking turns, is a bare dialler in a process of its own: one goroutine per caller waiting, released by the same Pod watch event (a handler on the doorman's own informer), each connecting to the pod and writing the same request."
	echo "The held callers and the stand-in pod run in a third process. Medians of 5 rounds, with their range; the ratio is of the median p99s."
	echo
	echo "| held | path | update call ms | arrival p50 ms | arrival p99 ms | read p50 ms | read p99 ms |"
	echo "|---|---|---|---|---|---|---|"
	kube_bench "$log" TestWakeOnPodReadyThroughTheWatch NAPWAKE_PODREADY_HELD=1,50,256 NAPWAKE_PODREADY_ROUNDS=5 || return 1
	echo
	echo "Target: with 256 held, the doorman's p99 at most 1.2 times the bare dialler's."
}

if [[ ${NAPWAKE_BENCH_ONLY:-} == podready ]]; then
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg) at start; $(date -u +%Y-%m-%dT%H:%MZ)."
	echo
	podready_section "$log"
	exit
fi
command -v haproxy >/dev/null || { echo "doorman.sh: haproxy not found (Debian: apt-get install haproxy)" >&2; exit 1; }

tmp=$(mktemp -d)
ns=napwake-bench-$$
cleanup() {
	for n in client proxy pod; do ip netns del "$ns-$n" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# veth_bench BENCH ARGS... measures pass-through the way pods are reached:
# the load generator, the proxies and the test backend each in a network
# namespace of its own, made here and removed on exit, joined by veth
# pairs (192.0.2.0/24 and 198.51.100.0/24, documentation ranges that exist
# only inside them). "direct" is routed through the proxies' namespace by
# the kernel alone.
veth_bench() {
	local bench=$1
	shift
	for n in client proxy pod; do
		ip netns add "$ns-$n"
		ip -n "$ns-$n" link set lo up
	done
	ip link add nwc0 netns "$ns-client" type veth peer name nwp0 netns "$ns-proxy"
	ip link add nwb0 netns "$ns-pod" type veth peer name nwp1 netns "$ns-proxy"
	ip -n "$ns-client" addr add 192.0.2.1/24 dev nwc0
	ip -n "$ns-proxy" addr add 192.0.2.2/24 dev nwp0
	ip -n "$ns-proxy" addr add 198.51.100.2/24 dev nwp1
	ip -n "$ns-pod" addr add 198.51.100.1/24 dev nwb0
	ip -n "$ns-client" link set nwc0 up
	ip -n "$ns-proxy" link set nwp0 up
	ip -n "$ns-proxy" link set nwp1 up
	ip -n "$ns-pod" link set nwb0 up
	ip -n "$ns-client" route add default via 192.0.2.2
	ip -n "$ns-pod" route add default via 198.51.100.2
	ip netns exec "$ns-proxy" sysctl -qw net.ipv4.ip_forward=1 # that namespace's own setting
	timeout 600 "$bench" -parts pass -title "Pass-through between network namespaces (veth), as pods are reached" \
		-client-netns "/run/netns/$ns-client" -proxy-netns "/run/netns/$ns-proxy" -backend-netns "/run/netns/$ns-pod" \
		-proxy-ip 192.0.2.2 -backend-ip 198.51.100.1 "$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
}
# The doorman module builds on its own (its go.mod replaces apis/shared).
(cd "$root/doorman" && GOWORK=off go build -o "$tmp/bench" ./internal/tools/bench)

# 2048 held connections need two descriptors each, in one process.
ulimit -n 16384 2>/dev/null || true

{
	echo "# Doorman benchmark"
	echo
	echo "Recorded by \`hack/bench/doorman.sh\` on $(date -u +%Y-%m-%dT%H:%MZ). Traffic stays on loopback and inside network namespaces the script makes and removes."
	echo
	echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);" \
		"load average $(cut -d' ' -f1-3 /proc/loadavg) at start; $(go env GOVERSION); $(haproxy -v | head -1 | cut -d' ' -f1-3)."
	echo
	echo "The load generator, the test backend and the doorman share the machine's CPUs; HAProxy runs as its own process."
	echo "Compare the rows of one run (the ratios), not runs on different machines."
	echo
	timeout 600 "$tmp/bench" "$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
	echo
	# As scheduled, each latency round falls in one of two regimes (see
	# below) for either proxy, so five rounds are a coin toss: thirty
	# rounds of latency alone, counting the rounds each proxy wins.
	echo "doorman.sh: latency alone as the machine schedules it, 30 rounds" >&2
	timeout 600 "$tmp/bench" -parts latency -pass-rounds 30 \
		-title "Added latency on loopback as the machine schedules it, 30 rounds" \
		"$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
	echo
	if [[ $(nproc) -ge 2 ]] && command -v taskset >/dev/null; then
		echo "doorman.sh: pass-through again with the proxies on a CPU of their own" >&2
		timeout 600 taskset -c 0 "$tmp/bench" -parts pass -proxy-cpus 1 \
			-title "Pass-through on loopback, the proxies on a CPU of their own (taskset: load generator and backends on CPU 0, the proxy on CPU 1)" \
			"$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
		echo
		# On a VM, a process that sleeps in epoll_wait on an otherwise idle
		# CPU pays the hypervisor's wake-up (about 100 µs a round trip),
		# and latency rounds flip between two regimes (~16 and ~130 µs)
		# for any proxy, whichever CPU the scheduler happens to leave idle.
		# With everything on one CPU no wake-up crosses CPUs, and both
		# proxies are measured alike.
		echo "doorman.sh: pass-through again with everything on one CPU" >&2
		timeout 600 taskset -c 0 "$tmp/bench" -parts pass \
			-title "Pass-through on loopback, everything on one CPU (taskset -c 0: no wake-up crosses CPUs, so neither proxy pays the VM's idle wake-up)" \
			"$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
		echo
		# A few microseconds apart, five rounds cannot tell a tie from a
		# difference: thirty rounds of latency alone, counting the rounds
		# each proxy wins.
		echo "doorman.sh: latency alone with everything on one CPU, 30 rounds" >&2
		timeout 600 taskset -c 0 "$tmp/bench" -parts latency -pass-rounds 30 -rounds 20000 \
			-title "Added latency on loopback, everything on one CPU, 30 rounds" \
			"$@" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
	fi
	if [[ $(id -u) == 0 ]] && command -v ip >/dev/null && command -v nsenter >/dev/null; then
		echo "doorman.sh: pass-through between three network namespaces joined by veth pairs" >&2
		veth_bench "$tmp/bench" "$@"
	else
		echo "## Pass-through between network namespaces (veth)"
		echo
		echo "Skipped: it needs root, ip and nsenter to make its own network namespaces."
	fi
	echo
	echo "## Wake to first byte through the watch"
	echo
	echo "From the moment the test makes the create call for the Service's own EndpointSlice (the call itself counts), on a real kube-apiserver and etcd (envtest, on this machine too),"
	echo "through the doorman's informers, to each held caller's first byte at the pod: its arrival at the pod's socket and its reading by the stand-in pod."
	echo "The create call's own duration (the API server's write, etcd's fsync included) is given beside it: the slice is in the API only once the call returns, so that much of each figure is the API server's, not the doorman's."
	echo "The held callers and the stand-in pod run in a process of their own. Medians of 5 rounds on one doorman, with their range; the first round is the doorman's first wake."
	echo
	echo "| held | create call ms | arrival p50 ms | arrival p99 ms | read p50 ms | read p99 ms |"
	echo "|---|---|---|---|---|---|"
	kube_bench "$tmp/watch.log" TestWakeToFirstByteThroughTheWatch NAPWAKE_WAKE_HELD=1,50,256 NAPWAKE_WAKE_ROUNDS=5 || exit 1
	echo
	podready_section "$tmp/podready.log" || exit 1
	echo
	echo "Targets: throughput at least HAProxy's; added latency no more than HAProxy's; at most 8 KiB resident per held connection;"
	echo "wake to first byte p99 at most 20 ms with 1, 50 and 256 held."
} > "$tmp/report.md"
mkdir -p "$(dirname "$out")"
cp "$tmp/report.md" "$out"
cat "$out"
