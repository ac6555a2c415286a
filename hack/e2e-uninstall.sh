#!/usr/bin/env bash
# The last step of the end-to-end run: `helm uninstall` on the real cluster
# leaves nothing behind but what the chart keeps (the CRD, with crds.keep).
# Fails naming anything else left.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/testbed/lib.sh"
k() { "$here/testbed/cluster.sh" exec kubectl "$@"; }

"$here/install-napwake.sh" uninstall
step "Checking that the uninstall left only the CRD"
kinds=deployments,replicasets,pods,services,endpointslices,serviceaccounts,secrets,configmaps,roles,rolebindings,poddisruptionbudgets,networkpolicies
cluster_kinds=clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings
left=""
deadline=$(( $(date +%s) + 60 ))
while :; do
  left=$( { k get "$kinds" -A -l app.kubernetes.io/instance=napwake -o name 2>/dev/null
            k get "$cluster_kinds" -l app.kubernetes.io/instance=napwake -o name 2>/dev/null; } || true)
  [ -z "$left" ] && break
  [ "$(date +%s)" -ge "$deadline" ] && { echo "helm uninstall left these behind:"; echo "$left" | sed 's/^/  /'; exit 1; }
  sleep 1
done
k get crd managedworkloads.napwake.dev -o name >/dev/null || die "the CRD went too; crds.keep should have kept it"
step "Uninstalled: nothing left but the CRD managedworkloads.napwake.dev"
