#!/usr/bin/env bash
# Installs (or upgrades) Napwake with its Helm chart on the local test bed,
# from the images `make images` built and `hack/e2e.sh` loaded:
#
#   hack/install-napwake.sh [--set key=value ...]   install or upgrade, wait for the rollout
#   hack/install-napwake.sh uninstall
#
# NAPWAKE_PROMETHEUS_URL, when set, becomes operator.prometheusURL on every
# install and upgrade (hack/e2e.sh points it at the suite's stand-in), and
# NAPWAKE_PROMETHEUS_TOKEN/_TENANT its credentials (see below).
# NAPWAKE_NEG_FORWARDER=1 turns the NEG forwarder on (doorman.negForwarder),
# its image the one `make images` built; NAPWAKE_FORWARDER_DOORMAN_HOST, when
# set, becomes doorman.negForwarder.doormanHost (the test bed has no cluster
# DNS, so hack/e2e.sh gives forwarders a fixed ClusterIP instead).
#
# helm is the pinned one hack/helm builds into bin/ (the Go module proxy is
# the only way in; no helm release binary can be downloaded here). It runs
# inside the node's network namespace, where the API server is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/testbed/lib.sh"
NS=${NAPWAKE_NAMESPACE:-napwake-system}
RELEASE=${NAPWAKE_RELEASE:-napwake}

[ -x "$root/bin/helm" ] || { step "Building the pinned helm into bin/"; "$here/helm/build.sh"; }
run() {
  if [ -n "${KUBECONFIG:-}" ] && [ -z "${NAPWAKE_USE_TESTBED:-}" ] && [ ! -e /var/run/netns/napwake-node ]; then
    "$@"
  else
    "$here/testbed/cluster.sh" exec "$@"
  fi
}

if [ "${1:-}" = uninstall ]; then
  step "Uninstalling $RELEASE from $NS"
  run "$root/bin/helm" uninstall "$RELEASE" -n "$NS" --wait --ignore-not-found
  exit 0
fi

args=()
for c in operator doorman; do
  args+=(--set "$c.image.repository=napwake.local/napwake-$c" --set "$c.image.tag=$(cat "$root/$c/VERSION")")
done
args+=(--set "doorman.negForwarder.image.repository=napwake.local/napwake-forwarder" --set "doorman.negForwarder.image.tag=$(cat "$root/forwarder/VERSION")")
if [ -n "${NAPWAKE_NEG_FORWARDER:-}" ]; then
  args+=(--set doorman.negForwarder.enabled=true)
fi
if [ -n "${NAPWAKE_FORWARDER_DOORMAN_HOST:-}" ]; then
  args+=(--set "doorman.negForwarder.doormanHost=$NAPWAKE_FORWARDER_DOORMAN_HOST")
fi
if [ -n "${NAPWAKE_PROMETHEUS_URL:-}" ]; then
  args+=(--set "operator.prometheusURL=$NAPWAKE_PROMETHEUS_URL")
fi
# NAPWAKE_E2E_KNOBS=1 installs with the pod knobs a user on a restricted
# platform sets (docs/helm-values.md): extra env and volumes, ServiceAccount
# annotations, pod security contexts without a fixed user (as OpenShift's
# restricted-v2 wants) and a topology spread, so every end-to-end spec runs
# under them and e2e/cluster/knobs_test.go finds them on the running pods.
if [ -n "${NAPWAKE_E2E_KNOBS:-}" ]; then
  for c in operator doorman; do
    args+=(--set "$c.extraEnv[0].name=NAPWAKE_E2E_KNOB" --set "$c.extraEnv[0].value=on"
      --set "$c.serviceAccount.annotations.napwake\.dev/e2e-knob=on"
      --set "$c.podSecurityContext.runAsUser=null" --set "$c.podSecurityContext.runAsGroup=null"
      --set-json "$c.extraVolumes=[{\"name\":\"e2e-knob\",\"emptyDir\":{}}]"
      --set-json "$c.extraVolumeMounts=[{\"name\":\"e2e-knob\",\"mountPath\":\"/e2e-knob\"}]"
      --set-json "$c.topologySpreadConstraints=[{\"maxSkew\":1,\"topologyKey\":\"kubernetes.io/hostname\",\"whenUnsatisfiable\":\"ScheduleAnyway\"}]")
  done
fi
# NAPWAKE_ARGO_ROLLOUTS=1 lets the operator pause Argo Rollouts
# (operator.targetKinds, docs/pause.md#other-kinds-of-workload).
if [ -n "${NAPWAKE_ARGO_ROLLOUTS:-}" ]; then
  args+=(--set "operator.targetKinds[0].apiGroup=argoproj.io" --set "operator.targetKinds[0].version=v1alpha1"
    --set "operator.targetKinds[0].kind=Rollout" --set "operator.targetKinds[0].resource=rollouts")
fi
# NAPWAKE_PROMETHEUS_TOKEN and NAPWAKE_PROMETHEUS_TENANT, when set, go into a
# Secret holding Prometheus's http_config (a bearer token from a file, a
# tenant header), mounted through operator.prometheusHTTPConfig, as
# docs/helm-values.md shows for a Mimir tenant.
if [ -n "${NAPWAKE_PROMETHEUS_TOKEN:-}" ]; then
  secret=napwake-e2e-prometheus-http
  run kubectl create namespace "$NS" --dry-run=client -o yaml | run kubectl apply -f - >/dev/null
  run kubectl create secret generic "$secret" -n "$NS" --dry-run=client -o yaml \
    --from-literal=token="$NAPWAKE_PROMETHEUS_TOKEN" \
    --from-literal=http.yaml="$(printf 'authorization:\n  credentials_file: /etc/napwake/prometheus/token\nhttp_headers:\n  X-Scope-OrgID:\n    values: [%s]\n' "$NAPWAKE_PROMETHEUS_TENANT")" |
    run kubectl apply -f - >/dev/null
  args+=(--set "operator.prometheusHTTPConfig.secretName=$secret")
fi
# A CRD from a chart before the CRD was a template (its crds/ folder left it
# without Helm's ownership metadata) makes the install fail with "cannot be
# imported into the current release": adopt it first, as docs/upgrade.md says.
crd=managedworkloads.napwake.dev
if run kubectl get crd "$crd" >/dev/null 2>&1 &&
  [ -z "$(run kubectl get crd "$crd" -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}')" ]; then
  step "Adopting the CRD $crd into $RELEASE (docs/upgrade.md)"
  run kubectl label crd "$crd" app.kubernetes.io/managed-by=Helm --overwrite
  run kubectl annotate crd "$crd" --overwrite meta.helm.sh/release-name="$RELEASE" meta.helm.sh/release-namespace="$NS"
fi
step "Installing Napwake ($RELEASE in $NS) with charts/napwake"
run "$root/bin/helm" upgrade --install "$RELEASE" "$root/charts/napwake" -n "$NS" --create-namespace \
  "${args[@]}" "$@" --wait --timeout 3m
run kubectl get pods -n "$NS" -o wide
