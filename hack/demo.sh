#!/usr/bin/env bash
# make demo: a newcomer watches Napwake's main job.
#
#   make demo        bring up the local cluster, install Napwake with its chart, deploy a sample
#                    app, and narrate: running, pausing, a request held, the app woken, the answer;
#                    then an environment of three (front → api → db) woken as one by one request
#   make demo-down   remove it all
#
# Against an existing cluster instead of a local one:
#   KUBECONFIG=~/.kube/config NAPWAKE_REGISTRY=registry.example.com/napwake make demo
# pushes the images to NAPWAKE_REGISTRY (the cluster must be able to pull from it) and
# installs there; nothing local is built but the binaries and images.
# NAPWAKE_REGISTRY_INSECURE=1 pushes over plain HTTP. `hack/testbed/demo-remote.sh`
# runs this mode against the test bed with an in-memory registry, as its test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/testbed/lib.sh"
cd "$root"
NS=napwake-demo
IDLE=${NAPWAKE_DEMO_IDLE:-1m}

remote=""
if [ -n "${KUBECONFIG:-}" ] && [ -z "${NAPWAKE_DEMO_LOCAL:-}" ]; then remote=1; fi

if [ -n "$remote" ]; then
  k() { kubectl "$@"; }
  helm_() { "$root/bin/helm" "$@"; }
else
  k() { "$here/testbed/cluster.sh" exec kubectl "$@"; }
  helm_() { "$here/testbed/cluster.sh" exec "$root/bin/helm" "$@"; }
fi

if [ "${1:-}" = down ]; then
  if [ -n "$remote" ]; then
    k delete namespace "$NS" --ignore-not-found
    [ -x bin/helm ] && helm_ uninstall napwake -n napwake-system --ignore-not-found
  else
    "$here/testbed/cluster.sh" down
  fi
  exit 0
fi

t0=$(date +%s)
say() { printf '\n\033[1m[%s +%3ss] %s\033[0m\n' "$(date +%H:%M:%S)" "$(( $(date +%s) - t0 ))" "$*"; }
note() { printf '            %s\n' "$*"; }
# client POD URL STATE: GET URL from a client pod running the sample app's
# get, noting what the STATE function prints whenever it changes, until the
# pod has finished.
client() {
  k delete pod -n "$NS" "$1" --ignore-not-found >/dev/null
  k run "$1" -n "$NS" --image="$app_image" --image-pull-policy=IfNotPresent --restart=Never \
    --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}}}}' \
    -- get --user-agent demo-client/1 "$2" >/dev/null
  local last="" line done_
  while :; do
    line=$("$3")
    if [ "$line" != "$last" ]; then note "$line"; last=$line; fi
    done_=$(k get pod -n "$NS" "$1" -o jsonpath='{.status.phase}')
    [ "$done_" = Succeeded ] || [ "$done_" = Failed ] && break
    sleep 0.5
  done
}

if [ -n "$remote" ]; then
  [ -n "${NAPWAKE_REGISTRY:-}" ] || die "with KUBECONFIG set, give NAPWAKE_REGISTRY=<a registry your cluster pulls from>, or unset KUBECONFIG for a local cluster"
  prefix=$NAPWAKE_REGISTRY
  say "Using the cluster in KUBECONFIG ($(kubectl config current-context)); pushing images to $prefix"
else
  [ "$(id -u)" = 0 ] || die "the local cluster needs root: sudo make demo (or set KUBECONFIG to use a cluster you have)"
  prefix=napwake.local
  # The demo needs no ingress controller: Traefik, the slowest add-on to
  # build, is left out (make cluster-up and the tests add it).
  say "Bringing up a local single-node cluster (the first run builds Kubernetes, CoreDNS and metrics-server from source: ~15 minutes)"
  NAPWAKE_INGRESS=0 "$here/testbed/cluster.sh" up
fi

