#!/usr/bin/env bash
# release.sh builds everything a release ships into one directory,
# _out/release/<version>/ (`make release`; RELEASE_DIR overrides it):
#
#   napwake-<chart version>.tgz              the Helm chart (helm package)
#   napwake-<component>_<version>.oci.tar    operator, doorman, forwarder: each an
#                                            OCI image layout (index.json, oci-layout,
#                                            blobs/) as an uncompressed tar
#   image-digests.txt                        "<image reference> <manifest digest>", one per image
#   kubectl-napwake_<version>_<os>_<arch>.tar.gz   the plugin (hack/dist/dist.sh)
#   napwake.yaml                             its krew manifest (hack/dist/krew-manifest.sh)
#   RELEASE-NOTES.md                         the CHANGELOG.md entry for the version
#   SHA256SUMS                               sha256 of every file above
#
# It refuses to start when the modules' VERSION files, the chart's appVersion
# and version disagree, or when CHANGELOG.md has no entry for the version.
# Reproducible: the same tree gives the same SHA256SUMS (-trimpath,
# -buildvcs=false, fixed mtimes, sorted entries, numeric owners, gzip -n).
# The image references use IMAGE_PREFIX (the Makefile's, napwake.local); a
# manifest digest does not depend on the name, so `make push REGISTRY=…`
# pushes manifests with exactly these digests.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
say() { printf '[%s] release: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'release: %s\n' "$*" >&2; exit 1; }

# One version for the whole release.
version=$(cat operator/VERSION)
for m in operator doorman forwarder kubectl-napwake; do
	v=$(cat "$m/VERSION")
	[[ $v == "$version" ]] || die "$m/VERSION is $v but operator/VERSION is $version: a release has one version; set every module's VERSION (and the chart's appVersion) to the same one"
done
app=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/napwake/Chart.yaml)
chart_version=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/napwake/Chart.yaml)
[[ $app == "$version" ]] || die "charts/napwake/Chart.yaml's appVersion is $app but the modules' VERSION is $version: change them together"
[[ v$chart_version == "$version" ]] || die "charts/napwake/Chart.yaml's version is $chart_version but the modules' VERSION is $version: the chart's version is the VERSION without its v"

# The CHANGELOG entry: from "## [<version>]" (or without the v) to the next
# "## " heading, without the link references Keep a Changelog puts last.
notes=$(awk -v v="$version" '
	/^## / { if (on) exit; if (index($0, "## [" v "]") == 1 || index($0, "## [" substr(v, 2) "]") == 1) { on = 1 } }
	on && !/^\[[^]]*\]: / { print }
' CHANGELOG.md 2>/dev/null || true)
if [[ -z $notes ]] || [[ $(printf '%s\n' "$notes" | sed 1d | grep -c '[^[:space:]]') == 0 ]]; then
	die "CHANGELOG.md has no entry for $version: add a \"## [$version] - YYYY-MM-DD\" section saying what changed"
fi

out=${RELEASE_DIR:-$root/_out/release/$version}
image_prefix=${IMAGE_PREFIX:-napwake.local}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "$version into $out"

# Deterministic tar of the files under a directory (no directory entries,
# as helm writes them).
det_tar() { # dir mtime
	(cd "$1" && find . -type f | LC_ALL=C sort | sed 's|^\./||' |
		tar --no-recursion --mtime="@$2" --owner=0 --group=0 --numeric-owner --mode=a+r,u+w,go-w -cf - -T -)
}

# The chart. helm package stamps every entry with the time of packaging, so
# the package is unpacked and written again with the chart's last commit
# time: same files, same archive.
# bin/helm when it is there; else one built into the temporary directory,
# so that this never writes a bin/helm another step may be reading.
helm=bin/helm
[ -x "$helm" ] || { helm="$work/helm"; HELM_OUT="$helm" hack/helm/build.sh; }
"$helm" package charts/napwake --destination "$work/chart" >/dev/null
pkg="napwake-$chart_version.tgz"
[ -f "$work/chart/$pkg" ] || die "helm package did not write $pkg"
mkdir "$work/chart/x"
tar -xzf "$work/chart/$pkg" -C "$work/chart/x"
chart_epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct -- charts/napwake 2>/dev/null || echo 0)}
det_tar "$work/chart/x" "$chart_epoch" | gzip -9 -n >"$out/$pkg"
say "chart $pkg"

# The images: the binaries of `make build`, each in an OCI layout by
# imagebuild (the builder `make images` and `make push` use). Built into
# the temporary directory, not bin/: make test runs this beside the
# end-to-end suite, which reads bin/ (hack/test.sh).
make --no-print-directory build BIN="$work/bin" >&2
GOWORK=off go -C hack/tools build -o "$work/bin/imagebuild" ./imagebuild
: >"$out/image-digests.txt"
for c in operator doorman forwarder; do
	ref="$image_prefix/napwake-$c:$version"
	d=$("$work/bin/imagebuild" --binary "$work/bin/$c" --image "$ref" --entrypoint "/$c" --oci-layout "$work/oci-$c")
	det_tar "$work/oci-$c" 0 >"$out/napwake-${c}_$version.oci.tar"
	printf '%s %s\n' "$ref" "$d" >>"$out/image-digests.txt"
	say "image $ref $d"
done

# The plugin's archives and their krew manifest, by the same scripts as
# `make dist` and `make krew-manifest`.
DIST_DIR="$work/dist" VERSION="$version" hack/dist/dist.sh >/dev/null
cp "$work"/dist/kubectl-napwake_*.tar.gz "$out/"
DIST_DIR="$work/dist" MANIFEST="$out/napwake.yaml" hack/dist/krew-manifest.sh >&2
say "plugin archives and krew manifest"

printf '%s\n' "$notes" >"$out/RELEASE-NOTES.md"
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum -- >SHA256SUMS)
say "done: $out"
cat "$out/SHA256SUMS"
