#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, inside a network
# namespace of its own (see docs/development.md#the-local-cluster):
#
#   hack/testbed/cluster.sh up       build what is missing, start everything, wait for the node
#   hack/testbed/cluster.sh down     stop everything it started, remove mounts, namespaces, cgroups, state
#   hack/testbed/cluster.sh status   say what runs
#   hack/testbed/cluster.sh exec CMD run CMD inside the node's network namespace with KUBECONFIG set
#                                    and the cluster's DNS as its resolver (as in a pod)
#   hack/testbed/cluster.sh load-image FILE.tar   import an image into the node's containerd
#   hack/testbed/cluster.sh ingress-env   shell exports naming Traefik's entrypoints, API and CA (for the e2e suite)
#   hack/testbed/cluster.sh apiserver stop|kill|start   stop kube-apiserver by its PID (SIGTERM: it takes
#                                    its address out of the kubernetes Service first), kill it (SIGKILL: gone
#                                    as in a crash or a partition, its address left), or start it again and
#                                    wait until it is ready (the e2e suite's API-server outage)
#
# Around the cluster, as users have in theirs (addons.sh): cluster DNS
# (CoreDNS), the metrics API (metrics-server) and an ingress controller
# (Traefik), each built from source once per version by build-addons.sh.
#
# Needs root. Never changes the host's kernel settings (kubelet runs behind a
# wrapper that covers the sysctls it would write), never adds rules to the
# host's network namespace, and nothing it starts can reach beyond the
# machine: the node's only "uplink" is a bridge with no ports.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib.sh"

STATE=${NAPWAKE_TESTBED_DIR:-/var/lib/napwake-testbed}
NETNS=${NAPWAKE_NETNS:-napwake-node}
NODE_IP=10.200.0.1
NODE_NAME=napwake-node
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
PAUSE_IMAGE=napwake.local/pause:3.10
SYSCTLS=(
  "vm/overcommit_memory=1" "vm/panic_on_oom=0" "kernel/panic=10" "kernel/panic_on_oops=1"
  "kernel/keys/root_maxkeys=1000000" "kernel/keys/root_maxbytes=25000000"
)
DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy coredns traefik)

source "$here/addons.sh"

