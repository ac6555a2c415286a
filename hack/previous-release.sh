#!/usr/bin/env bash
# Builds the previous release (hack/previous-release names its commit): its
# source as `git archive` gives it, its binaries and its images, named
# napwake.previous/napwake-<component>:<its VERSION> so they never shadow
# this tree's. Built once into the cache, keyed by the commit; prints the
# directory holding its source (charts/napwake) and _out/images/*.tar.
#
#   hack/previous-release.sh      build if needed, print the directory
#
# Exits 3 when the clone lacks the commit (a shallow clone).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/testbed/lib.sh"
commit=$(grep -v '^#' "$root/hack/previous-release" | head -n 1 | tr -d '[:space:]')
short=${commit:0:7}
dir="${NAPWAKE_CACHE:-$HOME/.cache/napwake}/previous-release-$commit"
if [ -f "$dir/.built" ]; then
  echo "$dir"
  exit 0
fi
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "the previous release's commit $commit (hack/previous-release) is not in this clone: clone with full history (not --depth), or move hack/previous-release to a commit it has" >&2
  exit 3
fi
step "Building the previous release ($short) for the upgrade scenario, once: its source, binaries and images into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir"
git -C "$root" archive "$commit" | tar -x -C "$dir"
# Its own Makefile builds it as it was released; only the image names
# differ, and the commit it reports (there is no .git in the archive).
make -C "$dir" --no-print-directory images IMAGE_PREFIX=napwake.previous COMMIT="$short" >&2
touch "$dir/.built"
echo "$dir"
