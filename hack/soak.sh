#!/usr/bin/env bash
# Runs the soak (docs/design/faults.md#the-soak; docs/bench/soak.md) against the local
# test bed `make soak` brought up: loads the images `make images` built and
# the sample app's, installs Napwake with its Helm chart as `make e2e` does,
# and runs the driver (e2e/cmd/soak) inside the node's network namespace for
# SOAK_DURATION (default 30m). Its output goes to _out/soak.txt as well.
#
#   SOAK_DURATION=4m hack/soak.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$root/_out
source "$here/testbed/lib.sh"

step "Building the soak driver and the sample app image"
"$here/sampleapp-image.sh"
CGO_ENABLED=0 go -C "$root" build -trimpath -o "$out/soak" ./e2e/cmd/soak
"$here/testbed/cluster.sh" load-image "$out"/images/*.tar
# The operator serves Go's heap profiles on :8082 for the soak only: the
# driver saves one at the baseline and one at the end, and the diff below
# says what grew.
"$here/install-napwake.sh" --set 'operator.extraArgs[0]=--pprof-bind-address=:8082'

heap=$out/soak-heap
rm -rf "$heap"
step "Soaking for ${SOAK_DURATION:-30m} inside the node's network namespace"
rc=0
"$here/testbed/cluster.sh" exec "$out/soak" -duration "${SOAK_DURATION:-30m}" -heap-dir "$heap" ${SOAK_FLAGS:-} | tee "$out/soak.txt" || rc=$?
if [ -s "$heap/operator-baseline.pb.gz" ] && [ -s "$heap/operator-end.pb.gz" ]; then
  step "What grew in the operator's heap from baseline to end (live bytes after a collection; go tool pprof -diff_base)"
  go tool pprof -top -nodecount=25 -sample_index=inuse_space -diff_base "$heap/operator-baseline.pb.gz" "$heap/operator-end.pb.gz" 2>&1 | tee -a "$out/soak.txt"
fi
exit "$rc"
