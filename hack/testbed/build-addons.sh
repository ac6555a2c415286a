#!/usr/bin/env bash
# Builds the test bed's add-ons from source through the Go module proxy, each
# once per version, and prints the path of each binary asked for (one a line):
#
#   hack/testbed/build-addons.sh coredns metrics-server traefik [argo-rollouts]
#
# CoreDNS and metrics-server install with plain `go install`; Traefik does not
# (replace directives, and the proxy lacks a few of its modules): build_traefik
# builds a patched copy of its module (see the comments there). Each binary
# lives in $NAPWAKE_CACHE/<name>-<version>-<go version>/ and is never rebuilt
# while it exists. Builds are static and lean: CGO_ENABLED=0, -trimpath, -s -w.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
TRAEFIK_VERSION=${TRAEFIK_VERSION:-v3.7.13}
ARGO_ROLLOUTS_VERSION=${ARGO_ROLLOUTS_VERSION:-v1.10.1}

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

# go_install DIR PKG@VERSION [LDFLAGS] installs one main package into DIR.
go_install() {
  local dir=$1 pkg=$2 ldflags="-s -w ${3:-}"
  GOBIN="$dir/.tmp" go install -trimpath -ldflags "$ldflags" "$pkg"
}

build_coredns() {
  go_install "$1" "github.com/coredns/coredns@$COREDNS_VERSION"
}

build_metrics_server() {
  go_install "$1" "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION" \
    "-X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION -X sigs.k8s.io/metrics-server/pkg/version.gitVersion=$METRICS_SERVER_VERSION"
}

# build_traefik DIR builds Traefik from a writable copy of its module:
#  1. the module zip lacks the nested module pkg/config/dynamic/ext that go.mod
#     replaces into ./: it is recreated with empty extension structs;
#  2. the proxy refuses the pinned version of the go-http-auth fork: an older
#     version of the same fork is served;
#  3. lego's providers/dns pulls in every DNS provider's SDK, 14 of them not
#     served: a stub stands in (ACME DNS-01 is gone; routing is untouched), and
#     the requirements left without a go.mod are dropped.
build_traefik() {
  local out=$1 v=$TRAEFIK_VERSION src ro
  src=$(napwake_cache)/build/traefik-$v
  ro=$(go mod download -json "github.com/traefik/traefik/v3@$v" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$ro" ] || die "go mod download github.com/traefik/traefik/v3@$v gave no directory"
  rm -rf "$src"; mkdir -p "$(dirname "$src")"
  cp -r "$ro" "$src"; chmod -R u+w "$src"
  (
    cd "$src"
    mkdir -p pkg/config/dynamic/ext
    printf 'module github.com/traefik/traefik/dynamic/ext\n\ngo 1.24.0\n' >pkg/config/dynamic/ext/go.mod
    cat >pkg/config/dynamic/ext/ext.go <<'GO'
package ext

// HTTP is a dynamic.HTTP extension point (empty in the open-source build).
type HTTP struct{}

// Router is a dynamic.Router extension point (empty in the open-source build).
type Router struct{}

// RouterIng is a RouterIng extension for ingress provider annotations.
type RouterIng struct{}

// ToRouter converts RouterIng to a Router.
func (r RouterIng) ToRouter() Router { return Router{} }
GO
    go mod edit -replace github.com/abbot/go-http-auth=github.com/containous/go-http-auth@v0.4.1-0.20200324110947-a37a7636d23e
    mkdir -p pkg/provider/acme/nodns
    cat >pkg/provider/acme/nodns/nodns.go <<'GO'
// Package nodns stands in for lego's providers/dns in a test-bed build: no DNS-01 providers.
package nodns

import (
	"fmt"

	"github.com/go-acme/lego/v5/challenge"
)

// NewDNSChallengeProviderByName always fails: no DNS provider is compiled in.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("ACME DNS challenge provider %q is not compiled into this build", name)
}
GO
    sed -i 's#^\t"github.com/go-acme/lego/v5/providers/dns"$#\tdns "github.com/traefik/traefik/v3/pkg/provider/acme/nodns"#' pkg/provider/acme/provider.go
    grep -q 'acme/nodns"' pkg/provider/acme/provider.go || die "Traefik $v: the lego providers/dns import moved; update build_traefik"
    local m
    for m in github.com/nrdcg/oci-go-sdk/common/v1065 github.com/nrdcg/oci-go-sdk/dns/v1065 \
      github.com/sacloud/sacloud-sdk-go github.com/ucloud/ucloud-sdk-go github.com/yandex-cloud/go-sdk/services/dns; do
      go mod edit -droprequire "$m"
    done
    go build -trimpath -ldflags "-s -w \
      -X github.com/traefik/traefik/v3/pkg/version.Version=$v \
      -X github.com/traefik/traefik/v3/pkg/version.Codename=testbed \
      -X github.com/traefik/traefik/v3/pkg/version.BuildDate=2026-01-01T00:00:00Z" \
      -o "$out/.tmp/traefik" ./cmd/traefik
  )
  rm -rf "$src"; rmdir "$(dirname "$src")" 2>/dev/null || true
}