need_root() { [ "$(id -u)" = 0 ] || die "the test bed needs root (it creates a network namespace, mounts and cgroups); run it with sudo"; }
in_ns() { nsenter --net="/var/run/netns/$NETNS" "$@"; }
pidfile() { echo "$STATE/run/$1.pid"; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
kubectl_() { in_ns "$BIN/kubectl" --kubeconfig "$STATE/pki/admin.kubeconfig" "$@"; }

# start NAME CMD... runs a daemon in the node's namespace, logging to
# $STATE/log/NAME.log, and records its PID.
start() {
  local name=$1; shift
  if running "$name"; then info "      $name already runs (pid $(cat "$(pidfile "$name")"))"; return; fi
  setsid nsenter --net="/var/run/netns/$NETNS" "$@" >"$STATE/log/$name.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
}

# wait_for WHAT SECONDS CMD... polls CMD until it succeeds, or dies naming the log to read.
wait_for() {
  local what=$1 secs=$2 log=$3; shift 3
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 20 "$log" >&2 || true
      die "$what did not come up within ${secs}s; its log is $log (last lines above)"
    fi
    sleep 0.5
  done
}

binaries() {
  step "Control-plane binaries (built from source on first use: ~10 minutes cold, seconds after)"
  BIN=$("$here/build-binaries.sh" | tail -n 1)
  [ -x "$BIN/kubelet" ] || die "kubelet missing from $BIN"
  info "      using $BIN"
  addon_binaries
}

check_host() {
  local missing=()
  for c in containerd runc iptables conntrack nsenter unshare openssl ip curl; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  [ -d /usr/lib/cni ] || missing+=("containernetworking-plugins")
  if [ ${#missing[@]} -gt 0 ]; then
    die "missing ${missing[*]}: run hack/packages.sh as root (make demo and make test do)"
  fi
}

netns_up() {
  if [ -e "/var/run/netns/$NETNS" ]; then return; fi
  step "Network namespace $NETNS: node IP $NODE_IP on a bridge with no ports (nothing leaves the machine)"
  ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  ip -n "$NETNS" link add nwnode0 type bridge
  ip -n "$NETNS" addr add "$NODE_IP/24" dev nwnode0
  ip -n "$NETNS" link set nwnode0 up
  ip -n "$NETNS" route add default dev nwnode0
}

pki() {
  local d=$STATE/pki
  [ -f "$d/admin.kubeconfig" ] && return
  step "Certificates: a CA, the API server's, and a client certificate per component"
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=napwake-testbed-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  cert apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1"
  cert kubelet-serving "/CN=$NODE_NAME" "DNS:$NODE_NAME,IP:$NODE_IP,IP:127.0.0.1"
  cert admin "/O=system:masters/CN=napwake-admin"
  cert controller-manager "/CN=system:kube-controller-manager"
  cert scheduler "/CN=system:kube-scheduler"
  cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
  cert kube-proxy "/CN=system:kube-proxy"
  addon_pki
  for c in admin controller-manager scheduler kubelet kube-proxy; do
    kubeconfig "$c"
  done
}

cert() {
  local d=$STATE/pki name=$1 subj=$2 san=${3:-}
  openssl genrsa -out "$d/$name.key" 2048 2>/dev/null
  openssl req -new -key "$d/$name.key" -subj "$subj" -out "$d/$name.csr" 2>/dev/null
  local ext="$d/$name.ext"
  if [ -n "$san" ]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$ext"
  fi
  openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 3650 -extfile "$ext" -out "$d/$name.crt" 2>/dev/null
}

kubeconfig() {
  local d=$STATE/pki name=$1
  cat >"$d/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: napwake-testbed
  cluster:
    certificate-authority: $d/ca.crt
    server: https://$NODE_IP:6443
users:
- name: $name
  user:
    client-certificate: $d/$name.crt
    client-key: $d/$name.key
contexts:
- name: napwake-testbed
  context: {cluster: napwake-testbed, user: $name}
current-context: napwake-testbed
EOF
}

configs() {
  mkdir -p "$STATE/cni/net.d" "$STATE/cni/ipam" "$STATE/containerd" "$STATE/kubelet" "$STATE/sysctl" "$STATE/etc"
  cat >"$STATE/containerd/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$STATE/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  # hack/tools/registry, served by hack/testbed/demo-remote.sh: plain HTTP on the node.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$NODE_IP:5000"]
    endpoint = ["http://$NODE_IP:5000"]
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
  cat >"$STATE/cni/net.d/10-napwake.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "napwake-testbed",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$STATE/cni/ipam",
              "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  # Pods get the cluster's DNS (clusterDNS) and no upstream: the host's would be unreachable.
  : >"$STATE/etc/resolv.conf"
  node_resolv_conf
  cat >"$STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $STATE/pki/kubelet-serving.crt
tlsPrivateKeyFile: $STATE/pki/kubelet-serving.key
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$STATE/containerd/containerd.sock
protectKernelDefaults: true
readOnlyPort: 0
resolvConf: $STATE/etc/resolv.conf
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# The test bed loads its images into containerd, and the install scenario
# also pulls the same images, byte for byte, from a registry under another
# name. With the default policy the kubelet then insists on pulling the
# loaded name too (it has a record of that image ID pulled with other
# credentials), and napwake.local is no registry.
imagePullCredentialsVerificationPolicy: NeverVerify
EOF
  cat >"$STATE/etc/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/pki/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: 10.244.0.0/16
# Zero leaves the host-wide conntrack sysctls alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  for s in "${SYSCTLS[@]}"; do
    local f=$STATE/sysctl/${s%%=*}; mkdir -p "$(dirname "$f")"
    echo "${s#*=}" >"$f"; chmod 0444 "$f"
  done
}

# apiserver_up starts kube-apiserver and waits until it is ready: at
# start-up, and by `apiserver start` after `apiserver stop`.
apiserver_up() {
  local p=$STATE/pki
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
    --advertise-address "$NODE_IP" --bind-address 0.0.0.0 --secure-port 6443 \
    --service-cluster-ip-range "$SERVICE_CIDR" --client-ca-file "$p/ca.crt" \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --authorization-mode Node,RBAC --allow-privileged=true \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --kubelet-client-certificate "$p/admin.crt" --kubelet-client-key "$p/admin.key" \
    --kubelet-certificate-authority "$p/ca.crt" "${AGGREGATION_FLAGS[@]}"
  wait_for kube-apiserver 120 "$STATE/log/kube-apiserver.log" kubectl_ get --raw /readyz
}

control_plane() {
  local p=$STATE/pki
  step "etcd on 127.0.0.1 inside the namespace"
  start etcd "$BIN/etcd" --name napwake --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster napwake=http://127.0.0.1:2380 --log-level warn
  step "kube-apiserver on $NODE_IP:6443"
  apiserver_up
  # The node's spec.podCIDRs, as a cloud's node IPAM sets them: the one
  # node gets the first /24 of the cluster's range, $POD_CIDR, which the
  # CNI bridge hands out. The NEG forwarder's end-to-end spec checks its
  # slices' addresses against them, as GKE's NEG controller does.
  step "kube-controller-manager and kube-scheduler"
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$p/controller-manager.kubeconfig" \
    --leader-elect=false --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --use-service-account-credentials=true --bind-address 127.0.0.1 \
    --allocate-node-cidrs --cluster-cidr 10.244.0.0/16 --node-cidr-mask-size 24 \
    --authentication-kubeconfig "$p/controller-manager.kubeconfig" --authorization-kubeconfig "$p/controller-manager.kubeconfig"
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$p/scheduler.kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 \
    --authentication-kubeconfig "$p/scheduler.kubeconfig" --authorization-kubeconfig "$p/scheduler.kubeconfig"
}

node() {
  step "containerd (Debian's) with runc and the CNI bridge on $POD_CIDR"
  start containerd containerd --config "$STATE/containerd/config.toml"
  wait_for containerd 30 "$STATE/log/containerd.log" ctr_ version
  pause_image
  # kubelet's volume mounts (Secrets, tokens) are made in its own mount
  # namespace; a shared root dir carries them to containerd in the host's.
  if ! mountpoint -q "$STATE/kubelet"; then
    mount --bind "$STATE/kubelet" "$STATE/kubelet"
    mount --make-rshared "$STATE/kubelet"
  fi
  step "kubelet, behind a wrapper that keeps it from writing the host's kernel settings"
  start kubelet unshare -m --propagation unchanged "$here/kubelet-wrapper.sh" "$STATE/sysctl" \
    "$BIN/kubelet" --config "$STATE/kubelet/config.yaml" --kubeconfig "$STATE/pki/kubelet.kubeconfig" \
    --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --root-dir "$STATE/kubelet"
  step "kube-proxy in iptables mode, inside the namespace only"
  start kube-proxy "$BIN/kube-proxy" --config "$STATE/etc/kube-proxy.yaml"
  step "Waiting for the node to be Ready"
  wait_for "node $NODE_NAME" 120 "$STATE/log/kubelet.log" \
    kubectl_ wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
}

ctr_() { ctr --address "$STATE/containerd/containerd.sock" -n k8s.io "$@"; }

pause_image() {
  if ctr_ images ls -q 2>/dev/null | grep -qx "$PAUSE_IMAGE"; then return; fi
  step "Building the pod sandbox image $PAUSE_IMAGE from hack/tools/pause"
  mkdir -p "$STATE/images"
  (cd "$root/hack/tools" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$STATE/images/pause" ./pause)
  (cd "$root/hack/tools" && GOWORK=off go run ./imagebuild --binary "$STATE/images/pause" --image "$PAUSE_IMAGE" \
    --entrypoint /pause --out "$STATE/images/pause.tar" >/dev/null)
  ctr_ images import --no-unpack=false "$STATE/images/pause.tar" >/dev/null
}

cmd_up() {
  need_root; check_host
  binaries
  mkdir -p "$STATE/run" "$STATE/log"
  if running kube-apiserver && running kubelet && kubectl_ get --raw /readyz >/dev/null 2>&1; then
    if want_ingress && ! running traefik; then traefik_up; fi
    info "The test bed is already up. KUBECONFIG=$STATE/pki/admin.kubeconfig (use it inside the namespace: $0 exec kubectl get nodes)"
    return
  fi
  local t0; t0=$(date +%s)
  netns_up; pki; configs; control_plane; node
  addon_rbac; metrics_server_up; coredns_up
  if want_ingress; then traefik_up; fi
  metrics_server_wait
  # The default ServiceAccount and its namespace settle a moment after the node.
  wait_for "the default ServiceAccount" 60 "$STATE/log/kube-controller-manager.log" kubectl_ get serviceaccount default
  step "The test bed is up in $(( $(date +%s) - t0 ))s: node $NODE_NAME ($NODE_IP), pods on $POD_CIDR, Services on $SERVICE_CIDR"
  info "      cluster DNS: CoreDNS on $NODE_IP:53 (<service>.<namespace>.svc); metrics API: metrics-server"
  if want_ingress; then
    info "      ingress:     Traefik, IngressClass traefik, http://$NODE_IP and https://$NODE_IP (CA: $STATE/pki/ca.crt)"
  else
    info "      ingress:     none (NAPWAKE_INGRESS=0); make cluster-up adds Traefik"
  fi
  info "      kubeconfig: $STATE/pki/admin.kubeconfig (reachable only inside the namespace)"
  info "      try:        $0 exec kubectl get pods -A"
  info "      remove:     make cluster-down"
}

# stop_pid NAME [SECONDS [SIGNAL]] sends SIGNAL (TERM) to the daemon's process
# group, waits up to SECONDS (10) for it to end, then kills it.
stop_pid() {
  local name=$1 p sig=${3:-TERM}
  p=$(cat "$(pidfile "$name")" 2>/dev/null) || return 0
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "-$sig" -- "-$p" 2>/dev/null || kill "-$sig" "$p" 2>/dev/null || true
    local deadline=$(( $(date +%s) + ${2:-10} ))
    while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
  fi
  rm -f "$(pidfile "$name")"
}

# kill_strays stops daemons an interrupted run left behind whose PID files
# a later `up` rewrote (a second kubelet fights the first over the pods):
# any process running a binary from the cache with this test bed's state
# directory on its command line, and no PID file of this `up` naming it
# (those stop in order). envtest's binaries, from the same cache, name no
# such directory and are left alone.
kill_strays() {
  local pid exe cache recorded
  cache=$(napwake_cache)
  recorded=" $(cat "$STATE"/run/*.pid 2>/dev/null | tr '\n' ' ') "
  for pid in $(pgrep -f -- "$STATE/" 2>/dev/null); do
    case $recorded in *" $pid "*) continue ;; esac
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
    case $exe in
      "$cache"/*)
        kill -KILL "$pid" 2>/dev/null && info "      stopped a stray $(basename "$exe") (pid $pid) an earlier run left running" ;;
    esac
  done
}

cmd_down() {
  need_root
  if [ ! -d "$STATE" ] && [ ! -e "/var/run/netns/$NETNS" ]; then
    info "The test bed is not up; nothing to remove."
    return
  fi
  step "Stopping the test bed's daemons by their recorded PIDs"
  stop_pid traefik; stop_pid coredns
  stop_pid kube-proxy; stop_pid kubelet
  kill_strays
  if [ -S "$STATE/containerd/containerd.sock" ] && running containerd; then
    step "Removing pods' containers and sandboxes"
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$c" >/dev/null 2>&1 || true; done
    local deadline=$(( $(date +%s) + 10 ))
    while [ -n "$(ctr_ tasks ls -q 2>/dev/null)" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.3; done
    for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  # Shims outlive containerd; they were started in our namespace with our state dir.
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $STATE/containerd/containerd.sock" 2>/dev/null || true
  stop_pid kube-scheduler; stop_pid kube-controller-manager
  stop_pid kube-apiserver 5; stop_pid etcd; stop_pid containerd
  step "Unmounting what is left under $STATE"
  local m
  for _ in 1 2 3; do
    while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(awk -v s="$STATE" '$5 == s || index($5, s"/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
  done
  step "Removing network namespaces and cgroups"
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    case $ns in cni-*)
      # containerd's per-pod namespaces: only those whose bridge peer was ours are left once the node is gone.
      ip netns del "$ns" 2>/dev/null || true ;;
    esac
  done
  ip netns del "$NETNS" 2>/dev/null || true
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
    for d in "$h"kubepods* "$h"kubepods.slice "$h"k8s.io; do
      [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  done
  rm -rf /run/containerd/s /run/containerd/io.containerd.runtime.v2.task/k8s.io 2>/dev/null || true
  rmdir /run/containerd/io.containerd.runtime.v2.task /run/containerd 2>/dev/null || true
  rm -rf "$STATE"
  step "The test bed is down; the host is as it was."
}

cmd_status() {
  local d
  for d in "${DAEMONS[@]}"; do
    if running "$d"; then echo "$d: running (pid $(cat "$(pidfile "$d")"))"; else echo "$d: not running"; fi
  done
}

cmd_load_image() {
  need_root
  [ $# -gt 0 ] || die "usage: $0 load-image FILE.tar..."
  for f in "$@"; do
    step "Importing $(basename "$f") into the node's containerd"
    ctr_ images import --no-unpack=false "$f" >/dev/null
  done
}

cmd_exec() {
  need_root
  [ -e "/var/run/netns/$NETNS" ] || die "the test bed is not up: run make cluster-up"
  BIN=$(ls -d "$(napwake_cache)"/kube-* 2>/dev/null | head -n 1)
  export KUBECONFIG=$STATE/pki/admin.kubeconfig PATH=$BIN:$PATH
  if [ -f "$STATE/etc/node-resolv.conf" ]; then
    # A mount namespace of the command's own gives it the cluster's resolver
    # (as a pod has), so <service>.<namespace>.svc resolves; the host's
    # /etc/resolv.conf is untouched.
    exec nsenter --net="/var/run/netns/$NETNS" unshare -m --propagation private \
      sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$STATE/etc/node-resolv.conf" "$@"
  fi
  exec nsenter --net="/var/run/netns/$NETNS" "$@"
}

cmd_apiserver() {
  need_root
  [ -e "/var/run/netns/$NETNS" ] || die "the test bed is not up: run make cluster-up"
  BIN=$(ls -d "$(napwake_cache)"/kube-* 2>/dev/null | head -n 1)
  case ${1:-} in
    stop) stop_pid kube-apiserver 5 ;;
    kill) stop_pid kube-apiserver 5 KILL ;;
    start) apiserver_up ;;
    *) die "usage: $0 apiserver stop|kill|start" ;;
  esac
}

# cmd_restart_watchers restarts the test bed's kube-proxy and CoreDNS. After
# an API server outage their client-go watches back off for a minute and
# more (a Service made after a 32 s outage took 82 s to resolve and 90 s to
# be forwarded), where a fresh start lists at once. The end-to-end suite's
# outage spec calls this once the API server is back, so the specs after it
# judge Napwake, not these add-ons' backoff.
cmd_restart_watchers() {
  need_root
  [ -e "/var/run/netns/$NETNS" ] || die "the test bed is not up: run make cluster-up"
  BIN=$(ls -d "$(napwake_cache)"/kube-* 2>/dev/null | head -n 1)
  local coredns
  coredns=$(readlink "/proc/$(cat "$(pidfile coredns)" 2>/dev/null)/exe" 2>/dev/null) ||
    die "CoreDNS is not running (no $(pidfile coredns)); run make cluster-up"
  stop_pid kube-proxy
  start kube-proxy "$BIN/kube-proxy" --config "$STATE/etc/kube-proxy.yaml"
  stop_pid coredns
  start coredns "$coredns" -conf "$STATE/coredns/Corefile"
  wait_for CoreDNS 60 "$STATE/log/coredns.log" in_ns curl --noproxy '*' -fsS http://127.0.0.1:18181/ready
  wait_for kube-proxy 60 "$STATE/log/kube-proxy.log" in_ns curl --noproxy '*' -fsS http://127.0.0.1:10256/healthz
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  exec) shift; cmd_exec "$@" ;;
  load-image) shift; cmd_load_image "$@" ;;
  kubeconfig) echo "$STATE/pki/admin.kubeconfig" ;;
  ingress-env) ingress_env ;;
  apiserver) shift; cmd_apiserver "$@" ;;
  restart-watchers) cmd_restart_watchers ;;
  *) die "usage: $0 up|down|status|exec CMD...|load-image FILE...|kubeconfig|ingress-env|apiserver stop|kill|start|restart-watchers" ;;
esac
