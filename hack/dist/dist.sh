#!/usr/bin/env bash
# dist.sh builds the kubectl-napwake archives a release ships and krew
# installs: one tar.gz per platform (linux, darwin × amd64, arm64), each with
# the static binary and the repository's LICENSE when there is one, plus
# SHA256SUMS. Output: dist/kubectl-napwake/ (override with DIST_DIR).
#
#   VERSION=v0.1.0 hack/dist/dist.sh       # `make dist`
#
# Archives are reproducible: building the same sources twice gives the same
# sha256 sums (-trimpath, -buildvcs=false, fixed mtimes, sorted entries).
#
# VERSION defaults to kubectl-napwake/VERSION (the module's version, as for
# every deployable), else the newest kubectl-napwake/v* tag, else
# v0.0.0-dev.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

version=${VERSION:-$(cat kubectl-napwake/VERSION 2>/dev/null || true)}
version=${version:-$(git describe --tags --match 'kubectl-napwake/v*' --abbrev=0 2>/dev/null | sed 's|^kubectl-napwake/||' || true)}
version=${version:-v0.0.0-dev}
if [[ ! $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]]; then
	echo "dist: VERSION must be semver with a leading v (krew needs it), got '$version'" >&2
	exit 1
fi
# The last commit touching what goes into the binary, not HEAD: other
# components' commits must not change the plugin's archives.
srcs=(kubectl-napwake apis shared go.work)
commit=$(git log -1 --format=%H -- "${srcs[@]}" 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct -- "${srcs[@]}" 2>/dev/null || echo 0)}
out=${DIST_DIR:-$root/dist/kubectl-napwake}
platforms=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"}

rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for platform in $platforms; do
	os=${platform%/*}
	arch=${platform#*/}
	stage="$work/$os-$arch"
	mkdir -p "$stage"
	echo "dist: building kubectl-napwake $version for $os/$arch" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
		-ldflags "$("$root/hack/ldflags.sh" "$version" "$commit")" \
		-o "$stage/kubectl-napwake" ./kubectl-napwake
	cp kubectl-napwake/kubectl_complete-napwake "$stage/kubectl_complete-napwake"
	files=(kubectl-napwake kubectl_complete-napwake)
	if [[ -f LICENSE ]]; then
		cp LICENSE "$stage/LICENSE"
		files+=(LICENSE)
	fi
	tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
		-C "$stage" -cf - "${files[@]}" | gzip -9 -n >"$out/kubectl-napwake_${version}_${os}_${arch}.tar.gz"
done

(cd "$out" && sha256sum -- *.tar.gz >SHA256SUMS)
echo "$version" >"$out/VERSION"
if [[ ! -f LICENSE ]]; then
	echo "dist: warning: no LICENSE at the repository's top; krew-index refuses plugins whose archive lacks one" >&2
fi
cat "$out/SHA256SUMS"
