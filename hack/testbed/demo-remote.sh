#!/usr/bin/env bash
# Runs `make demo` the way a user with their own cluster would (KUBECONFIG and
# NAPWAKE_REGISTRY set, nothing built by the demo but binaries and images),
# against the test bed: an in-memory registry (hack/tools/registry) served on
# the node's address stands in for the user's registry, and containerd pulls
# from it over plain HTTP. Afterwards it removes what the demo installed and
# stops the registry; the test bed stays as it was.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib.sh"
STATE=${NAPWAKE_TESTBED_DIR:-/var/lib/napwake-testbed}

"$here/cluster.sh" up
step "Starting an in-memory registry on 10.200.0.1:5000 inside the node's namespace"
GOWORK=off go -C "$root/hack/tools" build -o "$root/bin/registry" ./registry
setsid nsenter --net=/var/run/netns/napwake-node "$root/bin/registry" --listen 10.200.0.1:5000 \
  >"$STATE/log/registry.log" 2>&1 </dev/null &
reg=$!
trap 'kill "$reg" 2>/dev/null || true' EXIT
deadline=$(( $(date +%s) + 20 ))
until "$here/cluster.sh" exec bash -c 'exec 3<>/dev/tcp/10.200.0.1/5000' 2>/dev/null; do
  [ "$(date +%s)" -lt "$deadline" ] || die "the registry did not start; see $STATE/log/registry.log"
  sleep 0.2
done

step "make demo with KUBECONFIG and NAPWAKE_REGISTRY: the user's-own-cluster mode"
cd "$root"
"$here/cluster.sh" exec env NAPWAKE_REGISTRY=10.200.0.1:5000/napwake NAPWAKE_REGISTRY_INSECURE=1 \
  "$root/hack/demo.sh"
step "Removing what the demo installed (make demo-down in the same mode)"
"$here/cluster.sh" exec "$root/hack/demo.sh" down
