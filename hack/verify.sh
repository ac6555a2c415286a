#!/usr/bin/env bash
# Fails when a generated file is stale: regenerates into the work tree and
# asks git whether anything changed.
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory generate >/dev/null
for v in hack/chart/verify.sh; do
  if [ -x "$v" ]; then "$v"; fi
done
if ! git diff --quiet -- apis charts deploy; then
  echo "generated files are stale; run 'make generate' and commit:"
  git diff --stat -- apis charts deploy
  exit 1
fi
if [ -n "$(git ls-files --others --exclude-standard -- apis charts deploy)" ]; then
  echo "generated files are not committed:"; git ls-files --others --exclude-standard -- apis charts deploy
  exit 1
fi
echo "generated files: up to date"
