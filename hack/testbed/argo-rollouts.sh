#!/usr/bin/env bash
# Installs Argo Rollouts' real controller on the local test bed, built from
# source through the Go module proxy (hack/testbed/build-addons.sh, once per
# version), from its own install.yaml with only the image swapped for ours:
# e2e/cluster proves a Rollout pauses and wakes through the scale
# subresource like any other workload.
#
#   hack/testbed/argo-rollouts.sh up     install (or update) and wait for it
#   hack/testbed/argo-rollouts.sh down   remove it, CRDs included
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib.sh"
version=${ARGO_ROLLOUTS_VERSION:-v1.10.1}
image=napwake.local/argo-rollouts:$version
ns=argo-rollouts

kube() { "$here/cluster.sh" exec kubectl "$@"; }

case "${1:-}" in
up)
  bin=$(ARGO_ROLLOUTS_VERSION=$version "$here/build-addons.sh" argo-rollouts)
  manifest=$(dirname "$bin")/install.yaml
  step "Argo Rollouts $version: its controller as a pod in $ns, from its install.yaml"
  tar=$(mktemp -d)/argo-rollouts.tar
  (cd "$root/hack/tools" && GOWORK=off go run ./imagebuild --binary "$bin" --image "$image" \
    --entrypoint /argo-rollouts --ports 8080,8090 --out "$tar" >/dev/null)
  "$here/cluster.sh" load-image "$tar"
  rm -rf "$(dirname "$tar")"
  kube create namespace "$ns" --dry-run=client -o yaml | kube apply -f - >/dev/null
  # Its CRDs are too large for client-side apply's annotation; the image is
  # ours, loaded above, never pulled.
  sed -e "s#image: quay.io/argoproj/argo-rollouts:latest#image: $image#" \
    -e 's#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#' "$manifest" |
    kube apply --server-side --force-conflicts -n "$ns" -f - >/dev/null
  kube rollout status deployment/argo-rollouts -n "$ns" --timeout=3m >/dev/null
  info "      Argo Rollouts $version is Ready in $ns"
  ;;
down)
  step "Removing Argo Rollouts"
  manifest=$(dirname "$("$here/build-addons.sh" argo-rollouts)")/install.yaml
  kube delete -n "$ns" -f - --ignore-not-found --wait=false <"$manifest" >/dev/null
  kube delete namespace "$ns" --ignore-not-found >/dev/null
  ;;
*)
  die "usage: $0 up|down"
  ;;
esac
