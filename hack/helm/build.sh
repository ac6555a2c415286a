#!/usr/bin/env bash
# Builds the pinned helm (hack/helm/go.mod) into bin/helm, with the version
# and default Kubernetes version Helm's own Makefile sets (without them
# `helm template` assumes Kubernetes 1.20 and refuses the chart's kubeVersion).
# Its own module, outside go.work: the Helm SDK never reaches the workspace.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
helm_version="$(GOWORK=off go -C "$root/hack/helm" list -m -f '{{.Version}}' helm.sh/helm/v3)"
kube_version="$(GOWORK=off go -C "$root/hack/helm" list -m -f '{{.Version}}' k8s.io/client-go)" # v0.35.1 -> Kubernetes 1.35
kube_minor="$(echo "$kube_version" | cut -d. -f2)"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${helm_version}"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
	ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${kube_minor}"
done
out=${HELM_OUT:-$root/bin/helm} # HELM_OUT: elsewhere than bin/helm (hack/dist/release.sh)
GOWORK=off CGO_ENABLED=0 go -C "$root/hack/helm" build -trimpath -ldflags "$ldflags" -o "$out" helm.sh/helm/v3/cmd/helm
"$out" version --short >&2