say "Building Napwake's images (operator, doorman, forwarder) and the sample app's, without Docker"
make --no-print-directory images IMAGE_PREFIX="$prefix" | sed 's/^/            /'
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o _out/sampleapp ./e2e/cmd/sampleapp
app_image=$prefix/napwake-sampleapp:demo
if [ -n "$remote" ]; then
  insecure=""; [ -n "${NAPWAKE_REGISTRY_INSECURE:-}" ] && insecure=--insecure
  make --no-print-directory push REGISTRY="$prefix" PUSH_FLAGS="$insecure" >/dev/null
  bin/imagebuild --binary _out/sampleapp --image "$app_image" --push "$prefix" $insecure >/dev/null
else
  bin/imagebuild --binary _out/sampleapp --image "$app_image" --out _out/images/sampleapp-demo.tar >/dev/null
  "$here/testbed/cluster.sh" load-image _out/images/napwake-*.tar _out/images/sampleapp-demo.tar 2>&1 | sed 's/^/            /'
fi
[ -x bin/helm ] || { note "building the pinned helm"; "$here/helm/build.sh" 2>/dev/null; }

say "Installing Napwake with its Helm chart into napwake-system"
sets=()
for c in operator doorman; do  # the chart runs no forwarder yet
  sets+=(--set "$c.image.repository=$prefix/napwake-$c" --set "$c.image.tag=$(cat "$c/VERSION")")
done
helm_ upgrade --install napwake charts/napwake -n napwake-system --create-namespace "${sets[@]}" --wait --timeout 3m >/dev/null
k get pods -n napwake-system -o wide | sed 's/^/            /'

say "Deploying the sample app in $NS: 2 replicas, Ready 3 s after start, labelled napwake.dev/enabled=true, idle-after $IDLE"
k create namespace "$NS" --dry-run=client -o yaml | k apply -f - >/dev/null
sed -e "s#napwake.local/napwake-sampleapp:e2e#$app_image#" -e "s#napwake.dev/idle-after: \"1m\"#napwake.dev/idle-after: \"$IDLE\"#" \
  hack/demo/sampleapp.yaml | k apply -n "$NS" -f - >/dev/null
