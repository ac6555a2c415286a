# The parts around the cluster that users have in theirs: cluster DNS
# (CoreDNS), the metrics API (metrics-server) and an ingress controller
# (Traefik). Sourced by cluster.sh, never run; uses its STATE, NODE_IP,
# in_ns, start, wait_for, kubectl_, ctr_, cert and kubeconfig.
#
#   CoreDNS        a process in the node's namespace on $NODE_IP:53; kubelet's
#                  clusterDNS points pods at it; `cluster.sh exec` gives the
#                  commands it runs the same resolver
#   metrics-server a pod in kube-system (the API server refuses a loopback
#                  endpoint), registered as v1beta1.metrics.k8s.io
#   Traefik        a process in the node's namespace with the Kubernetes
#                  Ingress provider (IngressClass traefik): entrypoint web on
#                  $NODE_IP:80 and websecure on $NODE_IP:443 with a certificate
#                  from the test bed's CA for *.napwake.test and $NODE_IP

INGRESS_HOSTS="DNS:napwake.test,DNS:*.napwake.test,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"
METRICS_SERVER_IMAGE=napwake.local/metrics-server:${METRICS_SERVER_VERSION:-v0.8.0}

# NAPWAKE_INGRESS=0 leaves Traefik out (the demo needs no ingress controller,
# and Traefik is the slowest add-on to build); `up` without it starts Traefik
# on a test bed that is already up without one.
want_ingress() { [ "${NAPWAKE_INGRESS:-1}" != 0 ]; }

addon_binaries() {
  local out names=(coredns metrics-server)
  if want_ingress; then
    names+=(traefik)
    step "Add-ons: CoreDNS, metrics-server and Traefik (each built from source on first use: ~2, ~4.5 and ~9 minutes cold, instant after)"
  else
    step "Add-ons: CoreDNS and metrics-server (each built from source on first use: ~2 and ~4.5 minutes cold, instant after); no ingress controller (NAPWAKE_INGRESS=0)"
  fi
  out=$("$here/build-addons.sh" "${names[@]}")
  COREDNS_BIN=$(sed -n 1p <<<"$out"); METRICS_SERVER_BIN=$(sed -n 2p <<<"$out"); TRAEFIK_BIN=$(sed -n 3p <<<"$out")
  info "      using $COREDNS_BIN, $METRICS_SERVER_BIN${TRAEFIK_BIN:+, $TRAEFIK_BIN}"
}

# addon_pki makes the aggregation layer's front-proxy CA and client, the
# add-ons' client certificates, and the ingress's serving certificate.
addon_pki() {
  local d=$STATE/pki
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=napwake-testbed-front-proxy-ca" \
    -keyout "$d/front-proxy-ca.key" -out "$d/front-proxy-ca.crt" 2>/dev/null
  openssl genrsa -out "$d/front-proxy-client.key" 2048 2>/dev/null
  openssl req -new -key "$d/front-proxy-client.key" -subj "/CN=front-proxy-client" -out "$d/front-proxy-client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$d/front-proxy-client.ext"
  openssl x509 -req -in "$d/front-proxy-client.csr" -CA "$d/front-proxy-ca.crt" -CAkey "$d/front-proxy-ca.key" \
    -CAcreateserial -days 3650 -extfile "$d/front-proxy-client.ext" -out "$d/front-proxy-client.crt" 2>/dev/null
  cert coredns "/CN=napwake-testbed:coredns"
  cert traefik "/CN=napwake-testbed:traefik"
  cert ingress "/CN=napwake.test" "$INGRESS_HOSTS"
  kubeconfig coredns; kubeconfig traefik
}

# AGGREGATION_FLAGS are kube-apiserver's flags for the aggregation layer
# (metrics-server's APIService). The API server's host has no kube-proxy
# rules to a Service, so it dials an endpoint of the Service itself.
AGGREGATION_FLAGS=(
  --requestheader-client-ca-file "$STATE/pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
  --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group
  --requestheader-extra-headers-prefix X-Remote-Extra-
  --proxy-client-cert-file "$STATE/pki/front-proxy-client.crt" --proxy-client-key-file "$STATE/pki/front-proxy-client.key"
  --enable-aggregator-routing=true
)

