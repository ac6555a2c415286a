#!/usr/bin/env bash
# Runs the end-to-end suite (e2e/cluster, ginkgo) against the local test bed:
# loads the images `make images` built and the sample app's, installs Napwake
# with its Helm chart, and runs the suite inside the node's network namespace
# (the only place the cluster can be reached from).
#
#   hack/e2e.sh                     the whole suite
#   E2E_FOCUS='StatefulSet' hack/e2e.sh   only matching specs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/testbed/lib.sh"
cd "$root"

out=$root/_out
mkdir -p "$out/images"
step "Building the end-to-end suite and the sample app image"
# The same flags as make build (static, -trimpath): the suite reuses the
# client libraries that build compiled instead of compiling them again.
CGO_ENABLED=0 go test -c -trimpath -tags e2e -o "$out/e2e-cluster.test" ./e2e/cluster
"$here/sampleapp-image.sh"
"$here/testbed/cluster.sh" load-image "$out"/images/*.tar

step "Building kubectl-napwake, the stand-in user registry, and a second doorman image tag for the upgrade scenario"
CGO_ENABLED=0 go build -trimpath -o "$out/kubectl-napwake" ./kubectl-napwake
# The install scenario pushes to it as the README says (e2e/cluster/install_test.go).
GOWORK=off go -C "$root/hack/tools" build -o "$root/bin/registry" ./registry
upgrade_tag="$(cat doorman/VERSION)-e2e-upgrade"
"$root/bin/imagebuild" --binary "$root/bin/doorman" --image "napwake.local/napwake-doorman:$upgrade_tag" \
  --out "$out/images/doorman-upgrade.tar.e2e" >/dev/null
"$here/testbed/cluster.sh" load-image "$out/images/doorman-upgrade.tar.e2e"
# The upgrade-from-the-previous-release scenario installs that release's
# own chart and images (e2e/cluster/upgrade_test.go).
# A clone without that commit (a shallow one) skips that one scenario,
# saying why, rather than failing the suite.
if previous=$("$here/previous-release.sh"); then
  "$here/testbed/cluster.sh" load-image "$previous"/_out/images/napwake-operator.tar "$previous"/_out/images/napwake-doorman.tar
  export NAPWAKE_E2E_PREVIOUS_RELEASE="$previous"
elif [ $? -eq 3 ]; then
  step "WARNING: the upgrade-from-the-previous-release scenario will be skipped: this clone lacks the commit hack/previous-release names"
else
  exit 1
fi
# The activity-query scenario runs a stand-in Prometheus as Service
# prometheus in this namespace; the operator is installed calling it by name.
export NAPWAKE_E2E_PROMETHEUS_NAMESPACE=napwake-e2e-prometheus
export NAPWAKE_PROMETHEUS_URL="http://prometheus.$NAPWAKE_E2E_PROMETHEUS_NAMESPACE.svc"
# It answers only queries with this bearer token and tenant header, which
# the operator sends from an http_config Secret (operator.prometheusHTTPConfig).
export NAPWAKE_PROMETHEUS_TOKEN="e2e-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
export NAPWAKE_PROMETHEUS_TENANT=napwake-e2e
# The ingress scenarios reach the test bed's Traefik.
eval "$("$here/testbed/cluster.sh" ingress-env)"
# The NEG forwarder is on. Forwarders find the doorman by the chart's
# default, the headless Service's DNS name, as on a real cluster.
export NAPWAKE_NEG_FORWARDER=1
# Every install of the suite carries the chart's pod knobs (hack/install-napwake.sh).
export NAPWAKE_E2E_KNOBS=1
# Argo Rollouts' real controller, for the scenario that pauses a Rollout
# (E2E_ARGO_ROLLOUTS=0 leaves it out, and that scenario is skipped). It goes
# first: the operator watches the kinds of --target-kinds that are served
# when it starts, and hack/install-napwake.sh lists Rollout there.
if [ "${E2E_ARGO_ROLLOUTS:-1}" != 0 ]; then
  "$here/testbed/argo-rollouts.sh" up
  export NAPWAKE_E2E_ARGO_ROLLOUTS=1 NAPWAKE_ARGO_ROLLOUTS=1
fi
existed=""
"$here/testbed/cluster.sh" exec kubectl get deployment -n napwake-system napwake-operator >/dev/null 2>&1 && existed=1
"$here/install-napwake.sh"
if [ -n "$existed" ]; then
  # Rebuilt images keep their tag; restart so the pods run what was just built.
  step "Restarting Napwake's pods onto the images just loaded"
  "$here/testbed/cluster.sh" exec kubectl rollout restart deployment -n napwake-system >/dev/null
  "$here/testbed/cluster.sh" exec kubectl rollout status deployment -n napwake-system --timeout=3m >/dev/null
fi
export NAPWAKE_E2E_NAMESPACE=napwake-system
export NAPWAKE_E2E_KUBECTL_NAPWAKE="$out/kubectl-napwake"
export NAPWAKE_E2E_UPGRADE_DOORMAN="'$here/install-napwake.sh' --set doorman.image.tag=$upgrade_tag"
export NAPWAKE_E2E_TESTBED="$here/testbed/cluster.sh"
export NAPWAKE_E2E_ROOT="$root"
export NAPWAKE_E2E_INSTALL="'$here/install-napwake.sh'"
export NAPWAKE_E2E_COLDSTART_OUT="$out/coldstart.txt"
export NAPWAKE_E2E_BENCH_OUT="$out/chain.txt"

# Independent specs run in E2E_PROCS ginkgo processes at once (each spec in
# its own namespace; they mostly wait on pods and timers); the specs marked
# Serial (they restart, scale or reinstall Napwake's shared parts, or time a
# wake) run after them, one at a time, on one process.
procs=${E2E_PROCS:-3}
step "Running the end-to-end suite inside the node's network namespace ($procs processes, then the Serial specs)"
GOWORK=off go -C "$root/hack/tools" build -o "$root/bin/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
# A spec that fails is run once more, whole, in a new namespace: the test
# bed is one 2-core machine whose own add-ons (CoreDNS, kube-proxy, the
# controller manager) recover slowly from the outage specs. A spec that
# needed its second attempt is named in the digest below, pass or fail.
# Ginkgo writes the report under --output-dir, a path given to it joined
# to that dir even when absolute: the name alone lands it in $out.
args=(--procs "$procs" --timeout 50m -v --no-color --flake-attempts "${E2E_ATTEMPTS:-2}"
  --json-report e2e-report.json --output-dir "$out")
[ -n "${E2E_FOCUS:-}" ] && args+=(--focus "$E2E_FOCUS")
# E2E_REPEAT=N runs the (focused) suite N more times, stopping at the first
# failure: how a flake's fix is shown, e.g. E2E_FOCUS=preStop E2E_REPEAT=9.
[ -n "${E2E_REPEAT:-}" ] && args+=(--repeat "$E2E_REPEAT")
start=$(date +%s)
# Each failed spec's name, time and message, printed last on a failure so
# the tail of a long log names them (the full dumps are above it).
export NAPWAKE_E2E_DIGEST="$out/e2e-failures.txt"
rm -f "$NAPWAKE_E2E_DIGEST" "$out/e2e-report.json"
if ! (cd "$root/e2e/cluster" && "$here/testbed/cluster.sh" exec "$root/bin/ginkgo" run "${args[@]}" "$out/e2e-cluster.test"); then
  step "The end-to-end suite failed after $(( $(date +%s) - start ))s; its failures, in short (their dumps are above):"
  cat "$NAPWAKE_E2E_DIGEST" 2>/dev/null || echo "(no digest: the suite stopped before its report, e.g. a timeout or a build failure)"
  exit 1
fi
step "The end-to-end suite passed in $(( $(date +%s) - start ))s"
if [ -s "$NAPWAKE_E2E_DIGEST" ]; then
  step "Specs that passed only on a later attempt (each first failure is in the log above):"
  cat "$NAPWAKE_E2E_DIGEST"
fi
"$here/e2e-uninstall.sh"
