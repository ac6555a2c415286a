#!/usr/bin/env bash
# Fails when a generated file is stale (regenerates into the work tree and
# asks git whether anything changed), or when a package's doc comment names
# a file or identifier the package does not have (hack/tools/pkgdoc).
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory generate >/dev/null
for v in hack/chart/verify.sh; do
  if [ -x "$v" ]; then "$v"; fi
done
if ! git diff --quiet -- apis config charts deploy docs/reference; then
  echo "generated files are stale; run 'make generate' and commit:"
  git diff --stat -- apis config charts deploy docs/reference
  exit 1
fi
if [ -n "$(git ls-files --others --exclude-standard -- apis config charts deploy docs/reference)" ]; then
  echo "generated files are not committed:"; git ls-files --others --exclude-standard -- apis config charts deploy docs/reference
  exit 1
fi
echo "generated files: up to date"
# One version story: `make push` tags each image with its module's VERSION
# and the chart pulls its appVersion unless told a tag, so they must agree
# (docs/development.md, "Versions").
app=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/napwake/Chart.yaml)
for c in operator doorman forwarder kubectl-napwake; do
  if [ "$(cat "$c/VERSION")" != "$app" ]; then
    echo "$c/VERSION is $(cat "$c/VERSION") but charts/napwake/Chart.yaml's appVersion is $app: the chart would pull a tag make push never wrote; change them together"
    exit 1
  fi
done
echo "versions: every VERSION is the chart's appVersion ($app)"
# Every package's doc comment names only files and identifiers that exist.
mods=()
for m in $(awk '/^use \(/{u=1;next} u&&/^\)/{u=0} u{print $1}' go.work); do mods+=("$PWD/${m#./}"); done
GOWORK=off go -C hack/tools run ./pkgdoc "${mods[@]}"
echo "package docs: every name exists"
# Every relative link in the Markdown pages leads to a file and heading that exist.
GOWORK=off go -C hack/tools run ./doclinks "$PWD"
echo "doc links: every relative link leads somewhere"