# binding KIND NAME ROLE-KIND ROLE SUBJECT prints a ClusterRoleBinding (or a
# RoleBinding in kube-system); SUBJECT is a user, or sa:<name> for a
# ServiceAccount in kube-system.
binding() {
  local ns="" subject="{apiGroup: rbac.authorization.k8s.io, kind: User, name: \"$5\"}"
  [ "$1" = RoleBinding ] && ns=", namespace: kube-system"
  [[ $5 == sa:* ]] && subject="{kind: ServiceAccount, name: ${5#sa:}, namespace: kube-system}"
  printf -- '---\napiVersion: rbac.authorization.k8s.io/v1\nkind: %s\nmetadata: {name: "%s"%s}\n' "$1" "$2" "$ns"
  printf 'roleRef: {apiGroup: rbac.authorization.k8s.io, kind: %s, name: "%s"}\nsubjects: [%s]\n' "$3" "$4" "$subject"
}

addon_rbac() {
  { binding ClusterRoleBinding napwake-testbed:coredns ClusterRole napwake-testbed:coredns napwake-testbed:coredns
    binding ClusterRoleBinding napwake-testbed:traefik ClusterRole napwake-testbed:traefik napwake-testbed:traefik
    cat <<YAML
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "napwake-testbed:coredns"}
rules:
- {apiGroups: [""], resources: [services, namespaces, pods], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "napwake-testbed:traefik"}
rules:
- {apiGroups: [""], resources: [services, secrets, nodes], verbs: [get, list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
- {apiGroups: [networking.k8s.io], resources: [ingresses, ingressclasses], verbs: [get, list, watch]}
- {apiGroups: [networking.k8s.io], resources: [ingresses/status], verbs: [update]}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: traefik}
spec: {controller: traefik.io/ingress-controller}
YAML
  } | kubectl_ apply -f - >/dev/null
}

coredns_up() {
  local t0; t0=$(date +%s)
  step "CoreDNS on $NODE_IP:53: cluster.local from the API server, every other name NXDOMAIN (nothing outside is reachable)"
  mkdir -p "$STATE/coredns"
  cat >"$STATE/coredns/Corefile" <<CONF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $NODE_IP
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    prometheus 127.0.0.1:19153
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE/pki/coredns.kubeconfig napwake-testbed
    }
    cache 5
}
.:53 {
    bind $NODE_IP
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
CONF
  start coredns "$COREDNS_BIN" -conf "$STATE/coredns/Corefile"
  wait_for CoreDNS 60 "$STATE/log/coredns.log" in_ns curl --noproxy '*' -fsS http://127.0.0.1:18181/ready
  info "      CoreDNS ready in $(( $(date +%s) - t0 ))s"
}

metrics_server_image() {
  if ctr_ images ls -q 2>/dev/null | grep -qx "$METRICS_SERVER_IMAGE"; then return; fi
  mkdir -p "$STATE/images"
  (cd "$root/hack/tools" && GOWORK=off go run ./imagebuild --binary "$METRICS_SERVER_BIN" --image "$METRICS_SERVER_IMAGE" \
    --entrypoint /metrics-server --ports 10250 --out "$STATE/images/metrics-server.tar" >/dev/null)
  ctr_ images import --no-unpack=false "$STATE/images/metrics-server.tar" >/dev/null
  rm -f "$STATE/images/metrics-server.tar"
}

# metrics_server_up starts metrics-server; metrics_server_wait waits for its
# APIService, so the wait overlaps with the other add-ons' start.
metrics_server_up() {
  local t0; t0=$(date +%s)
  step "metrics-server as a pod in kube-system, registered as the metrics API (v1beta1.metrics.k8s.io)"
  metrics_server_image
  { binding ClusterRoleBinding system:metrics-server ClusterRole system:metrics-server sa:metrics-server
    binding ClusterRoleBinding metrics-server:system:auth-delegator ClusterRole system:auth-delegator sa:metrics-server
    binding RoleBinding metrics-server-auth-reader Role extension-apiserver-authentication-reader sa:metrics-server
    cat <<YAML
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: metrics-server, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server"}
rules:
- {apiGroups: [""], resources: [nodes/metrics], verbs: [get]}
- {apiGroups: [""], resources: [pods, nodes], verbs: [get, list, watch]}
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system, labels: {k8s-app: metrics-server}}
spec:
  selector: {k8s-app: metrics-server}
  ports: [{name: https, port: 443, protocol: TCP, targetPort: https}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics-server, namespace: kube-system, labels: {k8s-app: metrics-server}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: metrics-server}}
  template:
    metadata: {labels: {k8s-app: metrics-server}}
    spec:
      serviceAccountName: metrics-server
      priorityClassName: system-cluster-critical
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: metrics-server
        image: $METRICS_SERVER_IMAGE
        imagePullPolicy: Never
        args: [--cert-dir=/tmp, --secure-port=10250, --kubelet-insecure-tls, --kubelet-preferred-address-types=InternalIP,
               --metric-resolution=15s]
        ports: [{name: https, containerPort: 10250, protocol: TCP}]
        readinessProbe:
          httpGet: {path: /readyz, port: https, scheme: HTTPS}
          periodSeconds: 2
          failureThreshold: 3
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        volumeMounts: [{name: tmp, mountPath: /tmp}]
      volumes: [{name: tmp, emptyDir: {}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io, labels: {k8s-app: metrics-server}}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
YAML
  } | kubectl_ apply -f - >/dev/null
  METRICS_T0=$t0
}