# build_argo_rollouts DIR builds Argo Rollouts' controller from a writable
# copy of its module (its go.mod replaces k8s.io/*, which go install refuses),
# and keeps its install.yaml (CRDs, RBAC, Deployment) beside it. v1.10.1 is
# the newest that builds with this machine's Go (later ones need 1.26.10).
build_argo_rollouts() {
  local out=$1 v=$ARGO_ROLLOUTS_VERSION src ro
  src=$(napwake_cache)/build/argo-rollouts-$v
  ro=$(go mod download -json "github.com/argoproj/argo-rollouts@$v" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$ro" ] || die "go mod download github.com/argoproj/argo-rollouts@$v gave no directory"
  rm -rf "$src"; mkdir -p "$(dirname "$src")"
  cp -r "$ro" "$src"; chmod -R u+w "$src"
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$out/.tmp/argo-rollouts" ./cmd/rollouts-controller)
  cp "$src/manifests/install.yaml" "$out/install.yaml"
  rm -rf "$src"; rmdir "$(dirname "$src")" 2>/dev/null || true
}

[ "$#" -gt 0 ] || set -- coredns metrics-server traefik
for name in "$@"; do
  case $name in
    coredns) version=$COREDNS_VERSION hint="about 2 minutes cold on 2 cores" ;;
    metrics-server) version=$METRICS_SERVER_VERSION hint="about 4.5 minutes cold on 2 cores" ;;
    traefik) version=$TRAEFIK_VERSION hint="about 9 minutes cold on 2 cores, the slowest" ;;
    argo-rollouts) version=$ARGO_ROLLOUTS_VERSION hint="about 8 minutes of CPU cold on 2 cores" ;;
    *) die "unknown add-on $name (coredns, metrics-server, traefik, argo-rollouts)" ;;
  esac
  dir=$(napwake_cache)/$name-$version-$(go env GOVERSION)
  mkdir -p "$dir"
  exec 9>"$dir.lock" # one build per add-on and version at a time (build-binaries.sh says why)
  if ! flock -n 9; then
    info "      another build of $name $version is running; waiting for it to finish"
    flock 9
  fi
  if [ ! -x "$dir/$name" ]; then
    step "Building $name $version from source through the module proxy, once per version ($hint)"
    start=$(date +%s)
    rm -rf "$dir/.tmp"; mkdir -p "$dir/.tmp"
    with_progress "building $name" "build_${name//-/_}" "$dir"
    mv "$dir/.tmp/$name" "$dir/$name"
    rmdir "$dir/.tmp"
    info "      built $name in $(( $(date +%s) - start ))s ($(du -m "$dir/$name" | cut -f1) MB)"
  fi
  echo "$dir/$name"
done