k rollout status -n "$NS" deploy/sampleapp --timeout=120s >/dev/null
# The operator creates the ManagedWorkload for the labelled Deployment; wait for it, bounded.
deadline=$(( $(date +%s) + 90 ))
until [ "$(k get mw -n "$NS" sampleapp -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "Napwake did not take the sample app on within 90s: kubectl logs -n napwake-system -l control-plane=controller-manager"
  sleep 1
done
k get pods -n "$NS" | sed 's/^/            /'
note "Napwake made a ManagedWorkload for it, and says when it will pause if nobody calls it:"
k get mw -n "$NS" sampleapp -o custom-columns='NAME:.metadata.name,PHASE:.status.phase,PAUSE AT:.status.pauseAt,SOURCE:.status.lastActivitySource' | sed 's/^/            /'

say "Waiting for it to go idle ($IDLE without a request)..."
last=""
while :; do
  phase=$(k get mw -n "$NS" sampleapp -o jsonpath='{.status.phase}')
  if [ "$phase" != "$last" ]; then note "phase: $phase"; last=$phase; fi
  [ "$phase" = Paused ] && break
  sleep 1
done
say "Paused: no pods, and the Service now leads to the doorman"
note "pods: $(k get pods -n "$NS" -l app=sampleapp --no-headers 2>/dev/null | wc -l)   replicas kept: $(k get mw -n "$NS" sampleapp -o jsonpath='{.status.pause.replicas}')"
k get endpointslices -n "$NS" -l endpointslice.kubernetes.io/managed-by=napwake.dev -o wide | sed 's/^/            /'
note "(those endpoints are the doorman pods above; the Service, its ClusterIP and its DNS name are unchanged)"

url=http://sampleapp.$NS.svc/
say "A client pod sends GET $url (the Service by name, through the cluster DNS) to the paused app: the doorman holds it and wakes the app"
app_state() {
  local ready
  ready=$(k get deploy -n "$NS" sampleapp -o jsonpath='{.status.readyReplicas}')
  echo "phase: $(k get mw -n "$NS" sampleapp -o jsonpath='{.status.phase}'), ready pods: ${ready:-0}"
}
client client "$url" app_state
say "The client's answer (one slow response, not an error):"
k logs -n "$NS" client | sed 's/^/            /'
note "woken by: $(k get mw -n "$NS" sampleapp -o jsonpath='{.status.lastActivitySource}')   (the doorman stamped napwake.dev/last-request)"
k get events -n "$NS" --field-selector involvedObject.kind=ManagedWorkload --sort-by=.lastTimestamp \
  -o custom-columns='REASON:.reason,MESSAGE:.message' | tail -n 6 | sed 's/^/            /'

say "kubectl napwake status"
CGO_ENABLED=0 go build -trimpath -o bin/kubectl-napwake ./kubectl-napwake
if [ -n "$remote" ]; then bin/kubectl-napwake status -n "$NS"; else "$here/testbed/cluster.sh" exec "$root/bin/kubectl-napwake" status -n "$NS"; fi | sed 's/^/            /'

plugin() { if [ -n "$remote" ]; then bin/kubectl-napwake "$@"; else "$here/testbed/cluster.sh" exec "$root/bin/kubectl-napwake" "$@"; fi; }

# tier NAME MESSAGE UPSTREAM DEPENDS-ON: one sample app of the environment
# (Ready 3 s after it starts) and its Service. UPSTREAM is read by the app at
# each request ($API_SERVICE_HOST: the test bed has no cluster DNS).
tier() {
  local upstream="" depends=""
  [ -n "$3" ] && upstream=", \"--upstream=$3\""
  [ -n "$4" ] && depends=", napwake.dev/depends-on: \"$4\""
  cat <<YAML
apiVersion: v1
kind: Service
metadata: {name: $1}
spec: {selector: {app: $1}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  labels: {napwake.dev/enabled: "true"}
  annotations: {napwake.dev/idle-after: "30m"$depends}
spec:
  replicas: 1
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 2
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: app
          image: $app_image
          imagePullPolicy: IfNotPresent
          args: ["--startup-delay=3s", "--message=$2"$upstream]
          readinessProbe: {httpGet: {path: /ready, port: 8080}, periodSeconds: 1}
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
---
YAML
}
phases() { for t in front api db; do printf '%s=%s ' "$t" "$(k get mw -n "$NS" "$t" -o jsonpath='{.status.phase}' 2>/dev/null)"; done; }

say "An environment: front → api → db, each calling the next through its Service; napwake.dev/depends-on declares the chain"
# Services first, so the pods get the next tier's <NAME>_SERVICE_HOST.
{ tier db "answer from db" "" ""; tier api "answer from api" 'http://${DB_SERVICE_HOST}/' db; } | k apply -n "$NS" -f - >/dev/null
tier front "answer from front" 'http://${API_SERVICE_HOST}/' api | k apply -n "$NS" -f - >/dev/null
deadline=$(( $(date +%s) + 120 ))
until [ "$(phases)" = "front=Running api=Running db=Running " ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "the environment did not come up within 120s: $(phases)"
  sleep 1
done
note "$(phases)"
for t in front api db; do plugin pause "$t" -n "$NS" --wait >/dev/null; done
note "paused with kubectl napwake pause --wait: $(phases)"

say "One request to the paused front end wakes all three at once"
client envclient "http://$(k get svc -n "$NS" front -o jsonpath='{.spec.clusterIP}')/" phases
say "The front end's answer, with the api's and the db's in it:"
k logs -n "$NS" envclient | sed 's/^/            /'
k get events -n "$NS" --field-selector involvedObject.kind=ManagedWorkload,reason=Waking --sort-by=.lastTimestamp \
  -o custom-columns='OBJECT:.involvedObject.name,MESSAGE:.message' | tail -n 3 | sed 's/^/            /'
say "kubectl napwake status: the environment together"
plugin status -n "$NS" | sed 's/^/            /'

say "Done in $(( $(date +%s) - t0 ))s. The cluster stays up for you to explore:"
if [ -n "$remote" ]; then
  note "kubectl get mw,pods -n $NS"
else
  note "hack/testbed/cluster.sh exec kubectl get mw,pods -n $NS       (KUBECONFIG=$("$here/testbed/cluster.sh" kubeconfig), inside the namespace napwake-node)"
  note "hack/testbed/cluster.sh exec $root/bin/kubectl-napwake describe sampleapp -n $NS"
fi
note "remove it all: make demo-down"