metrics_server_wait() {
  wait_for "metrics-server (the APIService v1beta1.metrics.k8s.io)" 180 "$STATE/log/kube-apiserver.log" \
    kubectl_ wait --for=condition=Available apiservice/v1beta1.metrics.k8s.io --timeout=1s
  info "      metrics API available $(( $(date +%s) - METRICS_T0 ))s after metrics-server was started"
}

traefik_up() {
  local t0; t0=$(date +%s)
  step "Traefik on $NODE_IP: web :80 and websecure :443 (TLS, the test bed's certificate), Ingresses of class traefik"
  mkdir -p "$STATE/traefik"
  cat >"$STATE/traefik/tls.yaml" <<CONF
tls:
  stores:
    default:
      defaultCertificate:
        certFile: $STATE/pki/ingress.crt
        keyFile: $STATE/pki/ingress.key
CONF
  # No in-cluster variables: Traefik reads KUBECONFIG when they are unset.
  start traefik env -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT KUBECONFIG="$STATE/pki/traefik.kubeconfig" \
    "$TRAEFIK_BIN" --global.checknewversion=false --global.sendanonymoususage=false --log.nocolor=true \
    --entrypoints.web.address="$NODE_IP:80" --entrypoints.websecure.address="$NODE_IP:443" \
    --entrypoints.websecure.http.tls=true --entrypoints.traefik.address=127.0.0.1:18082 --ping=true --api.insecure=true \
    --providers.kubernetesingress=true \
    --providers.kubernetesingress.ingressendpoint.ip="$NODE_IP" \
    --providers.file.filename="$STATE/traefik/tls.yaml" \
    --accesslog=true --accesslog.format=json --accesslog.filepath="$STATE/log/traefik-access.log" \
    --accesslog.fields.headers.defaultmode=drop \
    --accesslog.fields.headers.names.Sec-Fetch-Site=keep --accesslog.fields.headers.names.Sec-Fetch-User=keep
  wait_for Traefik 60 "$STATE/log/traefik.log" in_ns curl --noproxy '*' -fsS http://127.0.0.1:18082/ping
  info "      Traefik ready in $(( $(date +%s) - t0 ))s (trust $STATE/pki/ca.crt for https://$NODE_IP)"
}

# node_resolv_conf is the resolver `cluster.sh exec` gives the commands it
# runs: the cluster's DNS and a pod's search path, so <svc>.<ns>.svc resolves.
node_resolv_conf() {
  printf 'nameserver %s\nsearch svc.cluster.local cluster.local\noptions ndots:5\n' "$NODE_IP" >"$STATE/etc/node-resolv.conf"
}

# ingress_env prints the exports the e2e suite reads to reach Traefik
# (e2e/framework.IngressFromEnv).
ingress_env() {
  printf 'export NAPWAKE_E2E_INGRESS_HTTP=http://%s NAPWAKE_E2E_INGRESS_HTTPS=https://%s\n' "$NODE_IP" "$NODE_IP"
  printf 'export NAPWAKE_E2E_INGRESS_API=http://127.0.0.1:18082 NAPWAKE_E2E_INGRESS_CA=%s\n' "$STATE/pki/ca.crt"
  printf 'export NAPWAKE_E2E_INGRESS_ACCESS_LOG=%s\n' "$STATE/log/traefik-access.log"
}
