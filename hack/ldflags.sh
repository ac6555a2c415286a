#!/usr/bin/env bash
# The one definition of a Napwake binary's linker flags: stripped, with the
# version and commit that `<binary> --version` prints (napwake.dev/shared/version).
#   hack/ldflags.sh VERSION COMMIT
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: hack/ldflags.sh VERSION COMMIT" >&2; exit 2; }
echo "-s -w -X napwake.dev/shared/version.Version=$1 -X napwake.dev/shared/version.Commit=$2"
